# The findings stated in sentences from the tables (findings.md), and a page of the HTML
# report with the findings, the main tables and the plots (also on the report's first page).
FINDINGS = ["results/tables/findings.md", "results/tables/findings.html"]


localrules:
    findings,


rule findings:
    input:
        settings="results/configs/report.yaml",
        tables=[
            "results/tables/comparisons.csv",
            "results/tables/medians.csv",
            "results/tables/spread.csv",
            "results/tables/groups.csv",
        ],
        plots=PLOTS,
        heldout=HELDOUT_TABLES[:1] if HELDOUT_MODELS else [],
    output:
        md="results/tables/findings.md",
        html=report(
            "results/tables/findings.html",
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
