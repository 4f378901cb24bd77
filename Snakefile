from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow_scripts/report/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/download.smk"
include: "rules/corpus.smk"
include: "rules/vocab.smk"
include: "rules/pretrain.smk"
include: "rules/distill.smk"
include: "rules/controls.smk"
include: "rules/tasks.smk"
include: "rules/finetune.smk"
include: "rules/report.smk"
include: "rules/findings.smk"
include: "rules/targets.smk"


rule all:
    default_target: True
    input:
        TABLES,
        CORPUS_TABLES,
        PLOTS,
        HELDOUT_TABLES,
        FINDINGS,
