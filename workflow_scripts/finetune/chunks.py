"""Inputs longer than a model's context, read in chunks.

A run whose ``max_length`` exceeds the chunk length (the model's context unless ``chunk_length``
says less) reads each sequence-level input as chunks of that length, special tokens in each,
every chunk after the first starting ``chunk_stride`` tokens before the end of the one before.
The chunks of one example are trained and scored together: the head's outputs (logits) of its
chunks are pooled, mean or max per label, and the loss is the example's. An input that fits one
chunk is encoded exactly as without chunking. Tagging is windowed in ``features`` instead: every
token is predicted from one window, the one where it is most central.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import PipelineError
from .settings import ENTITY_POOLING, FinetuneSettings


@dataclass(frozen=True)
class ChunkPlan:
    length: int  # tokens of one chunk, special tokens included
    stride: int  # tokens a chunk shares with the one before
    pooling: str  # mean | max over an example's chunks
    max_chunks: int | None = None


def plan(cfg: FinetuneSettings, max_length: int, context: int, task_type: str) -> ChunkPlan | None:
    """How a run reads its inputs: None when ``max_length`` fits one chunk (whole, as without
    chunking), else in chunks. A ``max_length`` beyond the model's context needs chunking."""
    if not cfg.chunking:
        if max_length > context:
            raise PipelineError(
                f"finetune.max_length: {max_length} exceeds the model's context of {context} tokens; "
                f"lower it to {context} or set finetune.chunking: true to read longer inputs in chunks"
            )
        return None
    size = cfg.chunk_length or context
    if size > context:
        raise PipelineError(f"finetune.chunk_length: {size} exceeds the model's context of {context} tokens")
    if max_length <= size:
        return None
    if cfg.chunk_stride >= size // 2:
        raise PipelineError(
            f"finetune.chunk_stride: {cfg.chunk_stride} leaves too little new text per chunk of {size} tokens; "
            "keep it below half the chunk length"
        )
    if task_type == "relation" and cfg.pooling in ENTITY_POOLING:
        raise PipelineError(
            f"finetune.chunking: pooling {cfg.pooling} reads both entities of one input; "
            "read relations whole or pool with cls or mean"
        )
    return ChunkPlan(size, cfg.chunk_stride, cfg.chunk_pooling, cfg.max_chunks)


def record(cfg: FinetuneSettings, chunk_plan: ChunkPlan | None) -> dict[str, Any]:
    """How a run with chunking on read its inputs, for metrics.json (``chunk_length`` null: whole)."""
    if not cfg.chunking:
        return {}
    return {
        "chunking": {
            "chunk_length": chunk_plan.length if chunk_plan else None,
            "stride": cfg.chunk_stride,
            "pooling": cfg.chunk_pooling,
            "max_chunks": cfg.max_chunks,
        }
    }


def spans(n: int, size: int, stride: int, limit: int | None = None) -> list[tuple[int, int]]:
    """[start, end) of the chunks that read ``n`` tokens ``size`` at a time, each after the first
    starting ``stride`` tokens before the end of the one before; at most ``limit`` of them."""
    out = [(0, min(size, n))]
    while out[-1][1] < n and (limit is None or len(out) < limit):
        start = out[-1][1] - stride
        out.append((start, min(start + size, n)))
    return out


# --- special tokens around a chunk -------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A tokenizer's special tokens around one text (``before`` + text + ``after``) or a pair
    (``before`` + first + ``between`` + second + ``after``), with the token types of each part."""

    before: list[int]
    between: list[int]
    after: list[int]
    types: dict[str, list[int]] | None  # part -> token types; None for single texts

    def wrap(self, first: list[int] | None, second: list[int]) -> tuple[list[int], list[int] | None]:
        if first is None:
            return self.before + second + self.after, None
        ids = self.before + first + self.between + second + self.after
        if self.types is None:
            return ids, None
        t = self.types
        kinds = t["before"] + t["first"] * len(first) + t["between"] + t["second"] * len(second) + t["after"]
        return ids, kinds

    def fixed(self, first: list[int] | None) -> int:
        """Tokens of a chunk that are not the chunked text."""
        pair = 0 if first is None else len(first) + len(self.between)
        return len(self.before) + len(self.after) + pair


def _find(ids: list[int], part: list[int], start: int) -> int:
    for i in range(start, len(ids) - len(part) + 1):
        if ids[i : i + len(part)] == part:
            return i
    raise PipelineError("--model: cannot find where the tokenizer places its special tokens; read inputs whole")


def layout(tokenizer, pair: bool) -> Layout:
    """Learn where the tokenizer's post-processor puts its special tokens from two probe words."""
    a = tokenizer("a", add_special_tokens=False)["input_ids"]
    if not pair:
        ids = tokenizer("a")["input_ids"]
        i = _find(ids, a, 0)
        return Layout(ids[:i], [], ids[i + len(a) :], None)
    b = tokenizer("b", add_special_tokens=False)["input_ids"]
    probe = tokenizer("a", "b")
    ids = probe["input_ids"]
    i = _find(ids, a, 0)
    j = _find(ids, b, i + len(a))
    types = probe.get("token_type_ids")
    parts = None
    if types is not None:
        parts = {
            "before": types[:i],
            "first": [types[i]],
            "between": types[i + len(a) : j],
            "second": [types[j]],
            "after": types[j + len(b) :],
        }
    return Layout(ids[:i], ids[i + len(a) : j], ids[j + len(b) :], parts)


def encode(
    tokenizer,
    firsts: list[str],
    seconds: list[str] | None,
    chunk_plan: ChunkPlan,
    max_length: int,
    count: Callable[[str, int], None],
) -> list[dict[str, Any]]:
    """Features of (pair) inputs read in chunks: ``input_ids`` (and ``token_type_ids`` for pairs),
    ``example`` and ``chunk``. Of a pair, the first text is repeated in every chunk and the
    second is chunked. An input that fits one chunk is the tokenizer's own encoding."""
    whole = tokenizer(firsts, seconds) if seconds is not None else tokenizer(firsts)
    chunked = seconds if seconds is not None else firsts
    heads = tokenizer(firsts, add_special_tokens=False)["input_ids"] if seconds is not None else None
    texts = tokenizer(chunked, add_special_tokens=False)["input_ids"]
    lay = layout(tokenizer, seconds is not None)
    features = []
    for ex, ids in enumerate(whole["input_ids"]):
        if len(ids) <= chunk_plan.length:
            feat = {"input_ids": ids, "example": ex, "chunk": 0}
            if seconds is not None and "token_type_ids" in whole:
                feat["token_type_ids"] = whole["token_type_ids"][ex]
            features.append(feat)
            continue
        first = heads[ex] if heads is not None else None
        features += _chunks(lay, first, texts[ex], ex, chunk_plan, max_length, count)
    return features


def _chunks(lay: Layout, first, text: list[int], ex: int, chunk_plan: ChunkPlan, max_length: int, count):
    room = chunk_plan.length - lay.fixed(first)
    if room <= chunk_plan.stride:
        raise PipelineError(
            f"finetune.chunk_length: the first text of example {ex} leaves {max(room, 0)} tokens of a "
            f"{chunk_plan.length}-token chunk for the second (stride {chunk_plan.stride}); read the task whole "
            "or raise chunk_length"
        )
    kept = text[: max(max_length - lay.fixed(first), 1)]
    parts = spans(len(kept), room, chunk_plan.stride, chunk_plan.max_chunks)
    count("examples_read_in_chunks", 1)
    count("chunks_of_long_examples", len(parts))
    if parts[-1][1] < len(text):
        count("examples_cut_at_max_length", 1)
    out = []
    for k, (start, end) in enumerate(parts):
        ids, kinds = lay.wrap(first, kept[start:end])
        feat = {"input_ids": ids, "example": ex, "chunk": k}
        if kinds is not None:
            feat["token_type_ids"] = kinds
        out.append(feat)
    return out


# --- examples as units of batches --------------------------------------------------------


def units(features: list[dict[str, Any]]) -> list[list[int]] | None:
    """Feature indices of each example read in chunks (its chunks are consecutive), or None
    when every feature stands alone."""
    if not features or "chunk" not in features[0]:
        return None
    groups: list[list[int]] = []
    for i, f in enumerate(features):
        if f["chunk"] == 0:
            groups.append([])
        groups[-1].append(i)
    return groups


def unit_lengths(features: list[dict[str, Any]], groups: list[list[int]] | None) -> list[int]:
    """Tokens of each unit of a batch: a feature, or all chunks of an example."""
    lengths = [len(f["input_ids"]) for f in features]
    return lengths if groups is None else [sum(lengths[i] for i in g) for g in groups]


def leads(features: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One feature per unit (an example's first chunk): what its pooled output decodes against."""
    groups = units(features)
    return features if groups is None else [features[g[0]] for g in groups]


def members(features: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], torch.Tensor]:
    """A batch's examples (their first chunks) and which chunks each owns, ``[examples, chunks]``."""
    starts = [i for i, f in enumerate(features) if f["chunk"] == 0]
    owned = torch.zeros((len(starts), len(features)), dtype=torch.bool)
    for row, (start, end) in enumerate(zip(starts, [*starts[1:], len(features)], strict=True)):
        owned[row, start:end] = True
    return [features[i] for i in starts], owned


def pool(logits: torch.Tensor, batch: dict[str, torch.Tensor], how: str) -> torch.Tensor:
    """Each example's output from its chunks' (mean or max per label); without chunks, as given.
    The chunk x example mask makes both a dense product: no host sync, no scatter."""
    owned = batch.get("members")
    if owned is None:
        return logits
    if how == "max":
        spread = logits.unsqueeze(0).masked_fill(~owned.unsqueeze(-1), torch.finfo(logits.dtype).min)
        return spread.amax(dim=1)
    weights = owned.to(logits.dtype)
    return (weights.unsqueeze(-1) * logits.unsqueeze(0)).sum(dim=1) / weights.sum(dim=1, keepdim=True)
