localrules:
    parse_settings,
    corpus_settings,


rule parse_settings:
    output:
        paths.PARSE_SETTINGS,
    log:
        "results/logs/parse_settings/{corpus}.log",
    params:
        settings=lambda wildcards: step_settings.parse_settings(STUDY, wildcards.corpus),
    run:
        write_settings(output[0], params.settings)


rule corpus_settings:
    output:
        paths.CORPUS_SETTINGS,
    log:
        "results/logs/corpus_settings/{corpus}.log",
    params:
        settings=lambda wildcards: step_settings.corpus_settings(
            STUDY, wildcards.corpus
        ),
    run:
        write_settings(output[0], params.settings)


rule parse_corpus_file:
    input:
        unpack(parse_extra_inputs),
        raw=paths.RAW,
        settings=paths.PARSE_SETTINGS,
    output:
        parsed=paths.PARSED,
        provenance=f"{paths.PARSED}.provenance.json",
    log:
        "results/logs/parse/{corpus}/{file}.log",
    conda:
        CONDA_ENV
    threads: job_threads("parse_corpus_file")
    resources:
        **job_resources("parse_corpus_file"),
    params:
        filelist=lambda wildcards, input: (
            f"--filelist {input.filelist}" if "filelist" in input.keys() else ""
        ),
    shell:
        "python -m workflow_scripts.corpus.parse_corpus_file --settings {input.settings}"
        " --in {input.raw} {params.filelist} --out {output.parsed} 2> {log}"


rule build_corpus:
    input:
        parsed=parsed_inputs,
        settings=paths.CORPUS_SETTINGS,
        tasks=decontamination_inputs,
    output:
        stats=f"{paths.CORPUS}/stats.json",
        provenance=f"{paths.CORPUS}/provenance.json",
    log:
        "results/logs/build_corpus/{corpus}.log",
    benchmark:
        "results/benchmarks/build_corpus/{corpus}.tsv"
    wildcard_constraints:
        corpus=_names(PARSED_CORPORA),
    conda:
        CONDA_ENV
    threads: job_threads("build_corpus")
    resources:
        **job_resources("build_corpus"),
    params:
        decontaminate=lambda wildcards, input: " ".join(
            f"--decontaminate {p}" for p in input.tasks
        ),
    shell:
        "python -m workflow_scripts.corpus.build_corpus --settings {input.settings}"
        " --in {input.parsed} {params.decontaminate}"
        " --out results/corpus/{wildcards.corpus} 2> {log}"


rule build_text_corpus:
    input:
        raw=lambda wildcards: plan.raw_path(
            wildcards.corpus, STUDY.corpora[wildcards.corpus].source.files[0]
        ),
    output:
        stats=f"{paths.CORPUS}/stats.json",
        provenance=f"{paths.CORPUS}/provenance.json",
    log:
        "results/logs/build_corpus/{corpus}.log",
    wildcard_constraints:
        corpus=_names(TEXT_CORPORA),
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.corpus.build_text_corpus --in {input.raw}"
        " --name {wildcards.corpus} --out results/corpus/{wildcards.corpus} 2> {log}"
