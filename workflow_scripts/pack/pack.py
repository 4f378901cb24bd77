"""Tokenise and pack one corpus shard into memory-mapped blocks, word-start flags and a held-out split.

    python -m workflow_scripts.pack.pack --shard results/corpus/C/shard~N.parquet --tokenizer DIR_OR_HUB_ID \\
        --seq-len 128 --heldout-fraction 0.01 --threads 8 --out results/packed/T/C/seq~128/heldout~0.01/shard~N

Documents are packed RoBERTa "full-sentences" style (``--packing concatenate``): the token
stream of the shard's documents (each followed by the separator) is cut into blocks of
``seq_len - 2`` tokens, each wrapped as ``[CLS] ... [SEP]``; the incomplete last block is
dropped. ``--packing documents`` wraps every document as ``[CLS] ... [SEP]`` instead, cuts
that stream into blocks of ``seq_len`` tokens and stores where each document starts in each
block, so that training keeps documents apart. Documents go to the held-out split by a hash
of their id, so the split depends on neither seed nor model.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from .. import provenance
from ..atomic import atomic_dir
from ..cli import run
from ..errors import PipelineError
from ..progress import progress
from ..tokenizer import Specials
from .blocks import BlockWriter, DocumentBlockWriter
from .encode import Encoder
from .format import SPECIAL, is_heldout
from .keys import PACKINGS, pack_key, pack_version, tokenizer_digest
from .verify import block_files, sha256_stream

log = logging.getLogger(__name__)

BATCH_DOCS = 1024
SPLITS = ("train", "heldout")


def iter_batches(shard: Path, batch_docs: int = BATCH_DOCS) -> Iterator[tuple[list[str], list[str]]]:
    """(ids, texts) of the shard's documents in batches; a shard without a ``text`` column is refused."""
    try:
        pf = pq.ParquetFile(shard)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise PipelineError(f"{shard}: not a readable parquet file ({exc}); rebuild the corpus") from exc
    names = pf.schema_arrow.names
    if "text" not in names:
        raise PipelineError(f"{shard}: no 'text' column (columns: {', '.join(names)})")
    columns = ["text"] + (["id"] if "id" in names else [])
    row = 0
    for batch in pf.iter_batches(columns=columns, batch_size=batch_docs):
        texts = [t or "" for t in batch.column("text").to_pylist()]
        given = batch.column("id").to_pylist() if "id" in names else [None] * len(texts)
        ids = [f"{shard.name}:{row + i}" if d is None else str(d) for i, d in enumerate(given)]
        row += len(texts)
        yield ids, texts


def with_separators(ids: np.ndarray, flags: np.ndarray, lengths: np.ndarray, sep: int) -> tuple[np.ndarray, np.ndarray]:
    """The stream with the separator after every (non-empty) document."""
    ends = np.cumsum(lengths)[lengths > 0]
    return np.insert(ids, ends, sep), np.insert(flags, ends, SPECIAL)


def wrapped(
    ids: np.ndarray, flags: np.ndarray, lengths: np.ndarray, specials: Specials
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stream with every (non-empty) document as ``[CLS] document [SEP]``, and its documents' first tokens."""
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))[lengths > 0]
    ends = np.cumsum(lengths)[lengths > 0]
    # np.insert keeps the given order at equal indices: a document's [SEP] before the next one's [CLS]
    at = np.concatenate([ends, offsets])
    tokens = np.concatenate([np.full(len(ends), specials.sep), np.full(len(offsets), specials.cls)])
    out_ids = np.insert(ids, at, tokens.astype(ids.dtype))
    out_flags = np.insert(flags, at, SPECIAL)
    starts = np.zeros(len(out_ids), dtype=bool)
    starts[offsets + 2 * np.arange(len(offsets))] = True
    return out_ids, out_flags, starts


def _writers(tmp: Path, seq_len: int, specials: Specials, dtype, packing: str) -> dict[str, BlockWriter]:
    kind = DocumentBlockWriter if packing == "documents" else BlockWriter
    return {s: kind(tmp, s, seq_len, specials, dtype) for s in SPLITS}


def _add_batch(writers: dict[str, BlockWriter], enc, held: np.ndarray, specials: Specials, dtype) -> None:
    """One encoded batch into the train and held-out streams, as each writer's packing lays it out."""
    documents = isinstance(writers["train"], DocumentBlockWriter)
    if documents:
        ids, flags, starts = wrapped(enc.ids, enc.flags, enc.lengths, specials)
    else:
        ids, flags = with_separators(enc.ids, enc.flags, enc.lengths, specials.sep)
    # each non-empty document contributes its tokens and one separator (and its [CLS] when wrapped)
    token_held = np.repeat(held, enc.lengths + (1 + documents) * (enc.lengths > 0))
    for split, mask in (("train", ~token_held), ("heldout", token_held)):
        if mask.any():
            extra = (starts[mask],) if documents else ()
            writers[split].add(ids[mask].astype(dtype, copy=False), flags[mask], *extra)


def pack_shard(
    shard: Path,
    tokenizer,
    seq_len: int,
    heldout_fraction: float,
    target: Path,
    shard_sha256: str | None = None,
    packing: str = "concatenate",
) -> dict:
    """Pack ``shard`` into the directory ``target`` (written atomically); return its meta.json."""
    specials = Specials.of(tokenizer, "tokenizer")
    dtype = np.uint16 if specials.vocab_size <= 65535 else np.int32
    encoder = Encoder(tokenizer)
    sha = shard_sha256 or provenance.sha256_file(shard)
    tok_digest = tokenizer_digest(tokenizer)
    docs = 0
    with atomic_dir(target) as tmp:
        writers = _writers(tmp, seq_len, specials, dtype, packing)
        bar = progress(f"packing {shard.name} for seq_len {seq_len}", unit="docs")
        for doc_ids, texts in iter_batches(shard):
            held = np.fromiter((is_heldout(d, heldout_fraction) for d in doc_ids), dtype=bool, count=len(doc_ids))
            _add_batch(writers, encoder.encode(texts), held, specials, dtype)
            docs += len(texts)
            bar.update(len(texts))
        bar.close()
        blocks = {s: w.close() for s, w in writers.items()}
        # Recorded at pack time so that training can verify what it reads (pack/verify.py).
        sums = {name: sha256_stream(tmp / name) for s in SPLITS for name in block_files(s, packing)}
        meta = {
            "version": pack_version(packing),
            "key": pack_key(sha, tok_digest, seq_len, heldout_fraction, packing),
            "seq_len": seq_len,
            "dtype": np.dtype(dtype).name,
            "blocks": blocks,
            "tokens": {s: w.tokens for s, w in writers.items()},
            "documents": docs,
            "heldout_fraction": heldout_fraction,
            "shard": {"file": shard.name, "sha256": sha},
            "tokenizer": tok_digest,
            "sha256": sums,
            **({"packing": packing} if packing != "concatenate" else {}),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    log.info(
        "packed %d documents of %s into %d train / %d held-out blocks of %d tokens",
        docs,
        shard,
        blocks["train"],
        blocks["heldout"],
        seq_len,
    )
    return meta


def load_any_tokenizer(ref: str):
    """A vocabulary or checkpoint directory, or (where the hub is reachable) a hub id."""
    from transformers import AutoTokenizer

    from ..tokenizer import load_tokenizer, looks_local

    if looks_local(ref):
        return load_tokenizer(ref, "--tokenizer")
    try:
        return AutoTokenizer.from_pretrained(ref)
    except Exception as exc:  # transformers raises many types for unreachable or foreign ids
        raise PipelineError(f"{ref}: cannot load this tokenizer with AutoTokenizer ({exc})") from exc


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shard", required=True, help="corpus shard (shard~N.parquet with a text column)")
    ap.add_argument("--tokenizer", required=True, help="tokenizer directory, checkpoint directory or hub id")
    ap.add_argument("--seq-len", required=True, type=int, help="tokens per block, [CLS] and [SEP] included")
    ap.add_argument("--heldout-fraction", required=True, type=float, help="fraction of documents held out")
    ap.add_argument(
        "--packing",
        choices=PACKINGS,
        default="concatenate",
        help="concatenate: documents run on across blocks; documents: each block keeps its documents' starts",
    )
    ap.add_argument("--threads", type=int, default=1, help="encoding threads (the tokenizer's own pool)")
    ap.add_argument("--out", required=True, help="output directory of this shard's blocks")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    started = provenance.now()
    args = parse_args(argv)
    if args.seq_len < 8:
        raise PipelineError(f"--seq-len: must be at least 8, got {args.seq_len}")
    # the Rust pool reads these when it first starts, i.e. at the first batch
    os.environ["RAYON_NUM_THREADS"] = str(max(args.threads, 1))
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    tokenizer = load_any_tokenizer(args.tokenizer)
    shard, out = Path(args.shard), Path(args.out)
    if not shard.is_file():
        raise PipelineError(f"{shard}: corpus shard not found; build the corpus first")
    meta = pack_shard(shard, tokenizer, args.seq_len, args.heldout_fraction, out, packing=args.packing)
    outputs = [out / "meta.json"] + [out / name for s in SPLITS for name in block_files(s, args.packing)]
    provenance.record(
        out,
        step="pack",
        inputs={"shard": shard, "tokenizer": args.tokenizer},
        params={
            "seq_len": args.seq_len,
            "heldout_fraction": args.heldout_fraction,
            "version": meta["version"],
            **({"packing": args.packing} if args.packing != "concatenate" else {}),
        },
        outputs=outputs,
        started=started,
        extra={"key": meta["key"], "blocks": meta["blocks"]},
    )


if __name__ == "__main__":
    run(main)
