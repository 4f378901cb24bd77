"""Model outputs back to predictions in the form of the gold data (word tags, labels, scores)."""

from __future__ import annotations

from typing import Any

import torch

from . import tagging
from .features import Encoding


def decode(
    outputs: list[torch.Tensor],
    features: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    enc: Encoding,
    threshold: float,
) -> list[Any]:
    """``outputs[i]`` holds the logits of ``features[i]`` (unpadded for tagging)."""
    if enc.task_type in ("ner", "pico"):
        return _decode_tags(outputs, features, rows, enc)
    preds: list[Any] = [None] * len(rows)
    for logits, feat in zip(outputs, features, strict=True):
        if enc.task_type == "similarity":
            value: Any = float(logits.reshape(-1)[0])
        elif enc.task_type == "doc_classification":
            on = torch.sigmoid(logits.float()) > threshold
            value = [label for label, flag in zip(enc.labels, on.tolist(), strict=True) if flag]
        else:
            value = enc.labels[int(logits.argmax())]
        preds[feat["example"]] = value
    return preds


def label_scores(outputs: list[torch.Tensor], features: list[dict[str, Any]], n_rows: int) -> list[list[float]]:
    """Multi-label documents: each example's sigmoid probability per label (the ranking metrics'
    input), read as ``decode`` reads its predictions."""
    scores: list[list[float]] = [[] for _ in range(n_rows)]
    for logits, feat in zip(outputs, features, strict=True):
        scores[feat["example"]] = torch.sigmoid(logits.float()).tolist()
    return scores


def _decode_tags(outputs, features, rows, enc: Encoding) -> list[list[str]]:
    preds: list[list[str | None]] = [[None] * len(r["tokens"]) for r in rows]
    for logits, feat in zip(outputs, features, strict=True):
        best = logits.argmax(-1).tolist()
        for word, pos in feat["words"]:
            preds[feat["example"]][word] = enc.labels[best[pos]]
    out = []
    for ex, tags in enumerate(preds):
        missing = [w for w, t in enumerate(tags) if t is None]
        if missing:
            raise RuntimeError(f"example {rows[ex]['id']}: no prediction for word {missing[0]}")
        out.append(tagging.to_bio(tags, enc.scheme) if enc.scheme != "plain" else tags)
    return out
