"""Resumable training state under ``<out>/training_state/`` and the final model export.

Layout: ``step~N/state.pt`` (trainable weights, optimiser, scheduler, scaler, step),
``step~N/rng~R.pt`` (random states of process R), ``step~N/model/`` (the checkpoint as a
transformers model, usable for fine-tuning) and ``latest`` naming the newest complete
step directory. A damaged or inconsistent state is an error, never a silent restart.
"""

from __future__ import annotations

import logging
import os
import random
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..atomic import atomic_dir, atomic_file, write_text
from ..errors import PipelineError

log = logging.getLogger(__name__)

LATEST = "latest"
_STEP_DIR = re.compile(r"^step~(\d+)$")


def step_dir(state_dir: Path, step: int) -> Path:
    return state_dir / f"step~{step:08d}"


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_state(state_dir: Path, step: int, payload: dict[str, Any], model=None, tokenizer=None) -> Path:
    """Write ``step~N`` (rank 0 only) atomically; rng files are added by :func:`save_rng`."""
    target = step_dir(state_dir, step)
    with atomic_dir(target) as tmp:
        torch.save(payload, tmp / "state.pt")
        if model is not None:
            model.save_pretrained(tmp / "model")
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp / "model")
    return target


def save_rng(state_dir: Path, step: int, rank: int) -> None:
    with atomic_file(step_dir(state_dir, step) / f"rng~{rank}.pt") as tmp:
        torch.save(rng_state(), tmp)


def mark_latest(state_dir: Path, step: int, keep: int) -> None:
    write_text(state_dir / LATEST, step_dir(state_dir, step).name + "\n")
    steps = sorted(int(m.group(1)) for p in state_dir.iterdir() if (m := _STEP_DIR.match(p.name)))
    for old in steps[:-keep]:
        shutil.rmtree(step_dir(state_dir, old), ignore_errors=True)


@dataclass
class Resumed:
    step: int
    payload: dict[str, Any]
    directory: Path


def load_latest(state_dir: Path, digest: str, rank: int) -> Resumed | None:
    """The latest checkpoint, None when training never checkpointed; PipelineError when damaged."""
    if not state_dir.exists():
        return None
    marker = state_dir / LATEST
    steps = [p for p in state_dir.iterdir() if _STEP_DIR.match(p.name)]
    hint = f"delete {state_dir} to start again from scratch"
    if not marker.is_file():
        if steps:
            raise PipelineError(
                f"{state_dir}: step directories but no '{LATEST}' file; write the name of the step~N directory "
                f"to resume from into {marker}, or {hint}"
            )
        return None
    name = marker.read_text().strip()
    directory = state_dir / name
    m = _STEP_DIR.match(name)
    if not m or not (directory / "state.pt").is_file():
        raise PipelineError(f"{marker}: names {name!r}, which is not a complete checkpoint directory; name an existing step~N directory there, or {hint}")
    try:
        payload = torch.load(directory / "state.pt", map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises several types for truncated or foreign files
        raise PipelineError(f"{directory / 'state.pt'}: corrupt checkpoint ({exc}); name an earlier step~N directory in {marker}, or {hint}") from exc
    required = {"step", "digest", "trainable", "optimizer", "scheduler"}
    if not isinstance(payload, dict) or not required <= set(payload):
        raise PipelineError(f"{directory / 'state.pt'}: not a training checkpoint of this pipeline; {hint}")
    if payload["digest"] != digest:
        raise PipelineError(
            f"{directory}: checkpoint was made with different settings, data or vocabulary; "
            f"restore the settings it was made with, or {hint}"
        )
    rng_file = directory / f"rng~{rank}.pt"
    if rng_file.is_file():
        try:
            payload["rng"] = torch.load(rng_file, map_location="cpu", weights_only=False)
        except Exception as exc:
            raise PipelineError(f"{rng_file}: corrupt random-state file ({exc}); {hint}") from exc
    else:
        log.warning("%s: no random state for process %d (different process count?); dropout draws will differ", directory, rank)
    return Resumed(int(payload["step"]), payload, directory)


def export_model(model, tokenizer, out: Path) -> list[Path]:
    """save_pretrained model and tokenizer into ``out``, each file renamed into place."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export.", dir=out))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        written = []
        for f in sorted(tmp.iterdir()):
            os.replace(f, out / f.name)
            written.append(out / f.name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
