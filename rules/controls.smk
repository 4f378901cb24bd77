# Controls beside the real models: a random-weight copy of a model's architecture and
# vocabulary (fine-tuned by rule finetune like any model), and each task's no-training
# baseline, written in the fine-tuning runs' format so the tables read both alike.
localrules:
    baseline,


rule control:
    input:
        upstream=model_inputs,
    output:
        model="results/control/{model}/model.safetensors",
        config="results/control/{model}/config.json",
        provenance="results/control/{model}/provenance.json",
    log:
        "results/logs/control/{model}.log",
    conda:
        CONDA_ENV
    params:
        of=lambda wildcards: plan.model_dir(STUDY, STUDY.models[wildcards.model].init),
    shell:
        "python -m workflow_scripts.controls.control --of {params.of} --seed 0"
        " --out results/control/{wildcards.model} 2> {log}"


rule baseline:
    input:
        settings="results/configs/finetune/{model}/{task}.yaml",
        task="results/tasks/{task}/data_card.json",
    output:
        metrics="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/metrics.json",
        predictions="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/predictions.jsonl",
        provenance="results/finetune/{model}/{task}/fold~{fold}/seed~{seed}/provenance.json",
    log:
        "results/logs/baseline/{model}/{task}/fold~{fold}/seed~{seed}.log",
    wildcard_constraints:
        model=_names(BASELINES),
    conda:
        CONDA_ENV
    params:
        out=lambda wildcards: plan.run_dir(
            wildcards.model, wildcards.task, wildcards.fold, wildcards.seed
        ),
    shell:
        "python -m workflow_scripts.controls.baseline --settings {input.settings}"
        " --task-dir results/tasks/{wildcards.task} --fold {wildcards.fold}"
        " --seed {wildcards.seed} --out {params.out} 2> {log}"
