"""The training loop: the shared recipe (``workflow_scripts.optim``: AdamW, curve ``linear``),
dev evaluation every N steps, the best dev state kept, early stopping. It never sees test
data: scoring test is the caller's last act, with the state this loop chose."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import optim
from ..progress import progress
from . import chunks, heads, stability
from .batching import ahead, eval_batches, loss_terms, micro_batches, train_batches
from .execution import Execution, plain
from .settings import FinetuneSettings, planned_steps

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Schedule:
    """A warm-up/decay schedule planned over ``total`` steps and trained until step ``stop``: a
    fold that replays the selection run stops at its chosen step on its schedule."""

    total: int
    stop: int


@dataclass
class Fit:
    state: dict[str, torch.Tensor]
    best_step: int
    dev: dict[str, float]
    steps: int
    schedule_steps: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float = 0.0
    train_examples: int = 0


def predict(
    model, features, task_type: str, pad_id: int, cfg: FinetuneSettings, device, execution: Execution | None = None
) -> list[torch.Tensor]:
    """Logits per feature, or per example read in chunks, pooled over its chunks (on CPU; token
    logits cut to the feature's length). They stay on the device until the split is scored,
    then come back in one copy: no batch waits for the device."""
    model.eval()
    execution = execution or plain(cfg)
    forward = execution.forward(model, cfg)
    units = chunks.units(features)
    lengths = chunks.unit_lengths(features, units)
    batches = eval_batches(lengths, cfg.eval_batch_size)
    order, kept = [], []
    with torch.inference_mode(), optim.autocast(device, cfg.precision), execution.attention():
        for idx, batch in ahead(batches, features, pad_id, task_type, device, units, execution.padding):
            order.append(idx)
            kept.append(chunks.pool(forward(batch, keep=True), batch, cfg.chunk_pooling).float())
        flat = torch.cat([k.flatten() for k in kept]).cpu() if kept else torch.empty(0)
    out: list[torch.Tensor | None] = [None] * len(lengths)
    for idx, shape, part in zip(order, [k.shape for k in kept], flat.split([k.numel() for k in kept]), strict=True):
        logits = part.view(shape)
        for row, i in enumerate(idx):
            out[i] = logits[row, : lengths[i]] if logits.dim() == 3 else logits[row]
    return out  # type: ignore[return-value]


def selection_value(metrics: dict[str, float]) -> float:
    """The dev figure maximised by checkpoint and grid selection (an undefined score ranks last)."""
    value = metrics.get("score", float("nan"))
    return -math.inf if value is None or math.isnan(value) else float(value)


def fit(
    model,
    train,
    task_type: str,
    evaluate: Callable[[Any], dict[str, float]],
    cfg: FinetuneSettings,
    seed: int,
    pad_id: int,
    device: torch.device,
    label: str = "finetune",
    schedule: Schedule | None = None,
    execution: Execution | None = None,
) -> Fit:
    """Train ``model`` on ``train`` features; ``evaluate(model)`` scores dev and returns metrics.
    ``schedule`` replaces the run's own (its planned steps, trained to the end). A batch holds
    ``batch_size`` features, or examples with all their chunks. ``execution``: the SDPA
    backends, padding and CUDA graphs (default: the settings' backends, no buckets, no graphs)."""
    execution = execution or plain(cfg)
    rng = np.random.default_rng(seed)
    units = chunks.units(train)
    lengths = chunks.unit_lengths(train, units)
    per_epoch = math.ceil(len(lengths) / cfg.batch_size)
    planned = planned_steps(len(lengths), cfg.batch_size, cfg.epochs, cfg.max_steps)
    schedule = schedule or Schedule(planned, planned)
    total = schedule.stop
    every = cfg.eval_every or per_epoch
    update = optim.updater(
        model,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        eps=cfg.adam_epsilon,
        total_steps=schedule.total,
        warmup_ratio=cfg.warmup_ratio,
        precision=cfg.precision,
        device=device,
        groups=stability.lr_groups(model, cfg),
    )

    best = Fit(state={}, best_step=0, dev={}, steps=0, schedule_steps=schedule.total)
    track = Tracker(best, label, total, cfg.patience)
    terms = loss_terms(train, task_type)
    # walked once: model.parameters() walks every submodule again at each step
    params = list(model.parameters())
    step, seen, running, pending = 0, 0, [], []
    start, eval_seconds = time.perf_counter(), 0.0
    model.train()
    while step < total and not track.stop:
        parts = micro_batches(
            train_batches(lengths, cfg.batch_size, rng, cfg.group_by_length), cfg.micro_batch_size, terms
        )
        ready = ahead([p.idx for p in parts], train, pad_id, task_type, device, units, execution.padding)
        for (idx, batch), part in zip(ready, parts, strict=True):
            pending.append(backward(model, batch, part.share, update, cfg, task_type, device, execution))
            seen += len(idx)
            if not part.last:
                continue
            update.step(params, cfg.grad_clip)
            running.append(torch.stack(pending).sum())
            pending = []
            step += 1
            track.bar.update(1)
            if step % every == 0 or step == total:
                tick = time.perf_counter()
                dev = evaluate(model)
                model.train()
                loss = torch.stack(running).float().mean().item()  # the log step's one wait
                running = []
                track.record(model, step, loss, max(update.scheduler.get_last_lr()), dev)
                eval_seconds += time.perf_counter() - tick
            if track.stop or step >= total:
                break
    track.bar.close()
    best.steps = step
    best.train_seconds = time.perf_counter() - start - eval_seconds
    best.train_examples = seen
    return best


def train_step(
    model,
    batch,
    update: optim.Updater,
    cfg: FinetuneSettings,
    task_type: str,
    device,
    execution: Execution | None = None,
) -> torch.Tensor:
    """One optimiser step on a whole batch, queued without waiting for the device; returns the
    loss, on the device (what the GPU check and the dispatch benchmark time)."""
    value = backward(model, batch, 1.0, update, cfg, task_type, device, execution)
    update.step(model.parameters(), cfg.grad_clip)
    return value


def backward(
    model,
    batch,
    share: float,
    update: optim.Updater,
    cfg: FinetuneSettings,
    task_type: str,
    device,
    execution: Execution | None = None,
):
    """Forward and backward of one micro-batch, its loss weighted by its ``share`` of the batch's,
    queued without waiting for the device; returns that weighted loss, on the device. The
    execution's SDPA backends are in force for both passes."""
    execution = execution or plain(cfg)
    with execution.attention():
        with optim.autocast(device, cfg.precision):
            logits = chunks.pool(execution.forward(model, cfg)(batch), batch, cfg.chunk_pooling)
            value = heads.loss(logits, batch, task_type)
        if share != 1.0:
            value = value * share
        update.backward(value)
    return value.detach()


@dataclass
class Tracker:
    """Dev selection over a run's evaluations: the best state kept, early stopping, the log."""

    best: Fit
    label: str
    total: int
    patience: int
    stop: bool = False
    best_value: float = -math.inf
    stale: int = 0
    bar: Any = None

    def __post_init__(self) -> None:
        self.bar = progress(self.label, total=self.total, unit="step")

    def record(self, model, step: int, loss: float, lr: float, dev: dict[str, float]) -> None:
        best = self.best
        best.history.append({"step": step, "loss": loss, "lr": lr, "dev": dev})
        improved = selection_value(dev) > self.best_value
        score = dev.get("score", float("nan"))
        log.info(
            "%s step %d/%d: loss %.4f, dev score %.4f%s",
            self.label,
            step,
            self.total,
            loss,
            score,
            " (best)" if improved else "",
        )
        self.bar.set_postfix_str(f"loss {loss:.4f} dev {score:.4f}")
        if improved or not best.state:
            self.best_value = selection_value(dev)
            best.state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            best.best_step, best.dev = step, dev
            self.stale = 0
        else:
            self.stale += 1
        if self.patience and self.stale >= self.patience:
            log.info("%s: early stop at step %d, no dev improvement in %d evaluations", self.label, step, self.stale)
            self.stop = True
