"""Blocks holding several documents (``packing: documents``): attention stays within each document and
positions restart at each document's first token.

A micro-batch carries position ids only (fixed shape [rows, L]); the mask is built from them inside
the step, so a compiled step sees the same shapes at every step. The mask is block-diagonal,
[rows, 1, L, L]: O(L^2) per block (64 MiB per sequence at 8,192 tokens as booleans), which the
sdpa kernel reads instead of its unmasked flash path. ModernBERT's local layers get it combined with
their sliding window; RoBERTa's positions count from its padding index + 1, as it numbers a
document read alone.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import PipelineError

MASKED_KERNELS = ("sdpa", "eager")


def document_ids(position_ids: torch.Tensor) -> torch.Tensor:
    """Per token, the index of its document in the block (a new one wherever the position restarts at 0)."""
    return (position_ids == 0).cumsum(-1)


def block_diagonal(position_ids: torch.Tensor) -> torch.Tensor:
    """[rows, 1, L, L] booleans: query and key in the same document."""
    doc = document_ids(position_ids)
    return (doc[:, :, None] == doc[:, None, :]).unsqueeze(1)


def within_window(length: int, half_window: int, device: torch.device) -> torch.Tensor:
    """[L, L] booleans: tokens at most ``half_window`` apart (ModernBERT's local attention)."""
    idx = torch.arange(length, device=device)
    return (idx[:, None] - idx[None, :]).abs() <= half_window


def as_kernel_mask(allowed: torch.Tensor, kernel: str, dtype: torch.dtype) -> torch.Tensor:
    """Booleans for sdpa; the additive form (0 or the dtype's minimum) the eager kernel adds to its scores."""
    if kernel == "sdpa":
        return allowed
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, torch.finfo(dtype).min)


def position_offset(config) -> int:
    """Where a model's positions start: RoBERTa numbers them from its padding index + 1."""
    return config.pad_token_id + 1 if config.model_type == "roberta" else 0


def document_inputs(model: nn.Module, position_ids: torch.Tensor | None) -> dict:
    """Keyword arguments that make ``model``'s encoder read each document of the blocks on its own
    (none for blocks packed with ``packing: concatenate``)."""
    if position_ids is None:
        return {}
    config = model.config
    kernel = config._attn_implementation
    if kernel not in MASKED_KERNELS:
        raise PipelineError(f"packing: documents needs attention sdpa or eager, not {kernel}")
    dtype = next(model.parameters()).dtype
    allowed = block_diagonal(position_ids)
    if config.model_type == "modernbert":
        local = allowed & within_window(position_ids.shape[-1], config.sliding_window, position_ids.device)
        mask = {
            "full_attention": as_kernel_mask(allowed, kernel, dtype),
            "sliding_attention": as_kernel_mask(local, kernel, dtype),
        }
    else:
        mask = as_kernel_mask(allowed, kernel, dtype)
    return {"attention_mask": mask, "position_ids": position_ids + position_offset(config)}
