"""The residual stream in the autocast dtype: LayerNorms that compute in fp32 and return bf16 (or fp16).

Under CUDA autocast torch runs ``layer_norm`` in fp32 and returns fp32, so every residual sum after a
norm is fp32, its gradient too, and each Linear makes its own low-precision copy of its input. The
normalisation, dropout and residual kernels then move 4-byte elements: 35% of a compiled BERT-base
step's kernel time on an H200 (benchmarks/README.md). Megatron-LM keeps the residual in the training
dtype unless told otherwise (``--fp32-residual-connection`` is opt-in), as do fairseq's and NVIDIA's
fp16 BERT recipes, whose whole models run in half precision. Without autocast (fp32 training, every
CPU run) a norm computes exactly as before.
"""

from __future__ import annotations

import torch
from torch import nn


class AutocastDtypeLayerNorm(nn.LayerNorm):
    """A LayerNorm that, under autocast, normalises in fp32 and returns the autocast dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        device = x.device.type
        if not torch.is_autocast_enabled(device):
            return super().forward(x)
        return super().forward(x.float()).to(torch.get_autocast_dtype(device))


def keep_residual_in_autocast_dtype(module: nn.Module) -> int:
    """Every plain ``nn.LayerNorm`` in ``module`` becomes an ``AutocastDtypeLayerNorm`` in place; the number
    changed. Parameters, state-dict keys and saved checkpoints stay as they are."""
    norms = [m for m in module.modules() if type(m) is nn.LayerNorm]
    for norm in norms:
        norm.__class__ = AutocastDtypeLayerNorm  # the same parameters under a forward that keeps the dtype
    return len(norms)
