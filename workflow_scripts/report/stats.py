"""Statistics over seeds: summary, bootstrap confidence interval of a cell, paired tests.

A cell's interval is a percentile interval of its statistic over resamples (with replacement)
of its runs. A paired comparison matches two models' runs by (fold, seed) and tests the mean
of the paired differences with one of two tests, chosen before the data are seen from the
number of pairs alone (see :func:`choose_test`):

- the exact paired sign-flip permutation test (two-sided, every one of the 2^n sign vectors;
  ``scipy.stats.permutation_test`` with ``permutation_type='samples'`` gives the same p), with
  the interval of shifts it does not reject (its inversion), when its smallest attainable p,
  2 / 2^n, is below the level the comparison is judged at: with 5 seeds that is 1/16 = 0.0625,
  which can never be below 0.05;
- otherwise Student's paired t-test (``scipy.stats.ttest_rel``) with its t interval, which can
  reach any level from 2 pairs on but assumes roughly normal differences.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

STATISTICS: dict[str, Callable[..., np.ndarray]] = {"median": np.median, "mean": np.mean}
# 2^16 sign vectors are enumerated in a blink; beyond, the t-test (then well within its
# central-limit comfort) is used instead of a sampled permutation p.
EXACT_SIGN_FLIP_MAX = 16
SIGN_FLIP, T_TEST = "exact sign-flip", "paired t-test"


@dataclass
class Summary:
    value: float
    mean: float
    std: float | None
    min: float
    max: float
    n: int


def per_fold(values: Sequence[float], folds: Sequence[int], statistic: str) -> list[float]:
    """The statistic over the values (seeds) of each fold, in fold order."""
    by_fold: dict[int, list[float]] = {}
    for value, fold in zip(values, folds, strict=True):
        by_fold.setdefault(fold, []).append(value)
    return [float(STATISTICS[statistic](by_fold[f])) for f in sorted(by_fold)]


def summarise(values: Sequence[float], statistic: str = "median", folds: Sequence[int] | None = None) -> Summary:
    """The chosen statistic and the spread of ``values`` (sample std; none for a single run).
    With ``folds`` (each value's fold) the statistic is taken over seeds within each fold, then
    over the folds' values (Lewis et al. on GAD and EU-ADR); the spread is over all runs."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise ValueError("no values to summarise")
    level = a if folds is None else np.asarray(per_fold(values, folds, statistic))
    return Summary(
        value=float(STATISTICS[statistic](level)),
        mean=float(a.mean()),
        std=float(a.std(ddof=1)) if a.size > 1 else None,
        min=float(a.min()),
        max=float(a.max()),
        n=int(a.size),
    )


def bootstrap_ci(
    values: Sequence[float],
    statistic: str,
    samples: int,
    confidence: float,
    seed: int,
    folds: Sequence[int] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over resamples of ``values`` (with
    ``folds``: of the per-fold statistics, when there are several folds)."""
    if folds is not None and len(set(folds)) > 1:
        values = per_fold(values, folds, statistic)
    a = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(samples, a.size))
    stats = STATISTICS[statistic](a[idx], axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def smallest_sign_flip_p(n: int) -> float:
    """The smallest two-sided p the exact sign-flip test can give with ``n`` pairs."""
    return 2.0 / 2**n


def seeds_for_exact(level: float) -> int:
    """The fewest pairs whose exact sign-flip test can give a p below ``level``."""
    n = 1
    while smallest_sign_flip_p(n) >= level:
        n += 1
    return n


def choose_test(n: int, level: float) -> str:
    """The exact sign-flip test where its smallest p can fall below ``level`` (the strictest
    level the comparison may be judged at), the paired t-test otherwise."""
    return SIGN_FLIP if n <= EXACT_SIGN_FLIP_MAX and smallest_sign_flip_p(n) < level else T_TEST


def _signs(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def sign_flip_p(diffs: Sequence[float], signs: np.ndarray | None = None) -> float:
    """Two-sided p of the mean paired difference under all 2^n sign flips (exact)."""
    d = np.asarray(diffs, dtype=float)
    if d.size > EXACT_SIGN_FLIP_MAX:
        raise ValueError(f"{d.size} pairs: the exact sign-flip test enumerates at most {EXACT_SIGN_FLIP_MAX}")
    signs = _signs(d.size) if signs is None else signs
    observed = abs(d.mean())
    flipped = np.abs(signs @ d) / d.size
    # the same relative tolerance as scipy.stats.permutation_test, so ties count alike
    return float(np.mean(flipped >= observed * (1 - 1e-14) - 1e-15))


def sign_flip_interval(diffs: Sequence[float], confidence: float) -> tuple[float, float]:
    """The shifts the sign-flip test does not reject at ``1 - confidence`` (its inversion),
    bounds found by bisection: below min(d) every sign but all-equal flips a smaller mean, so
    p = 2 / 2^n there."""
    d = np.asarray(diffs, dtype=float)
    level, signs, centre = 1.0 - confidence, _signs(d.size), float(d.mean())
    width = float(d.max() - d.min()) + 1.0

    def accepted(shift: float) -> bool:
        return sign_flip_p(d - shift, signs) >= level

    def edge(outside: float) -> float:
        inside = centre
        for _ in range(40):  # 2^-40 of the bracket: far below the tables' 4 decimals
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if accepted(mid) else (inside, mid)
        return inside

    return edge(float(d.min()) - width), edge(float(d.max()) + width)


def t_test(diffs: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """Paired t-test of the differences: (two-sided p, interval low, interval high). Equal
    differences have no spread: p is 0 unless they are all 0 (t is infinite or undefined)."""
    d = np.asarray(diffs, dtype=float)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0.0:
        return (1.0 if mean == 0.0 else 0.0), mean, mean
    se = sd / math.sqrt(d.size)
    p = float(2 * scipy_stats.t.sf(abs(mean) / se, d.size - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, d.size - 1)) * se
    return p, mean - half, mean + half


@dataclass
class Paired:
    n_pairs: int
    mean_diff: float
    ci_low: float
    ci_high: float
    test: str
    p: float
    wins: int
    losses: int
    pretrain_seeds: int = 1  # rows of a multi-bootstrap's grid (multibootstrap.py)
    # set once the comparison's family is corrected (see significance.py)
    p_corrected: float | None = None


def paired_comparison(a: Sequence[float], b: Sequence[float], level: float, confidence: float) -> Paired:
    """Compare paired scores ``a[i]`` and ``b[i]`` (same fold and seed) with the test
    :func:`choose_test` picks for judging at ``level``."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    test = choose_test(d.size, min(level, 1.0 - confidence))
    if test == SIGN_FLIP:
        p, (lo, hi) = sign_flip_p(d), sign_flip_interval(d, confidence)
    else:
        p, lo, hi = t_test(d, confidence)
    return Paired(
        n_pairs=int(d.size),
        mean_diff=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        test=test,
        p=p,
        wins=int((d > 0).sum()),
        losses=int((d < 0).sum()),
    )
