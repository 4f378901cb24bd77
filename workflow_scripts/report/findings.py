"""The study's findings in sentences, each computed from the tables: findings.md beside them,
and findings.html (the findings, the main tables and the plots on one page) for the HTML report.

    python -m workflow_scripts.report.findings --settings results/configs/report.yaml \
        --tables results/tables [--heldout results/tables/heldout_mlm.csv] [--plot results/tables/scores.png ...]

One sentence per configured model pair and group mean (comparisons.csv rows ``mean:<group>``:
values, paired difference, its interval and whether it is beyond seed noise), one per
distilled student on held-out MLM loss (heldout_mlm.csv: teacher, student, train-longer
control), and one per task on the no-training baseline (medians.csv and spread.csv). An
effect that is not there is stated as not appearing; nothing here is typed in by hand.
"""

from __future__ import annotations

import argparse
import base64
import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from . import controls
from .group_compare import GROUP_PREFIX
from .groups import ALL, CLINICAL
from .settings import ReportSettings, load

log = logging.getLogger(__name__)
STATED_GROUPS = (ALL, CLINICAL)


@dataclass
class Finding:
    topic: str
    sentence: str
    appeared: bool | None  # None: could not be computed


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise PipelineError(f"{path}: not found; write the tables first (rule tables)")
    return pd.read_csv(path)


def _num(value, digits: int = 1) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def _signed(value, digits: int = 1) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{value:+.{digits}f}"


def pair_findings(settings: ReportSettings, comparisons: pd.DataFrame) -> list[Finding]:
    """One sentence per configured pair and stated group mean."""
    out = []
    level = round(100 * settings.aggregation.confidence)
    rows = [r for g in STATED_GROUPS for r in comparisons.itertuples(index=False) if r.task == GROUP_PREFIX + g]
    for r in rows:
        group = r.task[len(GROUP_PREFIX) :]
        a, b = settings.models[r.model_a].display, settings.models[r.model_b].display
        head = f"{a} vs {b}, {group} mean: {_num(r.value_a)} vs {_num(r.value_b)}"
        if pd.isna(r.mean_paired_difference):
            out.append(Finding(f"{group} mean", f"{head}; no paired comparison ({r.note}).", None))
            continue
        stats = (
            f"paired difference {_signed(r.mean_paired_difference)} "
            f"({level}% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}, {int(r.n_pairs)} seeds, "
            f"sign-flip p = {r.p_sign_flip:.3f})"
        )
        if bool(r.beyond_noise):
            winner = a if r.mean_paired_difference > 0 else b
            verdict = f"{winner} is better beyond seed noise"
        else:
            verdict = "the difference is within seed noise: no effect appeared"
        out.append(
            Finding(
                f"{group} mean", f"{head}, {stats}: {verdict}.", bool(r.beyond_noise) and r.mean_paired_difference > 0
            )
        )
    return out


def heldout_findings(settings: ReportSettings, heldout: pd.DataFrame) -> list[Finding]:
    """Teacher < student < train-longer control on held-out MLM loss, per distilled student."""

    def name(model: str) -> str:
        m = settings.models.get(model)
        return m.display if m else model

    loss = dict(zip(heldout["model"], heldout["heldout_loss"], strict=True))
    out = []
    for r in heldout[heldout["role"] == "distilled"].itertuples(index=False):
        teacher = loss.get(r.teacher)
        parts = [f"teacher {name(r.teacher)} {_num(teacher, 3)}", f"student {name(r.model)} {_num(r.heldout_loss, 3)}"]
        checks = [(teacher, r.heldout_loss, "the teacher is lower than its student")]
        if isinstance(r.control, str) and r.control:
            parts.append(f"train-longer control {name(r.control)} {_num(r.control_loss, 3)}")
            checks.append((r.heldout_loss, r.control_loss, "the student is lower than the train-longer control"))
        verdicts = [
            f"{text}: {'yes' if lo < hi else 'no, the effect did not appear'}"
            for lo, hi, text in checks
            if not (pd.isna(lo) or pd.isna(hi))
        ]
        appeared = all(lo < hi for lo, hi, _ in checks if not (pd.isna(lo) or pd.isna(hi)))
        out.append(
            Finding(
                "held-out MLM loss",
                f"Held-out MLM loss ({', '.join(parts)}; one evaluation on the same "
                f"masked blocks, no seed interval): {'; '.join(verdicts)}.",
                appeared,
            )
        )
    return out


def baseline_findings(settings: ReportSettings, medians: pd.DataFrame, spread: pd.DataFrame) -> list[Finding]:
    """Per task: which real models clear the no-training baseline by more than their seed interval."""
    baselines = [n for n, m in settings.models.items() if m.kind == "baseline"]
    real = controls.real_models(settings)
    if not baselines or not real:
        return []
    shown = {(r.task, r.benchmark) for r in medians.itertuples(index=False)}  # each task's table view
    low = {(r.model, r.task): r.ci_low for r in spread.itertuples(index=False) if (r.task, r.benchmark) in shown}
    value = {(r.model, r.task): r.value for r in medians.itertuples(index=False)}
    out = []
    for task, t in settings.tasks.items():
        base = value.get((baselines[0], task))
        if base is None or pd.isna(base):
            out.append(Finding("baseline", f"{t.display}: no baseline value.", None))
            continue
        above = [m for m in real if not pd.isna(low.get((m, task), float("nan"))) and low[(m, task)] > base]
        best = max(real, key=lambda m: -1e9 if pd.isna(value.get((m, task))) else value[(m, task)])
        if above:
            sentence = (
                f"{t.display}: {len(above)} of {len(real)} models score above the no-training baseline "
                f"({_num(base)}) beyond seed noise; best {settings.models[best].display} "
                f"{_num(value.get((best, task)))}."
            )
        else:
            sentence = (
                f"{t.display}: no model scores above the no-training baseline ({_num(base)}) beyond seed "
                f"noise (best {settings.models[best].display} {_num(value.get((best, task)))}): "
                "nothing learned appeared."
            )
        out.append(Finding("baseline", sentence, bool(above)))
    return out


def findings(settings: ReportSettings, tables: Path, heldout: Path | None) -> list[Finding]:
    out = pair_findings(settings, _read(tables / "comparisons.csv"))
    if heldout is not None:
        out += heldout_findings(settings, _read(heldout))
    out += baseline_findings(settings, _read(tables / "medians.csv"), _read(tables / "spread.csv"))
    return out


def to_markdown(items: list[Finding]) -> str:
    lines = ["## Findings", ""]
    lines += [f"- {f.sentence}" for f in items] or ["- No comparison is configured (aggregation.compare)."]
    return "\n".join(lines) + "\n"


def _pivot_html(table: pd.DataFrame, row: str, table_id: str) -> str:
    wide = table.pivot_table(index=row, columns="model_display", values="value", aggfunc="first", sort=False)
    return wide.round(1).to_html(na_rep="—", table_id=table_id, border=0)


def to_html(items: list[Finding], tables: Path, plots: Sequence[Path]) -> str:
    """Findings, the per-task and group tables and the plots on one self-contained page (the
    HTML report shows it on its first page)."""
    entries = "".join(f"<li>{html.escape(f.sentence)}</li>" for f in items)
    medians = _pivot_html(_read(tables / "medians.csv"), "task_display", "medians")
    groups = _pivot_html(_read(tables / "groups.csv"), "group", "groups")
    figures = "".join(
        f"<figure><img alt='{p.stem}' style='max-width:100%' "
        f"src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
        f"<figcaption>{p.stem}</figcaption></figure>"
        for p in plots
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Findings</title></head><body>"
        f"<h2>Findings</h2><ul id='findings'>{entries}</ul>"
        f"<h2>Test results per task (x100)</h2>{medians}<h2>Group means (x100)</h2>{groups}"
        f"<h2>Plots</h2>{figures}</body></html>\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.report.findings", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--settings", required=True, help="report settings YAML (results/configs/report.yaml)")
    parser.add_argument("--tables", required=True, type=Path, help="directory of the tables (results/tables)")
    parser.add_argument("--heldout", type=Path, default=None, help="heldout_mlm.csv, where the study distils")
    parser.add_argument("--plot", type=Path, action="append", default=[], help="a figure shown on the page")
    args = parser.parse_args(argv)
    started = provenance.now()
    items = findings(load(args.settings), args.tables, args.heldout)
    md, page = args.tables / "findings.md", args.tables / "findings.html"
    write_text(md, to_markdown(items))
    write_text(page, to_html(items, args.tables, args.plot))
    for f in items:
        log.info("%s", f.sentence)
    inputs: dict = {"settings": args.settings, "plots": [str(p) for p in args.plot]}
    inputs.update({name: str(args.tables / f"{name}.csv") for name in ("comparisons", "medians", "spread", "groups")})
    if args.heldout is not None:
        inputs["heldout"] = str(args.heldout)
    provenance.record(
        md,
        step="report.findings",
        inputs=inputs,
        outputs=[md, page],
        started=started,
        path=args.tables / "findings.provenance.json",
    )


if __name__ == "__main__":
    run(main)
