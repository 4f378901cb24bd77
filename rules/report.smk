localrules:
    report_settings,
    tables,
    plots,
    corpus_table,


rule report_settings:
    output:
        paths.REPORT_SETTINGS,
    log:
        "results/logs/report_settings.log",
    params:
        settings=plan.report_settings(STUDY, WORKFLOW_ROOT),
    run:
        write_settings(output[0], params.settings)


rule tables:
    input:
        settings=paths.REPORT_SETTINGS,
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
        settings=paths.REPORT_SETTINGS,
        runs=all_run_metrics(),
        models=[
            f"{plan.model_dir(STUDY, m)}/provenance.json"
            for m in PRETRAINED + DISTILLED
        ],
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
        "python -m workflow_scripts.report.corpora {params.corpora}"
        " --published {input.published} --out results/tables 2> {log}"
