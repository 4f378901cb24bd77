"""A deterministic, streamed sample of documents from one or more corpus directories.

A corpus directory holds ``shard~{n}.parquet`` files with a ``text`` column. Row counts
come from the Parquet footers, the sampled row numbers are drawn once with the seed, and
texts are then read shard by shard in record batches, so memory stays bounded by one
batch plus the index of sampled rows, whatever the corpus size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from ..errors import PipelineError

_SHARD = re.compile(r"^shard~(\d+)\.parquet$")
_WORD = re.compile(r"\w+")
BATCH_ROWS = 1024


@dataclass(frozen=True)
class Shard:
    path: Path
    rows: int


@dataclass
class Sample:
    """Which rows of which shards a vocabulary is learned from."""

    shards: list[Shard]
    rows: np.ndarray | None  # sorted global row numbers; None means every row
    seed: int

    @property
    def available(self) -> int:
        return sum(s.rows for s in self.shards)

    @property
    def size(self) -> int:
        return self.available if self.rows is None else int(len(self.rows))

    def describe(self) -> dict:
        return {
            "shards": [{"path": str(s.path), "documents": s.rows} for s in self.shards],
            "documents_available": self.available,
            "documents_sampled": self.size,
            "seed": self.seed,
        }


def list_shards(corpus: str | Path, vocab: str) -> list[Shard]:
    """The shards of one corpus directory in shard-number order."""
    corpus = Path(corpus)
    if not corpus.is_dir():
        raise PipelineError(
            f"vocabulary {vocab!r}: corpus directory {corpus} does not exist; run its corpus step first"
        )
    found = sorted((int(m.group(1)), p) for p in corpus.iterdir() if (m := _SHARD.match(p.name)) is not None)
    shards = []
    for _, path in found:
        try:
            meta = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise PipelineError(f"{path}: not a readable Parquet file ({exc}); rerun the corpus step") from exc
        if "text" not in meta.schema_arrow.names:
            raise PipelineError(f"{path}: no 'text' column (columns: {', '.join(meta.schema_arrow.names)})")
        shards.append(Shard(path, meta.metadata.num_rows))
    return shards


def plan_sample(corpora: Sequence[str | Path], vocab: str, sample_documents: int | None, seed: int) -> Sample:
    """Draw ``sample_documents`` rows without replacement across all shards of ``corpora``."""
    shards = [s for c in corpora for s in list_shards(c, vocab)]
    total = sum(s.rows for s in shards)
    if total == 0:
        raise PipelineError(
            f"vocabulary {vocab!r}: corpus {', '.join(map(str, corpora))} holds no documents; "
            "check the corpus step's stats.json and its input"
        )
    if sample_documents is None or sample_documents >= total:
        return Sample(shards, None, seed)
    rows = np.sort(np.random.default_rng(seed).choice(total, size=sample_documents, replace=False))
    return Sample(shards, rows, seed)


def iter_texts(sample: Sample) -> Iterator[str]:
    """Stream the sampled documents' texts (empty ones skipped) in shard order."""
    offset = 0
    for shard in sample.shards:
        if sample.rows is not None:
            lo, hi = np.searchsorted(sample.rows, [offset, offset + shard.rows])
            if lo == hi:
                offset += shard.rows
                continue
        for batch in pq.ParquetFile(shard.path).iter_batches(batch_size=BATCH_ROWS, columns=["text"]):
            texts = batch.column(0).to_pylist()
            if sample.rows is None:
                chosen = texts
            else:
                lo, hi = np.searchsorted(sample.rows, [offset, offset + len(texts)])
                chosen = [texts[i - offset] for i in sample.rows[lo:hi]]
            offset += len(texts)
            yield from (t for t in chosen if t)


def count_distinct_words(texts: Iterator[str], lowercase: bool, stop_at: int) -> int:
    """Distinct words in ``texts``, counting no further than ``stop_at`` (enough to prove a corpus big enough)."""
    seen: set[str] = set()
    for text in texts:
        seen.update(_WORD.findall(text.lower() if lowercase else text))
        if len(seen) >= stop_at:
            return len(seen)
    return len(seen)
