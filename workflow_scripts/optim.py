"""The optimisation recipe shared by pretraining, distillation and fine-tuning.

- Parameter groups: biases and LayerNorm weights get no weight decay, every other trainable
  parameter does (BERT's and ELECTRA's ``exclude_from_weight_decay``, HF Trainer's rule).
- AdamW, fused on CUDA; :func:`updater` is the one place that builds it.
- The learning-rate curve ``linear``: warm-up from 0 to the peak over W = int(warmup_ratio x
  total) updates, then linear decay to 0 at ``total``. Update n (counted from 0) runs at
  peak x n / W while n < W, then at peak x (total - n) / (total - W): the first update runs at
  lr 0, as with transformers' ``get_linear_schedule_with_warmup`` and fairseq's
  ``polynomial_decay`` (power 1, end lr 0), which RoBERTa was trained with.
- Autocast: bf16 or fp16 on CUDA, none on CPU or for fp32; a loss scaler for fp16 only.
- Seeding of python's, numpy's and torch's global random states.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .lr_curve import (  # noqa: F401  (the recipe's curve)
    DECAY_SHAPES,
    LINEAR,
    Curve,
    curve_factor,
    decay_start,
    linear_factor,
    warmup_steps,
)

# torch's and HF Trainer's defaults: fine-tuning, which has no betas setting, uses them
DEFAULT_BETAS = (0.9, 0.999)
LOW_PRECISION = {"bf16": torch.bfloat16, "fp16": torch.float16}


def no_decay_names(module: nn.Module) -> set[str]:
    """Names (as ``named_parameters`` gives them) of the trainable parameters that get no weight decay."""
    exempt = set()
    for owner in module.modules():
        for name, param in owner.named_parameters(recurse=False):
            if name == "bias" or isinstance(owner, nn.LayerNorm):
                exempt.add(id(param))
    return {name for name, p in module.named_parameters() if p.requires_grad and id(p) in exempt}


def decay_groups(
    module: nn.Module, weight_decay: float, layer_lr: Callable[[str], tuple[int, float]] | None = None
) -> list[dict[str, Any]]:
    """AdamW parameter groups: ``weight_decay`` for weights, 0 for biases and LayerNorm weights, each
    group's parameters in ``named_parameters`` order. ``layer_lr`` (a parameter's name -> its depth and
    learning rate) splits them into one such pair per depth, deepest last, each at its own lr."""
    exempt = no_decay_names(module)
    # the plain pair exists even empty: a checkpoint's optimiser state holds two groups
    groups: dict[tuple[int, bool], list[nn.Parameter]] = {} if layer_lr else {(0, False): [], (0, True): []}
    rates: dict[int, dict[str, float]] = {0: {}}  # a group's own lr, if any
    for name, param in module.named_parameters():
        if param.requires_grad:
            depth, lr = layer_lr(name) if layer_lr else (0, None)
            if lr is not None:
                rates[depth] = {"lr": lr}
            groups.setdefault((depth, name in exempt), []).append(param)
    return [
        {"params": params, "weight_decay": 0.0 if plain else weight_decay, **rates[depth]}
        for (depth, plain), params in sorted(groups.items(), key=lambda item: item[0])
    ]


def schedule(
    optimizer: torch.optim.Optimizer, total: int, warmup_ratio: float, curve: Curve = LINEAR
) -> torch.optim.lr_scheduler.LambdaLR:
    """``curve`` over ``total`` updates (its arguments come from the settings, never from a checkpoint)."""
    factor = functools.partial(curve_factor, total=total, warmup=warmup_steps(warmup_ratio, total), curve=curve)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def amp_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast dtype of ``precision`` on ``device``; None means fp32 (always on CPU)."""
    return LOW_PRECISION.get(precision) if device.type == "cuda" else None


def autocast(device: torch.device, precision: str):
    dtype = amp_dtype(device, precision)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def seed_everything(seed: int, deterministic: bool = False) -> None:
    """Seed python's, numpy's and torch's (CPU and every GPU) global random states: weight
    initialisation and dropout draw from them. ``deterministic`` also makes cuDNN pick fixed
    kernels rather than the fastest by timing, so the same seed on the same GPU gives the same metrics."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def allocate_gradients(optimizer: torch.optim.Optimizer) -> None:
    """A gradient buffer for every parameter ``optimizer`` updates, allocated now, for backward passes to
    accumulate into (zero it in place after each step: ``zero_grad(set_to_none=False)``), never into a backward
    pass's own output: a CUDA graph's next replay overwrites those."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None:
                p.grad = torch.zeros_like(p)


@dataclass
class Updater:
    """AdamW, its schedule and the fp16 loss scaler (a pass-through otherwise), updated together."""

    optimizer: torch.optim.AdamW
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    kept_gradients: bool = False

    def keep_gradients(self) -> None:
        """Accumulate into gradient buffers kept across steps and zeroed in place (allocate_gradients)."""
        self.kept_gradients = True
        allocate_gradients(self.optimizer)

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()

    def step(self, parameters: Iterable[torch.Tensor], grad_clip: float) -> tuple[torch.Tensor | None, float]:
        """Apply the accumulated gradients: clip their global norm to ``grad_clip`` (0: no
        clipping), step, advance the schedule. Returns the norm before clipping (None
        without clipping) and the learning rate this update ran at."""
        norm = None
        if grad_clip > 0:
            self.scaler.unscale_(self.optimizer)
            norm = torch.nn.utils.clip_grad_norm_(parameters, grad_clip)
        lr = self.scheduler.get_last_lr()[0]
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=not self.kept_gradients)
        self.scheduler.step()
        return norm, lr

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])


def updater(
    module: nn.Module,
    *,
    lr: float,
    weight_decay: float,
    eps: float,
    betas: tuple[float, ...] = DEFAULT_BETAS,
    total_steps: int,
    warmup_ratio: float,
    precision: str,
    device: torch.device,
    groups: list[dict[str, Any]] | None = None,
    curve: Curve = LINEAR,
) -> Updater:
    """The whole recipe for training ``module`` (on ``device``) for ``total_steps`` updates: AdamW
    over :func:`decay_groups` or the given ``groups`` (fused on CUDA), ``curve`` (scaling
    each group's own lr), the fp16 loss scaler."""
    fused = device.type == "cuda"
    optimizer = torch.optim.AdamW(
        groups or decay_groups(module, weight_decay), lr=lr, betas=tuple(betas), eps=eps, fused=fused, foreach=not fused
    )
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype(device, precision) == torch.float16)
    return Updater(optimizer, schedule(optimizer, total_steps, warmup_ratio, curve), scaler)
