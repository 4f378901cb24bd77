"""How many fine-tuning runs share one GPU, as Snakemake resources of the group job.

A run takes ``GPU_SHARE_UNITS // runs_per_gpu`` of the resource ``gpu_share``; the profiles give
each group job (Slurm: each allocation, scope ``local``) ``GPU_SHARE_UNITS`` of it. Snakemake's
group resource computation then lays a group's runs out in layers of at most one card's worth
(runs of different models mix: 4 large runs take what 8 base runs take), asks for the widest
layer's threads and memory and for the layers' runtimes in sequence, and runs a layer's runs
side by side. ``GPU_SHARE_UNITS`` is 840, the least common multiple of 1 to 8, so every
``runs_per_gpu`` up to ``memory.MAX_RUNS_PER_GPU`` divides a card exactly.

The group job's GPUs are a string resource: Snakemake sums integer resources over the runs a
layer holds (three runs of one GPU each become ``--gpus=3``) but passes a string that all runs
share as it is, so the allocation asks for the runs' card once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..finetune import memory

GPU_SHARE_UNITS = 840


def model_shape(model_dir: str) -> memory.Shape | None:
    """The model's shape from its ``config.json``; None where it is not there yet (a dry run
    before the model is trained or fetched) or does not describe an encoder."""
    path = Path(model_dir) / "config.json"
    try:
        cfg = json.loads(path.read_text())
        return memory.Shape(
            layers=int(cfg["num_hidden_layers"]),
            hidden=int(cfg["hidden_size"]),
            intermediate=int(cfg["intermediate_size"]),
            vocab=int(cfg["vocab_size"]),
            positions=int(cfg.get("max_position_embeddings", 512)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_precision(settings: dict[str, Any]) -> str:
    """The autocast precision a run trains in on a GPU (``precision: auto`` is bf16 but for
    regression, which stays fp32)."""
    precision = settings["finetune"].get("precision", "auto")
    if precision == "auto":
        return "fp32" if settings["task"].get("type") == "similarity" else "bf16"
    return precision


def pass_examples(settings: dict[str, Any]) -> int:
    """Examples one forward and backward pass holds: the micro-batch where one is set."""
    ft = settings["finetune"]
    return min(int(ft["batch_size"]), int(ft.get("micro_batch_size") or ft["batch_size"]))


def auto_runs_per_gpu(shape: memory.Shape | None, settings: dict[str, Any], card_gb: int) -> int:
    """Runs that fit one card of ``card_gb`` GB by the fine-tuning memory estimate, at the run's
    (micro-)batch size and length; 1 where the model's shape is not known yet."""
    if shape is None:
        return 1
    ft = settings["finetune"]
    length = ft.get("max_length") or settings["task"].get("max_length") or shape.positions
    total = memory.estimate(shape, pass_examples(settings), int(length), run_precision(settings))["total"]
    return memory.runs_per_gpu(total, card_gb * 1e9 / memory.GIB)


def runs_per_gpu(setting: int | str, gpus: int, shape: memory.Shape | None, settings: dict, card_gb: int) -> int:
    """``resources.finetune.runs_per_gpu`` resolved for one run. ``auto`` on the CPU (gpu: 0)
    is 0: CPU runs share an allocation by its cores alone, as Snakemake schedules threads."""
    if setting != "auto":
        return int(setting)
    if gpus == 0:
        return 0
    if gpus > 1:
        return 1  # a run on several GPUs (torchrun) has its allocation to itself
    return auto_runs_per_gpu(shape, settings, card_gb)


def gpu_share(runs: int) -> int:
    """The ``gpu_share`` units one run takes when ``runs`` share a card; 0 takes none."""
    return GPU_SHARE_UNITS // runs if runs else 0


def group_gpus(gpus: int) -> int | str:
    """The run's ``gpu`` resource: a string for a GPU run, so that a group job asks for the
    card its runs share once instead of once per run; 0 (no GPU) stays a number."""
    return str(gpus) if gpus else 0
