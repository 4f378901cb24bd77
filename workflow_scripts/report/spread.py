"""The spread of each cell's runs and paired comparisons of models, one CSV row per model x task x benchmark.

spread.csv: the runs' mean, standard deviation, range and confidence interval, with precision and recall;
comparisons.csv: per pair of models, the paired difference over runs of the same fold and seed, its interval,
the sign-flip p-value and the wins of each side; then per pair, the same on each group mean over seeds.
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text
from . import render
from .aggregate import compare
from .group_compare import GROUP_PREFIX, compare_groups
from .settings import ReportSettings


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


def _paired(p, confidence: float) -> dict:
    """The paired-comparison columns of a comparisons.csv row (empty without a comparison)."""
    return {
        "mean_paired_difference": render.csv_number(100 * p.mean_diff) if p else None,
        "ci_low": render.csv_number(100 * p.ci_low) if p else None,
        "ci_high": render.csv_number(100 * p.ci_high) if p else None,
        "confidence": confidence,
        "p_sign_flip": render.csv_number(p.p_sign_flip) if p else None,
        "wins_a": p.wins if p else None,
        "wins_b": p.losses if p else None,
        "beyond_noise": p.beyond_noise if p else None,
    }


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def comparisons_csv(settings: ReportSettings, cells: dict, groups: dict, out: Path) -> Path:
    """One row per pair and task, then one per pair and group mean (``task`` = ``mean:<group>``)."""
    agg = settings.aggregation
    header = [
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
        "p_sign_flip",
        "wins_a",
        "wins_b",
        "beyond_noise",
        "note",
    ]
    rows = []
    for c in compare(settings, cells):
        rows.append(
            {
                "task": c.task,
                "benchmark": c.view,
                "metric": c.cell_a.metric,
                "model_a": c.model_a,
                "model_b": c.model_b,
                "statistic": c.cell_a.statistic,
                "value_a": render.csv_number(c.cell_a.value),
                "value_b": render.csv_number(c.cell_b.value),
                "difference": render.csv_number(_difference(c.cell_a.value, c.cell_b.value)),
                "n_pairs": c.n_pairs,
                **_paired(c.paired, agg.confidence),
                "note": c.note,
            }
        )
    for g in compare_groups(settings, cells, groups):
        rows.append(
            {
                "task": GROUP_PREFIX + g.group,
                "benchmark": "lewis",
                "metric": "mean over the group's tasks",
                "model_a": g.model_a,
                "model_b": g.model_b,
                "statistic": "mean",
                "value_a": render.csv_number(g.value_a),
                "value_b": render.csv_number(g.value_b),
                "difference": render.csv_number(_difference(g.value_a, g.value_b)),
                "n_pairs": g.n_pairs,
                **_paired(g.paired, agg.confidence),
                "note": g.note,
            }
        )
    path = out / "comparisons.csv"
    write_text(path, render.csv_text(header, rows))
    return path
