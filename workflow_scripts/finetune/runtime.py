"""Wall time of one fine-tuning run on a GPU, estimated before it starts: the Slurm time limit of
``resources.finetune.runtime: auto``. An estimate, not a measurement.

A forward and backward pass takes the longer of its host time (Python, dispatch and kernel
launches: one process a run, on its own cores) and the GPU time of every run sharing the card
(the card runs their kernels in turn). Both figures come from one BERT-base bf16 step measured
on an H100 (../shared/reviews/gpu-measured-h100.md: NER-shaped, 32 x 12-90 sub-tokens, about
51 on average, cuDNN attention off): about 38 ms of host time and 8 ms of GPU time. Host time
scales with the layers, GPU time with the FLOPs (2 per matmul parameter and token, plus
attention, forward; three times that with the backward). The model agrees with that page's card
totals: 842 examples/s for one run (measured 831); and with today's bf16 step, whose host time
is 195 ms (164 examples/s alone), 656 and 1,313 for 4 and 8 runs (measured 646 and 1,233). The GPU rate, about 11% of
the card's bf16 peak, is that of a small step: longer inputs run faster, so the estimate errs
long there. Evaluation is a forward pass (a third of both). The time limit is ``MARGIN`` times the
estimate, for what the model leaves out (a slower card, data loading, checkpoints), plus
``STARTUP_S`` (interpreter, checkpoint, tokenising, compiling the step per length bucket).
"""

from __future__ import annotations

import math
from typing import Any

from ..encoder_shape import Shape, matmul_flops
from .memory import BERT_BASE
from .settings import planned_steps

MEASURED_STEP = {"layers": 12, "host_s": 0.038, "gpu_s": 0.008, "examples": 32, "mean_tokens": 51}
MARGIN = 2.0  # the time limit over the estimate
STARTUP_S = 600
MIN_LIMIT_MINUTES = 30
EVAL_SHARE = 1 / 3  # a forward pass's share of a training pass


def flops_per_token(shape: Shape, attention_length: int) -> float:
    """FLOPs of one token's forward pass: the matmuls and attention's two products over the length."""
    return matmul_flops(shape.matmul_parameters, shape.hidden, shape.layers * attention_length)


def _rates() -> tuple[float, float]:
    """Host seconds per layer of a training pass, and the GPU's FLOP/s, from the measured step."""
    m = MEASURED_STEP
    flops = 3 * m["examples"] * m["mean_tokens"] * flops_per_token(BERT_BASE, m["mean_tokens"])
    return m["host_s"] / m["layers"], flops / m["gpu_s"]


HOST_S_PER_LAYER, GPU_FLOP_PER_S = _rates()


def pass_seconds(shape: Shape, examples: int, tokens: int, attention_length: int, runs: int, train: bool) -> float:
    """One pass of ``examples`` inputs of ``tokens`` each, with ``runs`` runs sharing the card."""
    share = 1.0 if train else EVAL_SHARE
    host = HOST_S_PER_LAYER * shape.layers * share
    gpu = 3 * share * examples * tokens * flops_per_token(shape, attention_length) / GPU_FLOP_PER_S
    return max(host, runs * gpu)


def run_seconds(
    shape: Shape, ft: dict[str, Any], examples: dict[str, int], tokens: int, attention: int, runs: int
) -> float:
    """Estimated seconds of one run: every training of its grid (lr x batch size), each with its dev
    evaluations, and the test split scored once per training. ``examples``: train, dev and test
    (test taken as dev-sized where unknown); ``tokens``: sub-tokens an example puts through the
    model on average; ``attention``: the length attention spans (a chunk's, for chunked inputs)."""
    grid = ft.get("grid") or {}
    learning_rates = len(grid.get("lr") or [ft["lr"]])
    dev, test = examples["dev"], examples.get("test") or examples["dev"]
    eval_pass = pass_seconds(shape, ft["eval_batch_size"], tokens, attention, runs, train=False)
    total = 0.0
    for batch in grid.get("batch_size") or [ft["batch_size"]]:
        steps = planned_steps(examples["train"], batch, ft["epochs"], ft.get("max_steps"))
        micro = min(batch, ft.get("micro_batch_size") or batch)
        train = steps * math.ceil(batch / micro) * pass_seconds(shape, micro, tokens, attention, runs, train=True)
        evaluations = steps // ft["eval_every"] + 1 if ft.get("eval_every") else ft["epochs"]
        scoring = (
            evaluations * math.ceil(dev / ft["eval_batch_size"]) + math.ceil(test / ft["eval_batch_size"])
        ) * eval_pass
        total += learning_rates * (train + scoring)
    return total


def limit_minutes(seconds: float) -> int:
    """The time limit for an estimate: ``MARGIN`` times as long plus the start-up, up in steps of
    10 minutes, at least ``MIN_LIMIT_MINUTES``."""
    return max(MIN_LIMIT_MINUTES, 10 * math.ceil((MARGIN * seconds + STARTUP_S) / 600))
