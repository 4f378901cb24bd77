localrules:
    report_settings,
    tables,
    plots,
    corpus_table,
    heldout_table,
    findings,
    inference_speed_settings,
    cost_settings,
    cost,


# The provenance record of every model trained here: the plots and the cost table read them.
TRAINING_RECORDS = [
    f"{plan.model_dir(STUDY, m)}/provenance.json" for m in PRETRAINED + DISTILLED
]


rule report_settings:
    output:
        paths.REPORT_SETTINGS,
    log:
        "results/logs/report_settings.log",
    params:
        settings=step_settings.report_settings(STUDY, WORKFLOW_ROOT),
    run:
        write_settings(output[0], params.settings)


rule tables:
    input:
        settings=paths.REPORT_SETTINGS,
        runs=lambda wildcards: all_run_files(),
    output:
        with_captions(TABLES),
        missing=report(
            "results/tables/missing.md",
            caption=f"{CAPTIONS}/missing.rst",
            category="Tables",
        ),
        provenance="results/tables/provenance.json",
    log:
        "results/logs/tables.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.report.tables --settings {input.settings}"
        " --out results/tables 2> {log}"


rule plots:
    input:
        settings=paths.REPORT_SETTINGS,
        runs=lambda wildcards: all_run_files(),
        models=TRAINING_RECORDS,
        diagnostics=expand(f"{paths.VOCAB}/diagnostics.json", vocab=VOCABS),
    output:
        with_captions(PLOTS),
        provenance="results/tables/plots.provenance.json",
    log:
        "results/logs/plots.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.report.plots --settings {input.settings}"
        " --out results/tables 2> {log}"


rule corpus_table:
    input:
        stats=corpus_markers(CORPORA),
        published=workflow.source_path("../resources/reference/corpora_published.csv"),
    output:
        with_captions(CORPUS_TABLES),
        provenance="results/tables/corpora.provenance.json",
    log:
        "results/logs/corpus_table.log",
    conda:
        CONDA_ENV
    params:
        corpora=plan.corpus_args(CORPORA),
    shell:
        "python -m workflow_scripts.report.corpus_table {params.corpora}"
        " --published {input.published:q} --out results/tables 2> {log}"


# Held-out MLM loss of every distilled student beside its teacher and its "train longer"
# control (Lewis et al. §7), all evaluated on the same held-out blocks with the same masks,
# then of every other model pretrained here, each on its own corpora's held-out blocks.
HELDOUT_MODELS = list(
    dict.fromkeys(
        [
            *(
                m
                for s in DISTILLED
                for m in (STUDY.models[s].teacher, s)
                if STUDY.models[m].kind != "external"
            ),
            *(m for m in PRETRAINED if STUDY.models[m].pretrain.objective == "mlm"),
        ]
    )
)
HELDOUT_TABLES = ["results/tables/heldout_mlm.csv", "results/tables/heldout_mlm.md"]


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
        "python -m workflow_scripts.report.heldout_table --model {params.models}"
        " --out results/tables 2> {log}"


# The findings stated in sentences from the tables (findings.md), and a page of the HTML
# report with the findings, the main tables and the plots (also on the report's first page).
FINDINGS = [f"{paths.TABLES}/findings.md", f"{paths.TABLES}/findings.html"]


rule findings:
    input:
        settings=paths.REPORT_SETTINGS,
        tables=[
            f"{paths.TABLES}/{table}.csv"
            for table in ("comparisons", "medians", "spread", "groups")
        ],
        plots=PLOTS,
        heldout=HELDOUT_TABLES[:1] if HELDOUT_MODELS else [],
    output:
        md=FINDINGS[0],
        html=report(
            FINDINGS[1],
            caption=f"{CAPTIONS}/findings.rst",
            category="Findings",
        ),
        provenance="results/tables/findings.provenance.json",
    log:
        "results/logs/findings.log",
    conda:
        CONDA_ENV
    params:
        heldout=lambda wildcards, input: (
            f"--heldout {input.heldout}" if input.heldout else ""
        ),
        plots=lambda wildcards, input: " ".join(f"--plot {p}" for p in input.plots),
    shell:
        "python -m workflow_scripts.report.findings --settings {input.settings}"
        " --tables results/tables {params.heldout} {params.plots} 2> {log}"


# What each model cost beside its scores: a few timed forward passes per model (rerun only when
# its model or these settings change), then the table and plot summed from the jobs' records.
SPEED_MODELS = cost_plan.speed_models(STUDY)
COST = expand(f"{paths.TABLES}/cost.{{ext}}", ext=["csv", "md", "tex", "png"])


rule inference_speed_settings:
    output:
        paths.SPEED_SETTINGS,
    log:
        "results/logs/inference_speed_settings.log",
    params:
        settings=cost_plan.speed_settings(STUDY),
    run:
        write_settings(output[0], params.settings)


rule inference_speed:
    input:
        settings=paths.SPEED_SETTINGS,
        model=lambda wildcards: model_marker(wildcards.model),
    output:
        speed=paths.SPEED,
        provenance=f"{paths.SPEED}.provenance.json",
    # No benchmark file: the run forks from the preloaded interpreter, outside the command's process
    # tree that Snakemake measures (it recorded the client's few MB and ~0 CPU s); results/speed/ has its timings.
    log:
        "results/logs/inference_speed/{model}.log",
    wildcard_constraints:
        model=_names(SPEED_MODELS),
    conda:
        CONDA_ENV_GPU
    threads: job_threads("inference_speed")
    resources:
        **job_resources("inference_speed"),
    params:
        launch=lambda wildcards, threads, resources: launcher(
            resources, threads, "inference_speed"
        ),
        model=lambda wildcards: shell_word(model_dir(wildcards.model)),
    shell:
        "{params.launch} -m workflow_scripts.preload workflow_scripts.report.inference_speed"
        " --settings {input.settings} --model {params.model} --out {output.speed} 2> {log}"


rule cost_settings:
    output:
        paths.COST_SETTINGS,
    log:
        "results/logs/cost_settings.log",
    params:
        settings=cost_plan.cost_settings(STUDY, WORKFLOW_ROOT),
    run:
        write_settings(output[0], params.settings)


rule cost:
    input:
        settings=paths.COST_SETTINGS,
        speed=expand(paths.SPEED, model=SPEED_MODELS),
        models=TRAINING_RECORDS,
        runs=lambda wildcards: all_run_files("provenance.json"),
        scores=[f"{paths.TABLES}/groups.csv", f"{paths.TABLES}/blurb.csv"],
        reported=workflow.source_path("../resources/reference/pretraining_compute.csv"),
    output:
        f"{paths.TABLES}/cost.csv",
        report(
            f"{paths.TABLES}/cost.md",
            caption=f"{CAPTIONS}/cost.rst",
            category="Tables",
        ),
        f"{paths.TABLES}/cost.tex",
        report(
            f"{paths.TABLES}/cost.png",
            caption=f"{CAPTIONS}/cost_plot.rst",
            category="Plots",
        ),
        provenance="results/tables/cost.provenance.json",
    log:
        "results/logs/cost.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.report.cost --settings {input.settings}"
        " --out results/tables 2> {log}"
