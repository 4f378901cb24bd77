localrules:
    vocab_settings,


rule vocab_settings:
    output:
        paths.VOCAB_SETTINGS,
    log:
        "results/logs/vocab_settings/{vocab}.log",
    params:
        settings=lambda wildcards: step_settings.vocab_settings(STUDY, wildcards.vocab),
    run:
        write_settings(output[0], params.settings)


rule train_vocab:
    input:
        settings=paths.VOCAB_SETTINGS,
        corpora=lambda wildcards: corpus_markers(
            STUDY.vocabularies[wildcards.vocab].corpora
        ),
    output:
        tokenizer=f"{paths.VOCAB}/tokenizer_config.json",
        provenance=f"{paths.VOCAB}/provenance.json",
    log:
        "results/logs/train_vocab/{vocab}.log",
    benchmark:
        "results/benchmarks/train_vocab/{vocab}.tsv"
    conda:
        CONDA_ENV
    threads: job_threads("train_vocab")
    resources:
        **job_resources("train_vocab"),
    params:
        corpora=lambda wildcards: plan.corpus_args(
            STUDY.vocabularies[wildcards.vocab].corpora
        ),
    shell:
        "python -m workflow_scripts.vocab.train_vocab --settings {input.settings}"
        " {params.corpora} --out results/vocab/{wildcards.vocab} 2> {log}"


rule vocab_diagnostics:
    input:
        tokenizer=f"{paths.VOCAB}/tokenizer_config.json",
        tasks=ner_task_inputs,
        compare=compare_inputs,
    output:
        f"{paths.VOCAB}/diagnostics.json",
    log:
        "results/logs/vocab_diagnostics/{vocab}.log",
    conda:
        CONDA_ENV
    params:
        tasks=lambda wildcards, input: " ".join(
            f"--task-dir {os.path.dirname(p)}" for p in input.tasks
        ),
        compare=compare_args,
    shell:
        "python -m workflow_scripts.vocab.vocab_diagnostics --vocab results/vocab/{wildcards.vocab}"
        " --name {wildcards.vocab} {params.tasks} {params.compare} --out {output} 2> {log}"
