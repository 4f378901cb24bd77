"""Which steps of a run train in which phase: the phase's packed data, its masking rate, and the
data order (stream) and position its blocks are read from.

A run from the start has one segment per phase, from step 0, each reading its own order from
position 0. A decay branch starts at its parent's step ``k`` and splits its own steps
``k .. max_steps`` between its phases; its first phase continues the parent's order at the
parent's position when it reads the same packed data at the same length, and every other phase
gets an order of its own, numbered after the parent's phases.
"""

from __future__ import annotations

from dataclasses import dataclass

from .settings import BranchStart, PretrainSettings


@dataclass(frozen=True)
class Segment:
    first: int  # the segment's first step
    steps: int
    data: int  # index of the phase (its packed blocks) in the settings' phases
    stream: int  # keys the block order and the masks
    offset: int  # steps of that order already read when the segment starts
    mask_prob: float


def segments(settings: PretrainSettings, branch: BranchStart | None = None) -> list[Segment]:
    """The run's segments in step order, covering ``branch.step`` (or 0) to ``max_steps``."""
    start = branch.step if branch is not None else 0
    steps = settings.phase_steps(settings.max_steps - start)
    rates = settings.phase_mask_probs()
    out, first = [], start
    for i, (n, rate) in enumerate(zip(steps, rates, strict=True)):
        stream, offset = i, 0
        if branch is not None:
            continues = i == 0 and branch.continues
            stream = branch.phase if continues else branch.parent_phases + i
            offset = branch.position if continues else 0
        out.append(Segment(first, n, i, stream, offset, rate))
        first += n
    return out


def locate(parts: list[Segment], step: int) -> Segment:
    """The segment that trains ``step``."""
    for part in parts:
        if part.first <= step < part.first + part.steps:
            return part
    raise ValueError(step)
