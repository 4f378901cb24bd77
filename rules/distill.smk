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
        packed=packed_args,
        teacher=lambda wildcards: plan.model_dir(
            STUDY, STUDY.models[wildcards.model].teacher
        ),
        init=lambda wildcards: plan.model_source_args(STUDY, wildcards.model),
    shell:
        "{params.launch} -m workflow_scripts.distill.train --settings {input.settings}"
        " --teacher {params.teacher} {params.packed} {params.init}"
        " --out results/distill/{wildcards.model} 2> {log}"


# Held-out MLM loss of every distilled student beside its teacher and its "train longer"
# control (Lewis et al. §7), all evaluated on the same held-out blocks with the same masks.
HELDOUT_MODELS = list(
    dict.fromkeys(
        m
        for s in DISTILLED
        for m in (STUDY.models[s].teacher, s)
        if STUDY.models[m].kind != "external"
    )
)
HELDOUT_TABLES = ["results/tables/heldout_mlm.csv", "results/tables/heldout_mlm.md"]


localrules:
    heldout_table,


rule heldout_table:
    input:
        models=[f"{model_dir(m)}/provenance.json" for m in HELDOUT_MODELS],
    output:
        csv="results/tables/heldout_mlm.csv",
        md=report(
            "results/tables/heldout_mlm.md",
            caption=f"{CAPTIONS}/heldout_mlm.rst",
            category="Tables",
        ),
        provenance="results/tables/heldout_mlm.provenance.json",
    log:
        "results/logs/heldout_table.log",
    conda:
        CONDA_ENV
    params:
        models=[model_dir(m) for m in HELDOUT_MODELS],
    shell:
        "python -m workflow_scripts.distill.heldout_table --model {params.models}"
        " --out results/tables 2> {log}"
