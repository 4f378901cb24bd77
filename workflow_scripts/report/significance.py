"""Families of paired tests, corrected for many comparisons, and the verdict each claim gets.

A family is a set of claims made together (the model pairs on the group means the findings
state; the models above the no-training baseline, per task). Each claim's test is chosen from
its number of pairs and the strictest level it may be judged at, alpha / m under Holm or
Bonferroni with m claims in the family (:func:`stats.choose_test`), then the family's p-values
are corrected together:

- ``holm``: Holm's (1979) step-down: the i-th smallest of m p-values is multiplied by
  m - i + 1, and the adjusted values are made non-decreasing (``p.adjust(method = "holm")``);
- ``bonferroni``: each p times m, capped at 1;
- ``none``: the raw p-values.

The verdict: ``beyond`` noise when the corrected p is below alpha, ``suggestive`` when only
the raw p is, ``within`` noise otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from .multibootstrap import MULTI_BOOTSTRAP, paired_multibootstrap
from .seed_grid import is_grid
from .stats import Paired, paired_comparison

Correction = Literal["holm", "bonferroni", "none"]
CORRECTION_NAMES = {"holm": "Holm–Bonferroni", "bonferroni": "Bonferroni", "none": "no correction"}
# how a sentence names the corrected p
CORRECTED = {"holm": "Holm-corrected p", "bonferroni": "Bonferroni-corrected p", "none": "corrected p (no correction)"}
BEYOND, SUGGESTIVE, WITHIN = "beyond", "suggestive", "within"


def adjust(ps: Sequence[float], method: Correction) -> list[float]:
    """Corrected p-values of one family, in the order given."""
    p = np.asarray(ps, dtype=float)
    m = p.size
    if method == "none" or m == 0:
        return p.tolist()
    if method == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(1.0, stepped)
    return out.tolist()


def strictest_level(alpha: float, m: int, method: Correction) -> float:
    """The smallest level a claim of a family of ``m`` may have to pass: Holm's first step and
    Bonferroni judge at alpha / m."""
    return alpha if method == "none" else alpha / max(m, 1)


def _test(pair: tuple, level: float, confidence: float, seed: int) -> Paired:
    """Flat pairs get the exact or t test. Grids [pretraining seed][run] must pass both the
    multi-bootstrap and that test on the runs' means over pretraining seeds (an intersection-union
    test: p is the larger of the two): a bootstrap over a handful of seeds is anti-conservative
    (with every difference of one sign its p is the smallest it can give, whatever the spread),
    so the multi-bootstrap alone never decides. The interval is that test's too: the shifts
    not rejected by both, the two intervals joined, so that it holds zero whenever p says noise."""
    if not is_grid(pair):
        return paired_comparison(pair[0], pair[1], level, confidence)
    grid = paired_multibootstrap(pair[0], pair[1], confidence, seed)
    runs = paired_comparison(np.mean(pair[0], axis=0), np.mean(pair[1], axis=0), level, confidence)
    grid.test, grid.p = f"{MULTI_BOOTSTRAP} and {runs.test}", max(grid.p, runs.p)
    grid.ci_low, grid.ci_high = min(grid.ci_low, runs.ci_low), max(grid.ci_high, runs.ci_high)
    return grid


def run_family(
    pairs: Sequence[tuple[Sequence, Sequence] | None],
    alpha: float,
    method: Correction,
    confidence: float,
    seed: int = 0,
) -> list[Paired | None]:
    """Test every claim of a family (``None``: too few pairs to test, left out of m) and set
    each test's corrected p; ``seed`` seeds the multi-bootstrap's resampling."""
    m = sum(p is not None for p in pairs)
    level = strictest_level(alpha, m, method)
    tested = [None if p is None else _test(p, level, confidence, seed) for p in pairs]
    done = [t for t in tested if t is not None]
    for t, corrected in zip(done, adjust([t.p for t in done], method), strict=True):
        t.p_corrected = corrected
    return tested


def verdict(p: float, p_corrected: float, alpha: float) -> str:
    if p_corrected < alpha:
        return BEYOND
    return SUGGESTIVE if p < alpha else WITHIN
