"""Wiring shared by the pretraining and distillation CLIs: data, digest, run, export, provenance."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from .. import provenance
from ..atomic import write_json
from ..config.typed import to_dict
from . import checkpoint as ckpt
from .data import PackedBlocks, prepare_blocks
from .dist import Dist
from .loop import SIGTERM_EXIT, Job, Preempted, train
from .settings import PretrainSettings

log = logging.getLogger(__name__)

# settings that may change between a run and its resumption
OPERATIONAL = {"checkpoint_every", "keep_checkpoints", "log_every", "num_threads", "export_checkpoints", "compile", "peak_tflops"}


def load_phases(settings: PretrainSettings, corpus: list[str], tokenizer, out: Path, dist: Dist) -> tuple[list[PackedBlocks], PackedBlocks, list[Path]]:
    """Packed blocks of every phase (built once by process 0) and the held-out blocks of the last."""
    data_dir = out / "data"
    dirs = []
    for phase in settings.phases:
        if dist.main:
            dirs.append(prepare_blocks(corpus, tokenizer, phase.seq_len, settings.heldout_fraction, data_dir))
        dist.barrier()
        if not dist.main:
            dirs.append(prepare_blocks(corpus, tokenizer, phase.seq_len, settings.heldout_fraction, data_dir, build=False))
    return [PackedBlocks(p, "train") for p in dirs], PackedBlocks(dirs[-1], "heldout"), dirs


def digest(settings: PretrainSettings, data_dirs: list[Path], model: torch.nn.Module, extra: dict[str, Any]) -> str:
    recipe = {k: v for k, v in to_dict(settings).items() if k not in OPERATIONAL}
    blob = json.dumps({"recipe": recipe, "data": [p.name for p in data_dirs], "config": model.config.to_dict(), **extra},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def execute(job: Job, out: Path, *, step: str, inputs: dict[str, Any], params: dict[str, Any], started: str,
            extra: dict[str, Any] | None = None, stop_after: int | None = None) -> dict[str, Any] | None:
    """Train, then (process 0) export the model, log and evaluation, and write provenance last."""
    try:
        result = train(job, stop_after=stop_after)
    except Preempted as exc:
        log.warning("%s", exc)
        sys.exit(SIGTERM_EXIT)
    if result is None or not job.dist.main:
        return result
    written = ckpt.export_model(job.model, job.tokenizer, out)
    for name, companion in job.companions.items():
        written += ckpt.export_model(companion, job.tokenizer, out / name)
    log_src = job.state_dir / "train_log.jsonl"
    if log_src.is_file():
        tmp = out / ".train_log.jsonl.tmp"
        shutil.copyfile(log_src, tmp)
        tmp.replace(out / "train_log.jsonl")
    write_json(out / "eval.json", result)
    # every file a consumer loads (weights, config, tokenizer, special tokens), so the audit sees any change
    provenance.record(
        out, step=step, inputs=inputs, params=params, outputs=written + [out / "train_log.jsonl", out / "eval.json"],
        seed=job.settings.seed, started=started, extra={"result": result, **(extra or {})},
    )
    log.info("wrote %s (held-out MLM loss %s)", out, result.get("heldout_loss"))
    return result


def flops_fn(model: torch.nn.Module, extra_forward: torch.nn.Module | None = None) -> Callable[[int], float]:
    from .model import train_flops_per_token

    def f(seq_len: int) -> float:
        flops = train_flops_per_token(model, seq_len)
        if extra_forward is not None:  # a frozen teacher: forward only, a third of training FLOPs
            flops += train_flops_per_token(extra_forward, seq_len) / 3
        return flops

    return f
