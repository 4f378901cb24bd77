"""The spread of each cell's runs and paired comparisons of models, one CSV row per model x task x benchmark.

spread.csv: the runs' mean, standard deviation, range and confidence interval, with precision and recall;
comparisons.csv: per tested claim (families.py), the paired difference over runs of the same fold and seed (and
pretraining seed: ``pretrain_seeds`` rows of the multi-bootstrap's grid), the test, its interval, raw and corrected
p, the verdict and the wins of each side.
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text
from . import render
from .families import Claim
from .settings import ReportSettings
from .significance import verdict


def spread_csv(settings: ReportSettings, cells: dict, out: Path) -> Path:
    agg = settings.aggregation
    header = [
        "model",
        "task",
        "benchmark",
        "metric",
        "statistic",
        "value",
        "mean",
        "std",
        "min",
        "max",
        "n",
        "expected_n",
        "ci_low",
        "ci_high",
        "confidence",
        "bootstrap_samples",
        "precision",
        "recall",
        "status",
        "restricted",
    ]
    rows = []
    for c in cells.values():
        s = c.summary
        rows.append(
            {
                "model": c.model,
                "task": c.task,
                "benchmark": c.view,
                "metric": c.metric,
                "statistic": c.statistic,
                "value": render.csv_number(c.value),
                "mean": render.csv_percent(s.mean if s else None),
                "std": render.csv_percent(s.std if s else None),
                "min": render.csv_percent(s.min if s else None),
                "max": render.csv_percent(s.max if s else None),
                "n": c.n,
                "expected_n": c.expected,
                "ci_low": render.csv_percent(c.ci[0] if c.ci else None),
                "ci_high": render.csv_percent(c.ci[1] if c.ci else None),
                "confidence": agg.confidence,
                "bootstrap_samples": agg.bootstrap_samples,
                "precision": render.csv_percent(c.precision),
                "recall": render.csv_percent(c.recall),
                "status": c.status,
                "restricted": c.restricted,
            }
        )
    path = out / "spread.csv"
    write_text(path, render.csv_text(header, rows))
    return path


def _p(value: float) -> float:
    """A p-value with 4 significant digits (fixed decimals would round small ones to 0)."""
    return float(f"{value:.4g}")


def _paired(c: Claim, settings: ReportSettings) -> dict:
    """The test columns of a comparisons.csv row (empty without a test)."""
    p, sig = c.paired, settings.significance
    tested = p is not None
    return {
        "mean_paired_difference": render.csv_number(100 * p.mean_diff) if tested else None,
        "ci_low": render.csv_number(100 * p.ci_low) if tested else None,
        "ci_high": render.csv_number(100 * p.ci_high) if tested else None,
        "confidence": settings.aggregation.confidence,
        "test": p.test if tested else None,
        "p": _p(p.p) if tested else None,
        "family": c.family,
        "family_size": c.family_size,
        "correction": sig.correction,
        "p_corrected": _p(p.p_corrected) if tested else None,
        "alpha": sig.alpha,
        "verdict": verdict(p.p, p.p_corrected, sig.alpha) if tested else None,
        "seeds_for_exact": c.seeds_for_exact,
        "pretrain_seeds": p.pretrain_seeds if tested else None,
        "wins_a": p.wins if tested else None,
        "wins_b": p.losses if tested else None,
    }


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


COMPARISON_COLUMNS = [
    "task",
    "benchmark",
    "metric",
    "model_a",
    "model_b",
    "statistic",
    "value_a",
    "value_b",
    "difference",
    "n_pairs",
    "mean_paired_difference",
    "ci_low",
    "ci_high",
    "confidence",
    "test",
    "p",
    "family",
    "family_size",
    "correction",
    "p_corrected",
    "alpha",
    "verdict",
    "seeds_for_exact",
    "pretrain_seeds",
    "wins_a",
    "wins_b",
    "note",
]


def comparisons_csv(settings: ReportSettings, claims: list[Claim], out: Path) -> Path:
    """One row per tested claim: per pair and task, per pair and group mean (``task`` =
    ``mean:<group>``), per real model against the no-training baseline."""
    rows = [
        {
            "task": c.task,
            "benchmark": c.benchmark,
            "metric": c.metric,
            "model_a": c.model_a,
            "model_b": c.model_b,
            "statistic": c.statistic,
            "value_a": render.csv_number(c.value_a),
            "value_b": render.csv_number(c.value_b),
            "difference": render.csv_number(_difference(c.value_a, c.value_b)),
            "n_pairs": c.n_pairs,
            **_paired(c, settings),
            "note": c.note,
        }
        for c in claims
    ]
    path = out / "comparisons.csv"
    write_text(path, render.csv_text(COMPARISON_COLUMNS, rows))
    return path
