"""ModernBERT-class masked-language models (Warner et al. 2024) in the shared engine.

Built with transformers' ``ModernBertForMaskedLM``: rotary positions with a global and a
local base, GeGLU feed-forward, pre-norm without biases, and attention alternating
between a sliding window (``local_attention`` tokens) and global layers. A phase may set
a new global rotary base (ModernBERT's context extension); :func:`rotary_schedule`
applies it when the phase starts and the exported config keeps it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import nn
from transformers import ModernBertConfig, ModernBertForMaskedLM

from ..errors import PipelineError
from ..tokenizer import Specials
from .settings import Phase, PretrainSettings

log = logging.getLogger(__name__)

MODEL_TYPE = "modernbert"
GLOBAL, LOCAL = "full_attention", "sliding_attention"
# what fine-tuning feeds the encoder: no token_type_ids, which ModernBERT has no embedding for
INPUT_NAMES = ["input_ids", "attention_mask"]


def is_modernbert(model: nn.Module) -> bool:
    return getattr(model.config, "model_type", None) == MODEL_TYPE


def layer_types(layers: int, every: int) -> list[str]:
    """Layer 0 and every ``every``-th after it attend globally, the rest in the sliding window."""
    return [GLOBAL if i % every == 0 else LOCAL for i in range(layers)]


def build_modernbert(settings: PretrainSettings, sp: Specials, max_seq_len: int) -> ModernBertForMaskedLM:
    """A freshly initialised ModernBERT masked LM of the settings' shape."""
    own = settings.modernbert_settings()
    hidden, layers, heads, inter = settings.shape()
    config = ModernBertConfig(
        vocab_size=sp.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        max_position_embeddings=max_seq_len,
        layer_types=layer_types(layers, own.global_attn_every_n_layers),
        local_attention=own.local_attention,
        rope_parameters={
            GLOBAL: {"rope_type": "default", "rope_theta": own.global_rope_theta},
            LOCAL: {"rope_type": "default", "rope_theta": own.local_rope_theta},
        },
        attention_bias=own.bias,
        mlp_bias=own.bias,
        norm_bias=own.bias,
        norm_eps=own.norm_eps,
        embedding_dropout=settings.dropout,
        mlp_dropout=settings.dropout,
        attention_dropout=settings.attention_dropout,
        pad_token_id=sp.pad,
        cls_token_id=sp.cls,
        sep_token_id=sp.sep,
        bos_token_id=sp.cls,
        eos_token_id=sp.sep,
    )
    config._attn_implementation = settings.attention
    torch.manual_seed(settings.seed)
    return ModernBertForMaskedLM(config)


def mlm_head(model: nn.Module) -> nn.Module:
    """ModernBERT's output head, its ``head`` (dense, GELU, norm) then the tied ``decoder``, as one module.

    Kept in the model's ``__dict__``, not registered: its weights are the model's own, saved once."""
    chained = model.__dict__.get("_mlm_head")
    if chained is None:
        chained = nn.Sequential(model.head, model.decoder)
        object.__setattr__(model, "_mlm_head", chained)
    return chained


def attended_keys(config, seq_len: int) -> int:
    """Keys attended per query, summed over the layers: ``seq_len`` in a global layer, the window in a local one."""
    types = getattr(config, "layer_types", None) or [GLOBAL] * config.num_hidden_layers
    window = getattr(config, "local_attention", seq_len)
    return sum(seq_len if t != LOCAL else min(seq_len, window) for t in types)


def global_rope_theta(model: nn.Module) -> float:
    return float(model.config.rope_parameters[GLOBAL]["rope_theta"])


def set_global_rope_theta(model: nn.Module, theta: float) -> None:
    """Give the global layers rotary base ``theta``: in the config (saved with the model) and in the
    rotary frequencies, which are not part of the weights."""
    params = model.config.rope_parameters[GLOBAL]
    if params.get("rope_type", "default") != "default":
        raise PipelineError(
            f"rope_theta: the checkpoint's global layers use rotary scaling {params['rope_type']!r}; "
            "a new base applies to plain rotary positions only"
        )
    params["rope_theta"] = float(theta)
    rotary = model.base_model.rotary_emb
    inv_freq, _ = rotary.compute_default_rope_parameters(model.config, layer_type=GLOBAL)
    for name in (f"{GLOBAL}_inv_freq", f"{GLOBAL}_original_inv_freq"):
        buffer = getattr(rotary, name)
        buffer.copy_(inv_freq.to(buffer.device, buffer.dtype))


def rotary_schedule(model: nn.Module, phases: list[Phase], where: str) -> Callable[[int], None] | None:
    """What to do when phase ``i`` starts: set the global rotary base it (or the last phase before it
    that names one) asks for. None when no phase names a base."""
    named = [i for i, p in enumerate(phases) if p.rope_theta is not None]
    if not named:
        return None
    if not is_modernbert(model):
        raise PipelineError(
            f"{where}.phases[{named[0]}].rope_theta: the model ({model.config.model_type}) learns its positions; "
            "a rotary base applies to ModernBERT-class models only"
        )
    initial = global_rope_theta(model)

    def start(phase: int) -> None:
        theta = next((p.rope_theta for p in reversed(phases[: phase + 1]) if p.rope_theta is not None), initial)
        if theta != global_rope_theta(model):
            log.info("phase %d: global rotary base %s -> %s", phase, global_rope_theta(model), theta)
            set_global_rope_theta(model, theta)

    return start
