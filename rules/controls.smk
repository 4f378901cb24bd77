# Controls beside the real models: a random-weight copy of a model's architecture and
# vocabulary (fine-tuned by rule finetune like any model), and each task's no-training
# baseline, written in the fine-tuning runs' format so the tables read both alike.
localrules:
    baseline_settings,
    baseline,


rule control:
    input:
        settings=paths.MODEL_SETTINGS,
        upstream=model_inputs,
    output:
        model=f"{paths.CONTROL}/model.safetensors",
        config=f"{paths.CONTROL}/config.json",
        provenance=f"{paths.CONTROL}/provenance.json",
    log:
        "results/logs/control/{model}.log",
    conda:
        CONDA_ENV
    params:
        of=lambda wildcards: shell_word(model_dir(STUDY.models[wildcards.model].init)),
    shell:
        "python -m workflow_scripts.controls.control --settings {input.settings}"
        " --of {params.of} --out results/control/{wildcards.model} 2> {log}"


rule baseline_settings:
    output:
        paths.BASELINE_SETTINGS,
    log:
        "results/logs/baseline_settings/{model}/{task}.log",
    params:
        settings=lambda wildcards: step_settings.baseline_settings(
            STUDY, wildcards.model, wildcards.task
        ),
    run:
        write_settings(output[0], params.settings)


rule baseline:
    input:
        settings=paths.BASELINE_SETTINGS,
        task=f"{paths.TASK}/data_card.json",
    output:
        metrics=f"{paths.RUN}/metrics.json",
        predictions=f"{paths.RUN}/predictions.jsonl",
        provenance=f"{paths.RUN}/provenance.json",
    log:
        "results/logs/baseline/{model}/{task}/fold~{fold}/seed~{seed}.log",
    wildcard_constraints:
        model=_names(BASELINES),
    conda:
        CONDA_ENV
    params:
        out=paths.RUN,
    shell:
        "python -m workflow_scripts.controls.baseline --settings {input.settings}"
        " --task-dir results/tasks/{wildcards.task} --fold {wildcards.fold}"
        " --seed {wildcards.seed} --out {params.out} 2> {log}"
