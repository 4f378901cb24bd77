"""What each model cost beside what it scored: cost.{csv,md,tex} and the score-per-cost plot cost.png.

    python -m workflow_scripts.report.cost --settings results/configs/cost.yaml --out results/tables

Every figure is summed from the records the jobs left (cost_records.py): tokens, FLOPs and peak
memory from each training log, device-hours from each provenance record's start and end,
throughput and parameters from each model's inference_speed JSON. External checkpoints carry the
pretraining compute their papers report, with the source. cost.provenance.json (last) names, per
model, every record its figures were summed from.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import provenance
from ..cli import run
from ..errors import PipelineError
from ..typed import load_settings
from . import pareto
from .cost_records import Training, Usage, pool_speeds, read_speed, read_training, read_usage, throughput
from .cost_settings import CostSettings
from .render import NO_VALUE, RESTRICTED, csv_number, marked, number, write_table
from .settings import parse_args

log = logging.getLogger(__name__)
STEM = "cost"
FORMULA_SOURCE = "FLOPS_FORMULA (workflow_scripts/pretrain/model.py)"
SCORES = (("All mean", "groups", "group", "All"), ("BLURB score", "blurb", "type", "BLURB score"))


@dataclass
class Row:
    model: str
    label: str  # display name with its restricted mark
    kind: str
    restricted: bool
    training: Training | None = None
    upstream_hours: float | None = None  # device-hours of the models it started from (their share)
    usage: Usage = field(default_factory=Usage)
    speed: dict[str, Any] | None = None
    reported: tuple[str, str] | None = None  # (compute, source) of an external checkpoint
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def pretrain_hours(self) -> float | None:
        """Device-hours of its own training plus the share of the runs it started from."""
        if self.kind in ("external", "baseline"):
            return None
        own = self.training.device_hours if self.training else 0.0
        return own + (self.upstream_hours or 0.0)


def read_reported(path: str | Path) -> dict[str, tuple[str, str]]:
    """checkpoint -> (compute, source) of the published pretraining compute."""
    p = Path(path)
    with open(p, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if not {"checkpoint", "compute", "source"} <= set(reader.fieldnames or []):
            raise PipelineError(f"{p}: expected the columns checkpoint, compute, source")
        return {r["checkpoint"]: (r["compute"], r["source"]) for r in reader}


def read_scores(path: str | Path, column: str, value: str) -> dict[str, tuple[float, bool]]:
    """model -> (the score of the row whose ``column`` is ``value``, its restricted mark)."""
    p = Path(path)
    if not p.is_file():
        return {}
    with open(p, encoding="utf-8", newline="") as fh:
        return {
            r["model"]: (float(r["value"]), r.get("restricted") == "True")
            for r in csv.DictReader(fh)
            if r.get(column) == value and r.get("value")
        }


def upstream_hours(settings: CostSettings, trainings: dict[str, Training | None], name: str) -> float:
    """Device-hours of the runs ``name`` started from, each counted up to the step it started at."""
    total = 0.0
    for parent, step in settings.models[name].upstream.items():
        t = trainings.get(parent)
        share = 1.0 if step is None or t is None or not t.steps else min(step / t.steps, 1.0)
        own = t.device_hours if t is not None else 0.0
        total += share * (own + upstream_hours(settings, trainings, parent))
    return total


def build_rows(settings: CostSettings, root: Path) -> list[Row]:
    reported = read_reported(root / settings.reported_compute)
    trainings = {name: read_training(root / m.training) if m.training else None for name, m in settings.models.items()}
    scores = {label: read_scores(root / getattr(settings, src), col, val) for label, src, col, val in SCORES}
    speeds = pool_speeds({name: read_speed(root / m.speed) for name, m in settings.models.items() if m.speed})
    rows = []
    for name, m in settings.models.items():
        t = trainings[name]
        speed = speeds.get(name)
        restricted = m.restricted or bool(t and t.restricted)
        scored = m.scored_as or name  # a pretraining seed is plotted at its model's pooled score
        restricted = restricted or any(s.get(scored, (0.0, False))[1] for s in scores.values())
        row = Row(name, marked(m.display, restricted), m.kind, restricted, t, speed=speed)
        row.upstream_hours = upstream_hours(settings, trainings, name)
        row.usage = read_usage([root / r for r in m.runs])
        if m.kind == "external":
            row.reported = reported.get(m.checkpoint or "", ("not on file", f"add it to {settings.reported_compute}"))
        row.scores = {label: s[scored][0] for label, s in scores.items() if scored in s}
        rows.append(row)
    return rows


CSV_HEADER = [
    "model",
    "kind",
    "parameters",
    "non_embedding_parameters",
    "tokens_per_phase",
    "tokens",
    "train_flops",
    "train_device_hours",
    "train_device",
    "pretrain_device_hours_with_upstream",
    "train_peak_memory_mb",
    "finetune_runs",
    "finetune_device_hours",
    "finetune_device",
    "inference_device",
    "inference_precision",
    "inference_batch_size",
    "inference_peak_memory_mb",
    "inference_measurements",
    "reported_compute",
    "reported_source",
    "restricted",
]


def _significant(value: float | None) -> float | None:
    """Hours to four significant digits: a demo job of seconds keeps its figure."""
    return None if value is None else float(f"{value:.4g}")


def _lengths_header(lengths: list[int]) -> list[str]:
    return [f"sequences_per_s_at_{n}" for n in lengths]


def csv_row(row: Row, lengths: list[int]) -> dict[str, Any]:
    t, s, u = row.training, row.speed or {}, row.usage
    params = s.get("parameters") or {}
    measured = [r for r in s.get("lengths", []) if "sequences_per_s" in r]
    peaks = [r["peak_memory_mb"] for r in measured if r.get("peak_memory_mb") is not None]
    return {
        "model": row.model,
        "kind": row.kind,
        "parameters": params.get("total"),
        "non_embedding_parameters": params.get("non_embedding"),
        "tokens_per_phase": ";".join(map(str, t.tokens_per_phase)) if t else None,
        "tokens": t.tokens if t else None,
        "train_flops": f"{t.flops:.4e}" if t else None,
        "train_device_hours": _significant(t.device_hours) if t else None,
        "train_device": t.device if t else None,
        "pretrain_device_hours_with_upstream": _significant(row.pretrain_hours),
        "train_peak_memory_mb": csv_number(t.peak_memory_mb) if t else None,
        "finetune_runs": u.runs,
        "finetune_device_hours": _significant(u.device_hours) if u.runs else None,
        "finetune_device": ";".join(sorted(u.devices)) or None,
        "inference_device": s.get("device"),
        "inference_precision": s.get("precision"),
        "inference_batch_size": s.get("batch_size"),
        "inference_peak_memory_mb": csv_number(max(peaks)) if peaks else None,
        "inference_measurements": s.get("measurements"),
        "reported_compute": row.reported[0] if row.reported else None,
        "reported_source": row.reported[1] if row.reported else None,
        "restricted": row.restricted,
        **{h: csv_number(throughput(s, n)) for h, n in zip(_lengths_header(lengths), lengths, strict=True)},
    }


def _millions(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value / 1e6:.3g}"


def _hours(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:.3g}"


def display_row(row: Row, lengths: list[int]) -> list[tuple[str, str]]:
    c = csv_row(row, lengths)
    t = row.training
    tokens = NO_VALUE if t is None else " + ".join(_millions(n) for n in t.tokens_per_phase)
    train = NO_VALUE if t is None else f"{_hours(t.device_hours)} ({t.device})"
    tuned = NO_VALUE if not row.usage.runs else f"{_hours(row.usage.device_hours)} ({row.usage.runs} runs)"
    speeds = [NO_VALUE if c[h] is None else number(c[h], 1) for h in _lengths_header(lengths)]
    reported = f"{row.reported[0]} [{row.reported[1]}]" if row.reported else ""
    label = row.label.removesuffix(f" {RESTRICTED}")
    cells = [
        label,
        _millions(c["parameters"]),
        _millions(c["non_embedding_parameters"]),
        tokens,
        NO_VALUE if t is None else f"{t.flops:.3g}",
        train,
        _hours(row.pretrain_hours),
        NO_VALUE if t is None or t.peak_memory_mb is None else number(t.peak_memory_mb, 0),
        tuned,
        *speeds,
        reported,
    ]
    return [(cells[0], RESTRICTED if row.restricted else ""), *((cell, "") for cell in cells[1:])]


def panels(rows: list[Row], lengths: list[int]) -> list[pareto.Panel]:
    """All mean (and BLURB score, where any model has one) against pretraining device-hours and
    against throughput at the first length."""
    out = []
    for score, *_ in SCORES:
        scored = [r for r in rows if score in r.scores and r.kind != "baseline"]
        if not scored and score != SCORES[0][0]:
            continue
        hours = [
            pareto.Point(r.label, r.pretrain_hours, r.scores[score], r.kind == "control")
            for r in scored
            if r.pretrain_hours is not None
        ]
        speeds = [(r, throughput(r.speed or {}, lengths[0])) for r in scored]
        fast = [pareto.Point(r.label, v, r.scores[score], r.kind == "control") for r, v in speeds if v is not None]
        out.append(pareto.Panel(score, "pretraining device-hours (with upstream)", True, hours))
        out.append(pareto.Panel(score, f"inference sequences/s at {lengths[0]} tokens", False, fast))
    return out


def notes(rows: list[Row], lengths: list[int], figure_panels: list[pareto.Panel]) -> list[str]:
    formula = next((r.training.formula for r in rows if r.training), None)
    devices = sorted({r.speed["device"] for r in rows if r.speed})
    batch = next((r.speed.get("batch_size") for r in rows if r.speed), None)
    return [
        f"Training FLOPs: {FORMULA_SOURCE} x the tokens of each training-log interval: {formula or 'no training here'}",
        "Tokens per phase and FLOPs are read from train_log.jsonl; device-hours are processes x the wall time "
        "between the provenance record's start and end (fine-tuning: summed over the runs, one device each); "
        "'with upstream' adds the runs a model started from (its init or teacher; a decay branch: its parent's "
        "steps up to the branch).",
        f"Inference: encoder forward passes of {batch} sequences at {', '.join(map(str, lengths))} tokens on "
        f"{', '.join(devices) or 'no device'} (bf16 on a GPU, fp32 on the CPU), each figure the median pass; a "
        "length beyond a model's position table is not measured. Models of one architecture (the same "
        "configuration but for names and dropout rates) differ in their weights only, so they share the median "
        "of their measurements (inference_measurements in cost.csv).",
        *(pareto.sentence(p) for p in figure_panels),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("cost", __doc__.splitlines()[0], argv)
    started = provenance.now()
    settings = load_settings(args.settings, CostSettings)
    root, out = Path(args.root), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, lengths = build_rows(settings, root), settings.lengths
    figure_panels = panels(rows, lengths)
    header = [
        "Model",
        "Params (M)",
        "Non-emb. (M)",
        "Tokens (M) per phase",
        "Train FLOPs",
        "Train device-h",
        "Pretrain device-h with upstream",
        "Train peak MB",
        "Fine-tune device-h",
        *(f"seq/s @{n}" for n in lengths),
        "Reported pretraining compute",
    ]
    written = write_table(
        out,
        STEM,
        CSV_HEADER + _lengths_header(lengths),
        [csv_row(r, lengths) for r in rows],
        "What each model cost",
        header,
        [display_row(r, lengths) for r in rows],
        notes(rows, lengths, figure_panels),
    )
    written.append(pareto.plot(figure_panels, out / f"{STEM}.png", "Score per cost (dashed: Pareto frontier)"))
    sources = {
        r.model: {
            "training": [str(r.training.record), str(r.training.log)] if r.training else [],
            "finetune": [str(p) for p in r.usage.records],
            "inference_speed": settings.models[r.model].speed,
        }
        for r in rows
    }
    provenance.record(
        out,
        step="report.cost",
        inputs={
            "settings": args.settings,
            "records": [p for s in sources.values() for p in (*s["training"], *s["finetune"])],
            "speed": [str(root / m.speed) for m in settings.models.values() if m.speed],
            "scores": [str(root / settings.groups), str(root / settings.blurb)],
            "reported_compute": str(root / settings.reported_compute),
        },
        outputs=written,
        restricted=any(r.restricted for r in rows),
        started=started,
        extra={"sources": sources},
        path=out / f"{STEM}.provenance.json",
    )
    log.info("wrote %s", ", ".join(p.name for p in written))


if __name__ == "__main__":
    run(main)
