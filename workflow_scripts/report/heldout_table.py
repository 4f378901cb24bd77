"""Held-out MLM loss of teachers, distilled students and their "train longer" controls.

    python -m workflow_scripts.report.heldout_table --model results/pretrain/T \\
        results/distill/S results/distill/S-control [...] --out results/tables

Reads each model directory's provenance.json (written by pretraining or distillation, with
the held-out evaluation in ``result``) and writes heldout_mlm.csv, heldout_mlm.md and
heldout_mlm.provenance.json (last) to --out. Every model of one corpus mix is evaluated on
the same held-out blocks with the same masks, so their losses compare directly; each
distilled student is set beside the control that shares its teacher, initialisation and
steps (Lewis et al. §7: does distillation beat training the small model longer?).
"""

from __future__ import annotations

import argparse
import csv
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from .render import LEGEND, RESTRICTED, marked

log = logging.getLogger(__name__)
TABLE = "heldout_mlm"
HEADER = [
    "model",
    "role",
    "teacher",
    "layers",
    "parameters",
    "steps",
    "heldout_loss",
    "heldout_perplexity",
    "heldout_masked_tokens",
    "control",
    "control_loss",
    "gain_over_control",
    "restricted",
]


@dataclass
class Row:
    model: str
    role: str  # pretrained, distilled or control
    teacher: str | None
    layers: int
    parameters: int
    steps: int
    loss: float | None
    perplexity: float | None
    masked_tokens: int
    recipe_key: tuple | None = None  # what a student and its control must share
    control: Row | None = None
    restricted: bool = False  # derived from credentialed data, as its provenance says


def _model_name(path: str) -> str:
    """A model's name from its directory: results/<kind>/<name>, where a pretraining seed's model
    name has a segment of its own (<name>/pseed~<seed>)."""
    parts = Path(path).parts
    for i in range(1, len(parts) - 1):
        if parts[i - 1] == "results" and parts[i] in ("pretrain", "distill"):
            return "/".join(parts[i + 1 :])
    return Path(path).name


def read_model(directory: str | Path) -> Row:
    directory = Path(directory)
    path = directory / "provenance.json"
    if not path.is_file():
        raise PipelineError(f"{path}: not found; pretrain or distil {directory.name} first")
    record = provenance.load(path)
    step, result = record.get("step"), record.get("result")
    if step not in ("pretrain", "distill") or not isinstance(result, dict) or "heldout_loss" not in result:
        raise PipelineError(
            f"{path}: not the record of a pretraining or distillation run with a held-out "
            "evaluation; pass model directories only"
        )
    model = record.get("model") or {}
    config = model.get("config") or {}
    params = record.get("params") or {}
    settings = params.get(step) or {}
    row = Row(
        model=params.get("name") or directory.name,
        role="pretrained",
        teacher=None,
        layers=int(config.get("num_hidden_layers", 0)),
        parameters=int(model.get("parameters", 0)),
        steps=int(result.get("steps", 0)),
        loss=result.get("heldout_loss"),
        perplexity=result.get("heldout_perplexity"),
        masked_tokens=int(result.get("heldout_masked_tokens", 0)),
        restricted=bool(record.get("restricted")),
    )
    if step == "distill":
        recipe = record.get("recipe") or {}
        row.teacher = _model_name((record.get("teacher") or {}).get("path", "")) or None
        row.role = "control" if recipe.get("control") else "distilled"
        student = recipe.get("student") or {}
        shared = {k: v for k, v in settings.items() if k not in ("loss", "temperature", "kl_positions", "layer_map")}
        row.recipe_key = (
            row.teacher,
            repr(sorted(student.items())),
            repr(sorted(shared.items(), key=lambda kv: kv[0])),
        )
    return row


def pair_controls(rows: list[Row]) -> None:
    """Attach to each distilled student the control with the same teacher, init and training settings."""
    controls = {r.recipe_key: r for r in rows if r.role == "control"}
    for r in rows:
        if r.role == "distilled":
            r.control = controls.get(r.recipe_key)


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return ""
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        c = r.control
        gain = c.loss - r.loss if c is not None and c.loss is not None and r.loss is not None else None
        out.append(
            [
                r.model,
                r.role,
                r.teacher or "",
                str(r.layers),
                str(r.parameters),
                str(r.steps),
                _fmt(r.loss),
                _fmt(r.perplexity, 2),
                str(r.masked_tokens),
                c.model if c else "",
                _fmt(c.loss) if c else "",
                _fmt(gain),
                str(r.restricted),
            ]
        )
    return out


def to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(table_rows(rows))
    return buf.getvalue()


def to_markdown(rows: list[Row]) -> str:
    head = [
        "Model",
        "Role",
        "Teacher",
        "Layers",
        "Parameters",
        "Steps",
        "Held-out MLM loss",
        "Perplexity",
        "Masked tokens",
        "Control",
        "Control loss",
        "Gain over control",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [
        "| " + " | ".join([marked(cells[0], r.restricted), *cells[1:-1]]) + " |"
        for r, cells in zip(rows, table_rows(rows), strict=True)
    ]
    counts = {r.masked_tokens for r in rows if r.loss is not None}
    notes = [
        "",
        "Loss per masked token on held-out text, masks fixed across models; lower is better. "
        "Gain over control: the control's loss minus the student's (positive: distillation helped).",
    ]
    if len(counts) > 1:
        notes.append(
            "Warning: the models were evaluated on different held-out sets (masked token counts differ); "
            "compare only rows with equal counts."
        )
    if any(r.restricted for r in rows):
        notes.append(f"{RESTRICTED} {LEGEND[RESTRICTED]}.")
    if any(r.loss is None for r in rows):
        notes.append(
            "Empty loss: the model had no held-out blocks (heldout_fraction 0 or documents shorter than a block)."
        )
    return "\n".join(lines + notes) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model",
        required=True,
        nargs="+",
        action="extend",
        help="model directories (results/pretrain/M, results/distill/S)",
    )
    ap.add_argument("--out", required=True, help="output directory (results/tables)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    started = provenance.now()
    args = parse_args(argv)
    rows = [read_model(d) for d in args.model]
    pair_controls(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / f"{TABLE}.csv", to_csv(rows))
    write_text(out / f"{TABLE}.md", to_markdown(rows))
    for r in rows:
        if r.control is not None and r.loss is not None and r.control.loss is not None:
            log.info("%s: held-out MLM loss %.4f, control %s %.4f", r.model, r.loss, r.control.model, r.control.loss)
    provenance.record(
        out / f"{TABLE}.csv",
        step="heldout_table",
        inputs={"models": list(args.model)},
        outputs=[out / f"{TABLE}.csv", out / f"{TABLE}.md"],
        started=started,
        path=out / f"{TABLE}.provenance.json",
    )


if __name__ == "__main__":
    run(main)
