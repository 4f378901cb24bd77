"""Read and check the metrics.json of fine-tuning runs.

A metrics file of the wrong shape is a PipelineError naming the file and the key; a metrics
file that does not exist is not an error here: the run is reported as missing and the table
marks the cell.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PipelineError
from .long_inputs import reading
from .settings import ReportSettings, RunEntry

SCORE_RANGE = (-1.0, 1.0)


@dataclass
class RunResult:
    model: str
    task: str
    fold: int
    seed: int
    path: str
    scores: dict[str, float]
    dev: float | None
    precision: dict[str, float]
    recall: dict[str, float]
    restricted: bool
    reading: str = ""  # how a run with chunking on read its inputs (long_inputs)
    pretrain_seed: int | None = None  # where the model was trained once per seed

    @property
    def test(self) -> float:
        """The headline test score (the task's first metric)."""
        return next(iter(self.scores.values()))


def _number(data: dict, key: str, path: str, optional: bool = False) -> float | None:
    if key not in data:
        if optional:
            return None
        raise PipelineError(f"{path}: key {key!r} is missing")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PipelineError(f"{path}: key {key!r} must be a finite number, got {value!r}")
    lo, hi = SCORE_RANGE
    if not lo <= value <= hi:
        raise PipelineError(
            f"{path}: key {key!r} = {value!r} is outside [{lo:g}, {hi:g}]; scores are fractions, not percentages"
        )
    return float(value)


def _dev_score(dev: dict | None) -> float | None:
    # The dev score is informative only (runs on a selection fold's fixed steps have none).
    value = (dev or {}).get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _section(data: dict, key: str, path: str) -> dict:
    section = data.get(key)
    if not isinstance(section, dict):
        raise PipelineError(f"{path}: key {key!r} must be a mapping with a 'score', got {section!r}")
    return section


def parse_metrics(
    data: Any, run: RunEntry, metric: str | dict[str, str], names: list[str], path: str, task_type: str = ""
) -> RunResult:
    """Check one metrics.json document against the run it should describe; ``names`` are the
    metrics the tables read from its test section."""
    if not isinstance(data, dict):
        raise PipelineError(f"{path}: expected a JSON object, got {type(data).__name__}")
    for key, expected in (("model", run.trained_model), ("task", run.task), ("fold", run.fold), ("seed", run.seed)):
        if key in data and data[key] != expected:
            raise PipelineError(f"{path}: key {key!r} is {data[key]!r} but the run is listed with {expected!r}")
    if "metric" in data and data["metric"] != metric:
        raise PipelineError(
            f"{path}: key 'metric' is {data['metric']!r} but task {run.task} is scored by {metric!r}; "
            "rerun the fine-tuning step"
        )
    test = _section(data, "test", path)
    dev = data.get("dev")
    if dev is not None and not isinstance(dev, dict):
        raise PipelineError(f"{path}: key 'dev' must be a mapping with a 'score', got {dev!r}")
    details = test.get("by_metric") if isinstance(test.get("by_metric"), dict) else {}
    scores, precision, recall = {}, {}, {}
    for name in names:
        # A run of a task with a single metric may carry it as 'score' only.
        single = name not in test and name == metric
        scores[name] = _number(test, "score" if single else name, f"{path}: test")
        detail = test if single else details.get(name)
        detail = detail if isinstance(detail, dict) else {}
        for extra, into in (("precision", precision), ("recall", recall)):
            value = _number(detail, extra, f"{path}: test.by_metric.{name}", optional=True)
            if value is not None:
                into[name] = value
    return RunResult(
        model=run.model,
        task=run.task,
        fold=run.fold,
        seed=run.seed,
        path=path,
        scores=scores,
        dev=_dev_score(dev),
        precision=precision,
        recall=recall,
        restricted=bool(data.get("restricted", False)),
        reading=reading(data.get("encoding"), task_type),
        pretrain_seed=run.pretrain_seed,
    )


def load_runs(settings: ReportSettings, root: Path) -> tuple[list[RunResult], list[RunEntry]]:
    """All runs whose metrics file exists (checked), and the listed runs without one."""
    found, missing = [], []
    for run in settings.runs:
        path = root / run.metrics
        if not path.is_file():
            missing.append(run)
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise PipelineError(
                f"{run.metrics}: not valid JSON ({exc.msg} at line {exc.lineno}); rerun the fine-tuning step"
            ) from exc
        task = settings.tasks[run.task]
        needed = list(dict.fromkeys(task.metric_of(view) for view in task.views()))
        found.append(parse_metrics(data, run, task.metric, needed, run.metrics, task.type))
    return found, missing
