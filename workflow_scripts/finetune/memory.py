"""GPU memory of one fine-tuning run, estimated from the model's shape, and how many such
runs share a card.

Per run: fp32 weights, gradients and AdamW's two moments (16 bytes a parameter), the bf16
copies autocast makes of the matmul weights and keeps for the backward pass (2 bytes), the
activations kept for the backward pass, and the process's CUDA context. Activations:
``ACTIVATION_BYTES`` per token, per hidden unit and per layer, as measured on the CPU with
saved-tensor hooks on transformers' BERT (hidden 768; under autocast the residual stream stays
fp32 and q, k and v each keep their own bf16 copy of their input), less the length x length
attention scores that the math kernel keeps there and SDPA's fused kernels on a GPU do not
(Korthikanti et al. 2022 count 34 for a fully 16-bit layer). A fifth more covers the caching
allocator's fragmentation."""

from __future__ import annotations

import math

from ..encoder_shape import ADAMW_BYTES, AUTOCAST_COPY_BYTES, GRADIENT_BYTES, WEIGHT_BYTES, Shape

GIB = 2**30
ACTIVATION_BYTES = {"bf16": 71, "fp16": 71, "fp32": 86}
CONTEXT_GIB = 0.5
FRAGMENTATION = 1.2
MAX_RUNS_PER_GPU = 8  # beyond this the host's cores, not the card, run out (one process a run)


BERT_BASE = Shape(layers=12, hidden=768, intermediate=3072, vocab=30522, heads=12)
BERT_LARGE = Shape(layers=24, hidden=1024, intermediate=4096, vocab=30522, heads=16)


def estimate(shape: Shape, batch: int, length: int, precision: str = "bf16") -> dict[str, float]:
    """GiB per part of one run training on batches of ``batch`` x ``length`` tokens."""
    p = shape.parameters
    parts = {
        "weights": WEIGHT_BYTES * p,
        "gradients": GRADIENT_BYTES * p,
        "adamw_state": ADAMW_BYTES * p,
        "autocast_weight_copies": AUTOCAST_COPY_BYTES * shape.matmul_parameters if precision != "fp32" else 0,
        "activations": ACTIVATION_BYTES[precision] * batch * length * shape.hidden * shape.layers,
    }
    out = {k: v / GIB for k, v in parts.items()}
    out["cuda_context"] = CONTEXT_GIB
    out["total"] = sum(out.values()) * FRAGMENTATION
    return {k: round(v, 2) for k, v in out.items()}


def runs_per_gpu(total_gib: float, card_gib: float) -> int:
    """Runs of ``total_gib`` each that fit a card of ``card_gib`` (a tenth kept free), at most
    ``MAX_RUNS_PER_GPU`` and at least 1."""
    return max(1, min(MAX_RUNS_PER_GPU, math.floor(0.9 * card_gib / total_gib)))
