"""One Snakemake at a time per run directory, decided by the kernel before Snakemake's own lock.

Snakemake 9's file lock (``snakemake/persistence/file.py``) checks and writes in separate steps:
an instance lists ``.snakemake/locks/*.lock`` and then opens each one, while another, finishing,
deletes its lock files and the whole ``locks/`` folder, so the reader dies with a bare
``FileNotFoundError: .snakemake/locks/0.input.lock``; two instances starting together can also both
find no lock and both write ``0.input.lock``. The workflow therefore takes an ``flock`` on
``.snakemake/workflow.lock`` while Snakemake reads the Snakefile, before it creates its persistence
and lock files, and holds it until the process exits (the kernel releases it however the process
ends, so it never needs ``--unlock``). A run that may write takes it exclusively; a dry run, a lint
or a report shares it with other such looks. The one that cannot take it stops with Snakemake's
"Directory cannot be locked" and says who holds it. Jobs that Snakemake starts itself (Slurm jobs,
group jobs) and ``--nolock`` skip it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

LOCK_FILE = Path(".snakemake") / "workflow.lock"
# options that only look: they share the lock with each other
LOOKS = {
    "--dry-run",
    "--dryrun",
    "--lint",
    "--list-rules",
    "--list-target-rules",
    "--list-changes",
    "--summary",
    "--detailed-summary",
    "--dag",
    "--rulegraph",
    "--filegraph",
    "--d3dag",
    "--report",
    "--print-compilation",
}
SHORT_DRY = re.compile(r"^-[A-Za-z]*[nSD][A-Za-z]*$")  # -n, -np, -nq, -S, -D
_held: dict[str, int] = {}  # resolved lock file -> descriptor, for the life of the process


def only_looks(argv: Sequence[str]) -> bool:
    return any(a.split("=")[0] in LOOKS or SHORT_DRY.match(a) for a in argv)


def holder(path: Path) -> str:
    """The running instance that wrote the lock file (a finished one's words are left out)."""
    text = path.read_text().strip() if path.is_file() else ""
    pid = re.match(r"pid (\d+):", text)
    if pid is None:
        return ""
    try:
        os.kill(int(pid.group(1)), 0)
    except ProcessLookupError:
        return ""
    except PermissionError:
        pass
    return f" ({text})"


def acquire(argv: Sequence[str], workdir: Path = Path()) -> str | None:
    """Take the run directory's lock for this process; the message to stop with if it is held."""
    if "--nolock" in argv:
        return None
    path = workdir / LOCK_FILE
    key = str(path.resolve())
    if key in _held:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    looks = only_looks(argv)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if looks else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        meanwhile = "; to look at its plan meanwhile, add --nolock to the dry run" if looks else ""
        return (
            f"Error: Directory cannot be locked. Another Snakemake instance is running in "
            f"{workdir.resolve()}{holder(path)}. Wait for it to finish{meanwhile}."
        )
    if not looks:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {shlex.join(['snakemake', *argv[1:]])}".encode())
    _held[key] = fd
    return None
