"""An encoder's shape (BERT, RoBERTa, ELECTRA, ModernBERT), read from its transformers config, and
the arithmetic that the memory and FLOPs estimates of pretraining, distillation and fine-tuning share.

Free of torch: the workflow sizes fine-tuning runs from a model's ``config.json`` while it plans."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# Bytes one trained parameter holds: its fp32 weight and gradient, AdamW's two fp32 moments, and
# the 16-bit copy autocast makes of a weight and keeps from the forward to the backward pass.
WEIGHT_BYTES = 4
GRADIENT_BYTES = 4
ADAMW_BYTES = 8
AUTOCAST_COPY_BYTES = 2


@dataclass(frozen=True)
class Shape:
    """The shape of one transformer encoder with its output head."""

    layers: int
    hidden: int
    intermediate: int
    vocab: int
    heads: int
    positions: int = 512
    params: int | None = None  # every parameter as counted in a model (Shape.of), embeddings and head included
    glu: bool = False  # ModernBERT's layer: pre-norm, rotary q and k, GeGLU

    @classmethod
    def of_config(cls, config: Any, params: int | None = None) -> Shape:
        """The shape a transformers config gives: a ``PretrainedConfig``, or a ``config.json`` as a namespace."""
        return cls(
            layers=int(config.num_hidden_layers),
            hidden=int(config.hidden_size),
            intermediate=int(config.intermediate_size),
            vocab=int(config.vocab_size),
            heads=int(config.num_attention_heads),
            positions=int(getattr(config, "max_position_embeddings", 512)),
            params=params,
            glu=getattr(config, "model_type", None) == "modernbert",
        )

    @classmethod
    def of(cls, model: Any) -> Shape:
        """The shape of a transformers model, its parameters counted."""
        return cls.of_config(model.config, sum(p.numel() for p in model.parameters()))

    @property
    def parameters(self) -> int:
        """Every parameter: as counted in the model, else a BERT encoder's with its pooler, from the shape."""
        if self.params is not None:
            return self.params
        h, i = self.hidden, self.intermediate
        layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
        embeddings = (self.vocab + self.positions + 2) * h + 2 * h
        return self.layers * layer + embeddings + h * h + h  # + the pooler

    @property
    def matmul_parameters(self) -> int:
        """The encoder layers' Linear weights (q, k, v, output; the feed-forward's two)."""
        return self.layers * (4 * self.hidden**2 + 2 * self.hidden * self.intermediate)


def read_shape(model_dir: str | Path) -> Shape | None:
    """The shape in a model directory's ``config.json``; None where it is not there yet (a dry run
    before the model is trained or fetched) or does not describe an encoder."""
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text())
        return Shape.of_config(SimpleNamespace(**config))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def matmul_flops(weights: float, hidden: int, attended_keys: int, passes: int = 1) -> float:
    """Matmul FLOPs per token (pretrain/model.py's FLOPS_FORMULA): 2 per Linear weight, and 4 x
    ``hidden`` per key attended (QK^T and PV), summed over the layers; ``passes`` 3 is forward and
    backward, 1 forward only."""
    return passes * (2 * weights + 4 * hidden * attended_keys)
