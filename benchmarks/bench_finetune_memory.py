"""GPU memory of one fine-tuning run of BERT-base and BERT-large at each task's batch size and
length in the full study (config.yaml), and the runs per card that ``runs_per_gpu: auto`` chooses
for an 80 GB card. Arithmetic only (workflow_scripts/finetune/memory.py, whose activation bytes
were measured on the CPU): estimates, no GPU produced them.

    python benchmarks/bench_finetune_memory.py [--card-gb 80] [--out benchmarks/results/finetune_memory.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from workflow_scripts.atomic import write_json
from workflow_scripts.config import gpu_share, step_settings
from workflow_scripts.config.validate import load_config
from workflow_scripts.finetune import memory

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"BERT-base": memory.BERT_BASE, "BERT-large": memory.BERT_LARGE}


def task_rows(card_gb: int) -> list[dict]:
    study = load_config(yaml.safe_load((ROOT / "config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")
    # a model without finetune keys of its own: every task's settings as the study resolves them
    model = next(name for name, m in study.models.items() if not m.finetune)
    rows = []
    for task in study.resolved_tasks:
        settings = step_settings.finetune_settings(study, model, task)
        ft = settings["finetune"]
        for name, shape in SHAPES.items():
            batch = gpu_share.pass_examples(settings)
            parts = memory.estimate(shape, batch, ft["max_length"], gpu_share.run_precision(settings))
            rows.append(
                {
                    "task": task,
                    "model": name,
                    "parameters_m": round(shape.parameters / 1e6, 1),
                    "batch": batch,
                    "length": ft["max_length"],
                    "precision": gpu_share.run_precision(settings),
                    **{f"{k}_gib": v for k, v in parts.items()},
                    "runs_per_card": gpu_share.auto_runs_per_gpu(shape, settings, card_gb),
                }
            )
    return rows


def table(rows: list[dict], card_gb: int) -> str:
    head = (
        "| task | model | batch x length | precision | weights + grads + AdamW | autocast copies | activations "
        f"| total (+context, +20%) | runs per {card_gb} GB card |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {r['task']} | {r['model']} | {r['batch']} x {r['length']} | {r['precision']} "
        f"| {r['weights_gib'] + r['gradients_gib'] + r['adamw_state_gib']:.2f} | {r['autocast_weight_copies_gib']:.2f} "
        f"| {r['activations_gib']:.2f} | {r['total_gib']:.1f} | {r['runs_per_card']} |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card-gb", type=int, default=80)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/finetune_memory.json"))
    args = parser.parse_args()
    rows = task_rows(args.card_gb)
    write_json(args.out, {"card_gb": args.card_gb, "estimate": "workflow_scripts/finetune/memory.py", "runs": rows})
    print(table(rows, args.card_gb))


if __name__ == "__main__":
    main()
