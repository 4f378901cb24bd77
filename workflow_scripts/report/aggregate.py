"""From run results to table cells: one cell per model x task x benchmark, group means,
BLURB scores, paired comparisons.

Each benchmark's tables read their own metric of the task (e.g. HoC: example F1 for Lewis
et al., micro F1 over document x label cells for BLURB) and their own statistic over seeds
(median for Lewis et al., mean for Gu et al., by default). Folded tasks (GAD, EU-ADR): the
selection fold only chooses hyper-parameters and is left out; the statistic is taken over the
seeds of each other fold, then over those folds (Lewis et al. report the median test result
over the other 9 folds). Scores are kept as fractions here and shown x100 in the tables, as
the papers print them.

Published numbers are compared like with like: a published group mean or BLURB score is
recomputed from the published per-task values of the same member tasks that our value
averages (for the full task list this equals the printed figure within rounding).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .controls import real_models
from .groups import BLURB_TYPE_NAMES, BlurbScore, GroupValue, TaskKind, blurb_score, group_means
from .long_inputs import of_runs
from .metrics import RunResult
from .reference import ReferenceTable
from .seed_grid import over_what, pair_grid, seed_order
from .settings import OTHER, ReportSettings, RunEntry, TaskEntry
from .stats import Paired, Summary, bootstrap_ci, summarise


@dataclass
class Cell:
    model: str
    task: str
    view: str
    metric: str
    statistic: str
    runs: list[RunResult]
    expected: int
    summary: Summary | None
    ci: tuple[float, float] | None
    precision: float | None
    recall: float | None
    restricted: bool
    published: float | None = None
    published_source: str = ""

    @property
    def value(self) -> float | None:
        """The cell's statistic x100, or None when no run has a result."""
        return None if self.summary is None else 100.0 * self.summary.value

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def scores(self) -> list[float]:
        """The runs' test scores in the cell's metric."""
        return [r.scores[self.metric] for r in self.runs]

    @property
    def pretrain_seeds(self) -> list[int]:
        """The pretraining seeds of its runs, where the model was trained once per seed."""
        return sorted({r.pretrain_seed for r in self.runs if r.pretrain_seed is not None})

    def keyed(self) -> dict[tuple, float]:
        """Scores by (pretraining seed, (fold, seed))."""
        return {(r.pretrain_seed, (r.fold, r.seed)): s for r, s in zip(self.runs, self.scores, strict=True)}

    @property
    def status(self) -> str:
        if not self.runs:
            return "missing"
        return "incomplete" if self.n < self.expected else "ok"

    @property
    def note(self) -> str:
        if self.status == "missing":
            return f"no results (0/{self.expected} runs)"
        short = f"fewer runs than configured ({self.n}/{self.expected})" if self.status == "incomplete" else ""
        seeds = len(self.pretrain_seeds)
        pooled = f"{self.statistic} {over_what(seeds, self.n)}" if seeds > 1 else ""
        return "; ".join(text for text in (pooled, short, of_runs(self.runs)) if text)

    @property
    def difference(self) -> float | None:
        if self.value is None or self.published is None:
            return None
        return self.value - self.published


@dataclass
class SummaryRow:
    """Values of a summary row (group or BLURB type) for one model, ours and published."""

    ours: GroupValue
    published: GroupValue | None
    restricted: bool
    incomplete: list[str] = field(default_factory=list)

    @property
    def difference(self) -> float | None:
        if self.ours.value is None or self.published is None or self.published.value is None:
            return None
        return self.ours.value - self.published.value

    @property
    def note(self) -> str:
        notes = [self.ours.note] if self.ours.note else []
        if self.incomplete:
            notes.append("fewer runs than configured: " + ", ".join(self.incomplete))
        return "; ".join(notes)


def primary_view(task: TaskEntry) -> str:
    """The benchmark whose metric and statistic the main (Lewis et al. layout) table shows."""
    return "lewis" if "lewis" in task.views() else task.views()[0]


def _published(
    settings: ReportSettings, model: str, task: str, view: str, refs: dict[str, ReferenceTable]
) -> tuple[float | None, str]:
    if view == OTHER or view not in refs:
        return None, ""
    column = getattr(settings.models[model].published, view)
    row = getattr(settings.tasks[task].reference, view)
    value = refs[view].get(row, column) if column and row else None
    return (value, f"{view}: {column}") if value is not None else (None, "")


def _over(runs: list[RunResult], values: list[float | None], statistic: str) -> float | None:
    if not runs or None in values:
        return None
    return summarise(values, statistic, [r.fold for r in runs]).value


def _run_order(r: RunResult) -> tuple[int, int, int]:
    return r.fold, seed_order(r.pretrain_seed), r.seed


def build_cells(
    settings: ReportSettings, results: list[RunResult], refs: dict[str, ReferenceTable]
) -> dict[tuple[str, str, str], Cell]:
    """One cell per configured model x task x benchmark view, in configuration order."""
    agg = settings.aggregation
    by_cell: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        if r.fold in settings.tasks[r.task].evaluation_folds():
            by_cell[(r.model, r.task)].append(r)
    listed: dict[tuple[str, str], int] = defaultdict(int)
    for run in settings.runs:
        if run.fold in settings.tasks[run.task].evaluation_folds():
            listed[(run.model, run.task)] += 1
    cells = {}
    for model, m in settings.models.items():
        for task, t in settings.tasks.items():
            runs = sorted(by_cell.get((model, task), []), key=_run_order)
            folds = [r.fold for r in runs]
            for view in t.views():
                metric, stat = t.metric_of(view), agg.statistic_of(view)
                scores = [r.scores[metric] for r in runs]
                published, source = _published(settings, model, task, view, refs)
                cells[(model, task, view)] = Cell(
                    model=model,
                    task=task,
                    view=view,
                    metric=metric,
                    statistic=stat,
                    runs=runs,
                    expected=max(t.expected_runs(), listed.get((model, task), 0)),
                    summary=summarise(scores, stat, folds) if runs else None,
                    ci=bootstrap_ci(scores, stat, agg.bootstrap_samples, agg.confidence, agg.bootstrap_seed, folds)
                    if runs
                    else None,
                    precision=_over(runs, [r.precision.get(metric) for r in runs], stat),
                    recall=_over(runs, [r.recall.get(metric) for r in runs], stat),
                    restricted=m.restricted or t.restricted or any(r.restricted for r in runs),
                    published=published,
                    published_source=source,
                )
    return cells


def _summary_row(ours: GroupValue, published: GroupValue | None, cells: dict[str, Cell]) -> SummaryRow:
    members = [cells[t] for t in ours.members]
    return SummaryRow(
        ours=ours,
        published=published,
        restricted=any(c.restricted for c in members),
        incomplete=[f"{c.task} ({c.n}/{c.expected})" for c in members if c.status == "incomplete"],
    )


def lewis_groups(
    settings: ReportSettings, cells: dict[tuple[str, str, str], Cell], refs: dict[str, ReferenceTable]
) -> dict[str, dict[str, SummaryRow]]:
    """model -> group -> ours and published group mean over the tasks in the lewis benchmark."""
    tasks = {n: t for n, t in settings.tasks.items() if "lewis" in t.benchmarks}
    kinds = {n: TaskKind(t.type, t.domain) for n, t in tasks.items()}
    out = {}
    for model, m in settings.models.items():
        mine = {n: cells[(model, n, "lewis")] for n in tasks}
        ours = group_means({n: c.value for n, c in mine.items()}, kinds)
        pub = None
        if m.published.lewis and "lewis" in refs:
            ref = refs["lewis"]
            pub_values = {
                n: ref.get(t.reference.lewis, m.published.lewis) if t.reference.lewis else None
                for n, t in tasks.items()
            }
            pub = group_means(pub_values, kinds)
        out[model] = {g: _summary_row(v, pub[g] if pub else None, mine) for g, v in ours.items()}
    return out


def blurb_scores(
    settings: ReportSettings, cells: dict[tuple[str, str, str], Cell], refs: dict[str, ReferenceTable]
) -> dict[str, dict[str, SummaryRow]]:
    """model -> BLURB type name or 'BLURB score' -> ours and published value."""
    tasks = {n: t for n, t in settings.tasks.items() if "blurb" in t.benchmarks}
    types = {n: t.type for n, t in tasks.items()}
    out = {}
    for model, m in settings.models.items():
        mine = {n: cells[(model, n, "blurb")] for n in tasks}
        ours = blurb_score({n: c.value for n, c in mine.items()}, types)
        pub: BlurbScore | None = None
        if m.published.blurb and "blurb" in refs:
            ref = refs["blurb"]
            pub_values = {
                n: ref.get(t.reference.blurb, m.published.blurb) if t.reference.blurb else None
                for n, t in tasks.items()
            }
            pub = blurb_score(pub_values, types)
        rows = {
            BLURB_TYPE_NAMES[ty]: _summary_row(v, pub.types[ty] if pub else None, mine) for ty, v in ours.types.items()
        }
        # Listed by task rather than type, so the row can be traced to its runs.
        rows["BLURB score"] = SummaryRow(
            ours=GroupValue(ours.score.value, list(tasks), ours.score.missing),
            published=pub.score if pub else None,
            restricted=any(r.restricted for r in rows.values()),
            incomplete=[i for r in rows.values() for i in r.incomplete],
        )
        out[model] = rows
    return out


@dataclass
class Comparison:
    task: str
    view: str
    model_a: str
    model_b: str
    cell_a: Cell
    cell_b: Cell
    n_pairs: int
    scores: tuple[list[float], list[float]] | None
    note: str
    paired: Paired | None = None  # set when its family is tested (significance.run_family)


def pair_cells(task: str, view: str, ca: Cell, cb: Cell) -> Comparison:
    """Two cells' runs paired on the same fold and seed, and pretraining seed where either model
    has several (seed_grid.py; untested)."""
    if len(ca.pretrain_seeds) > 1 or len(cb.pretrain_seeds) > 1:
        pairing = pair_grid(ca.keyed(), cb.keyed())
        return Comparison(task, view, ca.model, cb.model, ca, cb, pairing.n_pairs, pairing.scores, pairing.note)
    runs_b = {(r.fold, r.seed): s for r, s in zip(cb.runs, cb.scores, strict=True)}
    pairs = [
        (s, runs_b[(r.fold, r.seed)]) for r, s in zip(ca.runs, ca.scores, strict=True) if (r.fold, r.seed) in runs_b
    ]
    note, scores = "", None
    if len(pairs) < 2:
        note = f"{len(pairs)} run(s) with the same fold and seed in both models; need at least 2"
    else:
        scores = ([p[0] for p in pairs], [p[1] for p in pairs])
        unpaired = ca.n + cb.n - 2 * len(pairs)
        if unpaired:
            note = f"{unpaired} run(s) without a partner left out"
    return Comparison(task, view, ca.model, cb.model, ca, cb, len(pairs), scores, note)


def compare(settings: ReportSettings, cells: dict[tuple[str, str, str], Cell]) -> list[Comparison]:
    """Every configured pair per task and benchmark view, on runs sharing fold and seed."""
    return [
        pair_cells(task, view, cells[(a, task, view)], cells[(b, task, view)])
        for a, b in settings.aggregation.compare
        for task, t in settings.tasks.items()
        for view in t.views()
    ]


def compare_to_baseline(settings: ReportSettings, cells: dict[tuple[str, str, str], Cell]) -> list[Comparison]:
    """Every real model against the no-training baseline on each task, in the view the main
    table shows."""
    baselines = [n for n, m in settings.models.items() if m.kind == "baseline"]
    if not baselines:
        return []
    real = real_models(settings)
    return [
        pair_cells(task, view, cells[(m, task, view)], cells[(baselines[0], task, view)])
        for task, t in settings.tasks.items()
        for view in [primary_view(t)]
        for m in real
    ]


def missing_runs(missing: list[RunEntry]) -> list[str]:
    return [f"{r.model} / {r.task} fold {r.fold} seed {r.seed}: {r.metrics} not found" for r in missing]
