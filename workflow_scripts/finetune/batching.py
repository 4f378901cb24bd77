"""Length-grouped batches and dynamic padding: each batch is padded only to its longest member."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .heads import problem_type

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


def eval_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def collate(features: list[dict[str, Any]], pad_id: int, task_type: str, device) -> dict[str, torch.Tensor]:
    width = max(len(f["input_ids"]) for f in features)
    n = len(features)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    types = torch.zeros((n, width), dtype=torch.long) if "token_type_ids" in features[0] else None
    for i, f in enumerate(features):
        k = len(f["input_ids"])
        ids[i, :k] = torch.tensor(f["input_ids"])
        mask[i, :k] = 1
        if types is not None:
            types[i, :k] = torch.tensor(f["token_type_ids"])
    batch = {"input_ids": ids, "attention_mask": mask}
    if types is not None:
        batch["token_type_ids"] = types
    kind = problem_type(task_type)
    if kind == "token":
        labels = torch.full((n, width), IGNORE, dtype=torch.long)
        for i, f in enumerate(features):
            labels[i, : len(f["labels"])] = torch.tensor(f["labels"])
        batch["labels"] = labels
    elif kind in ("multi_label_classification", "regression"):
        batch["labels"] = torch.tensor([f["label"] for f in features], dtype=torch.float)
    else:
        batch["labels"] = torch.tensor([f["label"] for f in features], dtype=torch.long)
    if "entities" in features[0]:
        batch["entities"] = torch.tensor([f["entities"] for f in features], dtype=torch.long)
    return {k: v.to(device) for k, v in batch.items()}
