from snakemake.utils import min_version

min_version("9.1.5")


configfile: "config.yaml"


report: "workflow_scripts/report/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/download.smk"
include: "rules/corpus.smk"
include: "rules/vocab.smk"
include: "rules/pack.smk"
include: "rules/pretrain.smk"
include: "rules/distill.smk"
include: "rules/controls.smk"
include: "rules/tasks.smk"
include: "rules/finetune.smk"
include: "rules/report.smk"
include: "rules/targets.smk"


# A study without corpora, tasks or distilled models has no such tables to write.
rule all:
    default_target: True
    input:
        TABLES if TASKS and EVALUATED else [],
        CORPUS_TABLES if CORPORA else [],
        PLOTS,
        HELDOUT_TABLES if HELDOUT_MODELS else [],
        FINDINGS if TASKS and EVALUATED else [],
        COST if TASKS and EVALUATED else [],
