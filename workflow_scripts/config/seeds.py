"""Fine-tuning seeds as a study lists them: distinct integers every library accepts."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PipelineError
from ..typed import parse

SEED_MAX = 2**32 - 1  # numpy's limit; torch and random accept it too


@dataclass
class _Seeds:
    seeds: list[int]


def parse_seeds(value, where: str) -> list[int]:
    return parse(_Seeds, {"seeds": value}, where).seeds


def check_seeds(where: str, seeds: list[int]) -> None:
    if not seeds or len(set(seeds)) != len(seeds):
        raise PipelineError(f"{where}: give one or more distinct seeds, got {seeds}")
    bad = [s for s in seeds if not 0 <= s <= SEED_MAX]
    if bad:
        raise PipelineError(f"{where}: each seed must be an integer from 0 to {SEED_MAX}, got {bad[0]}")
