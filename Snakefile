from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/download.smk"
include: "rules/corpus.smk"
include: "rules/vocab.smk"
include: "rules/pack.smk"
include: "rules/pretrain.smk"
include: "rules/distill.smk"
include: "rules/tasks.smk"
include: "rules/finetune.smk"
include: "rules/report.smk"
include: "rules/targets.smk"


rule all:
    default_target: True
    input:
        TABLES,
        CORPUS_TABLES,
        PLOTS,
        HELDOUT_TABLES,
