"""The multi-bootstrap of Sellam et al. (2022, "The MultiBERTs", ICLR; their
``multibootstrap.py``): a paired comparison of two models, each pretrained with several seeds
and fine-tuned with several seeds, that counts pretraining-seed variation as noise too.

Scores are arrays [pretraining seed, fine-tuning seed], the two models paired on both: row i
of each came from pretraining seed i, column j from fine-tuning seed j. One bootstrap replicate
draws the pretraining seeds with replacement (the same draw for both models, as their
``paired_seeds=True``), then, for each drawn pretraining seed, its fine-tuning seeds with
replacement (the same for both models), and takes the mean paired difference over the drawn
grid. MultiBERTs averages each pretraining seed's fine-tuning runs rather than resampling them
and resamples test examples as well; here the runs' scores are all the report has, so the
second level resamples fine-tuning seeds, which makes this the two-level (hierarchical)
bootstrap over both sources of seed noise. The p-value is theirs: the share of replicates whose
difference is at or below zero (one-sided, for "A beats B"), doubled for a two-sided one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stats import Paired

MULTI_BOOTSTRAP = "multi-bootstrap"
# Replicates of a claim's test: its two-sided p moves in steps of 2 / SAMPLES, far below the
# strictest level a family of claims is judged at (alpha / m).
SAMPLES = 10000


@dataclass
class MultiBootstrap:
    mean_diff: float
    ci_low: float
    ci_high: float
    p_one_sided: float  # share of replicates with A - B <= 0
    p: float  # two-sided: twice the smaller tail, at most 1
    pretrain_seeds: int
    finetune_seeds: int
    samples: int


def replicates(diffs: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Mean paired differences of ``samples`` two-level resamples of ``diffs`` [pretraining
    seed, fine-tuning seed]."""
    n_pre, n_fine = diffs.shape
    pre = rng.integers(0, n_pre, size=(samples, n_pre))
    fine = rng.integers(0, n_fine, size=(samples, n_pre, n_fine))
    return diffs[pre[:, :, None], fine].mean(axis=(1, 2))


def multibootstrap(
    a: np.ndarray, b: np.ndarray, samples: int = 10000, confidence: float = 0.95, seed: int = 0
) -> MultiBootstrap:
    """Compare ``a`` and ``b`` (arrays [pretraining seed, fine-tuning seed], paired on both)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(
            f"expected two score arrays of one shape [pretraining seed, fine-tuning seed], got {a.shape}, {b.shape}"
        )
    deltas = replicates(a - b, samples, np.random.default_rng(seed))
    tail = (1.0 - confidence) / 2
    lo, hi = np.quantile(deltas, [tail, 1.0 - tail])
    below, above = float(np.mean(deltas <= 0)), float(np.mean(deltas >= 0))
    return MultiBootstrap(
        mean_diff=float((a - b).mean()),
        ci_low=float(lo),
        ci_high=float(hi),
        p_one_sided=below,
        p=min(1.0, 2 * min(below, above)),
        pretrain_seeds=a.shape[0],
        finetune_seeds=a.shape[1],
        samples=samples,
    )


def paired_multibootstrap(a, b, confidence: float, seed: int, samples: int = SAMPLES) -> Paired:
    """A claim's test over pretraining x fine-tuning seeds, in the shape of the other paired tests. Its p
    counts the k replicates on the smaller side of zero as (k + 1) / (B + 1), doubled (Davison and Hinkley
    1997): a bootstrap p is never 0."""
    result = multibootstrap(a, b, samples, confidence, seed)
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return Paired(
        n_pairs=int(d.size),
        mean_diff=result.mean_diff,
        ci_low=result.ci_low,
        ci_high=result.ci_high,
        test=MULTI_BOOTSTRAP,
        p=min(1.0, 2 * (round(result.p * samples / 2) + 1) / (samples + 1)),
        wins=int((d > 0).sum()),
        losses=int((d < 0).sum()),
        pretrain_seeds=result.pretrain_seeds,
    )
