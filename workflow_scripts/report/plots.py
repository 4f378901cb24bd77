"""Figures: per-task scores with the spread over seeds, pretraining loss, schedule, speed
and memory curves, vocabulary fragmentation.

    python -m workflow_scripts.report.plots --settings results/configs/report.yaml --out results/tables

Always writes scores.png, pretrain_loss.png, pretrain_speed.png and vocab_fragmentation.png, then
plots.provenance.json. A figure whose inputs are absent (no runs yet, no pretraining logs or
vocabulary diagnostics configured or found) says so in the figure itself and in the log.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .. import provenance  # noqa: E402
from ..atomic import atomic_file  # noqa: E402
from ..cli import run  # noqa: E402
from ..errors import PipelineError  # noqa: E402
from ..tasks.metrics import LABELS  # noqa: E402
from ..typed import to_dict  # noqa: E402
from . import controls  # noqa: E402
from .aggregate import primary_view  # noqa: E402
from .metrics import RunResult, load_runs  # noqa: E402
from .render import LEGEND, RESTRICTED, marked  # noqa: E402
from .settings import ReportSettings, load, parse_args  # noqa: E402
from .stats import summarise  # noqa: E402

log = logging.getLogger(__name__)
FIGURES = ("scores.png", "pretrain_loss.png", "pretrain_speed.png", "vocab_fragmentation.png")


def _save(fig, path: Path) -> Path:
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def footnoted(title: str, labels: list[str]) -> str:
    """``title``, with the restricted mark's meaning where a label carries it."""
    if any(label.endswith(RESTRICTED) for label in labels):
        title += f"\n{RESTRICTED} {LEGEND[RESTRICTED]}"
    return title


def _legend_below(fig, title: str, handles: list, labels: list[str]) -> None:
    """One legend for all panels, under them in rows of three, and the title above."""
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8)
    fig.suptitle(footnoted(title, labels))
    fig.tight_layout(rect=(0, 0.08 + 0.04 * (len(labels) // 3), 1, 1))


def _placeholder(path: Path, title: str, reason: str) -> Path:
    log.warning("%s: %s", path.name, reason)
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True)
    return _save(fig, path)


def plot_scores(settings: ReportSettings, results: list[RunResult], path: Path) -> Path:
    """One panel per task: every run's test score per model, and the statistic as a line; each
    task in the metric and statistic of its main table (Lewis et al.'s where it is in both)."""
    title = "Test scores over seeds"
    if not results:
        return _placeholder(path, title, "No fine-tuning results yet: no metrics.json of the listed runs exists.")
    by_cell: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        if r.fold in settings.tasks[r.task].evaluation_folds():
            by_cell[(r.model, r.task)].append(r)
    tasks = [t for t in settings.tasks if any((m, t) in by_cell for m in settings.models)]
    models = list(settings.models)
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    rng = np.random.default_rng(0)
    shown: list[str] = []
    for ax, task in zip(axes.flat, tasks, strict=False):
        t = settings.tasks[task]
        view = primary_view(t)
        metric, stat = t.metric_of(view), settings.aggregation.statistic_of(view)
        values = []
        for i, model in enumerate(models):
            runs = by_cell.get((model, task), [])
            if not runs:
                continue
            scores = [100.0 * r.scores[metric] for r in runs]
            values += scores
            # controls in grey with hollow dots, so no one reads them as one of the models
            colour = "0.5" if settings.models[model].is_control else f"C{i}"
            face = "none" if settings.models[model].is_control else colour
            ax.hlines(
                summarise(scores, stat, [r.fold for r in runs]).value, i - 0.3, i + 0.3, color=colour, linewidth=2.5
            )
            ax.scatter(
                i + rng.uniform(-0.15, 0.15, len(scores)), scores, edgecolors=colour, facecolors=face, s=14, zorder=3
            )
        # a run marked without its task being so was trained on credentialed data
        restricted = {r.model for r in results if r.task == task and r.restricted and not t.restricted}
        labels = [marked(controls.label(settings, m), settings.models[m].restricted or m in restricted) for m in models]
        ax.set_xticks(range(len(models)), labels, rotation=30, ha="right")
        shown += [*labels, marked(t.display, t.restricted)]
        ax.set_title(f"{shown[-1]}\n{view}: line = {stat}", fontsize=9)
        ax.set_ylabel(f"{LABELS.get(metric, metric)} x100", fontsize=8)
        pad = max(1.0, 0.15 * (max(values) - min(values)))
        ax.set_xlim(-0.6, len(models) - 0.4)
        ax.set_ylim(min(values) - pad, max(values) + pad)
    for ax in list(axes.flat)[len(tasks) :]:
        ax.axis("off")
    fig.suptitle(footnoted(f"{title}: dots are runs, lines the statistic of the task's benchmark", shown))
    fig.tight_layout()
    return _save(fig, path)


# train_log.jsonl columns of the speed figure; MFU is null where the device's peak is unknown
SPEED_PANELS = (
    ("lr", "learning rate", "not logged"),
    ("tokens_per_s", "tokens/s", "not logged"),
    ("mfu", "MFU (model FLOPs / device peak)", "no device peak known (CPU):\nset the model's peak_tflops"),
    ("memory_mb", "peak memory (MB)", "not logged"),
)


def _numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_log(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Every numeric column of a train_log.jsonl as (step, value) points.

    "mlm" is the MLM loss drawn: ELECTRA's total adds the weighted replaced-token loss,
    so its generator's MLM loss is the one drawn beside the MLM models'."""
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PipelineError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(entry, dict) or not _numeric(entry.get("step")):
                continue
            step = float(entry["step"])
            for key, value in entry.items():
                if key != "step" and _numeric(value):
                    series[key].append((step, float(value)))
            loss = entry.get("loss_generator", entry.get("loss"))
            if _numeric(loss):
                series["mlm"].append((step, float(loss)))
    return dict(series)


def read_logs(settings: ReportSettings, root: Path) -> tuple[dict[str, dict], list[Path]]:
    """model -> its train_log series, for the configured logs that exist; and the files read."""
    logs, used = {}, []
    for model, rel in settings.pretrain_logs.items():
        p = root / rel
        if not p.is_file():
            log.warning("pretraining log of %s not found: %s", model, rel)
            continue
        logs[model] = read_log(p)
        used.append(p)
        if not logs[model].get("mlm"):
            log.warning("%s has no lines with step and loss", rel)
    return logs, used


def _draw(ax, settings: ReportSettings, logs: dict[str, dict], key: str) -> bool:
    drew = False
    for model, series in logs.items():
        if series.get(key):
            steps, values = zip(*sorted(series[key]), strict=True)
            name = settings.models[model].display if model in settings.models else model
            ax.plot(steps, values, label=marked(name, model in settings.restricted_models))
            drew = True
    ax.set_xlabel("step")
    return drew


def plot_pretrain_loss(settings: ReportSettings, logs: dict[str, dict], path: Path) -> Path:
    title = "Pretraining loss"
    if not any(series.get("mlm") for series in logs.values()):
        reason = (
            "No pretraining log configured."
            if not settings.pretrain_logs
            else "No pretraining log with step and loss lines found."
        )
        return _placeholder(path, title, reason)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    _draw(ax, settings, logs, "mlm")
    ax.set_ylabel("training MLM loss (ELECTRA: generator)")
    ax.set_title(footnoted(title, ax.get_legend_handles_labels()[1]), fontsize=10)
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


def plot_pretrain_speed(settings: ReportSettings, logs: dict[str, dict], path: Path) -> Path:
    """Learning rate, tokens/s, MFU and peak memory against the step, one panel each."""
    title = "Pretraining schedule, speed and memory"
    if not any(series.get(key) for series in logs.values() for key, _, _ in SPEED_PANELS):
        return _placeholder(path, title, "No pretraining log with learning rate, speed or memory lines found.")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for ax, (key, label, absent) in zip(axes.flat, SPEED_PANELS, strict=True):
        if not _draw(ax, settings, logs, key):
            ax.text(0.5, 0.5, absent, ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        ax.set_title(label)
    _legend_below(fig, title, *next((a.get_legend_handles_labels() for a in axes.flat if a.lines), ([], [])))
    return _save(fig, path)


def _number(value) -> float:
    # A task without entity words has no fragmentation figure: leave its bar out.
    return float(value) if isinstance(value, (int, float)) else np.nan


def read_diagnostics(path: Path) -> dict[str, dict]:
    """tokenizer name -> {"size", "term_coverage", "fragmentation": {task: {all_words, entity_words}}}."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PipelineError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    tokenizers = data.get("tokenizers") if isinstance(data, dict) else None
    if not isinstance(tokenizers, dict):
        raise PipelineError(f"{path}: key 'tokenizers' must be a mapping of tokenizer name to its figures")
    return {
        name: t for name, t in tokenizers.items() if isinstance(t, dict) and isinstance(t.get("fragmentation"), dict)
    }


def plot_vocab(settings: ReportSettings, root: Path, path: Path) -> tuple[Path, list[Path]]:
    """Mean word pieces per word (all words, entity words) per task and tokenizer."""
    title = "Vocabulary fragmentation"
    series: dict[str, dict[str, dict]] = {}
    restricted: set[str] = set()
    used = []
    for vocab, rel in settings.vocab_diagnostics.items():
        p = root / rel
        if not p.is_file():
            log.warning("vocabulary diagnostics of %s not found: %s", vocab, rel)
            continue
        used.append(p)
        for name, t in read_diagnostics(p).items():
            label = name if name == vocab or len(settings.vocab_diagnostics) == 1 else f"{vocab}: {name}"
            series.setdefault(label, t)
            if name in settings.restricted_vocabularies or name in settings.restricted_models:
                restricted.add(label)
    if not series:
        reason = (
            "No vocabulary diagnostics configured."
            if not settings.vocab_diagnostics
            else "No vocabulary diagnostics found."
        )
        return _placeholder(path, title, reason), used
    tasks = sorted({task for t in series.values() for task in t["fragmentation"]})
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(tasks) * 2), 4), sharey=True)
    width = 0.8 / len(series)
    for ax, key, label in zip(axes, ("all_words", "entity_words"), ("all words", "entity words"), strict=True):
        for i, (name, t) in enumerate(series.items()):
            values = [_number(t["fragmentation"].get(task, {}).get(key)) for task in tasks]
            legend = name
            if isinstance(t.get("size"), int):
                legend += f" ({t['size']} pieces"
                cov = t.get("term_coverage")
                legend += f", {100 * cov:.0f}% terms whole)" if isinstance(cov, (int, float)) else ")"
            legend = marked(legend, name in restricted)
            ax.bar(np.arange(len(tasks)) + i * width - 0.4 + width / 2, values, width, label=legend, color=f"C{i}")
        ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
        ax.set_title(f"Pieces per word: {label}")
    axes[0].set_ylabel("word pieces per word")
    _legend_below(fig, title, *axes[0].get_legend_handles_labels())
    return _save(fig, path), used


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("plots", __doc__.splitlines()[0], argv)
    started = provenance.now()
    settings = load(args.settings)
    root, out = Path(args.root), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, _ = load_runs(settings, root)
    scores = plot_scores(settings, results, out / FIGURES[0])
    train_logs, logs = read_logs(settings, root)
    loss = plot_pretrain_loss(settings, train_logs, out / FIGURES[1])
    speed = plot_pretrain_speed(settings, train_logs, out / FIGURES[2])
    vocab, diagnostics = plot_vocab(settings, root, out / FIGURES[3])
    provenance.record(
        out,
        step="report.plots",
        inputs={
            "settings": args.settings,
            "metrics": [str(root / r.path) for r in results],
            "pretrain_logs": [str(p) for p in logs],
            "vocab_diagnostics": [str(p) for p in diagnostics],
        },
        params={"statistic": to_dict(settings.aggregation.statistic)},
        outputs=[scores, loss, speed, vocab],
        started=started,
        path=out / "plots.provenance.json",
    )
    log.info("wrote %s to %s", ", ".join(FIGURES), out)


if __name__ == "__main__":
    run(main)
