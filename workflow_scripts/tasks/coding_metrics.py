"""MIMIC-III ICD coding metrics, as Mullenbach et al. (2018) score them (caml-mimic's evaluation.py):
a code is predicted when its probability is above 0.5; the ranking figures read the probabilities."""

from __future__ import annotations

import math

import numpy as np

from ..errors import PipelineError
from .label_cells import cells, prf


def _coding(gold, pred, labels, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gold and predicted document x code indicators, and the scores (without scores: the
    predicted codes score 1, the others 0)."""
    classes, g, p = cells(gold, pred, labels, None)
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
    return prf(float(np.sum(g & p)), float(p.sum()), float(g.sum()))


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
