"""Label sets as document x label indicator matrices: what the multi-label metrics count."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..errors import PipelineError


def prf(tp: float, n_pred: float, n_gold: float) -> dict[str, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"score": f1, "f1": f1, "precision": precision, "recall": recall}


def check_lengths(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise PipelineError(
            f"metrics: {len(gold)} gold examples but {len(pred)} predictions; predict every example of the split"
        )
    if not gold:
        raise PipelineError("metrics: no examples to score; the split is empty")


def _binarize(rows, classes: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(rows), len(classes)), dtype=bool)
    for r, row in enumerate(rows):
        for label in row:
            out[r, index[label]] = True
    return out


def label_space(gold, pred, labels) -> list[str]:
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


def cells(gold, pred, labels, ids) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Document x label indicator matrices of gold and predicted label sets."""
    check_lengths(gold, pred)
    classes = label_space(gold, pred, labels)
    g, p = by_document(gold, pred, ids)
    return classes, _binarize(g, classes), _binarize(p, classes)
