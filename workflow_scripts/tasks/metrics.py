"""Task metrics, each named for exactly what it computes (papers use one name for several).

``compute(metric, gold, pred, labels=..., negative_label=..., ids=...)`` returns a dict whose
``score`` is the headline figure as a fraction; the other keys are extras (precision, recall,
...). A task names one metric, or one per benchmark (``{lewis: example_f1, blurb:
label_micro_f1}``); ``metric_names`` lists every metric a run computes for it: those, then the
other metrics of the same prediction form (strict and conlleval-style entity F1; the three
HoC conventions), so both papers' figures and the extras come from one run.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineError
from .coding_metrics import (
    code_macro_auc,
    code_macro_f1,
    code_micro_auc,
    code_micro_f1,
    code_precision_at_5,
)
from .label_cells import by_document, cells, check_lengths, label_space, prf
from .spec import BENCHMARKS


def _check_sequences(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> None:
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise PipelineError(
                f"metrics: example {i} has {len(g)} gold tags but {len(p)} predicted tags; predict one tag per word"
            )


def _seqeval(gold, pred, strict: bool) -> dict[str, float]:
    from seqeval.metrics import f1_score, precision_score, recall_score
    from seqeval.scheme import IOB2

    _check_sequences(gold, pred)
    kwargs = {"mode": "strict", "scheme": IOB2} if strict else {}
    gold, pred = [list(g) for g in gold], [list(p) for p in pred]
    with warnings.catch_warnings():
        # seqeval warns when no entity is predicted; the score is then 0, which is what we report.
        warnings.simplefilter("ignore")
        precision = float(precision_score(gold, pred, zero_division=0, **kwargs))
        recall = float(recall_score(gold, pred, zero_division=0, **kwargs))
        f1 = float(f1_score(gold, pred, zero_division=0, **kwargs))
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def entity_f1(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Entity-level micro F1 as conlleval counts it (seqeval default mode): a stray ``I-X``
    starts an entity."""
    check_lengths(gold, pred)
    return _seqeval(gold, pred, strict=False)


def entity_f1_strict(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Entity-level micro F1, strict IOB2 (seqeval mode='strict'): an entity counts only if
    its type and both boundaries match and it starts with ``B-``."""
    check_lengths(gold, pred)
    return _seqeval(gold, pred, strict=True)


def word_macro_f1(gold, pred, *, labels=None, negative_label="O") -> dict[str, float]:
    """EBM-PICO (BLURB): for each element (P, I, O) the F1 over words tagged with it, then the
    mean over elements. The outside tag (``negative_label``, default ``O``) is not an element."""
    check_lengths(gold, pred)
    _check_sequences(gold, pred)
    outside = negative_label or "O"
    g = np.array([t for seq in gold for t in seq], dtype=object)
    p = np.array([t for seq in pred for t in seq], dtype=object)
    elements = [x for x in labels] if labels else sorted(set(g.tolist()))
    elements = [x for x in elements if x != outside]
    if not elements:
        raise PipelineError("metrics word_macro_f1: no PICO element labels besides the outside tag")
    result: dict[str, float] = {}
    f1s = []
    for element in elements:
        tp = float(np.sum((g == element) & (p == element)))
        counts = prf(tp, float(np.sum(p == element)), float(np.sum(g == element)))
        result[f"f1_{element}"] = counts["f1"]
        f1s.append(counts["f1"])
    result["score"] = float(np.mean(f1s))
    return result


def micro_f1_excl_negative(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Micro-averaged F1 over all classes except the negative one (ChemProt, DDI, i2b2-2010-RE;
    for a binary task, the F1 of the positive class: GAD, EU-ADR). A negative prediction is
    never a true positive."""
    check_lengths(gold, pred)
    if negative_label is None:
        raise PipelineError(
            "metrics micro_f1_excl_negative: the task has no negative_label; set it in the "
            "task registry (e.g. 'false' for ChemProt, 'DDI-false' for DDI, '0' for GAD)"
        )
    tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == p and g != negative_label)
    n_pred = sum(1 for p in pred if p != negative_label)
    n_gold = sum(1 for g in gold if g != negative_label)
    return prf(tp, n_pred, n_gold)


def label_macro_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """For each label the binary F1 over documents, then the unweighted mean over the labels
    (an extra HoC figure; neither paper's headline)."""
    classes, g, p = cells(gold, pred, labels, ids)
    f1s = [
        prf(float(np.sum(g[:, j] & p[:, j])), float(p[:, j].sum()), float(g[:, j].sum()))["f1"]
        for j in range(len(classes))
    ]
    result = {"score": float(np.mean(f1s)) if f1s else 0.0}
    result.update({f"f1_{c}": f for c, f in zip(classes, f1s, strict=True)})
    return result


def label_micro_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """HoC as BLURB scores it (the fine-tuning code its leaderboard matches): micro F1 over all
    document x label cells, i.e. true positives, predicted and gold positives pooled over
    every label of every document."""
    _, g, p = cells(gold, pred, labels, ids)
    return prf(float(np.sum(g & p)), float(p.sum()), float(g.sum()))


def example_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """HoC as BLUE and Lewis et al. score it: precision and recall per document, averaged over
    documents, and the F1 of those two means. A document without gold labels counts as fully
    right when nothing is predicted for it and fully wrong otherwise (the reference code
    assumes every document has a label)."""
    check_lengths(gold, pred)
    label_space(gold, pred, labels)
    precisions, recalls = [], []
    for g, p in zip(*by_document(gold, pred, ids), strict=True):
        if not g:
            precisions.append(0.0 if p else 1.0)
            recalls.append(0.0 if p else 1.0)
            continue
        hit = len(g & p)
        precisions.append(hit / len(p) if p else 0.0)
        recalls.append(hit / len(g))
    precision, recall = float(np.mean(precisions)), float(np.mean(recalls))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def pearson(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Pearson correlation of predicted and gold scores (BIOSSES). Constant predictions have no
    correlation; they score 0."""
    check_lengths(gold, pred)
    g, p = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(p))):
        raise PipelineError("metrics pearson: scores must be finite numbers")
    gc, pc = g - g.mean(), p - p.mean()
    denom = math.sqrt(float(np.sum(gc * gc)) * float(np.sum(pc * pc)))
    # Equal scores are tested as such: their deviations from a rounded mean are not exactly zero, and
    # gave +-1.9e-16 (printed 0.0 or -0.0) depending on how the Python's sum rounded.
    constant = np.ptp(g) == 0 or np.ptp(p) == 0
    r = float(np.sum(gc * pc) / denom) if denom and not constant else 0.0
    mse = float(np.mean((g - p) ** 2))
    return {"score": r, "pearson": r, "mse": mse}


def accuracy(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Fraction of examples whose predicted label equals the gold label."""
    check_lengths(gold, pred)
    acc = sum(1 for g, p in zip(gold, pred, strict=True) if g == p) / len(gold)
    return {"score": acc, "accuracy": acc}


METRICS: dict[str, Callable[..., dict[str, float]]] = {
    "entity_f1": entity_f1,
    "entity_f1_strict": entity_f1_strict,
    "word_macro_f1": word_macro_f1,
    "micro_f1_excl_negative": micro_f1_excl_negative,
    "label_micro_f1": label_micro_f1,
    "example_f1": example_f1,
    "label_macro_f1": label_macro_f1,
    "pearson": pearson,
    "accuracy": accuracy,
    "code_micro_f1": code_micro_f1,
    "code_macro_f1": code_macro_f1,
    "code_micro_auc": code_micro_auc,
    "code_macro_auc": code_macro_auc,
    "code_precision_at_5": code_precision_at_5,
}


# How tables and plots name each metric.
LABELS = {
    "entity_f1": "entity F1, conlleval-style",
    "entity_f1_strict": "entity F1, strict IOB2",
    "word_macro_f1": "word-level macro F1",
    "micro_f1_excl_negative": "micro F1 without the negative class",
    "label_micro_f1": "micro F1 over document x label cells",
    "example_f1": "example-based F1",
    "label_macro_f1": "mean per-label F1",
    "pearson": "Pearson r",
    "accuracy": "accuracy",
    "code_micro_f1": "micro F1 over document x code cells",
    "code_macro_f1": "F1 of per-code precision and recall means",
    "code_micro_auc": "micro ROC AUC",
    "code_macro_auc": "macro ROC AUC",
    "code_precision_at_5": "precision at 5",
}

# Metrics scoring the same predictions: a run computes the whole family of its task's metrics.
HOC_METRICS = ("label_micro_f1", "example_f1", "label_macro_f1")
CODING_METRICS = ("code_micro_f1", "code_macro_f1", "code_micro_auc", "code_macro_auc", "code_precision_at_5")
FAMILIES = (("entity_f1", "entity_f1_strict"), HOC_METRICS, CODING_METRICS)
TaskMetric = str | Mapping[str, str]


def check_task_metric(metric: TaskMetric, benchmarks: Sequence[str], where: str) -> None:
    """A task's ``metric``: a known name, or ``{benchmark: name}`` covering its benchmarks."""
    names = metric.values() if isinstance(metric, Mapping) else [metric]
    for name in names:
        if name not in METRICS:
            raise PipelineError(f"{where}: unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    if isinstance(metric, Mapping):
        if not metric:
            raise PipelineError(f"{where}: give a metric name or a mapping benchmark -> metric name")
        for bench in metric:
            if bench not in BENCHMARKS:
                raise PipelineError(f"{where}.{bench}: unknown benchmark (allowed: {', '.join(BENCHMARKS)})")
        for bench in benchmarks:
            if bench not in metric:
                raise PipelineError(f"{where}: the task counts towards {bench} but names no metric for it")


def _named(metric: TaskMetric) -> list[str]:
    """The task's metric names in benchmark order (lewis, blurb), whatever the mapping's order."""
    if isinstance(metric, str):
        return [metric]
    return list(dict.fromkeys(metric[b] for b in BENCHMARKS if b in metric))


def metric_for(metric: TaskMetric, benchmark: str | None) -> str:
    """The metric a benchmark's tables read (a task in no benchmark: its headline)."""
    if isinstance(metric, str):
        return metric
    return metric[benchmark] if benchmark in metric else _named(metric)[0]


def metric_names(metric: TaskMetric) -> list[str]:
    """Every metric a run of the task computes; the first, the metric of the first benchmark
    (Lewis et al., then BLURB), is the headline that dev selection maximises."""
    named = _named(metric)
    family = [m for f in FAMILIES if set(f) & set(named) for m in f]
    return list(dict.fromkeys(named + family))


def compute(
    metric: str, gold: list, pred: list, *, labels=None, negative_label=None, ids=None, scores=None
) -> dict[str, float]:
    """Score predictions with the named metric; ``score`` is the headline figure (a fraction).
    ``ids`` (the examples' ids) lets the HoC metrics OR sentence predictions per abstract;
    ``scores`` (per example, one probability per label in ``labels`` order) feed the ranking
    figures of ICD coding."""
    fn = METRICS.get(metric)
    if fn is None:
        raise PipelineError(f"unknown metric {metric!r}; known metrics: {', '.join(sorted(METRICS))}")
    kwargs = {"labels": labels}
    if negative_label is not None:
        kwargs["negative_label"] = negative_label
    if ids is not None and metric in HOC_METRICS:
        kwargs["ids"] = ids
    if scores is not None and metric in CODING_METRICS:
        kwargs["scores"] = scores
    return fn(gold, pred, **kwargs)


def compute_all(metrics: Sequence[str], gold: list, pred: list, **kwargs) -> dict[str, dict[str, float]]:
    """Every named metric on the same predictions, by name."""
    return {m: compute(m, gold, pred, **kwargs) for m in metrics}


def test_section(scores: dict[str, dict[str, float]]) -> dict[str, Any]:
    """metrics.json's ``test``: the headline metric's figures (the first), every metric's score
    under its name, and every metric's full result under ``by_metric``."""
    headline = next(iter(scores.values()))
    return {**headline, **{name: r["score"] for name, r in scores.items()}, "by_metric": scores}


def run_header(settings: Any, fold: int, seed: int, names: Sequence[str], test: dict[str, Any]) -> dict[str, Any]:
    """The keys metrics.json of every run starts with, fine-tuned or a no-training baseline, which the
    report reads: ``settings`` has the run's ``model`` (name, restricted) and ``task`` (name, metric, restricted)."""
    return {
        "model": settings.model.name,
        "task": settings.task.name,
        "fold": fold,
        "seed": seed,
        "metric": settings.task.metric,
        "metrics": list(names),
        "test": test,
        "restricted": settings.model.restricted or settings.task.restricted,
    }
