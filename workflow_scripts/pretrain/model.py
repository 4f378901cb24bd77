"""Build or load the masked-language model, and run its head on masked positions only."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    RobertaConfig,
    RobertaForMaskedLM,
)

from ..checkpoint_integrity import verify_checkpoint
from ..encoder_shape import matmul_flops
from ..errors import PipelineError
from ..tokenizer import Specials, looks_local
from . import modernbert
from .documents import document_inputs
from .settings import PretrainSettings

log = logging.getLogger(__name__)


def load_pretrained(ref: str, role: str, attention: str = "sdpa"):
    """(model, tokenizer) from a local checkpoint directory or, where reachable, a hub id."""
    if looks_local(ref) and not Path(ref).is_dir():
        raise PipelineError(f"{ref}: {role} checkpoint directory not found")
    verify_checkpoint(ref, role)
    try:
        model = AutoModelForMaskedLM.from_pretrained(ref, attn_implementation=attention)
        tokenizer = AutoTokenizer.from_pretrained(ref)
    except Exception as exc:
        raise PipelineError(
            f"{ref}: cannot load the {role} model and tokenizer with AutoModelForMaskedLM/AutoTokenizer ({exc})"
        ) from exc
    check_vocab(model, tokenizer, ref)
    return model, tokenizer


def check_vocab(model, tokenizer, where: str) -> None:
    n_tok, n_emb = len(tokenizer), model.get_input_embeddings().num_embeddings
    if n_tok > n_emb:
        raise PipelineError(
            f"{where}: the tokenizer has {n_tok} tokens but the model's embedding has {n_emb} rows; "
            "use the tokenizer saved with this model"
        )


def build_model(settings: PretrainSettings, tokenizer, max_seq_len: int) -> nn.Module:
    """A freshly initialised BERT, RoBERTa or ModernBERT masked-language model sized for ``tokenizer``."""
    if settings.architecture not in ("bert", "roberta", "modernbert"):
        raise PipelineError(
            f"architecture: {settings.architecture} is not a masked-language model; use bert, roberta or modernbert"
        )
    sp = Specials.of(tokenizer, "tokenizer")
    if settings.architecture == "modernbert":
        return modernbert.build_modernbert(settings, sp, max_seq_len)
    hidden, layers, heads, inter = settings.shape()
    common = dict(
        vocab_size=sp.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        hidden_dropout_prob=settings.dropout,
        attention_probs_dropout_prob=settings.attention_dropout,
        pad_token_id=sp.pad,
        layer_norm_eps=1e-12 if settings.architecture == "bert" else 1e-5,
    )
    torch.manual_seed(settings.seed)
    if settings.architecture == "bert":
        config = BertConfig(max_position_embeddings=max_seq_len, type_vocab_size=2, **common)
        config._attn_implementation = settings.attention
        return BertForMaskedLM(config)
    # RoBERTa's positions start after the padding index
    config = RobertaConfig(
        max_position_embeddings=max_seq_len + sp.pad + 1,
        type_vocab_size=1,
        bos_token_id=sp.cls,
        eos_token_id=sp.sep,
        **common,
    )
    config._attn_implementation = settings.attention
    return RobertaForMaskedLM(config)


def mlm_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(encoder, head) of a transformers masked-language model."""
    for head_name in ("cls", "lm_head"):
        head = getattr(model, head_name, None)
        if head is not None:
            return model.base_model, head
    if modernbert.is_modernbert(model):
        return model.base_model, modernbert.mlm_head(model)
    raise PipelineError(
        f"{type(model).__name__}: unsupported model class (expected a BERT-, RoBERTa- or ModernBERT-style masked LM)"
    )


def masked_hidden(hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions)


class MLMObjective(nn.Module):
    """Cross-entropy on masked positions; the output head sees only those positions."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        mlm_parts(model)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        labels: torch.Tensor,
        norms: dict[str, float],
        position_ids: torch.Tensor | None = None,
    ):
        encoder, head = mlm_parts(self.model)
        hidden = encoder(input_ids=input_ids, **document_inputs(self.model, position_ids)).last_hidden_state
        logits = head(masked_hidden(hidden, positions))
        loss = F.cross_entropy(logits.float(), labels, reduction="sum") / norms["masked"]
        return loss, {"loss": loss.detach(), "mlm": loss.detach()}


# Stated beside every MFU figure (train log provenance, plot caption, README).
FLOPS_FORMULA = (
    "matmul FLOPs per token = 6 x W_enc + 12 x L x h x s + 6 x f x W_head, where W_enc counts the encoder's "
    "Linear weights, L layers of width h attend over s tokens (a sliding-window layer over min(s, window)), "
    "and the output head (W_head: its Linear weights, "
    "tied decoder included) runs on the fraction f of positions it predicts; a frozen teacher counts a third "
    "(forward only). Left out: embedding lookups, LayerNorm, GELU, softmax, dropout, biases, residual adds, "
    "the loss and the optimiser step."
)


def linear_weights(module: nn.Module) -> int:
    """Elements of every Linear weight in ``module``: the multiply-adds per row it transforms."""
    return sum(m.weight.numel() for m in module.modules() if isinstance(m, nn.Linear))


def matmul_flops_per_token(
    config, encoder: nn.Module, head: nn.Module | None, seq_len: int, head_fraction: float, passes: int = 3
) -> float:
    """FLOPS_FORMULA for one model; ``passes`` 3 is forward and backward, 1 forward only."""
    dense = linear_weights(encoder) + head_fraction * (linear_weights(head) if head is not None else 0)
    return matmul_flops(dense, config.hidden_size, modernbert.attended_keys(config, seq_len), passes)


def train_flops_per_token(model: nn.Module, seq_len: int, head_fraction: float) -> float:
    """Training FLOPs per token of a masked LM whose head sees ``head_fraction`` of the positions."""
    return matmul_flops_per_token(model.config, *mlm_parts(model), seq_len, head_fraction)


def mlm_flops_fn(model: nn.Module) -> Callable[[int, float], float]:
    """FLOPs per token at a sequence length and masking rate (a phase's own, where it sets one)."""
    return lambda seq_len, mask_prob: train_flops_per_token(model, seq_len, mask_prob)


def flops_record(flops_per_token: Callable[[int, float], float], settings) -> dict:
    """What the MFU of a run's train log counts, for its provenance: per phase, at its length and rate."""
    phases = zip(settings.phases, settings.phase_mask_probs(), strict=True)
    per_phase = [
        {"seq_len": p.seq_len, "mask_prob": rate, "flops_per_token": flops_per_token(p.seq_len, rate)}
        for p, rate in phases
    ]
    return {"formula": FLOPS_FORMULA, "per_phase": per_phase}
