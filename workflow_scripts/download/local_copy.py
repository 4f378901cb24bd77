"""Copy a folder of the user's local data (a credentialed release) into the run directory,
and tell the workflow when a local source has changed since it was copied.

The copy appears complete or not at all (``atomic_dir``). Its ``provenance.json`` lists
every file with its sha256 and a digest of the whole tree, so a later change of the user's
copy is visible. Only counts and sizes are logged: file names and contents of
credentialed data are never printed.

A local file source is a rule input, so Snakemake copies it again when its content changes
(compared by checksum under 1 MB, by modification time above); a local folder's files are
summed up by ``tree_state`` (paths, sizes, modification times) in a rule parameter. A URL
is downloaded once, pinned by its sha256.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import provenance
from ..atomic import atomic_dir
from ..errors import PipelineError
from ..progress import track

log = logging.getLogger(__name__)
REMOTE = ("http", "https", "ftp", "s3")


def local_path(url: str) -> Path:
    return (Path(unquote(urlsplit(url).path)) if url.startswith("file:") else Path(url)).expanduser()


def is_remote(url: str) -> bool:
    return urlsplit(url).scheme in REMOTE


def local_source(url: str | None) -> list[str]:
    """The user's local file behind ``url`` as a rule input; nothing for a download or a path
    that is not there (the download step names it with the config key to fix)."""
    if not url or is_remote(url):
        return []
    path = local_path(url)
    return [str(path)] if path.is_file() else []


def tree_state(url: str | None) -> str:
    """A digest of a local folder's file paths, sizes and modification times ("" if none):
    it changes when any file under it is edited, added or removed."""
    if not url or is_remote(url) or not local_path(url).is_dir():
        return ""
    root = local_path(url)
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def tree_digest(files: list[dict]) -> str:
    """sha256 over the sorted (path, sha256) pairs: equal for equal trees, wherever they lie."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f["path"]):
        h.update(f"{f['path']}\0{f['sha256']}\n".encode())
    return h.hexdigest()


def copy_tree(src: Path, out: Path, *, shown: str, restricted: bool, started: str) -> dict:
    """Copy the files under ``src`` to the folder ``out``; write ``out/provenance.json``."""
    if not src.is_dir():
        raise PipelineError(f"{shown}: folder not found; check the local_dir setting")
    sources = sorted(p for p in src.rglob("*") if p.is_file())
    if not sources:
        raise PipelineError(f"{shown}: the folder holds no files; point local_dir at your copy of the release")
    if any(p.relative_to(src).as_posix() == provenance.FILENAME for p in sources):
        raise PipelineError(f"{shown}: holds a {provenance.FILENAME} of its own; remove it from the copy")
    listed = []
    with atomic_dir(out) as tmp:
        for p in track(sources, desc=f"copy {out.name}", total=len(sources), unit="file"):
            rel = p.relative_to(src)
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
            listed.append(
                {"path": rel.as_posix(), "sha256": provenance.sha256_file(dest), "bytes": dest.stat().st_size}
            )
        total = sum(f["bytes"] for f in listed)
        provenance.record(
            tmp,
            step="download.fetch",
            inputs={},
            params={
                "url": shown,
                "directory": True,
                "files": len(listed),
                "bytes": total,
                "tree_sha256": tree_digest(listed),
            },
            restricted=restricted,
            started=started,
            extra={"files": listed},
            path=tmp / provenance.FILENAME,
        )
    log.info("%s: %d files, %d bytes copied", out, len(listed), total)
    return {"files": len(listed), "bytes": total}
