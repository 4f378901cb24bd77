"""A full disk as one clear error: "no space left on <path>", with the step's scratch removed.

Libraries report a full disk in their own words (torch: ``inline_container.cc: unexpected
pos``, safetensors: an ``IoError`` string) and memory-mapped writes to a sparse file die
with SIGBUS; reserving such files up front (:func:`reserve`) turns that into ENOSPC too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from .errors import PipelineError

_TEXT = os.strerror(errno.ENOSPC)


class NoSpace(PipelineError):
    """The file system ran out of space while a step was writing."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]


def is_no_space(exc: BaseException) -> bool:
    """Whether ``exc`` or any exception it was raised from or during is a full disk."""
    return any((isinstance(e, OSError) and e.errno == errno.ENOSPC) or _TEXT in str(e) for e in _chain(exc))


def written_path(exc: BaseException, argv: Sequence[str]) -> Path:
    """Where the step was writing when ``exc`` happened: the directory of the file the error names,
    else the step's ``--out`` (every step has one), else the working directory."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.filename:
            return Path(e.filename).parent
    for i, arg in enumerate(argv):
        if arg == "--out" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--out="):
            return Path(arg.split("=", 1)[1])
    return Path.cwd()


def no_space(where: str | os.PathLike) -> NoSpace:
    p = Path(where)
    free = shutil.disk_usage(p if p.exists() else p.parent).free
    return NoSpace(
        f"no space left on {where} ({free} bytes free); free space there, or run the workflow on a disk "
        "with more room, then re-run"
    )


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def no_space_is_an_error(where: str | os.PathLike, *scratch: str | os.PathLike) -> Iterator[None]:
    """Turn a full disk inside the block into :class:`NoSpace` naming ``where``, after removing ``scratch``."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, NoSpace) or not is_no_space(exc):
            raise
        for p in scratch:
            _remove(Path(p))
        raise no_space(where) from exc


def reserve(path: str | os.PathLike, nbytes: int) -> None:
    """Allocate ``nbytes`` of ``path`` now, so that a full disk is an OSError here, not SIGBUS later."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, nbytes)
    finally:
        os.close(fd)
