"""One optimiser step of a training objective: each micro-batch forward and backward, then the update.

The loop (loop.py) decides when steps run and owns checkpoints, logging and signals; this
module owns what a step does, the same for every objective (MLM, ELECTRA, distillation).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from .. import optim
from .batches import StepBatch
from .dist import Dist
from .residual import keep_residual_in_autocast_dtype
from .settings import PretrainSettings


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy without waiting for the GPU: pinned memory lets the next step's batch be prepared while it computes."""
    if device.type != "cuda":
        return t
    return (t if t.is_pinned() else t.pin_memory()).to(device, non_blocking=True)


def compiles(settings: PretrainSettings, device: torch.device) -> bool:
    """``compile: auto`` compiles on CUDA, where fusing the memory-bound kernels pays; not on the CPU."""
    return device.type == "cuda" if settings.compile == "auto" else bool(settings.compile)


def replays_graphs(settings: PretrainSettings, device: torch.device) -> bool:
    """``cuda_graphs`` captures the compiled micro-step once and replays it: on CUDA, when compiling."""
    return settings.cuda_graphs and device.type == "cuda" and compiles(settings, device)


def compile_mode(settings: PretrainSettings, device: torch.device) -> str | None:
    """The inductor mode: CUDA graphs and autotuned matrix products on CUDA only; None is torch's default."""
    graphs, autotune = replays_graphs(settings, device), settings.autotune and device.type == "cuda"
    if autotune:
        return "max-autotune" if graphs else "max-autotune-no-cudagraphs"
    return "reduce-overhead" if graphs else None


def fixed_slots(settings: PretrainSettings, device: torch.device) -> bool:
    """Whether micro-batches pad their predictions to a fixed count: compiled steps need the static
    shapes, while an eager step only pays for the padded rows of the head."""
    return settings.prediction_slots == "fixed" or (settings.prediction_slots == "auto" and compiles(settings, device))


def distribute(module: nn.Module, d: Dist) -> DistributedDataParallel:
    """Data-parallel ``module``: no buffer broadcast at every forward (its buffers are constants), gradients
    written straight into the all-reduce buckets, and on CUDA all-reduced in bf16 (half the traffic)."""
    cuda = d.device.type == "cuda"
    ddp = DistributedDataParallel(
        module, device_ids=[d.local_rank] if cuda else None, broadcast_buffers=False, gradient_as_bucket_view=True
    )
    if cuda:
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    return ddp


class TrainStep:
    """The objective, its optimiser and the wrapped module that runs it (compiled, data-parallel)."""

    def __init__(self, objective: nn.Module, settings: PretrainSettings, dist: Dist) -> None:
        self.settings, self.dist = settings, dist
        self.objective = objective.to(dist.device)
        self.update = optim.updater(
            self.objective,
            lr=settings.peak_lr(),
            weight_decay=settings.weight_decay,
            eps=settings.eps,
            betas=settings.betas,
            total_steps=settings.max_steps,
            warmup_ratio=settings.warmup_ratio,
            precision=settings.precision,
            device=dist.device,
            curve=settings.curve(),
        )
        self.runner: nn.Module = self.objective
        self.stats: dict[str, torch.Tensor] = {}

    def state_dict(self) -> dict[str, Any]:
        return {"trainable": self.objective.state_dict(), **self.update.state_dict()}

    def load_state_dict(self, payload: dict[str, Any]) -> None:
        self.objective.load_state_dict(payload["trainable"])
        self.update.load_state_dict(payload)

    def wrap(self) -> None:
        """Compile and distribute the objective; after any resumed weights are loaded."""
        d = self.dist
        self.objective.train()
        if self.settings.cuda_graphs:
            self.update.keep_gradients()  # before DDP, whose bucket views then take their place
        if self.settings.residual_stream == "autocast":
            keep_residual_in_autocast_dtype(self.objective)
        if compiles(self.settings, d.device):
            self.runner = torch.compile(self.runner, mode=compile_mode(self.settings, d.device))
        if d.world > 1:
            self.runner = distribute(self.runner, d)

    def __call__(self, batch: StepBatch, norms: dict[str, float]) -> tuple[torch.Tensor | None, float]:
        """Train on ``batch``; return the gradient norm before clipping and the learning rate used."""
        s, d = self.settings, self.dist
        last, graphs = len(batch.micro) - 1, replays_graphs(s, d.device)
        for k, mb in enumerate(batch.micro):
            inputs = [to_device(t, d.device) for t in (mb.input_ids, mb.positions, mb.labels)]
            documents = {} if mb.position_ids is None else {"position_ids": to_device(mb.position_ids, d.device)}
            sync = contextlib.nullcontext() if d.world == 1 or k == last else self.runner.no_sync()
            if graphs:  # this micro-step's replay may overwrite the last one's outputs, all consumed by now
                torch.compiler.cudagraph_mark_step_begin()
            with sync:
                with optim.autocast(d.device, s.precision):
                    loss, stats = self.runner(*inputs, norms, **documents)
                self.update.backward(loss)
            for key, v in stats.items():  # kept on the device: no synchronisation until a log line
                self.stats[key] = self.stats.get(key, 0.0) + v
        return self.update.step(self.objective.parameters(), s.grad_clip)

    def take_stats(self) -> dict[str, torch.Tensor]:
        stats, self.stats = self.stats, {}
        return stats
