"""GPU memory of one fine-tuning run of BERT-base and BERT-large at each task's batch size and
the length of its longest batch in the full study (config.yaml), the runs per card that
``runs_per_gpu: auto`` chooses for an 80 GB card, and the time limit of ``runtime: auto``.
Arithmetic only (workflow_scripts/finetune/memory.py, whose activation bytes were measured on the
CPU; finetune/runtime.py, whose rates come from one measured H100 step): estimates, no GPU
produced them.

    python benchmarks/bench_finetune_memory.py [--card-gb 80] [--out benchmarks/results/finetune_memory.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from workflow_scripts.atomic import write_json
from workflow_scripts.config import gpu_share, step_settings
from workflow_scripts.config.resources import JobResources
from workflow_scripts.config.validate import load_config
from workflow_scripts.finetune import memory

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"BERT-base": memory.BERT_BASE, "BERT-large": memory.BERT_LARGE}


def task_rows(card_gb: int) -> list[dict]:
    study = load_config(yaml.safe_load((ROOT / "config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")
    # a model without finetune keys of its own: every task's settings as the study resolves them
    model = next(name for name, m in study.models.items() if not m.finetune)
    res = JobResources(gpu=1, gpu_mem_gb=card_gb, runtime="auto")
    rows = []
    for task, resolved in study.resolved_tasks.items():
        settings = step_settings.finetune_settings(study, model, task)
        spec = resolved.spec
        for name, shape in SHAPES.items():
            batch = gpu_share.pass_examples(settings)
            lengths = gpu_share.run_lengths(settings, spec.size, shape.positions)
            parts = memory.estimate(shape, batch, lengths.longest, gpu_share.run_precision(settings))
            plan = gpu_share.plan_run(res, shape, settings, spec)
            rows.append(
                {
                    "task": task,
                    "model": name,
                    "parameters_m": round(shape.parameters / 1e6, 1),
                    "batch": batch,
                    "length": lengths.longest,
                    "mean_length": lengths.mean,
                    "max_length": settings["finetune"]["max_length"],
                    "length_from": spec.size.source if spec.size and spec.size.max_tokens else "max_length",
                    "precision": gpu_share.run_precision(settings),
                    **{f"{k}_gib": v for k, v in parts.items()},
                    "runs_per_card": plan.runs_per_gpu,
                    "runs_per_card_at_max_length": gpu_share.auto_runs_per_gpu(shape, settings, card_gb),
                    "runtime_limit_min": plan.runtime,
                    "runtime_estimated": plan.estimate is not None,
                }
            )
    return rows


def table(rows: list[dict], card_gb: int) -> str:
    head = (
        "| task | model | batch x length | precision | weights + grads + AdamW | autocast copies | activations "
        f"| total (+context, +20%) | runs per {card_gb} GB card (at max_length) | time limit, min |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"| {r['task']} | {r['model']} | {r['batch']} x {r['length']} | {r['precision']} "
        f"| {r['weights_gib'] + r['gradients_gib'] + r['adamw_state_gib']:.2f} | {r['autocast_weight_copies_gib']:.2f} "
        f"| {r['activations_gib']:.2f} | {r['total_gib']:.1f} "
        f"| {r['runs_per_card']} ({r['runs_per_card_at_max_length']}) "
        f"| {r['runtime_limit_min']}{'' if r['runtime_estimated'] else ' (fallback)'} |"
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
