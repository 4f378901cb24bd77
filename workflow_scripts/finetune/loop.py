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
from . import heads, stability
from .batching import collate, eval_batches, train_batches
from .settings import FinetuneSettings

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


def predict(model, features, task_type: str, pad_id: int, cfg: FinetuneSettings, device) -> list[torch.Tensor]:
    """Logits per feature (on CPU; token logits cut to the feature's length)."""
    model.eval()
    out: list[torch.Tensor | None] = [None] * len(features)
    lengths = [len(f["input_ids"]) for f in features]
    with torch.inference_mode(), optim.autocast(device, cfg.precision):
        for idx in eval_batches(lengths, cfg.eval_batch_size):
            batch = collate([features[i] for i in idx], pad_id, task_type, device)
            logits = heads.forward(model, batch).float().cpu()
            for row, i in enumerate(idx):
                out[i] = logits[row, : lengths[i]] if logits.dim() == 3 else logits[row]
    return out  # type: ignore[return-value]


def selection_value(metrics: dict[str, float]) -> float:
    """The dev figure maximised by checkpoint and grid selection (an undefined score ranks last)."""
    value = metrics.get("score", float("nan"))
    return -math.inf if value is None or math.isnan(value) else float(value)


def planned_steps(n_train: int, cfg: FinetuneSettings) -> int:
    """Optimiser steps of a run: its epochs over the training features, capped by max_steps."""
    total = math.ceil(n_train / cfg.batch_size) * cfg.epochs
    return total if cfg.max_steps is None else min(total, cfg.max_steps)


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
) -> Fit:
    """Train ``model`` on ``train`` features; ``evaluate(model)`` scores dev and returns metrics.
    ``schedule`` replaces the run's own (its planned steps, trained to the end)."""
    rng = np.random.default_rng(seed)
    lengths = [len(f["input_ids"]) for f in train]
    per_epoch = math.ceil(len(train) / cfg.batch_size)
    schedule = schedule or Schedule(planned_steps(len(train), cfg), planned_steps(len(train), cfg))
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
    best_value, stale, step, seen, running = -math.inf, 0, 0, 0, []
    start, eval_seconds = time.perf_counter(), 0.0
    bar = progress(label, total=total, unit="step")
    stop = False
    while step < total and not stop:
        for idx in train_batches(lengths, cfg.batch_size, rng, cfg.group_by_length):
            model.train()
            batch = collate([train[i] for i in idx], pad_id, task_type, device)
            with optim.autocast(device, cfg.precision):
                value = heads.loss(heads.forward(model, batch), batch, task_type)
            update.backward(value)
            update.step(model.parameters(), cfg.grad_clip)
            step += 1
            seen += len(idx)
            running.append(value.detach())  # no .item() here: it would wait for the GPU every step
            bar.update(1)
            if step % every == 0 or step == total:
                tick = time.perf_counter()
                dev = evaluate(model)
                loss = torch.stack(running).float().mean().item()
                running = []
                best.history.append({"step": step, "loss": loss, "lr": max(update.scheduler.get_last_lr()), "dev": dev})
                improved = selection_value(dev) > best_value
                log.info(
                    "%s step %d/%d: loss %.4f, dev score %.4f%s",
                    label,
                    step,
                    total,
                    loss,
                    dev.get("score", float("nan")),
                    " (best)" if improved else "",
                )
                bar.set_postfix_str(f"loss {loss:.4f} dev {dev.get('score', float('nan')):.4f}")
                if improved or not best.state:
                    best_value = selection_value(dev)
                    best.state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
                    best.best_step, best.dev = step, dev
                    stale = 0
                else:
                    stale += 1
                if cfg.patience and stale >= cfg.patience:
                    log.info("%s: early stop at step %d, no dev improvement in %d evaluations", label, step, stale)
                    stop = True
                eval_seconds += time.perf_counter() - tick
            if stop or step >= total:
                break
    bar.close()
    best.steps = step
    best.train_seconds = time.perf_counter() - start - eval_seconds
    best.train_examples = seen
    return best
