"""Figures: per-task scores with the spread over seeds, pretraining loss curves, vocabulary
fragmentation.

Usage: python -m workflow_scripts.report.plots --settings results/configs/report.yaml --out results/tables

Always writes scores.png, pretrain_loss.png and vocab_fragmentation.png, then
plots.provenance.json. A figure whose inputs are absent (no runs yet, no pretraining logs or
vocabulary diagnostics configured or found) says so in the figure itself and in the log.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .. import provenance  # noqa: E402
from ..atomic import atomic_file  # noqa: E402
from ..cli import run  # noqa: E402
from ..errors import PipelineError  # noqa: E402
from .metrics import RunResult, load_runs  # noqa: E402
from .settings import ReportSettings, load, parse_args  # noqa: E402
from .stats import STATISTICS  # noqa: E402

log = logging.getLogger(__name__)
FIGURES = ("scores.png", "pretrain_loss.png", "vocab_fragmentation.png")


def _save(fig, path: Path) -> Path:
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def _placeholder(path: Path, title: str, reason: str) -> Path:
    log.warning("%s: %s", path.name, reason)
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True)
    return _save(fig, path)


def plot_scores(settings: ReportSettings, results: list[RunResult], path: Path) -> Path:
    """One panel per task: every run's test score per model, and the statistic as a line."""
    title = "Test scores over seeds"
    if not results:
        return _placeholder(path, title, "No fine-tuning results yet: no metrics.json of the listed runs exists.")
    by_cell: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in results:
        if r.fold in settings.tasks[r.task].evaluation_folds():
            by_cell[(r.model, r.task)].append(100.0 * r.test)
    tasks = [t for t in settings.tasks if any((m, t) in by_cell for m in settings.models)]
    models = list(settings.models)
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    rng = np.random.default_rng(0)
    stat = STATISTICS[settings.aggregation.statistic]
    for ax, task in zip(axes.flat, tasks):
        t = settings.tasks[task]
        for i, model in enumerate(models):
            scores = by_cell.get((model, task), [])
            if not scores:
                continue
            ax.hlines(stat(scores), i - 0.3, i + 0.3, color=f"C{i}", linewidth=2.5)
            ax.scatter(i + rng.uniform(-0.15, 0.15, len(scores)), scores, color=f"C{i}", s=14, zorder=3)
        ax.set_xticks(range(len(models)), [settings.models[m].display for m in models], rotation=30, ha="right")
        ax.set_title(t.display + (" †" if t.restricted else ""))
        ax.set_ylabel(f"{t.metric} x100")
        values = [v for m in models for v in by_cell.get((m, task), [])]
        pad = max(1.0, 0.15 * (max(values) - min(values)))
        ax.set_xlim(-0.6, len(models) - 0.4)
        ax.set_ylim(min(values) - pad, max(values) + pad)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    fig.suptitle(f"{title}: dots are runs, lines the {settings.aggregation.statistic}")
    fig.tight_layout()
    return _save(fig, path)


def read_log(path: Path) -> list[tuple[float, float]]:
    """(step, MLM loss) of every line of a train_log.jsonl that has both.

    ELECTRA's total adds the weighted replaced-token loss, so its generator's MLM loss is
    the one drawn beside the MLM models'."""
    points = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PipelineError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(entry, dict):
                continue
            loss = entry.get("loss_generator", entry.get("loss"))
            if isinstance(entry.get("step"), (int, float)) and isinstance(loss, (int, float)):
                points.append((float(entry["step"]), float(loss)))
    return points


def plot_pretrain_loss(settings: ReportSettings, root: Path, path: Path) -> tuple[Path, list[Path]]:
    title = "Pretraining loss"
    curves, used = {}, []
    for model, rel in settings.pretrain_logs.items():
        p = root / rel
        if not p.is_file():
            log.warning("pretraining log of %s not found: %s", model, rel)
            continue
        points = read_log(p)
        used.append(p)
        if points:
            curves[model] = points
        else:
            log.warning("%s has no lines with step and loss", rel)
    if not curves:
        reason = "No pretraining log configured." if not settings.pretrain_logs else "No pretraining log with step and loss lines found."
        return _placeholder(path, title, reason), used
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for model, points in curves.items():
        steps, losses = zip(*sorted(points))
        display = settings.models[model].display if model in settings.models else model
        ax.plot(steps, losses, label=display)
    ax.set_xlabel("step")
    ax.set_ylabel("training MLM loss (ELECTRA: generator)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return _save(fig, path), used


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
    return {name: t for name, t in tokenizers.items() if isinstance(t, dict) and isinstance(t.get("fragmentation"), dict)}


def plot_vocab(settings: ReportSettings, root: Path, path: Path) -> tuple[Path, list[Path]]:
    """Mean word pieces per word (all words, entity words) per task and tokenizer."""
    title = "Vocabulary fragmentation"
    series: dict[str, dict[str, dict]] = {}
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
    if not series:
        reason = "No vocabulary diagnostics configured." if not settings.vocab_diagnostics else "No vocabulary diagnostics found."
        return _placeholder(path, title, reason), used
    tasks = sorted({task for t in series.values() for task in t["fragmentation"]})
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(tasks) * 2), 4), sharey=True)
    width = 0.8 / len(series)
    for ax, key, label in zip(axes, ("all_words", "entity_words"), ("all words", "entity words")):
        for i, (name, t) in enumerate(series.items()):
            values = [_number(t["fragmentation"].get(task, {}).get(key)) for task in tasks]
            legend = name
            if isinstance(t.get("size"), int):
                legend += f" ({t['size']} pieces"
                cov = t.get("term_coverage")
                legend += f", {100 * cov:.0f}% terms whole)" if isinstance(cov, (int, float)) else ")"
            ax.bar(np.arange(len(tasks)) + i * width - 0.4 + width / 2, values, width, label=legend, color=f"C{i}")
        ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
        ax.set_title(f"Pieces per word: {label}")
    axes[0].set_ylabel("word pieces per word")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(series)), fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08 + 0.04 * (len(series) // 3), 1, 1))
    return _save(fig, path), used


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("plots", __doc__.splitlines()[0], argv)
    started = provenance.now()
    settings = load(args.settings)
    root, out = Path(args.root), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, _ = load_runs(settings, root)
    scores = plot_scores(settings, results, out / FIGURES[0])
    loss, logs = plot_pretrain_loss(settings, root, out / FIGURES[1])
    vocab, diagnostics = plot_vocab(settings, root, out / FIGURES[2])
    provenance.record(
        out,
        step="report.plots",
        inputs={
            "settings": args.settings,
            "metrics": [str(root / r.path) for r in results],
            "pretrain_logs": [str(p) for p in logs],
            "vocab_diagnostics": [str(p) for p in diagnostics],
        },
        params={"statistic": settings.aggregation.statistic},
        outputs=[scores, loss, vocab],
        started=started,
        path=out / "plots.provenance.json",
    )
    log.info("wrote %s to %s", ", ".join(FIGURES), out)


if __name__ == "__main__":
    run(main)
