"""The Parquet layouts of a corpus: the parse step's records (one file per raw file), which the build
step reads, and the corpus shards (``SHARD_SCHEMA``) that every corpus directory holds.

Each row is a document (``op = "add"``) or, for PubMed update files, a withdrawal
(``op = "delete"``). ``minhash`` holds the document's MinHash signature, computed here so
that this work spreads over the parallel parse jobs. Counts of what the parser skipped
and the MinHash parameters travel in the file's metadata under ``corpus_parse``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..atomic import atomic_file
from ..errors import PipelineError

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("op", pa.string()),
        ("version", pa.int64()),
        ("text", pa.string()),
        ("retracted", pa.bool_()),
        ("licence", pa.string()),
        ("category", pa.string()),
        ("iserror", pa.bool_()),
        ("metadata", pa.string()),
        ("minhash", pa.list_(pa.uint32())),
    ]
)
# A corpus directory's shard~<i>.parquet, whichever step built it (build_corpus, build_text_corpus).
SHARD_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("text", pa.string()),
        ("words", pa.int64()),
        ("language", pa.string()),
        ("metadata", pa.string()),
    ]
)
META_KEY = b"corpus_parse"
BATCH = 5000


def row(
    id: str,
    source: str,
    text: str = "",
    *,
    op: str = "add",
    version: int = 1,
    retracted: bool = False,
    licence: str = "",
    category: str = "",
    iserror: bool = False,
    metadata: dict | None = None,
    minhash: np.ndarray | None = None,
) -> dict:
    return {
        "id": id,
        "source": source,
        "op": op,
        "version": version,
        "text": text,
        "retracted": retracted,
        "licence": licence,
        "category": category,
        "iserror": iserror,
        "metadata": json.dumps(metadata or {}, ensure_ascii=False, sort_keys=True),
        "minhash": minhash,
    }


def write_parsed(path: str | Path, rows: Iterable[dict], info: dict[str, Any]) -> int:
    """Write rows in batches; ``info`` (filled while rows are consumed) and the row count go
    into the file metadata."""
    schema_rows = 0
    with atomic_file(path) as tmp:
        writer = pq.ParquetWriter(tmp, SCHEMA)
        try:
            batch: list[dict] = []
            for r in rows:
                batch.append(r)
                if len(batch) >= BATCH:
                    writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
                    schema_rows += len(batch)
                    batch = []
            if batch:
                writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
                schema_rows += len(batch)
            info["rows"] = schema_rows
            writer.add_key_value_metadata({META_KEY.decode(): json.dumps(info, sort_keys=True)})
        finally:
            writer.close()
    return schema_rows


def read_info(path: str | Path) -> dict[str, Any]:
    try:
        meta = pq.ParquetFile(path).metadata.metadata or {}
    except (OSError, pa.ArrowInvalid) as exc:
        raise PipelineError(f"{path}: unreadable Parquet file ({exc}); run the parse step again") from exc
    if META_KEY not in meta:
        raise PipelineError(
            f"{path}: not a parsed corpus file (no {META_KEY.decode()} metadata); "
            "produce it with workflow_scripts.corpus.parse_corpus_file"
        )
    return json.loads(meta[META_KEY])


def iter_batches(path: str | Path) -> Iterator[pa.RecordBatch]:
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise PipelineError(f"{path}: unreadable Parquet file ({exc}); run the parse step again") from exc
    missing = [n for n in SCHEMA.names if n not in pf.schema_arrow.names]
    if missing:
        raise PipelineError(f"{path}: missing column(s) {', '.join(missing)}; run the parse step again")
    yield from pf.iter_batches(batch_size=BATCH, columns=SCHEMA.names)


def iter_parsed(path: str | Path) -> Iterator[dict]:
    """Rows without their signatures."""
    for batch in iter_batches(path):
        yield from batch.drop_columns(["minhash"]).to_pylist()


def iter_with_signatures(path: str | Path) -> Iterator[tuple[dict, np.ndarray]]:
    """Rows with their MinHash signature (empty where none was computed)."""
    for batch in iter_batches(path):
        mh = batch.column("minhash")
        offsets, values = mh.offsets.to_numpy(), mh.values.to_numpy()
        for i, r in enumerate(batch.drop_columns(["minhash"]).to_pylist()):
            yield r, values[offsets[i] : offsets[i + 1]]
