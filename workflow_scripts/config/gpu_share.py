"""How many fine-tuning runs share one GPU, as Snakemake resources of the group job.

A run takes ``GPU_SHARE_UNITS // runs_per_gpu`` of the resource ``gpu_share``; the profiles give
each group job (Slurm: each allocation, scope ``local``) ``GPU_SHARE_UNITS`` of it. Snakemake's
group resource computation then lays a group's runs out in layers of at most one card's worth
(runs of different models mix: 4 large runs take what 8 base runs take), asks for the widest
layer's threads and memory and for the layers' runtimes in sequence, and runs a layer's runs
side by side. ``GPU_SHARE_UNITS`` is 840, the least common multiple of 1 to 8, so every
``runs_per_gpu`` up to ``memory.MAX_RUNS_PER_GPU`` divides a card exactly.

A run is sized at its longest batch: the task's longest example as the task registry records it
(``size``, counted in the real release files), padded up as a GPU pads it, at most ``max_length``;
and given a time limit from the task's examples, epochs and mean length (``runtime: auto``,
finetune/runtime.py). Both are arithmetic on the config: planning reads no data.

The group job's GPUs are a string resource: Snakemake sums integer resources over the runs a
layer holds (three runs of one GPU each become ``--gpus=3``) but passes a string that all runs
share as it is, so the allocation asks for the runs' card once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..cards.plan import CARD_UNITS as GPU_SHARE_UNITS
from ..encoder_shape import Shape, read_shape
from ..finetune import buckets, memory, runtime
from ..finetune.settings import gpu_precision
from ..tasks.spec import TaskSize, TaskSpec

# a vocabulary may split the words into up to a quarter more pieces than bert-base-uncased's, in
# which the registry's sizes are counted
LENGTH_MARGIN = 1.25
FALLBACK_RUNTIME = 240  # minutes of a run whose task size is unknown (runtime: auto)


# a run is sized by its model directory's config.json (rules/common.smk)
model_shape = read_shape


def run_precision(settings: dict[str, Any]) -> str:
    """The autocast precision a run's resolved settings train in on a GPU."""
    return gpu_precision(settings["finetune"].get("precision", "auto"), settings["task"].get("type"))


def pass_examples(settings: dict[str, Any]) -> int:
    """Examples one forward and backward pass holds: the micro-batch where one is set, of the
    largest batch size the run's grid trains."""
    ft = settings["finetune"]
    batch = max((ft.get("grid") or {}).get("batch_size") or [ft["batch_size"]])
    return min(int(batch), int(ft.get("micro_batch_size") or batch))


@dataclass(frozen=True)
class RunLengths:
    """Sub-tokens per example of one run: of its longest batch (memory), on average (time), and
    the length attention spans (a chunk's where inputs are read in chunks)."""

    longest: int
    mean: int
    attention: int


def run_lengths(settings: dict[str, Any], size: TaskSize | None, context: int) -> RunLengths:
    """A run's lengths from the task's recorded size: its longest and mean example with
    ``LENGTH_MARGIN``, padded up as a GPU pads them (a multiple of ``buckets.MULTIPLE``, the CUDA-graph
    bucket with ``cuda_graphs``, whole chunks for chunked inputs), at most what the run reads of
    an example; that most where the size is unknown."""
    ft = settings["finetune"]
    length = int(ft.get("max_length") or settings["task"].get("max_length") or context)
    if ft.get("chunking"):
        unit = int(ft.get("chunk_length") or context)
        cap = min(length, unit * ft["max_chunks"]) if ft.get("max_chunks") else length
    else:
        unit, cap = buckets.MULTIPLE, min(length, context)

    def padded(tokens: float | None) -> int:
        if tokens is None:
            return cap
        width = unit * math.ceil(tokens * LENGTH_MARGIN / unit)
        if ft.get("cuda_graphs") and not ft.get("chunking"):
            width = buckets.bucket_for(width, buckets.bucket_lengths(cap, graphs=True))
        return min(cap, width)

    size = size or TaskSize()
    longest = padded(size.max_tokens)
    return RunLengths(longest, padded(size.mean_tokens), min(longest, unit) if ft.get("chunking") else longest)


def auto_runs_per_gpu(shape: Shape | None, settings: dict[str, Any], card_gb: int, size: TaskSize | None = None) -> int:
    """Runs that fit one card of ``card_gb`` GB by the fine-tuning memory estimate, at the run's
    (micro-)batch size and the length of its longest batch; 1 where the model's shape is not
    known yet."""
    if shape is None:
        return 1
    longest = run_lengths(settings, size, shape.positions).longest
    total = memory.estimate(shape, pass_examples(settings), longest, run_precision(settings))["total"]
    return memory.runs_per_gpu(total, card_gb * 1e9 / memory.GIB)


def runs_per_gpu(
    setting: int | str,
    gpus: int,
    shape: Shape | None,
    settings: dict,
    card_gb: int,
    size: TaskSize | None = None,
) -> int:
    """``resources.finetune.runs_per_gpu`` resolved for one run. ``auto`` on the CPU (gpu: 0)
    is 0: CPU runs share an allocation by its cores alone, as Snakemake schedules threads."""
    if setting != "auto":
        return int(setting)
    if gpus == 0:
        return 0
    if gpus > 1:
        return 1  # a run on several GPUs (torchrun) has its allocation to itself
    return auto_runs_per_gpu(shape, settings, card_gb, size)


def task_examples(spec: TaskSpec) -> dict[str, int] | None:
    """Train, dev and test examples of one run's data (per fold), from the task's size, else its
    expected counts; None where train or dev is unknown."""
    size, counts = spec.size or TaskSize(), spec.expected_counts
    train, dev = size.train or counts.get("train"), size.dev or counts.get("dev")
    return {"train": train, "dev": dev, "test": counts.get("test")} if train and dev else None


def estimated_minutes(shape: Shape | None, settings: dict[str, Any], spec: TaskSpec, runs: int) -> int | None:
    """The time limit (minutes) ``runtime: auto`` gives a run on one GPU beside ``runs - 1``
    others (finetune/runtime.py); a model not there yet is taken as BERT-large. None where the
    task's size is unknown."""
    examples = task_examples(spec)
    if examples is None:
        return None
    shape = shape or memory.BERT_LARGE
    lengths = run_lengths(settings, spec.size, shape.positions)
    seconds = runtime.run_seconds(shape, settings["finetune"], examples, lengths.mean, lengths.attention, max(runs, 1))
    return runtime.limit_minutes(seconds)


@dataclass(frozen=True)
class RunPlan:
    runs_per_gpu: int
    runtime: int  # minutes of the first attempt
    estimate: int | None  # minutes runtime: auto would give; None where the task's size is unknown


def plan_run(res: Any, shape: Shape | None, settings: dict[str, Any], spec: TaskSpec) -> RunPlan:
    """Runs per card and time limit of one fine-tuning run (``res``: the rule's JobResources)."""
    runs = runs_per_gpu(res.runs_per_gpu, res.gpu, shape, settings, res.gpu_mem_gb, spec.size)
    estimate = estimated_minutes(shape, settings, spec, runs) if res.gpu else None
    if res.runtime != "auto":
        return RunPlan(runs, res.runtime, estimate)
    return RunPlan(runs, FALLBACK_RUNTIME if estimate is None else estimate, estimate)


def gpu_share(runs: int) -> int:
    """The ``gpu_share`` units one run takes when ``runs`` share a card; 0 takes none."""
    return GPU_SHARE_UNITS // runs if runs else 0


def group_gpus(gpus: int) -> int | str:
    """The run's ``gpu`` resource: a string for a GPU run, so that a group job asks for the
    card its runs share once instead of once per run; 0 (no GPU) stays a number."""
    return str(gpus) if gpus else 0
