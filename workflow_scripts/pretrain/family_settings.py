"""Settings of a model family inside ``model.pretrain``: ELECTRA's generator and sampling, ModernBERT's
attention windows, rotary bases and biases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import PipelineError


@dataclass
class ElectraSettings:
    generator_size: float = field(
        default=1 / 3,
        metadata={
            "help": "Generator hidden width as a fraction of the discriminator's (ELECTRA: 1/4 to "
            "1/3), rounded to whole attention heads."
        },
    )
    discriminator_weight: float = field(
        default=50.0, metadata={"help": "Weight of the replaced-token-detection loss against the generator's MLM loss."}
    )
    share_embeddings: bool = field(
        default=True, metadata={"help": "Generator and discriminator share token, position and type embeddings."}
    )
    sampling: Literal["gumbel", "multinomial"] = field(
        default="gumbel",
        metadata={
            "help": "How replacements are drawn from the generator's softmax (no gradient flows "
            "through the draw): Gumbel-max or inverse-CDF multinomial."
        },
    )

    def validate(self, where: str) -> None:
        if not 0 < self.generator_size <= 1:
            raise PipelineError(f"{where}.generator_size: must be in (0, 1], e.g. 0.25 or 0.333")
        if self.discriminator_weight <= 0:
            raise PipelineError(f"{where}.discriminator_weight: must be positive (ELECTRA uses 50)")


@dataclass
class ModernBertSettings:
    """ModernBERT's own shape (Warner et al. 2024): alternating local and global attention, rotary positions."""

    local_attention: int = field(
        default=128, metadata={"help": "Tokens a local-attention layer attends over (its sliding window)."}
    )
    global_attn_every_n_layers: int = field(
        default=3, metadata={"help": "Every n-th layer, from the first, attends globally; the others locally."}
    )
    global_rope_theta: float = field(
        default=160_000.0,
        metadata={"help": "Rotary base of the global layers (released ModernBERT's; at 1,024 tokens: 10,000)."},
    )
    local_rope_theta: float = field(default=10_000.0, metadata={"help": "Rotary base of the local layers."})
    bias: bool = field(
        default=False,
        metadata={"help": "Biases in the attention, GeGLU and LayerNorms (ModernBERT: none; the decoder keeps one)."},
    )
    norm_eps: float = field(default=1e-5, metadata={"help": "LayerNorm epsilon."})

    def validate(self, where: str) -> None:
        if self.local_attention < 2 or self.local_attention % 2:
            raise PipelineError(f"{where}.local_attention: must be an even number of tokens, e.g. 128")
        if self.global_attn_every_n_layers < 1:
            raise PipelineError(f"{where}.global_attn_every_n_layers: must be at least 1 (1: every layer global)")
        for key in ("global_rope_theta", "local_rope_theta"):
            if getattr(self, key) <= 0:
                raise PipelineError(f"{where}.{key}: a rotary base must be positive, e.g. 160000")
        if self.norm_eps <= 0:
            raise PipelineError(f"{where}.norm_eps: must be positive")
