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
from dataclasses import dataclass

GIB = 2**30
ACTIVATION_BYTES = {"bf16": 71, "fp16": 71, "fp32": 86}
CONTEXT_GIB = 0.5
FRAGMENTATION = 1.2
MAX_RUNS_PER_GPU = 8  # beyond this the host's cores, not the card, run out (one process a run)


@dataclass(frozen=True)
class Shape:
    layers: int
    hidden: int
    intermediate: int
    vocab: int
    positions: int = 512

    @property
    def parameters(self) -> int:
        h, i = self.hidden, self.intermediate
        layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
        embeddings = (self.vocab + self.positions + 2) * h + 2 * h
        return self.layers * layer + embeddings + h * h + h  # + the pooler

    @property
    def matmul_parameters(self) -> int:
        return self.layers * (4 * self.hidden**2 + 2 * self.hidden * self.intermediate)


BERT_BASE = Shape(layers=12, hidden=768, intermediate=3072, vocab=30522)
BERT_LARGE = Shape(layers=24, hidden=1024, intermediate=4096, vocab=30522)


def estimate(shape: Shape, batch: int, length: int, precision: str = "bf16") -> dict[str, float]:
    """GiB per part of one run training on batches of ``batch`` x ``length`` tokens."""
    p = shape.parameters
    parts = {
        "weights": 4 * p,
        "gradients": 4 * p,
        "adamw_state": 8 * p,
        "autocast_weight_copies": 2 * shape.matmul_parameters if precision != "fp32" else 0,
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
