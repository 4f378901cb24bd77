localrules:
    task_settings,


rule task_settings:
    output:
        paths.TASK_SETTINGS,
    log:
        "results/logs/task_settings/{task}.log",
    params:
        settings=lambda wildcards: step_settings.task_settings(STUDY, wildcards.task),
    run:
        write_settings(output[0], params.settings)


rule prepare_task:
    input:
        settings=paths.TASK_SETTINGS,
        raw=task_raw_inputs,
    output:
        card=f"{paths.TASK}/data_card.json",
        test_texts=f"{paths.TASK}/test_texts.jsonl",
        provenance=f"{paths.TASK}/provenance.json",
    log:
        "results/logs/prepare_task/{task}.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.tasks.prepare_task --settings {input.settings}"
        " --raw results/raw/tasks/{wildcards.task} --out results/tasks/{wildcards.task} 2> {log}"
