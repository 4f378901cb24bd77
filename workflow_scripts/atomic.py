"""Atomic writes: every artifact appears complete or not at all.

Data goes to a temporary sibling first and is renamed into place, so an
interrupted step never leaves a half-written file for the next one to trust.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(tmp: Path, target: Path, is_dir: bool) -> None:
    """Give the temporary the permissions a plain create would have (mkstemp/mkdtemp make
    them private), then rename it into place."""
    os.chmod(tmp, (0o777 if is_dir else 0o666) & ~_umask())
    os.replace(tmp, target)


def _tmp_sibling(path: Path, is_dir: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_dir:
        return Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the same directory; rename it onto ``path`` on success."""
    target = Path(path)
    tmp = _tmp_sibling(target, is_dir=False)
    try:
        yield tmp
        _publish(tmp, target, is_dir=False)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory; on success it replaces ``path`` (an old one is removed)."""
    target = Path(path)
    tmp = _tmp_sibling(target, is_dir=True)
    try:
        yield tmp
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            _publish(tmp, target, is_dir=True)
            shutil.rmtree(old, ignore_errors=True)
        else:
            _publish(tmp, target, is_dir=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_yaml(path: str | os.PathLike, obj: Any) -> None:
    write_text(path, yaml.safe_dump(obj, sort_keys=False, allow_unicode=True))


def write_jsonl(path: str | os.PathLike, rows) -> int:
    """Write an iterable of dicts as JSON lines; return the number written."""
    n = 0
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
