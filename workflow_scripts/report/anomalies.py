"""Findings that say where a task does not measure what it is used for.

- A control (random weights, or the no-training baseline) scores at or above a pretrained model
  on a task: the task, or its fine-tuning, does not reward what pretraining gives.
- A task's seeds spread wider than the differences between the compared models on it: the
  typical seed standard deviation (median over the models) exceeds the typical difference of
  the configured pairs (median of |difference|), so one seed's ranking there says little.
"""

from __future__ import annotations

import pandas as pd

from .controls import real_models
from .families import PER_TASK
from .settings import ReportSettings


def _num(value: float) -> str:
    return f"{value:.1f}"


def control_anomalies(settings: ReportSettings, medians: pd.DataFrame) -> list[str]:
    """One sentence per task and control that scores at or above a pretrained model."""
    real = real_models(settings)
    controls = [n for n, m in settings.models.items() if m.is_control]
    value = {(r.model, r.task): r.value for r in medians.itertuples(index=False) if not pd.isna(r.value)}
    out = []
    for task, t in settings.tasks.items():
        scored = [m for m in real if (m, task) in value]
        for c in (c for c in controls if (c, task) in value):
            beaten = [m for m in scored if value[(m, task)] <= value[(c, task)]]
            if not beaten:
                continue
            which = (
                f"every one of the {len(scored)} pretrained models (best "
                f"{settings.models[max(scored, key=lambda m: value[(m, task)])].display} "
                f"{_num(max(value[(m, task)] for m in scored))})"
                if len(beaten) == len(scored)
                else f"{len(beaten)} of {len(scored)} pretrained models ("
                + ", ".join(f"{settings.models[m].display} {_num(value[(m, task)])}" for m in beaten)
                + ")"
            )
            out.append(
                f"Anomaly, {t.display}: the control {settings.models[c].display} ({_num(value[(c, task)])}) "
                f"scores at or above {which}: on this task the score does not measure what pretraining gives."
            )
    return out


def spread_anomalies(settings: ReportSettings, spread: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """One sentence per task whose seeds spread wider than the compared pairs' differences on it
    (in the view the main table shows)."""
    shown = comparisons[(comparisons["family"] == PER_TASK) & comparisons["difference"].notna()]
    out = []
    for task, t in settings.tasks.items():
        pairs = shown[shown["task"] == task]
        if pairs.empty:
            continue
        view = pairs["benchmark"].iloc[0]
        stds = spread[(spread["task"] == task) & (spread["benchmark"] == view)]["std"].dropna()
        pairs = pairs[pairs["benchmark"] == view]
        if stds.empty:
            continue
        typical_std, typical_diff = float(stds.median()), float(pairs["difference"].abs().median())
        if typical_std > typical_diff:
            out.append(
                f"Anomaly, {t.display}: its seeds spread wider (standard deviation over seeds {_num(typical_std)}, "
                f"median over {len(stds)} models) than the differences it is used to judge (median |difference| "
                f"{_num(typical_diff)} over the {len(pairs)} compared pairs): one seed's ranking there says little."
            )
    return out
