"""Statistics over seeds: summary, bootstrap confidence interval, paired comparison.

Bootstrap intervals are percentile intervals of the statistic over resamples (with
replacement) of the runs. A paired comparison matches two models' runs by (fold, seed),
bootstraps the mean of the paired differences, and calls a difference beyond seed noise when
that interval excludes zero; the exact sign-flip test p-value is reported beside it (with
five seeds its smallest possible two-sided value is 1/16, so it cannot by itself reach 0.05).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

STATISTICS: dict[str, Callable[..., np.ndarray]] = {"median": np.median, "mean": np.mean}
EXACT_SIGN_FLIP_MAX = 16


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


def sign_flip_p(diffs: Sequence[float], seed: int, samples: int = 10000) -> float:
    """Two-sided p-value of the mean paired difference under random sign flips (exact up to
    ``EXACT_SIGN_FLIP_MAX`` pairs, sampled beyond)."""
    d = np.asarray(diffs, dtype=float)
    observed = abs(d.mean())
    if d.size <= EXACT_SIGN_FLIP_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(samples, d.size))
    flipped = np.abs((signs * d).mean(axis=1))
    return float(np.mean(flipped >= observed - 1e-12))


@dataclass
class Paired:
    n_pairs: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_sign_flip: float
    wins: int
    losses: int

    @property
    def beyond_noise(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


def paired_comparison(a: Sequence[float], b: Sequence[float], samples: int, confidence: float, seed: int) -> Paired:
    """Compare paired scores ``a[i]`` and ``b[i]`` (same fold and seed)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    lo, hi = bootstrap_ci(d, "mean", samples, confidence, seed)
    return Paired(
        n_pairs=int(d.size),
        mean_diff=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        p_sign_flip=sign_flip_p(d, seed),
        wins=int((d > 0).sum()),
        losses=int((d < 0).sum()),
    )
