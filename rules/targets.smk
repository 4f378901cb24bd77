# Named targets for partial reruns, one per task and one per model (`-` and other
# non-identifier characters become `_`):
#   snakemake task_ncbi_disease   every model x fold x seed run of one task + its own tables
#   snakemake model_pubmedbert    one model (built here, if it is) + its runs on every task
#   (a model with pretrain_seeds: every seed's, and model_<name>_pseed_<seed> one seed's)
# They only name files: no jobs of their own, so they never reach the cluster. A rerun of
# runs whose model and task data exist plans only the runs with
# `--allowed-rules finetune finetune_settings` (README: "Re-running part of the study").
localrules:
    report_settings_of_task,
    tables_of_task,


full_report_settings = functools.cache(
    lambda: step_settings.report_settings(STUDY, WORKFLOW_ROOT)
)
TASK_TABLES = expand(
    "results/tables/task~{{task}}/{table}.{ext}",
    table=TABLE_NAMES,
    ext=["csv", "md", "tex"],
) + [
    "results/tables/task~{task}/spread.csv",
    "results/tables/task~{task}/comparisons.csv",
    "results/tables/task~{task}/missing.md",
]


rule report_settings_of_task:
    output:
        paths.TASK_REPORT_SETTINGS,
    log:
        "results/logs/report_settings_of_task/{task}.log",
    params:
        settings=lambda wildcards: plan.task_report_settings(
            full_report_settings(), wildcards.task
        ),
    run:
        write_settings(output[0], params.settings)


# The study's tables need every run; these need only one task's, so a task's numbers can
# be read (beside the published ones) before the rest of the study has finished.
rule tables_of_task:
    input:
        settings=paths.TASK_REPORT_SETTINGS,
        runs=lambda wildcards: plan.run_metrics(STUDY, task=wildcards.task),
    output:
        TASK_TABLES,
        provenance="results/tables/task~{task}/provenance.json",
    log:
        "results/logs/tables_of_task/{task}.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.report.tables --settings {input.settings}"
        " --out results/tables/task~{wildcards.task} 2> {log}"


for _task in TASKS:

    rule:
        name:
            plan.target_rule("task", _task)
        input:
            lambda wildcards, task=_task: plan.run_metrics(STUDY, task=task)
            + [f"results/tables/task~{task}/provenance.json"],
        localrule: True


for _model in MODELS:

    rule:
        name:
            plan.target_rule("model", _model)
        input:
            lambda wildcards, model=_model: plan.model_marker(STUDY, model)
            + plan.run_metrics(STUDY, model=model),
        localrule: True


for _model, _seeds in STUDY.seeded.items():

    rule:
        name:
            plan.target_rule("model", _model)
        input:
            lambda wildcards, seeds=_seeds: [
                path
                for seed in seeds
                for path in plan.model_marker(STUDY, seed)
                + plan.run_metrics(STUDY, model=seed)
            ],
        localrule: True
