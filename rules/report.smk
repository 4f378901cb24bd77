localrules:
    report_settings,
    tables,
    plots,


rule report_settings:
    output:
        "results/configs/report.yaml",
    log:
        "results/logs/report_settings.log",
    params:
        settings=plan.report_settings(STUDY, workflow.basedir),
    run:
        write_settings(output[0], params.settings)


rule tables:
    input:
        settings="results/configs/report.yaml",
        runs=all_run_metrics(),
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
        settings="results/configs/report.yaml",
        runs=all_run_metrics(),
        models=[
            f"{plan.model_dir(STUDY, m)}/provenance.json"
            for m in PRETRAINED + DISTILLED
        ],
        diagnostics=expand("results/vocab/{vocab}/diagnostics.json", vocab=VOCABS),
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
