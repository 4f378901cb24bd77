"""Checksums recorded when an artifact is written and verified when it is read.

Checkpoints, cached features and provenance records all go through here, so a flipped
byte anywhere is reported with the file's name instead of being trusted silently.
A sealed file ``X`` has its sha256 in a sidecar ``X.sha256`` written after it; a sealed
directory has a ``checksums.json`` listing every file under it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .atomic import write_json, write_text
from .errors import PipelineError

SIDECAR = ".sha256"
CHUNK = 8 << 20
MANIFEST = "checksums.json"
PROVENANCE = "provenance.json"  # the record every step writes beside its outputs


class IntegrityError(PipelineError):
    """A file does not match the checksum recorded when it was written."""


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def sha256_stream(path: str | os.PathLike) -> str:
    """sha256 of a large file in one pass into a reused buffer (weights, packed blocks)."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        view = memoryview(bytearray(CHUNK))
        while n := fh.readinto(view):
            h.update(view[:n])
    return h.hexdigest()


def sidecar(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p.with_name(p.name + SIDECAR)


def seal(path: str | os.PathLike, target: str | os.PathLike | None = None) -> str:
    """Record the checksum of a finished file beside it (or beside ``target``, the name it is about
    to be renamed to, so that readers never see it unsealed); return it."""
    digest = sha256_file(path)
    write_text(sidecar(target if target is not None else path), digest + "\n")
    return digest


def verify(path: str | os.PathLike) -> None:
    """Raise IntegrityError naming ``path`` if it is missing, unsealed or changed since sealed."""
    p, side = Path(path), sidecar(path)
    if not p.is_file():
        raise IntegrityError(f"{p}: missing")
    if not side.is_file():
        raise IntegrityError(f"{p}: no recorded checksum ({side.name} is missing)")
    expected = side.read_text().strip()
    actual = sha256_file(p)
    if actual != expected:
        raise IntegrityError(
            f"{p}: checksum {actual[:12]}... differs from the {expected[:12]}... recorded when it was written"
        )


def seal_dir(directory: str | os.PathLike) -> dict[str, str]:
    """Write ``checksums.json`` listing the sha256 of every file under ``directory``."""
    root = Path(directory)
    sums = {
        str(p.relative_to(root)): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file() and p.name != MANIFEST
    }
    write_json(root / MANIFEST, sums)
    return sums


def verify_dir(directory: str | os.PathLike) -> None:
    """Raise IntegrityError naming the first file under ``directory`` that differs from its manifest."""
    root = Path(directory)
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise IntegrityError(f"{root}: no recorded checksums ({MANIFEST} is missing)")
    try:
        sums = json.loads(manifest.read_text())
    except ValueError as exc:
        raise IntegrityError(f"{manifest}: unreadable ({exc})") from exc
    for name, expected in sums.items():
        p = root / name
        if not p.is_file():
            raise IntegrityError(f"{p}: missing")
        if sha256_file(p) != expected:
            raise IntegrityError(f"{p}: checksum differs from the one recorded in {manifest}")
