"""The learning-rate curve of every training step, as pure arithmetic on update counts: warm-up
from 0 over W = int(warmup_ratio x total) updates, then ``linear`` decay to 0, ``constant``, or
``wsd``. Free of torch, so that the Snakefile's settings checks (decay branches' warm-up and
decay starts) plan a study without importing it; :mod:`workflow_scripts.optim` builds the
scheduler from these."""

from __future__ import annotations

import math
from dataclasses import dataclass


def warmup_steps(warmup_ratio: float, total: int) -> int:
    """``warmup_ratio``: the fraction of a run's planned updates spent warming up, rounded down."""
    return int(warmup_ratio * total)


def linear_factor(step: int, total: int, warmup: int) -> float:
    """The fraction of the peak learning rate that update ``step`` (from 0) runs at, on curve ``linear``."""
    if step < warmup:
        return step / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


@dataclass(frozen=True)
class Curve:
    """The learning-rate curve after warm-up: ``linear`` decay to 0 at the end, ``constant`` at the
    peak, or ``wsd`` (warm-up, stable, decay): at the peak until the last ``decay_ratio`` of the
    run, then down to 0 with ``decay_shape`` (linear, 1-sqrt or cosine)."""

    kind: str = "linear"
    decay_ratio: float = 0.0
    decay_shape: str = "linear"


LINEAR = Curve()
DECAY_SHAPES = {
    "linear": lambda t: 1.0 - t,
    "1-sqrt": lambda t: 1.0 - math.sqrt(t),
    "cosine": lambda t: 0.5 * (1.0 + math.cos(math.pi * t)),
}


def curve_factor(step: int, total: int, warmup: int, curve: Curve) -> float:
    """The fraction of the peak learning rate that update ``step`` (from 0) runs at: warm-up from 0
    as in :func:`linear_factor`, then the curve; a decay of D updates starts at ``total - D`` at
    the peak and ends at 0 at ``total``."""
    if curve.kind == "linear" or step < warmup:
        return linear_factor(step, total, warmup)
    if curve.kind == "constant":
        return 1.0
    start = decay_start(total, curve.decay_ratio)
    if step < start:
        return 1.0
    return max(0.0, DECAY_SHAPES[curve.decay_shape](min(1.0, (step - start) / (total - start))))


def decay_start(total: int, decay_ratio: float) -> int:
    """The first update of a wsd curve's decay: its last ``decay_ratio`` of ``total`` updates, at least one."""
    return total - max(1, round(decay_ratio * total))
