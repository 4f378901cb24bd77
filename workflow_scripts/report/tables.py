"""Median tables, group means, the BLURB score, spread and paired comparisons.

    python -m workflow_scripts.report.tables --settings results/configs/report.yaml --out results/tables

Writes to --out: medians.{csv,md,tex} (tasks x models as in Lewis et al. Table 7, each task in
its benchmark's metric and statistic, Lewis et al.'s where it is in both; group means at the
bottom of the Markdown/LaTeX; the CSV has one row per model x task with the metric, the
statistic, the number of runs, the published value and the difference), groups.{csv,md,tex}
(Lewis et al.'s metrics and statistic), blurb.{csv,md,tex} (BLURB's), spread.csv and
comparisons.csv (one row per model x task x benchmark), missing.md and provenance.json
(written last). How runs are aggregated is described in ``aggregate``; the group and BLURB
definitions in ``groups``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..tasks.metrics import LABELS
from ..typed import to_dict
from . import controls, long_inputs, render
from .aggregate import Cell, SummaryRow, blurb_scores, build_cells, lewis_groups, missing_runs, primary_view
from .families import claims
from .groups import GROUPS
from .metrics import RunResult, load_runs
from .missing import missing_report
from .reference import BLURB_SCORE_ROW, BLURB_TASKS, LEWIS_TASKS, ReferenceTable, read_reference
from .render import INCOMPLETE, NO_VALUE, RESTRICTED
from .seed_grid import pooled_notes
from .settings import ReportSettings, RunEntry, load, parse_args
from .spread import comparisons_csv, spread_csv

log = logging.getLogger(__name__)


@dataclass
class Built:
    written: list[Path]
    results: list[RunResult]
    missing: list[RunEntry]
    cells: dict[tuple[str, str, str], Cell]


def load_references(settings: ReportSettings, root: Path) -> dict[str, ReferenceTable]:
    """Read the configured reference CSVs and check every name that points into them."""
    refs = {}
    for bench in ("lewis", "blurb"):
        path = getattr(settings.reference, bench)
        if path:
            refs[bench] = read_reference(root / path)
    for name, m in settings.models.items():
        for bench, table in refs.items():
            column = getattr(m.published, bench)
            if column:
                table.require_model(column, f"models.{name}.published.{bench}")
    for name, t in settings.tasks.items():
        for bench, table in refs.items():
            row = getattr(t.reference, bench)
            if row:
                table.require_row(row, f"tasks.{name}.reference.{bench}")
        kind = LEWIS_TASKS.get(t.reference.lewis or "")
        if kind and (kind.type, kind.domain) != (t.type, t.domain):
            log.warning(
                "tasks.%s: type %s/%s differs from %s in Lewis et al. (%s/%s); its group follows ours",
                name,
                t.type,
                t.domain,
                t.reference.lewis,
                kind.type,
                kind.domain,
            )
        blurb_type = BLURB_TASKS.get(t.reference.blurb or "")
        if blurb_type and blurb_type != t.type:
            log.warning(
                "tasks.%s: type %s differs from %s in BLURB (%s); its BLURB type follows ours",
                name,
                t.type,
                t.reference.blurb,
                blurb_type,
            )
    return refs


def _marks(restricted: bool, incomplete: bool) -> str:
    return (RESTRICTED if restricted else "") + (INCOMPLETE if incomplete else "")


def _cell_display(cell: Cell, published: float | None, digits: int) -> render.DisplayCell:
    return render.with_published(cell.value, published, digits), _marks(cell.restricted, cell.status != "ok")


def _row_display(row: SummaryRow, digits: int) -> render.DisplayCell:
    if row.ours.value is None:
        text = row.ours.note if not row.ours.members else f"{NO_VALUE} ({row.ours.note})"
    else:
        pub = row.published.value if row.published else None
        text = render.with_published(row.ours.value, pub, digits)
    return text, _marks(row.restricted, bool(row.ours.missing or row.incomplete))


def _published_note(settings: ReportSettings, *benches: str) -> list[str]:
    """Legend naming each model's published counterpart (the first of ``benches`` it names)."""
    named = []
    for m in settings.models.values():
        column = next((getattr(m.published, b) for b in benches if getattr(m.published, b)), None)
        if column:
            named.append(f"{m.display} ↔ {column}")
    if not named:
        return []
    return ["In parentheses: published value and our difference (" + "; ".join(named) + ")."]


def _measure(settings: ReportSettings, task: str, view: str) -> str:
    """What a task's row shows: its metric and the statistic over seeds."""
    metric = settings.tasks[task].metric_of(view)
    return f"{LABELS.get(metric, metric)}, {settings.aggregation.statistic_of(view)}"


def _folds_note(settings: ReportSettings, tasks: Sequence[str]) -> list[str]:
    folded = [settings.tasks[t] for t in tasks if settings.tasks[t].selection_fold is not None]
    if not folded:
        return []
    names = ", ".join(t.display for t in folded)
    return [
        f"{names}: the statistic over the seeds of each fold, then over the folds other than the one that "
        "chose the hyper-parameters."
    ]


def medians_table(settings: ReportSettings, cells: dict, groups: dict, out: Path) -> list[Path]:
    lewis_stat = settings.aggregation.statistic_of("lewis")
    header = [
        "model",
        "model_display",
        "task",
        "task_display",
        "benchmark",
        "metric",
        "statistic",
        "value",
        "n",
        "expected_n",
        "status",
        "published",
        "published_source",
        "difference",
        "restricted",
        "note",
    ]
    shown = {name: cells_of(cells, name, primary_view(t)) for name, t in settings.tasks.items()}
    rows = [
        {
            "model": c.model,
            "model_display": settings.models[c.model].display,
            "task": c.task,
            "task_display": settings.tasks[c.task].display,
            "benchmark": c.view,
            "metric": c.metric,
            "statistic": c.statistic,
            "value": render.csv_number(c.value),
            "n": c.n,
            "expected_n": c.expected,
            "status": c.status,
            "published": c.published,
            "published_source": c.published_source,
            "difference": render.csv_number(c.difference),
            "restricted": c.restricted,
            "note": c.note,
        }
        for by_model in shown.values()
        for c in by_model.values()
    ]
    models = list(settings.models)
    display = [
        [(t.display, ""), (_measure(settings, name, primary_view(t)), "")]
        + [_cell_display(shown[name][m], shown[name][m].published, 1) for m in models]
        for name, t in settings.tasks.items()
    ]
    if any("lewis" in t.benchmarks for t in settings.tasks.values()):
        display += [
            [(f"Mean ({g})", ""), (f"mean of the tasks' {lewis_stat}s", "")]
            + [_row_display(groups[m][g], 1) for m in models]
            for g in GROUPS
        ]
    title = "Test results per task (x100), each in its benchmark's metric and statistic over seeds"
    return render.write_table(
        out,
        "medians",
        header,
        rows,
        title,
        ["Task", "Metric, statistic"] + controls.labels(settings, models),
        display,
        _published_note(settings, "lewis", "blurb")
        + _folds_note(settings, list(settings.tasks))
        + long_inputs.notes(settings.tasks, settings.models, shown)
        + controls.notes(settings)
        + pooled_notes(settings),
    )


def cells_of(cells: dict, task: str, view: str) -> dict[str, Cell]:
    """model -> cell of one task in one benchmark view."""
    return {c.model: c for (_, t, v), c in cells.items() if t == task and v == view}


def summary_rows(settings: ReportSettings, summaries: dict, bench: str, label: str, tasks: list[str]) -> list[dict]:
    """The CSV rows of a benchmark's table: per model, its tasks' cells, then its summary rows."""
    stat = settings.aggregation.statistic_of(bench)
    rows = []
    for model in settings.models:
        column = getattr(settings.models[model].published, bench)
        same = {"model": model, "model_display": settings.models[model].display, "statistic": stat}
        same["published_source"] = column or ""
        for name in tasks:
            c = summaries["cells"][(model, name, bench)]
            rows.append(
                {
                    **same,
                    label: name,
                    "metric": c.metric,
                    "value": render.csv_number(c.value),
                    "published": c.published,
                    "difference": render.csv_number(c.difference),
                    "members": name,
                    "missing": "" if c.value is not None else name,
                    "restricted": c.restricted,
                    "note": c.note,
                }
            )
        for name, row in summaries["rows"][model].items():
            rows.append(
                {
                    **same,
                    label: name,
                    "metric": "",
                    "value": render.csv_number(row.ours.value),
                    "published": render.csv_number(row.published.value) if row.published else None,
                    "difference": render.csv_number(row.difference),
                    "members": ";".join(row.ours.members),
                    "missing": ";".join(row.ours.missing),
                    "restricted": row.restricted,
                    "note": row.note,
                }
            )
    return rows


def summary_table(
    settings: ReportSettings,
    summaries: dict,
    out: Path,
    stem: str,
    bench: str,
    label: str,
    title: str,
    digits: int,
    row_header: str = "",
) -> list[Path]:
    """A benchmark's table: its tasks' cells (the BLURB table lists them), then the summary rows
    (group means, type means, the BLURB score), each beside the published value."""
    stat = settings.aggregation.statistic_of(bench)
    header = ["model", "model_display", label, "metric", "statistic", "value", "published", "published_source"]
    header += ["difference", "members", "missing", "restricted", "note"]
    tasks = [n for n, t in settings.tasks.items() if bench in t.benchmarks] if bench == "blurb" else []
    models = list(settings.models)
    rows = summary_rows(settings, summaries, bench, label, tasks)
    names = list(next(iter(summaries["rows"].values())).keys()) if summaries["rows"] else []
    display = [
        [(settings.tasks[n].display, ""), (_measure(settings, n, bench), "")]
        + [
            _cell_display(summaries["cells"][(m, n, bench)], summaries["cells"][(m, n, bench)].published, digits)
            for m in models
        ]
        for n in tasks
    ]
    display += [
        [(n, ""), ("mean of the type means" if n == BLURB_SCORE_ROW else f"mean of per-task {stat}s", "")]
        + [_row_display(summaries["rows"][m][n], digits) for m in models]
        for n in names
    ]
    header_row = [row_header or label.capitalize(), "Metric, statistic"] + controls.labels(settings, models)
    notes = _published_note(settings, bench)
    notes += _folds_note(settings, [n for n, t in settings.tasks.items() if bench in t.benchmarks])
    notes += controls.notes(settings) + pooled_notes(settings)
    return render.write_table(out, stem, header, rows, title, header_row, display, notes)


def build(settings: ReportSettings, out: Path, root: Path = Path(".")) -> Built:
    """Compute every table from the runs and write them to ``out``."""
    refs = load_references(settings, root)
    results, missing = load_runs(settings, root)
    if not results and settings.runs:
        log.warning("none of the %d listed runs has a metrics file yet", len(settings.runs))
    cells = build_cells(settings, results, refs)
    groups = lewis_groups(settings, cells, refs)
    blurb = blurb_scores(settings, cells, refs)
    out.mkdir(parents=True, exist_ok=True)
    agg = settings.aggregation
    written = medians_table(settings, cells, groups, out)
    written += summary_table(
        settings,
        {"cells": cells, "rows": groups},
        out,
        "groups",
        "lewis",
        "group",
        f"Group means of per-task {agg.statistic_of('lewis')}s (x100), as in Lewis et al.",
        1,
    )
    written += summary_table(
        settings,
        {"cells": cells, "rows": blurb},
        out,
        "blurb",
        "blurb",
        "type",
        f"BLURB: per-task {agg.statistic_of('blurb')}s in BLURB's metrics, per-type means and the BLURB score (x100)",
        2,
        "Task / type",
    )
    written.append(spread_csv(settings, cells, out))
    tested = claims(settings, cells, groups)
    written.append(comparisons_csv(settings, tested, out))
    written.append(out / "missing.md")
    write_text(written[-1], missing_report(settings, missing, cells, groups, blurb, tested))
    return Built(written, results, missing, cells)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("tables", __doc__.splitlines()[0], argv)
    started = provenance.now()
    settings = load(args.settings)
    root, out = Path(args.root), Path(args.out)
    built = build(settings, out, root)
    written, results, missing, cells = built.written, built.results, built.missing, built.cells
    inputs: dict = {"settings": args.settings, "metrics": [str(root / r.path) for r in results]}
    for bench in ("lewis", "blurb"):
        if getattr(settings.reference, bench):
            inputs[f"reference_{bench}"] = str(root / getattr(settings.reference, bench))
    evaluated = {(r.model, r.pretrain_seed, r.task, r.fold, r.seed) for c in cells.values() for r in c.runs}
    provenance.record(
        out,
        step="report.tables",
        inputs=inputs,
        params=to_dict(settings.aggregation),
        outputs=written,
        restricted=any(c.restricted and c.n for c in cells.values()),
        started=started,
        extra={
            "runs": [
                {
                    "model": r.model,
                    **({} if r.pretrain_seed is None else {"pretrain_seed": r.pretrain_seed}),
                    "task": r.task,
                    "fold": r.fold,
                    "seed": r.seed,
                    "metrics": str(root / r.path),
                    "score": r.test,
                    "used": (r.model, r.pretrain_seed, r.task, r.fold, r.seed) in evaluated,
                }
                for r in results
            ],
            "missing_runs": missing_runs(missing),
        },
    )
    log.info("wrote %d tables from %d runs (%d missing) to %s", len(written), len(results), len(missing), out)


if __name__ == "__main__":
    run(main)
