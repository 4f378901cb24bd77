"""Where every artifact lives: the path templates the rules declare and the plan fills in.

Each template names its Snakemake wildcards in braces; ``str.format`` with the same names gives
one job's path. Nothing here imports a stage, so the rules and every stage may import it.
"""

from __future__ import annotations

RESULTS = "results"

RAW = f"{RESULTS}/raw/{{corpus}}/{{file}}"
TASK_RAW = f"{RESULTS}/raw/tasks/{{task}}/{{file}}"
HUB_MODEL = f"{RESULTS}/raw/models/{{model}}"  # a hub checkpoint's snapshot at its pinned commit
PARSED = f"{RESULTS}/parsed/{{corpus}}/{{file}}.parquet"
CORPUS = f"{RESULTS}/corpus/{{corpus}}"
VOCAB = f"{RESULTS}/vocab/{{vocab}}"
MODEL = f"{RESULTS}/{{kind}}/{{model}}"  # a model built here, by its kind (pretrain, distill, control)
PRETRAINED = MODEL.format(kind="pretrain", model="{model}")
DISTILLED = MODEL.format(kind="distill", model="{model}")
CONTROL = MODEL.format(kind="control", model="{model}")  # a model's architecture with random weights
# {packing}: empty for packing: concatenate, "packing~documents/" for documents
PACKED = f"{RESULTS}/packed/{{tokenizer}}/{{corpus}}/{{packing}}seq~{{seq_len}}/heldout~{{heldout}}"
TASK = f"{RESULTS}/tasks/{{task}}"
RUN = f"{RESULTS}/finetune/{{model}}/{{task}}/fold~{{fold}}/seed~{{seed}}"
# One pretraining seed of a model that lists several (pretrain_seeds): its own model name, so its
# pretraining, distillation and fine-tuning have paths and jobs of their own.
PRETRAIN_SEED = "{model}/pseed~{seed}"
TABLES = f"{RESULTS}/tables"
SPEED = f"{RESULTS}/speed/{{model}}.json"  # a model's inference throughput

# The resolved settings each step reads, written by the settings rules.
PARSE_SETTINGS = f"{RESULTS}/configs/parse/{{corpus}}.yaml"
CORPUS_SETTINGS = f"{RESULTS}/configs/corpus/{{corpus}}.yaml"
VOCAB_SETTINGS = f"{RESULTS}/configs/vocab/{{vocab}}.yaml"
MODEL_SETTINGS = f"{RESULTS}/configs/models/{{model}}.yaml"
TASK_SETTINGS = f"{RESULTS}/configs/tasks/{{task}}.yaml"
FINETUNE_SETTINGS = f"{RESULTS}/configs/finetune/{{model}}/{{task}}.yaml"
BASELINE_SETTINGS = f"{RESULTS}/configs/baseline/{{model}}/{{task}}.yaml"
REPORT_SETTINGS = f"{RESULTS}/configs/report.yaml"
SPEED_SETTINGS = f"{RESULTS}/configs/inference_speed.yaml"
COST_SETTINGS = f"{RESULTS}/configs/cost.yaml"
TASK_REPORT_SETTINGS = f"{RESULTS}/configs/report/task~{{task}}.yaml"
