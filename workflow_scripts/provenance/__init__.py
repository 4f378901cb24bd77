"""Provenance records: what produced an artifact, from which inputs, with which settings.

Each output directory holds ``provenance.json``; a single output file gets a sidecar
``<file>.provenance.json``. Inputs are recorded with their sha256 (files) or the sha256
of their own provenance record (directories), so a table cell can be traced back to the
raw downloads. Artifacts derived from credentialed data carry ``restricted: true`` and
the mark propagates to everything computed from them.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import numerics
from ..atomic import write_json
from ..cards import job_cards
from ..integrity import PROVENANCE, sha256_file

FILENAME = PROVENANCE
SIDECAR_SUFFIX = ".provenance.json"
PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "sentencepiece",
    "datasets",
    "pubmed_parser",
    "seqeval",
    "pandas",
    "pyarrow",
    "numpy",
    "snakemake",
)
_SECRET = re.compile(r"(?i)(://)([^/@\s:]+):([^/@\s]+)@|((?:password|passwd|token|secret)[=:])\S+")


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def scrub(text: str) -> str:
    """Remove credentials embedded in URLs or ``password=...`` arguments."""
    return _SECRET.sub(lambda m: f"{m.group(1)}***@" if m.group(1) else f"{m.group(4)}***", text)


def provenance_path(artifact: str | os.PathLike) -> Path:
    """Where the provenance of ``artifact`` lives (a directory's file, or a file's sidecar)."""
    p = Path(artifact)
    if p.is_dir():
        return p / FILENAME
    return p.with_name(p.name + SIDECAR_SUFFIX)


def find_provenance(artifact: str | os.PathLike) -> Path | None:
    """The provenance record describing ``artifact``: its own, else its directory's."""
    p = Path(artifact)
    if p.name == FILENAME and p.is_file():
        return p
    own = provenance_path(p)
    if own.is_file():
        return own
    parent = p.parent / FILENAME
    return parent if parent.is_file() else None


def load(path: str | os.PathLike) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def describe_input(artifact: str | os.PathLike) -> dict[str, Any]:
    """One input entry: path, checksum (file) or upstream provenance digest (directory)."""
    p = Path(artifact)
    entry: dict[str, Any] = {"path": str(p)}
    if p.is_file() and p.name != FILENAME:
        entry["sha256"] = sha256_file(p)
        entry["bytes"] = p.stat().st_size
    upstream = find_provenance(p)
    if upstream is not None:
        entry["provenance"] = str(upstream)
        entry["provenance_sha256"] = sha256_file(upstream)
    elif not p.exists():
        entry["missing"] = True
    return entry


def _upstream_restricted(inputs: Mapping[str, Any]) -> bool:
    for entry in _flatten(inputs):
        prov = entry.get("provenance")
        if prov and load(prov).get("restricted"):
            return True
    return False


def _flatten(inputs: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    for value in inputs.values():
        if isinstance(value, list):
            yield from value
        else:
            yield value


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def workflow_commit() -> dict[str, Any]:
    """Git commit of the workflow code (and whether it had uncommitted changes)."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(dirty)}


def accelerator() -> str:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        n = torch.cuda.device_count()
        return f"{n} x {torch.cuda.get_device_name(0)}"
    return "cpu"


def record(
    artifact: str | os.PathLike,
    *,
    step: str,
    inputs: Mapping[str, str | os.PathLike | list[str | os.PathLike]],
    params: Mapping[str, Any] | None = None,
    outputs: Iterable[str | os.PathLike] = (),
    seed: int | None = None,
    restricted: bool = False,
    started: str | None = None,
    extra: Mapping[str, Any] | None = None,
    path: str | os.PathLike | None = None,
) -> Path:
    """Write the provenance record of ``artifact`` (atomically) and return its path.

    ``inputs`` maps a role (``corpus``, ``tokenizer``...) to a path or list of paths.
    ``outputs`` lists produced files whose sha256 is recorded. ``restricted`` is OR-ed
    with the mark of every input's upstream record.
    """
    described = {
        role: [describe_input(p) for p in value] if isinstance(value, (list, tuple)) else describe_input(value)
        for role, value in inputs.items()
    }
    rec: dict[str, Any] = {
        "step": step,
        "command": scrub(" ".join([Path(sys.executable).name, *sys.argv])),
        "cwd": os.getcwd(),
        "inputs": described,
        "outputs": [{"path": str(p), "sha256": sha256_file(p), "bytes": Path(p).stat().st_size} for p in outputs],
        "params": dict(params or {}),
        "seed": seed,
        "restricted": bool(restricted) or _upstream_restricted(described),
        "versions": package_versions(),
        "workflow": workflow_commit(),
        "host": platform.node(),
        "accelerator": accelerator(),
        # the Slurm allocation, and whether the step ran in a fork of the preloaded interpreter
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "preloaded": os.environ.get("WORKFLOW_PRELOADED") == "1",
        "numerics": numerics.describe(),
        "started": started or now(),
        "ended": now(),
    }
    # the cards the step saw (CUDA_VISIBLE_DEVICES) and, on a GPU server, its holding of them
    cards = job_cards(dict(os.environ))
    if cards is not None:
        rec["cards"] = cards
    if extra:
        rec.update(extra)
    target = Path(path) if path is not None else provenance_path(artifact)
    write_json(target, rec)
    return target
