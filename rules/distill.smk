rule distill:
    input:
        settings=paths.MODEL_SETTINGS,
        upstream=model_inputs,
    output:
        model=protected(f"{paths.DISTILLED}/model.safetensors"),
        config=f"{paths.DISTILLED}/config.json",
        provenance=f"{paths.DISTILLED}/provenance.json",
    log:
        "results/logs/distill/{model}.log",
    benchmark:
        "results/benchmarks/distill/{model}.tsv"
    conda:
        CONDA_ENV_GPU
    threads: job_threads("distill")
    resources:
        **job_resources("distill"),
    params:
        launch=lambda wildcards, threads, resources: launcher(
            resources, threads, "distill"
        ),
        # read from resources, so that a new value changes the micro-batch without rerunning the model
        gpu_mem=lambda wildcards, resources: resources.gpu_mem_gb,
        packed=packed_args,
        teacher=lambda wildcards: shell_word(
            plan.model_dir(STUDY, STUDY.models[wildcards.model].teacher)
        ),
        init=lambda wildcards: plan.model_source_args(STUDY, wildcards.model),
    shell:
        "{params.launch} -m workflow_scripts.distill.distill --settings {input.settings}"
        " --gpu-mem-gb {params.gpu_mem}"
        " --teacher {params.teacher} {params.packed} {params.init}"
        " --out results/distill/{wildcards.model} 2> {log}"
