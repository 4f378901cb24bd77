"""The spread of each cell's runs and paired comparisons of models, one CSV row per model x task x benchmark.

spread.csv: the runs' mean, standard deviation, range and confidence interval, with precision and recall;
comparisons.csv: per pair of models, the paired difference over runs of the same fold and seed, its interval,
the sign-flip p-value and the wins of each side.
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text
from . import render
from .aggregate import compare
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


def comparisons_csv(settings: ReportSettings, cells: dict, out: Path) -> Path:
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
        p = c.paired
        diff = None if c.cell_a.value is None or c.cell_b.value is None else c.cell_a.value - c.cell_b.value
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
                "difference": render.csv_number(diff),
                "n_pairs": c.n_pairs,
                "mean_paired_difference": render.csv_number(100 * p.mean_diff) if p else None,
                "ci_low": render.csv_number(100 * p.ci_low) if p else None,
                "ci_high": render.csv_number(100 * p.ci_high) if p else None,
                "confidence": agg.confidence,
                "p_sign_flip": render.csv_number(p.p_sign_flip) if p else None,
                "wins_a": p.wins if p else None,
                "wins_b": p.losses if p else None,
                "beyond_noise": p.beyond_noise if p else None,
                "note": c.note,
            }
        )
    path = out / "comparisons.csv"
    write_text(path, render.csv_text(header, rows))
    return path
