# A source given as a local path is an input (or, for a folder, a digest in params), so a
# changed source is copied again; a URL is downloaded once, pinned by its sha256.


rule download_corpus_file:
    input:
        local=lambda wildcards: local_source(
            corpus_urls(wildcards.corpus).get(wildcards.file)
        ),
    output:
        raw=paths.RAW,
        provenance=f"{paths.RAW}.provenance.json",
    log:
        "results/logs/download/{corpus}/{file}.log",
    conda:
        CONDA_ENV
    resources:
        **job_resources("download_corpus_file"),
        downloads=1,
    params:
        args=lambda wildcards: fetch_table(wildcards.corpus)[wildcards.file],
    shell:
        "python -m workflow_scripts.download.fetch {params.args} --out {output.raw} 2> {log}"


# PMC in the cloud layout: one job per batch selects its articles by their metadata and
# fetches them (workflow_scripts/download/download_pmc_batch.py); the inventory is a corpus file.
ruleorder: download_pmc_batch > download_corpus_file


rule download_pmc_batch:
    input:
        inventory=lambda wildcards: plan.raw_path(
            wildcards.corpus, fetch_table_names(wildcards.corpus)[0]
        ),
        settings=paths.PARSE_SETTINGS,
    output:
        batch=directory("results/raw/{corpus}/batch~{batch}"),
        filelist="results/raw/{corpus}/batch~{batch}.filelist.csv",
    log:
        "results/logs/download/{corpus}/batch~{batch}.log",
    wildcard_constraints:
        corpus=_names(CLOUD_CORPORA),
        batch=r"\d+",
    conda:
        CONDA_ENV
    resources:
        **job_resources("download_pmc_batch"),
        downloads=1,
    params:
        args=lambda wildcards: plan.cloud_batch_args(
            STUDY, wildcards.corpus, int(wildcards.batch)
        ),
    shell:
        "python -m workflow_scripts.download.download_pmc_batch --settings {input.settings}"
        " --inventory {input.inventory} {params.args} --out {output.batch} 2> {log}"


rule download_task_file:
    input:
        local=lambda wildcards: local_source(task_url(wildcards.task, wildcards.file)),
    output:
        raw=paths.TASK_RAW,
        provenance=f"{paths.TASK_RAW}.provenance.json",
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


# Credentialed releases that are folders (i2b2): the user's local copy, copied whole.
ruleorder: download_task_folder > download_task_file


rule download_task_folder:
    output:
        directory("results/raw/tasks/{task_folder}"),
    log:
        "results/logs/download/tasks/{task_folder}.log",
    wildcard_constraints:
        task_folder=_names(plan.task_directories(STUDY)),
    conda:
        CONDA_ENV
    params:
        args=lambda wildcards: plan.task_fetch_args(
            STUDY, *wildcards.task_folder.split("/", 1)
        ),
        source_state=lambda wildcards: tree_state(
            task_url(*wildcards.task_folder.split("/", 1))
        ),
    shell:
        "python -m workflow_scripts.download.fetch {params.args} --out {output} 2> {log}"


# A hub checkpoint at its pinned commit, fetched once; every consumer reads the snapshot, so
# compute nodes need no network. The whole folder appears at once, its record last.
rule download_model:
    output:
        provenance=f"{paths.HUB_MODEL}/provenance.json",
    log:
        "results/logs/download/models/{model}.log",
    conda:
        CONDA_ENV
    resources:
        downloads=1,
    params:
        args=lambda wildcards: plan.hub_args(STUDY, wildcards.model),
    shell:
        "python -m workflow_scripts.download.download_model {params.args}"
        " --out results/raw/models/{wildcards.model} 2> {log}"
