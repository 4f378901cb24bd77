localrules:
    finetune_settings,


rule finetune_settings:
    output:
        paths.FINETUNE_SETTINGS,
    log:
        "results/logs/finetune_settings/{model}/{task}.log",
    params:
        settings=lambda wildcards: finetune_settings(wildcards.model, wildcards.task),
    run:
        write_settings(output[0], params.settings)


rule finetune:
    input:
        settings=paths.FINETUNE_SETTINGS,
        task=f"{paths.TASK}/data_card.json",
        model=lambda wildcards: model_marker(wildcards.model),
        selection=selection_run,
        group_step=group_step_runs if workflow.remote_exec else [],
    output:
        metrics=f"{paths.RUN}/metrics.json",
        predictions=f"{paths.RUN}/predictions.jsonl",
        provenance=f"{paths.RUN}/provenance.json",
    log:
        "results/logs/finetune/{model}/{task}/fold~{fold}/seed~{seed}.log",
    wildcard_constraints:
        model=_names(TRAINED_OR_LOADED),
    group:
        "finetune"
    conda:
        CONDA_ENV_GPU
    threads: job_threads("finetune")
    resources:
        **finetune_resources(),
    params:
        launch=lambda wildcards, threads, resources: launcher(
            resources, threads, "finetune"
        ),
        steps_from=lambda wildcards, input: " ".join(
            f"--steps-from {p}" for p in input.selection
        ),
        model=lambda wildcards: shell_word(model_dir(wildcards.model)),
        out=paths.RUN,
    shell:
        "{params.launch} -m workflow_scripts.preload workflow_scripts.finetune.finetune"
        " --settings {input.settings}"
        " --model {params.model} --task-dir results/tasks/{wildcards.task}"
        " --fold {wildcards.fold} --seed {wildcards.seed} --out {params.out}"
        " --cache-dir results/cache/finetune {params.steps_from} 2> {log}"
