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
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineError
from .spec import BENCHMARKS


def _prf(tp: float, n_pred: float, n_gold: float) -> dict[str, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def _check_lengths(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise PipelineError(
            f"metrics: {len(gold)} gold examples but {len(pred)} predictions; predict every example of the split"
        )
    if not gold:
        raise PipelineError("metrics: no examples to score; the split is empty")


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
    _check_lengths(gold, pred)
    return _seqeval(gold, pred, strict=False)


def entity_f1_strict(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Entity-level micro F1, strict IOB2 (seqeval mode='strict'): an entity counts only if
    its type and both boundaries match and it starts with ``B-``."""
    _check_lengths(gold, pred)
    return _seqeval(gold, pred, strict=True)


def word_macro_f1(gold, pred, *, labels=None, negative_label="O") -> dict[str, float]:
    """EBM-PICO (BLURB): for each element (P, I, O) the F1 over words tagged with it, then the
    mean over elements. The outside tag (``negative_label``, default ``O``) is not an element."""
    _check_lengths(gold, pred)
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
        prf = _prf(tp, float(np.sum(p == element)), float(np.sum(g == element)))
        result[f"f1_{element}"] = prf["f1"]
        f1s.append(prf["f1"])
    result["score"] = float(np.mean(f1s))
    return result


def micro_f1_excl_negative(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Micro-averaged F1 over all classes except the negative one (ChemProt, DDI, i2b2-2010-RE;
    for a binary task, the F1 of the positive class: GAD, EU-ADR). A negative prediction is
    never a true positive."""
    _check_lengths(gold, pred)
    if negative_label is None:
        raise PipelineError(
            "metrics micro_f1_excl_negative: the task has no negative_label; set it in the "
            "task registry (e.g. 'false' for ChemProt, 'DDI-false' for DDI, '0' for GAD)"
        )
    tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == p and g != negative_label)
    n_pred = sum(1 for p in pred if p != negative_label)
    n_gold = sum(1 for g in gold if g != negative_label)
    return _prf(tp, n_pred, n_gold)


def _binarize(rows, classes: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(rows), len(classes)), dtype=bool)
    for r, row in enumerate(rows):
        for label in row:
            out[r, index[label]] = True
    return out


def _label_space(gold, pred, labels) -> list[str]:
    seen = {x for row in list(gold) + list(pred) for x in row}
    if labels:
        unknown = sorted(seen - set(labels))
        if unknown:
            raise PipelineError(f"metrics: label {unknown[0]!r} is not in the task's labels")
        return list(labels)
    return sorted(seen)


# BLUE's HoC index: <PMID>_s<sentence number>
_SENTENCE_ID = re.compile(r"(.+)_s\d+")


def by_document(gold, pred, ids: Sequence[str] | None) -> tuple[list[set], list[set]]:
    """Label sets per abstract: the labels of sentences of one document (ids ``<doc>_s<n>``,
    as BLUE writes them) are OR-ed, as BLUE, bio-lm and LinkBERT do before scoring HoC.
    Examples whose ids are not sentence ids are documents already."""
    if ids is None:
        return [set(g) for g in gold], [set(p) for p in pred]
    docs: dict[str, tuple[set, set]] = {}
    for g, p, ident in zip(gold, pred, ids, strict=True):
        match = _SENTENCE_ID.fullmatch(str(ident))
        g_set, p_set = docs.setdefault(match.group(1) if match else str(ident), (set(), set()))
        g_set.update(g)
        p_set.update(p)
    return [d[0] for d in docs.values()], [d[1] for d in docs.values()]


def _cells(gold, pred, labels, ids) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Document x label indicator matrices of gold and predicted label sets."""
    _check_lengths(gold, pred)
    classes = _label_space(gold, pred, labels)
    g, p = by_document(gold, pred, ids)
    return classes, _binarize(g, classes), _binarize(p, classes)


def label_macro_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """For each label the binary F1 over documents, then the unweighted mean over the labels
    (an extra HoC figure; neither paper's headline)."""
    classes, g, p = _cells(gold, pred, labels, ids)
    f1s = [
        _prf(float(np.sum(g[:, j] & p[:, j])), float(p[:, j].sum()), float(g[:, j].sum()))["f1"]
        for j in range(len(classes))
    ]
    result = {"score": float(np.mean(f1s)) if f1s else 0.0}
    result.update({f"f1_{c}": f for c, f in zip(classes, f1s, strict=True)})
    return result


def label_micro_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """HoC as BLURB scores it (the fine-tuning code its leaderboard matches): micro F1 over all
    document x label cells, i.e. true positives, predicted and gold positives pooled over
    every label of every document."""
    _, g, p = _cells(gold, pred, labels, ids)
    return _prf(float(np.sum(g & p)), float(p.sum()), float(g.sum()))


def example_f1(gold, pred, *, labels=None, negative_label=None, ids=None) -> dict[str, float]:
    """HoC as BLUE and Lewis et al. score it: precision and recall per document, averaged over
    documents, and the F1 of those two means. A document without gold labels counts as fully
    right when nothing is predicted for it and fully wrong otherwise (the reference code
    assumes every document has a label)."""
    _check_lengths(gold, pred)
    _label_space(gold, pred, labels)
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
    _check_lengths(gold, pred)
    g, p = np.asarray(gold, dtype=float), np.asarray(pred, dtype=float)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(p))):
        raise PipelineError("metrics pearson: scores must be finite numbers")
    gc, pc = g - g.mean(), p - p.mean()
    denom = math.sqrt(float(np.sum(gc * gc)) * float(np.sum(pc * pc)))
    r = float(np.sum(gc * pc) / denom) if denom else 0.0
    mse = float(np.mean((g - p) ** 2))
    return {"score": r, "pearson": r, "mse": mse}


def accuracy(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """Fraction of examples whose predicted label equals the gold label."""
    _check_lengths(gold, pred)
    acc = sum(1 for g, p in zip(gold, pred, strict=True) if g == p) / len(gold)
    return {"score": acc, "accuracy": acc}


# MIMIC-III ICD coding as Mullenbach et al. (2018) score it (caml-mimic's evaluation.py): a code
# is predicted when its probability is above 0.5; the ranking figures read the probabilities.
def _coding(gold, pred, labels, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gold and predicted document x code indicators, and the scores (without scores: the
    predicted codes score 1, the others 0)."""
    classes, g, p = _cells(gold, pred, labels, None)
    if scores is None:
        return g, p, p.astype(float)
    s = np.asarray(scores, dtype=float)
    if s.shape != g.shape:
        raise PipelineError(f"metrics: scores have shape {s.shape}, expected one per document and code {g.shape}")
    return g, p, s


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve (tied scores count half, as the trapezoid rule has it); NaN
    without both classes."""
    pos = int(y.sum())
    neg = y.size - pos
    if not pos or not neg:
        return math.nan
    order = np.argsort(s, kind="mergesort")
    _, first, counts = np.unique(s[order], return_index=True, return_counts=True)
    ranks = np.empty(y.size)
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    return float((ranks[y].sum() - pos * (pos + 1) / 2) / (pos * neg))


def code_micro_f1(gold, pred, *, labels=None, negative_label=None, scores=None) -> dict[str, float]:
    """Micro F1 over document x code cells (Mullenbach et al.'s headline)."""
    g, p, _ = _coding(gold, pred, labels, scores)
    return _prf(float(np.sum(g & p)), float(p.sum()), float(g.sum()))


def code_macro_f1(gold, pred, *, labels=None, negative_label=None, scores=None) -> dict[str, float]:
    """Mullenbach et al.'s macro F1: precision and recall per code averaged over every code
    (a code never predicted, or never gold, counts 0), then the F1 of the two means."""
    g, p, _ = _coding(gold, pred, labels, scores)
    tp = np.sum(g & p, axis=0).astype(float)
    n_pred, n_gold = p.sum(axis=0), g.sum(axis=0)
    precision = float(np.mean(np.divide(tp, n_pred, out=np.zeros_like(tp), where=n_pred > 0)))
    recall = float(np.mean(np.divide(tp, n_gold, out=np.zeros_like(tp), where=n_gold > 0)))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def code_micro_auc(gold, pred, *, labels=None, negative_label=None, scores=None) -> dict[str, float]:
    """ROC AUC over all document x code cells pooled."""
    g, _, s = _coding(gold, pred, labels, scores)
    return {"score": _auc(g.ravel(), s.ravel())}


def code_macro_auc(gold, pred, *, labels=None, negative_label=None, scores=None) -> dict[str, float]:
    """ROC AUC per code, averaged over the codes with both gold positives and negatives."""
    g, _, s = _coding(gold, pred, labels, scores)
    aucs = [a for a in (_auc(g[:, j], s[:, j]) for j in range(g.shape[1])) if not math.isnan(a)]
    return {"score": float(np.mean(aucs)) if aucs else math.nan, "codes": len(aucs)}


def code_precision_at_5(gold, pred, *, labels=None, negative_label=None, scores=None) -> dict[str, float]:
    """Per document, the fraction of its 5 highest-scoring codes that are gold (ties in label
    order), averaged over documents."""
    g, _, s = _coding(gold, pred, labels, scores)
    top = np.argsort(-s, axis=1, kind="stable")[:, :5]
    return {"score": float(np.mean(np.take_along_axis(g, top, axis=1).sum(axis=1) / 5))}


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
