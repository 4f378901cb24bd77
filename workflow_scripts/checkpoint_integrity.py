"""Checkpoint and tokenizer directories checked against their producer's record where they are loaded.

Every directory a model, tokenizer or configuration is loaded from was written by a step that
recorded each file's sha256 in its ``provenance.json``: pretraining, distillation, the random-weight
controls and the vocabulary list them under ``outputs``, a hub snapshot under ``files``. Before a
consumer loads the directory, ``verify_checkpoint`` hashes each recorded file and stops the job on
the first difference, naming the file, both checksums and the command that rebuilds it.

A local checkpoint folder of the user's (``kind: external`` with a path) has no record of its own;
``pin_checkpoints`` writes one under ``results/raw/models/<model>.pinned.json`` and every later read
is checked against it. An unpinned folder is read with a warning saying it was not verified.

Hashing BERT-large's weights took 2.3 s on our loaded 2-core machine (``benchmarks/README.md``),
more than the start-up of a fine-tuning run forked from the preloaded interpreter. So a file is
hashed once per process and, inside a Slurm allocation (a group job running many fine-tuning
runs), once per allocation: a marker in the node's temporary directory, keyed by the file's path,
size, modification and change times, inode and expected sha256, lets the allocation's later runs
reuse the result, and each says so in its log. Any write to the file moves its change time, so
only damage below the file system (a bad disk block) goes unseen until the next allocation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from .integrity import PROVENANCE as FILENAME
from .integrity import IntegrityError, sha256_stream

log = logging.getLogger(__name__)

PIN_COMMAND = "python -m workflow_scripts.download.pin_checkpoints config.yaml"

PINNED_DIR = Path("results/raw/models")
PINNED_SUFFIX = ".pinned.json"
WEIGHTS = (".safetensors", ".bin")
# (resolved path, size, mtime, ctime, inode, expected sha256) of every file this process has verified;
# the ctime moves on every write, also one that sets the modification time back
_verified: set[tuple[str, int, int, int, int, str]] = set()


def pinned_record(name: str, root: Path = Path()) -> Path:
    return root / PINNED_DIR / f"{name}{PINNED_SUFFIX}"


def find_record(directory: Path) -> Path | None:
    """The directory's own provenance.json, else the pinned record naming it as its folder."""
    own = directory / FILENAME
    if own.is_file():
        return own
    target = directory.resolve()
    for path in sorted(PINNED_DIR.glob(f"*{PINNED_SUFFIX}")):
        folder = json.loads(path.read_text()).get("params", {}).get("folder")
        if folder and Path(folder).expanduser().resolve() == target:
            return path
    return None


def recorded_files(record: dict[str, Any]) -> dict[str, str]:
    """Path inside the directory -> sha256, as the producer recorded them. ``files`` are relative
    to the directory already; ``outputs`` were recorded as the producer named them (``--out`` and
    the file name), so the part after their common directory is what lies inside it."""
    if record.get("files"):
        return {f["path"]: f["sha256"] for f in record["files"]}
    outputs = [o for o in record.get("outputs", []) if isinstance(o, dict) and o.get("sha256")]
    if not outputs:
        return {}
    names = [Path(o["path"]) for o in outputs]
    base = Path(os.path.commonpath(names)) if len(names) > 1 else names[0].parent
    return {p.relative_to(base).as_posix(): o["sha256"] for p, o in zip(names, outputs, strict=True)}


def rebuild_hint(directory: Path, record_path: Path) -> str:
    if record_path.name.endswith(PINNED_SUFFIX):
        return (
            f"restore it from your copy of the checkpoint, or, if you changed the checkpoint on purpose, "
            f"record it again: {PIN_COMMAND}"
        )
    return (
        f"rebuild it: snakemake --forcerun {directory / FILENAME} "
        "(chmod u+w its write-protected files first, unless you are root)"
    )


def _allocation_marker(key: tuple) -> Path | None:
    """The marker of one verified file for this Slurm allocation (None outside Slurm)."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"workflow-verified-{os.getuid()}-{job}"
    return folder / hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]


def _reused(key: tuple, marker: Path | None) -> str | None:
    """Where this file was verified before with the same size, times and inode, if it was."""
    if key in _verified:
        return "in this process"
    if marker is not None and marker.is_file():
        _verified.add(key)
        return f"in Slurm job {os.environ['SLURM_JOB_ID']}"
    return None


def _remember(key: tuple, marker: Path | None) -> None:
    _verified.add(key)
    if marker is not None:
        marker.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = marker.with_name(f".{marker.name}.{os.getpid()}")
        tmp.write_text(f"pid {os.getpid()}\n")
        tmp.replace(marker)


def verify_file(path: Path, expected: str, hint: str) -> str | None:
    """Check one recorded file; None if it was hashed now, else where it was verified before."""
    if not path.is_file():
        raise IntegrityError(f"{path}: missing (its producer recorded sha256 {expected}); {hint}")
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, expected)
    marker = _allocation_marker(key)
    earlier = _reused(key, marker)
    if earlier:
        return earlier
    found = sha256_stream(path)
    if found != expected:
        raise IntegrityError(f"{path}: changed since it was written: expected sha256 {expected}, found {found}; {hint}")
    _remember(key, marker)
    return None


def verify_checkpoint(directory: str | os.PathLike, role: str, weights: bool = True) -> None:
    """Stop with an IntegrityError naming the first file under ``directory`` (a checkpoint or
    tokenizer folder about to be loaded as ``role``) that differs from its producer's record;
    ``weights=False`` for a consumer that loads only the tokenizer and configuration."""
    directory = Path(directory)
    if not directory.is_dir():
        return  # a hub id loaded by transformers itself (by hand; the workflow always passes a folder)
    record_path = find_record(directory)
    if record_path is None:
        if directory.resolve().is_relative_to(Path("results").resolve()):
            raise IntegrityError(
                f"{directory / FILENAME}: missing, so the checkpoint given as {role} cannot be verified; "
                + rebuild_hint(directory, directory / FILENAME)
            )
        log.warning(
            "%s (%s): read unverified, an external folder without recorded checksums; `%s` records them",
            directory,
            role,
            PIN_COMMAND,
        )
        return
    files = recorded_files(json.loads(record_path.read_text()))
    if not weights:
        files = {name: sha for name, sha in files.items() if not name.endswith(WEIGHTS)}
    if not files:
        raise IntegrityError(f"{record_path}: records no file checksums; {rebuild_hint(directory, record_path)}")
    hint = rebuild_hint(directory, record_path)
    earlier = [verify_file(directory / name, sha, hint) for name, sha in sorted(files.items())]
    reused = sorted({e for e in earlier if e})
    how = f"{earlier.count(None)} hashed"
    if reused:
        how += f", {len(files) - earlier.count(None)} unchanged since checked {' and '.join(reused)}"
    mb = sum((directory / name).stat().st_size for name in files) / 1e6
    log.info("%s (%s): verified against %s: %d files, %.1f MB, %s", directory, role, record_path, len(files), mb, how)
