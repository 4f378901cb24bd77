rule download_corpus_file:
    output:
        raw="results/raw/{corpus}/{file}",
        provenance="results/raw/{corpus}/{file}.provenance.json",
    log:
        "results/logs/download/{corpus}/{file}.log",
    conda:
        CONDA_ENV
    resources:
        downloads=1,
    params:
        args=lambda wildcards: fetch_table(wildcards.corpus)[wildcards.file],
    shell:
        "python -m workflow_scripts.download.fetch {params.args} --out {output.raw} 2> {log}"


rule download_task_file:
    output:
        raw="results/raw/tasks/{task}/{file}",
        provenance="results/raw/tasks/{task}/{file}.provenance.json",
    log:
        "results/logs/download/tasks/{task}/{file}.log",
    conda:
        CONDA_ENV
    resources:
        downloads=1,
    params:
        args=lambda wildcards: plan.task_fetch_args(
            STUDY, wildcards.task, wildcards.file
        ),
    shell:
        "python -m workflow_scripts.download.fetch {params.args} --out {output.raw} 2> {log}"
