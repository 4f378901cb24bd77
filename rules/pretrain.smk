localrules:
    model_settings,


rule model_settings:
    output:
        paths.MODEL_SETTINGS,
    log:
        "results/logs/model_settings/{model}.log",
    params:
        settings=lambda wildcards: step_settings.model_settings(STUDY, wildcards.model),
    run:
        write_settings(output[0], params.settings)


# Only the final files are declared: Snakemake deletes declared outputs before a rerun,
# and training_state/ beside them must survive so that a rerun resumes.
rule pretrain:
    input:
        settings=paths.MODEL_SETTINGS,
        upstream=model_inputs,
    output:
        model=protected(f"{paths.PRETRAINED}/model.safetensors"),
        config=f"{paths.PRETRAINED}/config.json",
        provenance=f"{paths.PRETRAINED}/provenance.json",
    log:
        "results/logs/pretrain/{model}.log",
    benchmark:
        "results/benchmarks/pretrain/{model}.tsv"
    conda:
        CONDA_ENV_GPU
    threads: job_threads("pretrain")
    resources:
        **job_resources("pretrain"),
    params:
        launch=lambda wildcards, threads, resources: launcher(
            resources, threads, "pretrain"
        ),
        # read from resources, so that a new value changes the micro-batch without rerunning the model
        gpu_mem=lambda wildcards, resources: resources.gpu_mem_gb,
        packed=packed_args,
        source=lambda wildcards: plan.model_source_args(STUDY, wildcards.model),
    shell:
        "{params.launch} -m workflow_scripts.pretrain.pretrain --settings {input.settings}"
        " --gpu-mem-gb {params.gpu_mem}"
        " {params.packed} {params.source} --out results/pretrain/{wildcards.model} 2> {log}"
