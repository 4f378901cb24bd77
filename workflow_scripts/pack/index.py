"""The index of one corpus's packed shards at one sequence length: what a training job opens.

Training reads the shards in place through their memory maps, in the order of the index;
nothing is copied. The index carries every shard's content key, so the training job's
resumption key is content-based without reading any shard.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..atomic import write_json
from ..errors import PipelineError
from .keys import DOCUMENTS_VERSION, PACK_VERSION

SAME = ("version", "seq_len", "heldout_fraction", "tokenizer", "packing")


def build_index(corpus: str, shard_dirs: Sequence[str | os.PathLike], out: str | os.PathLike) -> dict:
    """Write ``out`` (index.json) over ``shard_dirs`` (each with a meta.json) and return it."""
    out = Path(out)
    metas = []
    for d in map(Path, shard_dirs):
        meta_file = d / "meta.json"
        if not meta_file.is_file():
            raise PipelineError(f"{d}: no meta.json; pack this shard first")
        metas.append((d, json.loads(meta_file.read_text())))
    if not metas:
        raise PipelineError(f"{out}: no packed shard to index")
    first = metas[0][1]
    for d, meta in metas[1:]:
        for key in SAME:
            if meta.get(key) != first.get(key):
                raise PipelineError(
                    f"{d}/meta.json: {key} {meta.get(key)!r} differs from {metas[0][0]}'s {first.get(key)!r}"
                )
    index = {
        **{key: first[key] for key in SAME if key in first},  # concatenate's meta names no packing
        "corpus": corpus,
        "shards": [{"dir": os.path.relpath(d, out.parent), "key": m["key"], "blocks": m["blocks"]} for d, m in metas],
    }
    write_json(out, index)
    return index


def read_index(path: str | os.PathLike) -> tuple[dict, list[Path]]:
    """(index, shard directories); a shard repacked since the index was written is refused."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: packed-data index not found; run the pack jobs first")
    index = json.loads(path.read_text())
    if index.get("version") not in (PACK_VERSION, DOCUMENTS_VERSION):
        raise PipelineError(
            f"{path}: packed with {index.get('version')!r}, this code reads {PACK_VERSION} and "
            f"{DOCUMENTS_VERSION}; pack again"
        )
    dirs = []
    for shard in index["shards"]:
        d = path.parent / shard["dir"]
        meta_file = d / "meta.json"
        if not meta_file.is_file():
            raise PipelineError(f"{d}: packed shard listed in {path} is missing; pack it again")
        if json.loads(meta_file.read_text()).get("key") != shard["key"]:
            raise PipelineError(f"{d}: repacked since {path} was written; rebuild the index")
        dirs.append(d)
    return index, dirs
