"""Task metrics, each named for exactly what it computes (papers use one name for several).

``compute(metric, gold, pred, labels=..., negative_label=...)`` returns a dict whose ``score``
is the headline figure as a fraction; the other keys are extras (precision, recall, ...).
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Sequence

import numpy as np

from ..errors import PipelineError


def _prf(tp: float, n_pred: float, n_gold: float) -> dict[str, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def _check_lengths(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise PipelineError(
            f"metrics: {len(gold)} gold examples but {len(pred)} predictions; "
            "predict every example of the split"
        )
    if not gold:
        raise PipelineError("metrics: no examples to score; the split is empty")


def _check_sequences(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> None:
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise PipelineError(
                f"metrics: example {i} has {len(g)} gold tags but {len(p)} predicted tags; "
                "predict one tag per word"
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
    tp = sum(1 for g, p in zip(gold, pred) if g == p and g != negative_label)
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


def _label_f1s(gold, pred, labels) -> tuple[list[str], list[float]]:
    classes = _label_space(gold, pred, labels)
    g, p = _binarize(gold, classes), _binarize(pred, classes)
    f1s = [_prf(float(np.sum(g[:, j] & p[:, j])), float(p[:, j].sum()), float(g[:, j].sum()))["f1"]
           for j in range(len(classes))]
    return classes, f1s


def _example_prf(gold, pred) -> dict[str, float]:
    precisions, recalls = [], []
    for g, p in zip(gold, pred):
        g, p = set(g), set(p)
        if not g:
            precisions.append(0.0 if p else 1.0)
            recalls.append(0.0 if p else 1.0)
            continue
        hit = len(g & p)
        precisions.append(hit / len(p) if p else 0.0)
        recalls.append(hit / len(g))
    precision, recall = float(np.mean(precisions)), float(np.mean(recalls))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": f1, "precision": precision, "recall": recall}


def label_macro_f1(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """HoC as BLURB scores it (their 'average micro F1'): for each label the binary F1 over
    documents, then the mean over the labels. Also reports ``example_f1``, the other
    convention, so both papers' figures come from one run."""
    _check_lengths(gold, pred)
    classes, f1s = _label_f1s(gold, pred, labels)
    score = float(np.mean(f1s)) if f1s else 0.0
    result = {"score": score, "label_macro_f1": score, "example_f1": _example_prf(gold, pred)["f1"]}
    result.update({f"f1_{c}": f for c, f in zip(classes, f1s)})
    return result


def example_f1(gold, pred, *, labels=None, negative_label=None) -> dict[str, float]:
    """HoC as BLUE and Lewis et al. score it: precision and recall per document, averaged over
    documents, and the F1 of those two means. A document without gold labels counts as fully
    right when nothing is predicted for it and fully wrong otherwise. Also reports
    ``label_macro_f1`` (BLURB's convention)."""
    _check_lengths(gold, pred)
    prf = _example_prf(gold, pred)
    _, f1s = _label_f1s(gold, pred, labels)
    return {"score": prf["f1"], "example_f1": prf["f1"], "precision": prf["precision"],
            "recall": prf["recall"], "label_macro_f1": float(np.mean(f1s)) if f1s else 0.0}


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
    acc = sum(1 for g, p in zip(gold, pred) if g == p) / len(gold)
    return {"score": acc, "accuracy": acc}


METRICS: dict[str, Callable[..., dict[str, float]]] = {
    "entity_f1": entity_f1,
    "entity_f1_strict": entity_f1_strict,
    "word_macro_f1": word_macro_f1,
    "micro_f1_excl_negative": micro_f1_excl_negative,
    "label_macro_f1": label_macro_f1,
    "example_f1": example_f1,
    "pearson": pearson,
    "accuracy": accuracy,
}


def compute(metric: str, gold: list, pred: list, *, labels=None, negative_label=None) -> dict[str, float]:
    """Score predictions with the named metric; ``score`` is the headline figure (a fraction)."""
    fn = METRICS.get(metric)
    if fn is None:
        raise PipelineError(f"unknown metric {metric!r}; known metrics: {', '.join(sorted(METRICS))}")
    kwargs = {"labels": labels}
    if negative_label is not None:
        kwargs["negative_label"] = negative_label
    return fn(gold, pred, **kwargs)
