"""Resumable training state under ``<out>/training_state/`` and the final model export.

Layout: ``step~N/state.pt`` (trainable weights, optimiser, scheduler, scaler, step),
``step~N/rng~R.pt`` (random states of process R), ``step~N/model/`` (the checkpoint as a
transformers model, usable for fine-tuning) and ``latest`` naming the newest complete
step directory; ``checksums.json`` and ``rng~R.pt.sha256`` record what was written, and
``lock`` is held by the one trainer using the state. A damaged latest checkpoint falls back
to an earlier intact one; with none left it is an error, never a silent restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import re
import shutil
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import integrity
from ..atomic import atomic_dir, atomic_file, write_text
from ..diskspace import no_space_is_an_error
from ..errors import PipelineError

log = logging.getLogger(__name__)

LATEST = "latest"
LOCK = "lock"
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


def _torch_save(obj: Any, path: Path) -> None:
    # through a Python file object, so a full disk surfaces as OSError(ENOSPC), not torch's "unexpected pos"
    with open(path, "wb") as fh:
        torch.save(obj, fh)


def save_state(state_dir: Path, step: int, payload: dict[str, Any], model=None, tokenizer=None) -> Path:
    """Write ``step~N`` (rank 0 only) atomically with its checksums; rng files are added by :func:`save_rng`."""
    target = step_dir(state_dir, step)
    with no_space_is_an_error(state_dir), atomic_dir(target) as tmp:
        _torch_save(payload, tmp / "state.pt")
        if model is not None:
            model.save_pretrained(tmp / "model")
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp / "model")
        integrity.seal_dir(tmp)
    return target


def save_rng(state_dir: Path, step: int, rank: int) -> None:
    path = step_dir(state_dir, step) / f"rng~{rank}.pt"
    with no_space_is_an_error(state_dir), atomic_file(path) as tmp:
        _torch_save(rng_state(), tmp)
        integrity.seal(tmp, target=path)


def mark_latest(state_dir: Path, step: int, keep: int, kept: Collection[int] = ()) -> None:
    """Name ``step`` the latest and delete all but the newest ``keep`` checkpoints, never one of ``kept``
    (the steps decay branches start from)."""
    with no_space_is_an_error(state_dir):
        write_text(state_dir / LATEST, step_dir(state_dir, step).name + "\n")
    steps = sorted(int(m.group(1)) for p in state_dir.iterdir() if (m := _STEP_DIR.match(p.name)))
    always = set(kept)
    rolling = [s for s in steps if s not in always]
    for old in rolling[:-keep]:
        shutil.rmtree(step_dir(state_dir, old), ignore_errors=True)


# Training states whose lock this process holds: training and the export after it take it in turn.
_held: set[Path] = set()


@contextlib.contextmanager
def locked(state_dir: Path, take: bool = True) -> Iterator[None]:
    """Hold the exclusive lock of ``state_dir`` (when ``take``): a second trainer on it refuses to start.
    Taking it again inside the same process (training within the job that exports) is a no-op."""
    key = state_dir.resolve()
    if not take or key in _held:
        yield
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise PipelineError(
                f"{state_dir}: another trainer (pid {holder}) is using this training state; wait for it to "
                "finish or stop it before starting a new one"
            ) from None
        try:
            fh.truncate(0)
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            _held.add(key)
            yield
        finally:
            _held.discard(key)
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class Resumed:
    step: int
    payload: dict[str, Any]
    directory: Path


class _Damaged(Exception):
    """A checkpoint directory that cannot be resumed from; an earlier one may still be."""


def _against(trainable: Any, expected: dict[str, torch.Tensor], directory: Path) -> None:
    """Check weights that carry no checksums against the state they resume into: the same
    tensors, shapes and types, every value finite."""
    if not isinstance(trainable, dict) or set(trainable) != set(expected):
        raise _Damaged(f"{directory}: its weights name other tensors than the model it would resume into")
    for name, want in expected.items():
        got = trainable[name]
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
            raise _Damaged(f"{directory}: tensor {name} does not fit the model it would resume into")
        if got.is_floating_point() and not bool(torch.isfinite(got).all()):
            raise _Damaged(f"{directory}: tensor {name} holds values that are not finite")


def _load(
    directory: Path, digest: str | None, rank: int, hint: str, expected: dict[str, torch.Tensor] | None = None
) -> Resumed:
    state = directory / "state.pt"
    sealed = (directory / integrity.MANIFEST).is_file()
    if sealed:
        try:
            integrity.verify_dir(directory)
        except integrity.IntegrityError as exc:
            raise _Damaged(str(exc)) from exc
    elif expected is None:
        raise PipelineError(
            f"{directory}: written before checkpoints recorded checksums ({integrity.MANIFEST} is missing), "
            f"so it cannot be verified; {hint}"
        )
    try:
        payload = torch.load(state, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises several types for truncated or foreign files
        raise _Damaged(f"{state}: corrupt checkpoint ({exc})") from exc
    required = {"step", "digest", "trainable", "optimizer", "scheduler"}
    if not isinstance(payload, dict) or not required <= set(payload):
        raise PipelineError(f"{state}: not a training checkpoint of this pipeline; {hint}")
    if digest is not None and payload["digest"] != digest:
        raise PipelineError(
            f"{directory}: checkpoint was made with different settings, data or vocabulary; "
            f"restore the settings it was made with, or {hint}"
        )
    if not sealed:
        _against(payload["trainable"], expected, directory)
        log.warning(
            "%s: written before checkpoints recorded checksums; checked against the model it resumes into "
            "(tensors, shapes, finite values) instead",
            directory,
        )
    rng_file = directory / f"rng~{rank}.pt"
    if rng_file.is_file():
        try:
            if integrity.sidecar(rng_file).is_file():
                integrity.verify(rng_file)
            payload["rng"] = torch.load(rng_file, map_location="cpu", weights_only=False)
        except Exception as exc:  # not a fallback: each process would fall back on its own
            raise PipelineError(f"{rng_file}: corrupt random-state file ({exc}); {hint}") from exc
    else:
        log.warning(
            "%s: no random state for process %d (different process count?); dropout draws will differ", directory, rank
        )
    return Resumed(int(payload["step"]), payload, directory)


def load_latest(
    state_dir: Path, digest: str, rank: int, expected: dict[str, torch.Tensor] | None = None
) -> Resumed | None:
    """The latest intact checkpoint, None when training never checkpointed; PipelineError when none is usable.

    A damaged latest checkpoint (checksum mismatch, unreadable) falls back to the newest earlier
    one that is intact, with a warning naming both. A checkpoint written before checksums were
    recorded is checked against ``expected`` (the state it resumes into), or refused without it."""
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
        raise PipelineError(
            f"{marker}: names {name!r}, which is not a complete checkpoint directory; name "
            f"an existing step~N directory there, or {hint}"
        )
    try:
        return _load(directory, digest, rank, hint, expected)
    except _Damaged as damaged:
        earlier = sorted(
            (
                p
                for p in steps
                if int(_STEP_DIR.match(p.name).group(1)) < int(m.group(1)) and (p / "state.pt").is_file()
            ),
            reverse=True,
        )
        for candidate in earlier:
            try:
                resumed = _load(candidate, digest, rank, hint, expected)
            except _Damaged:
                continue
            log.warning(
                "%s is damaged (%s); resuming from the earlier checkpoint %s instead", directory, damaged, candidate
            )
            return resumed
        raise PipelineError(f"{damaged}; name an earlier step~N directory in {marker}, or {hint}") from damaged


def load_step(state_dir: Path, step: int, rank: int) -> Resumed:
    """The checkpoint of ``step`` in another run's ``state_dir`` (a decay branch's parent), verified
    against its checksums; whatever recipe made it (the branch's own digest keys its resumption)."""
    directory = step_dir(state_dir, step)
    hint = (
        f"the parent keeps step {step} only when it is trained with this branch declared (keep_steps); "
        f"delete {state_dir} and rerun the parent to train it again"
    )
    if not (directory / integrity.MANIFEST).is_file() or not (directory / "state.pt").is_file():
        raise PipelineError(f"{directory}: no complete checkpoint of step {step} to branch from; {hint}")
    try:
        return _load(directory, None, rank, hint)
    except _Damaged as damaged:
        raise PipelineError(f"{damaged}; {hint}") from damaged


def export_model(model, tokenizer, out: Path) -> list[Path]:
    """save_pretrained model and tokenizer into ``out``, each file renamed into place."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export.", dir=out))
    try:
        with no_space_is_an_error(out, tmp):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        written = []
        for f in sorted(tmp.iterdir()):
            os.replace(f, out / f.name)
            written.append(out / f.name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
