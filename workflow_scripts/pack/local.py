"""Packing by hand: a training run given corpus directories (``--corpus``) packs them first.

The workflow packs in its own CPU jobs and hands training the indexes (``--packed``);
this path serves runs by hand and tests. Shards already packed with the same content key
are kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import PipelineError
from ..provenance import sha256_file
from .index import build_index
from .keys import pack_key, packed_subdir, tokenizer_digest
from .pack import pack_shard


def corpus_shards(corpus_dir: Path) -> list[Path]:
    if not corpus_dir.is_dir():
        raise PipelineError(f"{corpus_dir}: corpus directory not found; build it first (results/corpus/<name>)")
    found = sorted(corpus_dir.glob("shard~*.parquet"), key=lambda p: (len(p.name), p.name))
    if not found:
        raise PipelineError(f"{corpus_dir}: no shard~N.parquet files in this corpus directory")
    return found


def packed_dir(root: Path, corpus: str, seq_len: int, heldout_fraction: float, packing: str = "concatenate") -> Path:
    return root / corpus / packed_subdir(seq_len, heldout_fraction, packing)


def index_paths(
    corpus_dirs: Sequence[str | os.PathLike],
    seq_lens: Sequence[int],
    heldout_fraction: float,
    root: Path,
    packing: str = "concatenate",
) -> list[Path]:
    lengths = dict.fromkeys(seq_lens)
    return [
        packed_dir(root, Path(c).name, n, heldout_fraction, packing) / "index.json"
        for c in corpus_dirs
        for n in lengths
    ]


def pack_corpora(
    corpus_dirs: Sequence[str | os.PathLike],
    tokenizer,
    seq_lens: Sequence[int],
    heldout_fraction: float,
    root: Path,
    packing: str = "concatenate",
) -> None:
    """Pack every shard of every corpus at every length under ``root``, with an index each."""
    digest = tokenizer_digest(tokenizer)
    for corpus in map(Path, corpus_dirs):
        shards = corpus_shards(corpus)
        for seq_len in dict.fromkeys(seq_lens):
            base = packed_dir(root, corpus.name, seq_len, heldout_fraction, packing)
            dirs = []
            for shard in shards:
                target, sha = base / shard.stem, sha256_file(shard)
                meta = target / "meta.json"
                key = pack_key(sha, digest, seq_len, heldout_fraction, packing)
                if not meta.is_file() or json.loads(meta.read_text()).get("key") != key:
                    pack_shard(shard, tokenizer, seq_len, heldout_fraction, target, sha, packing)
                dirs.append(target)
            build_index(corpus.name, dirs, base / "index.json")
