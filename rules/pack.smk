localrules:
    pack_index,


# One CPU job per (tokenizer, corpus shard, packing mode, sequence length): every model that
# trains with the same tokenizer on the same corpus, packed the same way at the same length,
# shares its blocks.
rule pack:
    input:
        corpus="results/corpus/{corpus}/stats.json",
        tokenizer=lambda wildcards: plan.pack_tokenizer_marker(
            STUDY, wildcards.tokenizer
        ),
    output:
        meta=f"{PACKED_SHARD}/meta.json",
        provenance=f"{PACKED_SHARD}/provenance.json",
    log:
        "results/logs/pack/{tokenizer}/{corpus}/{packing}seq~{seq_len}/heldout~{heldout}/shard~{shard}.log",
    benchmark:
        "results/benchmarks/pack/{tokenizer}/{corpus}/{packing}seq~{seq_len}/heldout~{heldout}/shard~{shard}.tsv"
    conda:
        CONDA_ENV
    threads: job_threads("pack")
    resources:
        **job_resources("pack"),
    params:
        tokenizer=lambda wildcards: shlex.quote(PACK_TOKENIZERS[wildcards.tokenizer]),
        out=lambda wildcards, output: os.path.dirname(output.meta),
        packing=lambda wildcards: plan.packing_args(wildcards.packing),
    shell:
        "python -m workflow_scripts.pack.pack"
        " --shard results/corpus/{wildcards.corpus}/shard~{wildcards.shard}.parquet"
        " --tokenizer {params.tokenizer} --seq-len {wildcards.seq_len}"
        " --heldout-fraction {wildcards.heldout}{params.packing} --threads {threads}"
        " --out {params.out} 2> {log}"


rule pack_index:
    input:
        shards=lambda wildcards: expand(
            f"{PACKED_SHARD}/meta.json",
            **wildcards,
            shard=range(plan.corpus_shards(STUDY, wildcards.corpus)),
        ),
    output:
        f"{paths.PACKED}/index.json",
    log:
        "results/logs/pack_index/{tokenizer}/{corpus}/{packing}seq~{seq_len}/heldout~{heldout}.log",
    run:
        build_index(
            wildcards.corpus, [os.path.dirname(p) for p in input.shards], output[0]
        )
