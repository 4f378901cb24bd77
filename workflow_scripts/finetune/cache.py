"""Tokenised features cached per (task split files, tokenizer, encoding settings).

Every model x seed run of a task with the same tokenizer reuses one tokenisation. The key
hashes the split files' bytes, the full tokenizer definition and the encoding settings, so
a change to any of them is a different entry. Entries are JSON (never pickle, which runs code
on load), written atomically with a sha256 sidecar that is verified on every load: an edited
entry stops the run with its name instead of changing scores. Concurrent jobs may both
compute one, and either's identical file wins.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import integrity
from ..atomic import atomic_file
from ..errors import PipelineError
from ..integrity import sha256_file
from .features import Encoding

log = logging.getLogger(__name__)
VERSION = "features_v2"


def tokenizer_fingerprint(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    definition = backend.to_str() if backend is not None else repr(tokenizer.get_vocab())
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    h.update(definition.encode())
    h.update(json.dumps(tokenizer.all_special_tokens).encode())
    return h.hexdigest()


def key(split_files: dict[str, Path], tokenizer, enc: Encoding) -> str:
    # an encoding that reads inputs whole keeps the key it had before chunking existed
    settings = {k: v for k, v in asdict(enc).items() if k != "stats" and not (k == "chunks" and v is None)}
    parts = {
        "version": VERSION,
        "splits": {name: sha256_file(p) for name, p in sorted(split_files.items())},
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "encoding": settings,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def cached(cache_dir: Path | None, entry: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The features of ``entry``: from the cache (checksum verified) or built and stored as JSON."""
    if cache_dir is None:
        return build()
    path = Path(cache_dir) / f"{entry}.json"
    if path.is_file():
        try:
            integrity.verify(path)
        except integrity.IntegrityError as exc:
            raise PipelineError(f"feature cache {exc}; delete {path} and re-run to rebuild it") from exc
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
        log.info("features from cache %s", path)
        return value
    value = build()
    with atomic_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(value, fh, separators=(",", ":"))
        integrity.seal(tmp, target=path)
    return value
