"""Pairing two models' scores over pretraining seeds x fine-tuning seeds.

Scores are keyed ``(pretraining seed, run key)``: the pretraining seed is None for a model trained
once, the run key is (fold, seed) for a task and the fine-tuning seed for a group mean. Two models
trained once pair run by run (a flat list each, tested as before). Where either has several
pretraining seeds the scores become grids [pretraining seed, run key] for the multi-bootstrap
(multibootstrap.py): rows pair the two models' seeds in order (seed i of one with seed i of the
other), and a model trained once pairs its one row with each of the other's rows, so that only
the seeded model's pretraining varies; columns are the run keys every paired row has on both
sides.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from .settings import ReportSettings

Keyed = dict[tuple[int | None, Hashable], float]


@dataclass
class Pairing:
    scores: tuple[list, list] | None  # flat lists, or grids [pretraining seed][run key]
    n_pairs: int  # paired runs (grid cells)
    note: str


def seed_order(pretrain_seed: int | None) -> int:
    """Pretraining seeds in order, a model trained once (None) first."""
    return -1 if pretrain_seed is None else pretrain_seed


def pretrain_seeds(keyed: Keyed) -> list[int | None]:
    return sorted({p for p, _ in keyed}, key=seed_order)


def over_what(n_pretrain: int, n_runs: int) -> str:
    """What a statistic of a model with several pretraining seeds is taken over."""
    per = n_runs // n_pretrain if n_pretrain else 0
    return f"over {n_pretrain} pretraining seeds x {per} fine-tuning runs each ({n_runs} runs, pooled)"


def _row_pairs(rows_a: list, rows_b: list) -> tuple[list[tuple], int]:
    if len(rows_a) > 1 and len(rows_b) > 1:
        k = min(len(rows_a), len(rows_b))
        return list(zip(rows_a[:k], rows_b[:k], strict=True)), len(rows_a) + len(rows_b) - 2 * k
    if len(rows_a) > 1:
        return [(p, rows_b[0]) for p in rows_a], 0
    return [(rows_a[0], p) for p in rows_b], 0


def pair_grid(a: Keyed, b: Keyed, what: str = "run") -> Pairing:
    """Two models' scores paired on pretraining seed and run key (see the module's text)."""
    rows_a, rows_b = pretrain_seeds(a), pretrain_seeds(b)
    if not rows_a or not rows_b:
        return Pairing(None, 0, f"0 {what}(s) with a partner in both models; need at least 2")
    rows, unpaired = _row_pairs(rows_a, rows_b)
    keys = list(dict.fromkeys(k for _, k in a))
    cols = [k for k in keys if all((pa, k) in a and (pb, k) in b for pa, pb in rows)]
    if len(cols) < 2:
        note = f"{len(cols)} {what}(s) with a partner in every paired pretraining seed; need at least 2"
        return Pairing(None, 0, note)
    grid_a = [[a[(pa, k)] for k in cols] for pa, _ in rows]
    grid_b = [[b[(pb, k)] for k in cols] for _, pb in rows]
    note = f"{unpaired} pretraining seed(s) without a partner left out" if unpaired else ""
    return Pairing((grid_a, grid_b), len(rows) * len(cols), note)


def is_grid(scores: tuple[list, list]) -> bool:
    return bool(scores[0]) and isinstance(scores[0][0], list)


def pooled_notes(settings: ReportSettings) -> list[str]:
    """A table note per model pretrained with several seeds: what its cells are taken over."""
    return [
        f"{m.display}: pretrained once per seed ({', '.join(map(str, m.pretrain_seeds))}); each cell's statistic "
        "is over every pretraining x fine-tuning seed run, pooled."
        for m in settings.models.values()
        if len(m.pretrain_seeds) > 1
    ]
