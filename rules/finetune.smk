localrules:
    finetune_settings,


rule finetune_settings:
    output:
        "results/configs/finetune/{model}/{task}.yaml",
    log:
        "results/logs/finetune_settings/{model}/{task}.log",
    params:
        settings=lambda wildcards: finetune_settings(wildcards.model, wildcards.task),
    run:
        write_settings(output[0], params.settings)


rule finetune:
    input:
        settings="results/configs/finetune/{model}/{task}.yaml",
        task="results/tasks/{task}/data_card.json",
        model=lambda wildcards: model_marker(wildcards.model),
        selection=selection_run,
    output:
        metrics="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/metrics.json",
        predictions="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/predictions.jsonl",
        provenance="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/provenance.json",
    log:
        "results/logs/finetune/{model}/{task}/fold~{fold}/seed~{seed}.log",
    conda:
        CONDA_ENV_GPU
    threads: job_threads("finetune")
    resources:
        **job_resources("finetune"),
    params:
        steps_from=lambda wildcards, input: " ".join(
            f"--steps-from {p}" for p in input.selection
        ),
        model=lambda wildcards: model_dir(wildcards.model),
        out=lambda wildcards: plan.run_dir(
            wildcards.model, wildcards.task, wildcards.fold, wildcards.seed
        ),
    shell:
        "python -m workflow_scripts.finetune.finetune --settings {input.settings}"
        " --model {params.model} --task-dir results/tasks/{wildcards.task}"
        " --fold {wildcards.fold} --seed {wildcards.seed} --out {params.out}"
        " --cache-dir results/cache/finetune {params.steps_from} 2> {log}"
