"""Public checkpoints on a model hub, pinned to a commit and fetched once.

A hub checkpoint is named with a revision (``{hub: FacebookAI/roberta-base, revision: <commit>}``).
The hub's API says which commit a revision is and lists its files with their git blob ids and,
for large files, their sha256; every file we take is checked against that record. We take what
transformers loads (configuration, tokenizer, safetensors weights, else PyTorch ``.bin``
weights), not other frameworks' copies. ``HF_ENDPOINT`` names another hub (a mirror, or a
local server in the tests), as it does for transformers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..checkpoint_integrity import PIN_COMMAND
from ..errors import PipelineError
from ..typed import help_field as _help
from .fetch import Options, fetch, fetch_text

DEFAULT_ENDPOINT = "https://huggingface.co"
COMMIT = re.compile(r"^[0-9a-f]{40}$")
SAFETENSORS = re.compile(r"^model(-\d+-of-\d+)?\.safetensors(\.index\.json)?$")
PYTORCH_BIN = re.compile(r"^pytorch_model(-\d+-of-\d+)?\.bin(\.index\.json)?$")
TOKENIZER_AND_CONFIG = re.compile(r"^[^/]+\.(json|txt|model)$")


@dataclass
class HubCheckpoint:
    hub: str = _help("Repository id on the hub, e.g. FacebookAI/roberta-base.")
    revision: str | None = _help(
        "The commit (40 hex digits) every job reads. null marks it unpinned: a dry run plans it, a real run "
        f"refuses to start until `{PIN_COMMAND}` has written the commit.",
        default=None,
    )

    def validate(self, where: str) -> None:
        if not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", self.hub):
            raise PipelineError(f"{where}.hub: {self.hub!r} is not a hub repository id (owner/name)")
        if self.revision is not None and not COMMIT.match(self.revision):
            raise PipelineError(
                f"{where}.revision: {self.revision!r} is not a commit (40 hex digits); a branch or tag moves. "
                f"Set it to null and run `{PIN_COMMAND}` to write the commit it points to now"
            )


@dataclass
class HubFile:
    path: str
    size: int
    blob: str | None  # git blob id (sha1 of "blob <size>\0" + content)
    sha256: str | None  # large (LFS) files


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def revision_info(repo: str, revision: str, opts: Options) -> tuple[str, list[HubFile]]:
    """The commit ``revision`` names now, and the files of that commit."""
    url = f"{endpoint()}/api/models/{repo}/revision/{quote(revision, safe='')}?blobs=true"
    try:
        info = json.loads(fetch_text(url, opts))
        files = [
            HubFile(s["rfilename"], int(s.get("size", -1)), s.get("blobId"), (s.get("lfs") or {}).get("sha256"))
            for s in info.get("siblings", [])
        ]
        return info["sha"], files
    except (ValueError, KeyError, TypeError) as exc:
        raise PipelineError(f"{url}: not a hub revision record ({type(exc).__name__}: {exc})") from None


def wanted(files: list[HubFile]) -> list[HubFile]:
    """What transformers loads: configuration and tokenizer files, and one copy of the weights."""
    safetensors = [f for f in files if SAFETENSORS.match(f.path)]
    weights = safetensors or [f for f in files if PYTORCH_BIN.match(f.path)]
    rest = [f for f in files if TOKENIZER_AND_CONFIG.match(f.path) and f not in weights]
    return sorted(rest + weights, key=lambda f: f.path)


def git_blob_id(path: Path) -> str:
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_file(repo: str, commit: str, f: HubFile, out: Path, opts: Options) -> None:
    """One file of the commit, checked against the hub's own record of it."""
    url = f"{endpoint()}/{repo}/resolve/{commit}/{quote(f.path)}"
    fetch(url, out, algo="sha256" if f.sha256 else None, digest=f.sha256, opts=opts)
    if f.sha256 is None and f.blob is not None and git_blob_id(out) != f.blob:
        out.unlink()
        raise PipelineError(f"{url}: content differs from the hub's record of {f.path} (git blob {f.blob})")
