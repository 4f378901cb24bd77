"""A decay branch's ties to its parent run: where its training starts, what keys its own
resumption, and what its provenance says about the parent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PipelineError
from ..integrity import sha256_file
from ..provenance import FILENAME
from .settings import BranchStart

STATE = "training_state"
KEY_FILE = "key.json"  # the parent's resumption key (engine.py writes it): what its checkpoints were made from


def _parent_record(init: str | None) -> Path:
    if init is None:
        raise PipelineError("--init: a decay branch starts from its parent's output directory; give it as --init")
    path = Path(init) / FILENAME
    if not path.is_file():
        raise PipelineError(f"{path}: the parent of this decay branch has not finished (no provenance record)")
    return path


def _parent_key(init: str | None) -> Path:
    path = Path(_parent_record(init).parent) / STATE / KEY_FILE
    if not path.is_file():
        raise PipelineError(f"{path}: the parent of this decay branch left no training state to branch from")
    return path


def key(branch: BranchStart | None, init: str | None) -> dict[str, Any]:
    """The part of the branch's resumption key naming its start: the step and the parent's own key
    (by content, so re-exporting the parent changes nothing and retraining it differently does).
    Nothing for other runs."""
    if branch is None:
        return {}
    return {"branch": {"step": branch.step, "parent": sha256_file(_parent_key(init))}}


def job_parts(branch: BranchStart | None, init: str | None) -> dict[str, Any]:
    """The Job fields that start a branch from its parent's checkpoint."""
    if branch is None:
        return {}
    return {"branch": branch, "parent_state": Path(init) / STATE}


def record(branch: BranchStart | None, init: str | None) -> dict[str, Any]:
    """The provenance entry of a branch: the parent run (its provenance record's sha256), the
    step, and whether its data continued the parent's position or restarted on its own corpora."""
    if branch is None:
        return {}
    parent = _parent_record(init)
    data = (
        f"continues the parent's phase {branch.phase} at step {branch.position} of that phase"
        if branch.continues
        else "restarts at position 0 on the branch's own packed corpora"
    )
    return {
        "branch": {
            "parent": branch.parent,
            "parent_provenance": str(parent),
            "parent_provenance_sha256": sha256_file(parent),
            "parent_key_sha256": sha256_file(_parent_key(init)),
            "step": branch.step,
            "data": data,
        }
    }
