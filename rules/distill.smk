rule distill:
    input:
        settings="results/configs/models/{model}.yaml",
        upstream=model_inputs,
    output:
        model=protected("results/distill/{model}/model.safetensors"),
        config="results/distill/{model}/config.json",
        provenance="results/distill/{model}/provenance.json",
    log:
        "results/logs/distill/{model}.log",
    benchmark:
        "results/benchmarks/distill/{model}.tsv"
    conda:
        CONDA_ENV_GPU
    resources:
        gpu=0,
        nodes=1,
    params:
        launch=lambda wildcards, resources: launcher(resources),
        corpora=lambda wildcards: plan.corpus_args(
            STUDY.models[wildcards.model].corpora
        ),
        teacher=lambda wildcards: plan.model_dir(
            STUDY, STUDY.models[wildcards.model].teacher
        ),
        init=lambda wildcards: plan.model_source_args(STUDY, wildcards.model),
    shell:
        "{params.launch} -m workflow_scripts.distill.train --settings {input.settings}"
        " --teacher {params.teacher} {params.corpora} {params.init}"
        " --out results/distill/{wildcards.model} 2> {log}"
