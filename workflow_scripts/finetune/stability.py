"""The fine-tuning stability settings of Tinn et al. 2023 (Patterns 4(4):100729): layer-wise
learning-rate decay, frozen lower layers and re-initialised top layers.

Depths: the embeddings are 0, encoder layer i (from 0) is i + 1, and everything else (pooler,
task head) is L, the depth of the top layer; a parameter at depth d trains at
lr x decay^(L - d)."""

from __future__ import annotations

import re
from typing import Any

from torch import nn

from .. import optim
from ..errors import PipelineError
from .settings import FinetuneSettings

KEYS = ("layerwise_lr_decay", "freeze_layers", "reinit_top_layers")
EMBEDDINGS = re.compile(r"(?:^|\.)embeddings(?:_project)?\.")
LAYER = re.compile(r"(?:^|\.)(?:encoder|transformer)\.layer\.(\d+)\.")


def pretrained(model: nn.Module):
    """The transformers model inside a task model (itself, or a pooled head's encoder)."""
    return model if hasattr(model, "config") else model.encoder


def layer_count(model: nn.Module) -> int:
    return int(pretrained(model).config.num_hidden_layers)


def depth(name: str, layers: int) -> int:
    if EMBEDDINGS.search(name):
        return 0
    found = LAYER.search(name)
    return int(found.group(1)) + 1 if found else layers


def active(cfg: FinetuneSettings) -> bool:
    return cfg.layerwise_lr_decay != 1.0 or cfg.freeze_layers > 0 or cfg.reinit_top_layers > 0


def check(cfg: FinetuneSettings, model: nn.Module, model_path: str) -> int:
    """The model's layer count, once the settings are known to fit it."""
    layers = layer_count(model)
    names = [n for n, _ in model.named_parameters()]
    if active(cfg) and not any(LAYER.search(n) for n in names):
        raise PipelineError(
            f"finetune.layerwise_lr_decay/freeze_layers/reinit_top_layers: {model_path} has no "
            "encoder.layer.N parameters to address; leave these settings at 1.0, 0 and 0"
        )
    for key in ("freeze_layers", "reinit_top_layers"):
        if getattr(cfg, key) > layers:
            raise PipelineError(
                f"finetune.{key}: {getattr(cfg, key)} layers, but {model_path} has {layers}; use at most {layers}"
            )
    if cfg.freeze_layers + cfg.reinit_top_layers > layers:
        raise PipelineError(
            f"finetune.freeze_layers + reinit_top_layers: {cfg.freeze_layers} + {cfg.reinit_top_layers} "
            f"overlap in {model_path}'s {layers} layers: a re-initialised layer would stay frozen"
        )
    return layers


def reinit_top(model: nn.Module, k: int, layers: int) -> None:
    """Re-initialise the top ``k`` encoder layers with the model's own initialiser (call after
    seeding; transformers skips tensors it marked as loaded, so the marks are cleared first)."""
    hf = pretrained(model)
    for name, module in hf.named_modules():
        found = LAYER.search(name + ".")
        if found and int(found.group(1)) >= layers - k and name.endswith(f"layer.{found.group(1)}"):
            for part in module.modules():
                part._is_hf_initialized = False
                for tensor in (*part.parameters(recurse=False), *part.buffers(recurse=False)):
                    tensor._is_hf_initialized = False
            module.apply(hf._init_weights)


def apply(model: nn.Module, cfg: FinetuneSettings, model_path: str) -> None:
    """Re-initialise the top layers and freeze the embeddings plus the lowest layers, as ``cfg`` says."""
    if not active(cfg):
        return
    layers = check(cfg, model, model_path)
    if cfg.reinit_top_layers:
        reinit_top(model, cfg.reinit_top_layers, layers)
    if cfg.freeze_layers:
        for name, param in model.named_parameters():
            if depth(name, layers) <= cfg.freeze_layers:
                param.requires_grad_(False)


def lr_groups(model: nn.Module, cfg: FinetuneSettings) -> list[dict[str, Any]] | None:
    """AdamW groups with each depth's learning rate (None without decay: the plain groups)."""
    if cfg.layerwise_lr_decay == 1.0:
        return None
    layers = layer_count(model)

    def layer_lr(name: str) -> tuple[int, float]:
        d = depth(name, layers)
        return d, cfg.lr * cfg.layerwise_lr_decay ** (layers - d)

    return optim.decay_groups(model, cfg.weight_decay, layer_lr)
