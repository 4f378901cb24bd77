"""Padded widths of fine-tuning batches. On the CPU a batch is padded to its longest member (the
demo's numbers depend on it). On a GPU every width is a bucket: a multiple of 8 (tensor-core
tiles), or, with CUDA graphs, one of a small fixed set, so a run sees few distinct shapes and
each shape is planned, compiled and captured once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

MULTIPLE = 8
GRAPH_STEPS = (32, 64, 96, 128)  # then each bucket is twice the one two below: 192, 256, 384, 512, ...

Policy = Literal["longest", "multiple", "graphs"]


def bucket_lengths(limit: int, graphs: bool) -> tuple[int, ...]:
    """The widths a batch may be padded to, ascending, the last ``limit`` (the longest input a run
    reads: its max_length, or its chunk length): every multiple of 8 below ``limit``; with
    ``graphs`` 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, ... below it."""
    if graphs:
        steps = list(GRAPH_STEPS)
        while steps[-1] < limit:
            steps.append(2 * steps[-2])
    else:
        steps = list(range(MULTIPLE, limit, MULTIPLE))
    return (*[b for b in steps if b < limit], limit)


def bucket_for(length: int, buckets: Sequence[int]) -> int:
    """The width a batch whose longest member has ``length`` tokens is padded to: the smallest
    bucket that holds it; without buckets, or beyond the last, the length itself."""
    return next((b for b in buckets if b >= length), length)


@dataclass(frozen=True)
class Padding:
    """How a run pads its batches: ``longest`` (each to its longest member, the CPU's way),
    ``multiple`` (up to a multiple of 8) or ``graphs`` (to the fixed bucket set)."""

    policy: Policy = "longest"
    limit: int = 0

    @cached_property
    def buckets(self) -> tuple[int, ...]:
        return () if self.policy == "longest" else bucket_lengths(self.limit, self.policy == "graphs")

    @property
    def static(self) -> bool:
        """Every batch carries its attention mask, so a compiled forward sees one input signature."""
        return self.policy == "graphs"

    def width(self, longest: int) -> int:
        return bucket_for(longest, self.buckets)

    def record(self) -> dict[str, Any]:
        """What metrics.json says of the padding."""
        if self.policy == "longest":
            return {"policy": "longest", "buckets": None}
        if self.policy == "multiple":
            return {"policy": f"multiple of {MULTIPLE}", "limit": self.limit, "buckets": None}
        return {"policy": "buckets", "limit": self.limit, "buckets": list(self.buckets)}


def padding_for(device_type: str, graphs: bool, limit: int) -> Padding:
    """The CPU pads to the longest member; a GPU to buckets, the fixed set with CUDA graphs."""
    if device_type != "cuda":
        return Padding()
    return Padding("graphs" if graphs else "multiple", limit)
