"""Length-grouped batches and dynamic padding: each batch is padded only to its longest member
(on a GPU, to the bucket that holds it: ``buckets``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .buckets import Padding
from .chunks import members
from .settings import problem_type

IGNORE = -100


def train_batches(lengths: list[int], batch_size: int, rng: np.random.Generator, group: bool) -> list[list[int]]:
    """One epoch of batches: shuffled; with ``group``, examples of similar length share a
    batch (sorted within chunks of 50 batches, then the batch order is shuffled)."""
    order = rng.permutation(len(lengths))
    if group:
        chunk = batch_size * 50
        order = np.concatenate(
            [sorted(order[i : i + chunk], key=lambda k: -lengths[k]) for i in range(0, len(order), chunk)]
        )
    out = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if group:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


@dataclass(frozen=True)
class Part:
    """One micro-batch of a training batch."""

    idx: list[int]  # its units: features, or examples with all their chunks
    share: float  # its share of the batch's loss terms, which weighs its loss
    last: bool  # the batch's last: the optimiser steps after it


def micro_batches(batches: list[list[int]], micro: int | None, terms: Callable[[int], int]) -> list[Part]:
    """Each batch cut into micro-batches of at most ``micro`` units (None: the whole batch). A
    loss is a mean over its terms (``terms(unit)``: a tagged input's labelled tokens, else 1), so
    the micro-batches' losses weighted by their share of the terms add up to the batch's loss,
    and their gradients to the batch's gradient."""
    out = []
    for idx in batches:
        size = micro or len(idx)
        pieces = [idx[i : i + size] for i in range(0, len(idx), size)]
        counts = [sum(terms(u) for u in piece) for piece in pieces]
        total = sum(counts) or 1
        for k, (piece, count) in enumerate(zip(pieces, counts, strict=True)):
            share = 1.0 if len(pieces) == 1 else count / total
            out.append(Part(piece, share, k == len(pieces) - 1))
    return out


def loss_terms(features: list[dict[str, Any]], task_type: str) -> Callable[[int], int]:
    """The terms a unit adds to a batch's mean loss: labelled tokens of a tagged input, else one."""
    if problem_type(task_type) != "token":
        return lambda unit: 1
    return lambda unit: sum(label != IGNORE for label in features[unit]["labels"])


def eval_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def collate(
    features: list[dict[str, Any]], pad_id: int, task_type: str, device, padding: Padding | None = None
) -> dict[str, torch.Tensor]:
    """A batch padded to its longest member (or to its bucket, with ``padding``), copied to
    ``device`` without waiting for it. A batch without padding carries no attention mask:
    transformers then builds none, where a mask costs a host-device synchronisation
    (``mask.all()``) at every forward. Batches of a static shape always carry one."""
    padding = padding or Padding()
    width = padding.width(max(len(f["input_ids"]) for f in features))
    batch = {"input_ids": padded([f["input_ids"] for f in features], width, pad_id)}
    if padding.static or any(len(f["input_ids"]) < width for f in features):
        batch["attention_mask"] = padded([[1] * len(f["input_ids"]) for f in features], width, 0)
    if "token_type_ids" in features[0]:
        batch["token_type_ids"] = padded([f["token_type_ids"] for f in features], width, 0)
    if "chunk" in features[0]:  # one label per example, pooled from its chunks
        features, batch["members"] = members(features)
    kind = problem_type(task_type)
    if kind == "token":
        batch["labels"] = padded([f["labels"] for f in features], width, IGNORE)
    elif kind in ("multi_label_classification", "regression"):
        batch["labels"] = torch.tensor([f["label"] for f in features], dtype=torch.float)
    else:
        batch["labels"] = torch.tensor([f["label"] for f in features], dtype=torch.long)
    if "entities" in features[0]:
        batch["entities"] = torch.tensor([f["entities"] for f in features], dtype=torch.long)
    return to_device(batch, torch.device(device))


def padded(rows: list[list[int]], width: int, fill: int) -> torch.Tensor:
    """[len(rows), width] long tensor, each row filled out with ``fill``: one tensor built from
    Python lists, where a copy per row into a preallocated tensor costs a dozen tensor calls."""
    return torch.tensor([list(row) + [fill] * (width - len(row)) for row in rows], dtype=torch.long)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """Pinned, non-blocking copies on CUDA (the host goes on queueing work); the CPU keeps the tensors."""
    if device.type != "cuda":
        return batch
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}


def ahead(
    batches: Iterable[list[int]],
    features: list[dict[str, Any]],
    pad_id: int,
    task_type: str,
    device,
    units: list[list[int]] | None = None,
    padding: Padding | None = None,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    """Each batch with its collated tensors, the next one collated (and its copy queued) before
    the current one is handed out, so the host prepares step n + 1 while the device runs step n.
    With ``units`` (an example's chunks), a batch lists units and collates all their features."""
    pending = None
    for idx in batches:
        chosen = [i for u in idx for i in units[u]] if units is not None else idx
        ready = (idx, collate([features[i] for i in chosen], pad_id, task_type, device, padding))
        if pending is not None:
            yield pending
        pending = ready
    if pending is not None:
        yield pending
