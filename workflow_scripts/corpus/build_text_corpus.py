"""Turn a plain-text file into a corpus directory, for reference vocabularies learned from it.

    python -m workflow_scripts.corpus.build_text_corpus --in general.txt --name general --out results/corpus/general

Documents are the file's paragraphs (separated by blank lines). The output has the shape
every corpus has: ``shard~0.parquet`` (id, source, text, words, language, metadata),
``stats.json`` and ``provenance.json``, so the vocabulary step reads it like any other.
The demo learns its general-English vocabulary this way from demo/raw_source/general/.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import provenance
from ..atomic import atomic_dir, write_json
from ..cli import run
from ..errors import PipelineError
from ..textfile import read_text
from .records import SHARD_SCHEMA

_PARAGRAPH = re.compile(r"\n\s*\n")


def paragraphs(path: Path) -> list[str]:
    try:
        text = read_text(path, str(path))
    except FileNotFoundError as exc:
        raise PipelineError(f"{path}: text file not found") from exc
    docs = [" ".join(p.split()) for p in _PARAGRAPH.split(text)]
    docs = [d for d in docs if d]
    if not docs:
        raise PipelineError(f"{path}: no text; write one document per paragraph, separated by blank lines")
    return docs


def build(source: Path, name: str, out: Path) -> dict:
    docs = paragraphs(source)
    rows = {
        "id": [f"{name}-{i}" for i in range(len(docs))],
        "source": [name] * len(docs),
        "text": docs,
        "words": [len(d.split()) for d in docs],
        "language": ["en"] * len(docs),
        "metadata": ["{}"] * len(docs),
    }
    stats = {
        "corpus": name,
        "type": "text",
        "files": [source.name],
        "documents": len(docs),
        "words": sum(rows["words"]),
        "bytes": sum(len(d.encode()) for d in docs),
        "shards": [{"file": "shard~0.parquet", "documents": len(docs)}],
    }
    with atomic_dir(out) as tmp:
        pq.write_table(pa.table(rows, schema=SHARD_SCHEMA), tmp / "shard~0.parquet")
        write_json(tmp / "stats.json", stats)
    return stats


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--in", dest="source", required=True, help="UTF-8 text, one document per paragraph")
    parser.add_argument("--name", required=True, help="corpus name")
    parser.add_argument("--out", required=True, help="corpus directory to write")
    args = parser.parse_args(argv)
    started = provenance.now()
    out = Path(args.out)
    build(Path(args.source), args.name, out)
    provenance.record(
        out,
        step="vocab.text_corpus",
        inputs={"text": args.source},
        params={"name": args.name},
        outputs=[out / "shard~0.parquet", out / "stats.json"],
        started=started,
    )


if __name__ == "__main__":
    run(main)
