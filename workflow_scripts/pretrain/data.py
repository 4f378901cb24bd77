"""Corpus shards -> tokenised, packed, memory-mapped blocks of fixed length.

Documents are tokenised once and packed RoBERTa "full-sentences" style: the token
stream of consecutive documents (each followed by the separator) is cut into blocks of
``seq_len - 2`` tokens, each wrapped as ``[CLS] ... [SEP]`` (``<s> ... </s>``). Beside
the token ids a flag per token records where words start, so whole-word masking works
for every tokenizer family. Documents are assigned to the held-out split by a hash of
their id, so the split does not depend on the seed or on the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow.parquet as pq

from ..atomic import atomic_dir
from ..errors import PipelineError
from ..progress import progress

log = logging.getLogger(__name__)

PACK_VERSION = "pack_v1"
# per-token flags
CONTINUATION, WORD_START, SPECIAL = 0, 1, 2
_BATCH_DOCS = 512


def corpus_shards(corpus_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    shards: list[Path] = []
    for d in map(Path, corpus_dirs):
        if not d.is_dir():
            raise PipelineError(f"{d}: corpus directory not found; build it first (results/corpus/<name>)")
        found = sorted(d.glob("shard~*.parquet"), key=lambda p: (len(p.name), p.name))
        if not found:
            raise PipelineError(f"{d}: no shard~N.parquet files in this corpus directory")
        shards.extend(found)
    return shards


def iter_documents(shards: Iterable[Path]) -> Iterator[tuple[str, str]]:
    """Yield (id, text) of every document; a shard without a ``text`` column is refused."""
    for shard in shards:
        try:
            pf = pq.ParquetFile(shard)
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise PipelineError(f"{shard}: not a readable parquet file ({exc}); rebuild the corpus") from exc
        names = pf.schema_arrow.names
        if "text" not in names:
            raise PipelineError(f"{shard}: no 'text' column (columns: {', '.join(names)})")
        columns = ["text"] + (["id"] if "id" in names else [])
        row = 0
        for batch in pf.iter_batches(columns=columns, batch_size=4096):
            texts = batch.column("text").to_pylist()
            ids = batch.column("id").to_pylist() if "id" in names else [None] * len(texts)
            for doc_id, text in zip(ids, texts):
                yield (f"{shard.name}:{row}" if doc_id is None else str(doc_id)), (text or "")
                row += 1


def is_heldout(doc_id: str, fraction: float) -> bool:
    if fraction <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest(), "big")
    return h / 2**64 < fraction


def word_start_flags(tokens: Sequence[str], word_ids: Sequence[int | None] | None) -> list[int]:
    """WORD_START/CONTINUATION per token.

    With a fast tokenizer's ``word_ids`` (its pre-tokenizer's words) a token starts a word
    when its word id differs from the previous token's. Without them the token spelling
    decides: WordPiece continuations start with ``##``; byte-level BPE (``Ġ``) and
    SentencePiece (``▁``) mark the token that starts a word.
    """
    if word_ids is not None and all(w is not None for w in word_ids):
        return [WORD_START if i == 0 or w != word_ids[i - 1] else CONTINUATION for i, w in enumerate(word_ids)]
    if any(t.startswith("##") for t in tokens):
        return [CONTINUATION if t.startswith("##") else WORD_START for t in tokens]
    return [WORD_START if i == 0 or t[:1] in ("Ġ", "▁") else CONTINUATION for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class Specials:
    cls: int
    sep: int
    mask: int
    pad: int
    vocab_size: int

    @classmethod
    def of(cls, tokenizer, where: str) -> "Specials":
        ids = {
            "cls": tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id,
            "sep": tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id,
            "mask": tokenizer.mask_token_id,
            "pad": tokenizer.pad_token_id,
        }
        missing = [k for k, v in ids.items() if v is None]
        if missing:
            raise PipelineError(
                f"{where}: the tokenizer has no {'/'.join(missing)} token; masked-language modelling needs "
                "[CLS]/[SEP]/[MASK]/[PAD] (or <s>/</s>/<mask>/<pad>)"
            )
        return cls(vocab_size=len(tokenizer), **ids)


class BlockWriter:
    """Append a token stream and cut it into ``[CLS] content [SEP]`` blocks written to disk."""

    def __init__(self, directory: Path, split: str, seq_len: int, specials: Specials, dtype) -> None:
        self.content = seq_len - 2
        self.seq_len, self.specials, self.dtype = seq_len, specials, dtype
        self.tok_fh = open(directory / f"{split}.tokens.bin", "wb")
        self.flag_fh = open(directory / f"{split}.flags.bin", "wb")
        self.tokens: list[int] = []
        self.flags: list[int] = []
        self.blocks = 0

    def add(self, ids: list[int], flags: list[int]) -> None:
        self.tokens.extend(ids)
        self.tokens.append(self.specials.sep)
        self.flags.extend(flags)
        self.flags.append(SPECIAL)
        if len(self.tokens) >= 64 * self.content:
            self._flush()

    def _flush(self) -> None:
        n = len(self.tokens) // self.content
        if n == 0:
            return
        cut = n * self.content
        body = np.asarray(self.tokens[:cut], dtype=np.int64).reshape(n, self.content)
        fbody = np.asarray(self.flags[:cut], dtype=np.uint8).reshape(n, self.content)
        toks = np.empty((n, self.seq_len), dtype=self.dtype)
        toks[:, 0], toks[:, -1], toks[:, 1:-1] = self.specials.cls, self.specials.sep, body
        flg = np.full((n, self.seq_len), SPECIAL, dtype=np.uint8)
        flg[:, 1:-1] = fbody
        self.tok_fh.write(toks.tobytes())
        self.flag_fh.write(flg.tobytes())
        self.blocks += n
        del self.tokens[:cut], self.flags[:cut]

    def close(self) -> int:
        self._flush()  # the incomplete last block is dropped
        self.tok_fh.close()
        self.flag_fh.close()
        return self.blocks


class PackedBlocks:
    """Read-only memory-mapped blocks of one split."""

    def __init__(self, directory: Path, split: str) -> None:
        meta = json.loads((directory / "meta.json").read_text())
        self.seq_len = meta["seq_len"]
        self.n = meta["blocks"][split]
        dtype = np.dtype(meta["dtype"])
        shape = (self.n, self.seq_len)
        if self.n:
            self.tokens = np.memmap(directory / f"{split}.tokens.bin", dtype=dtype, mode="r", shape=shape)
            self.flags = np.memmap(directory / f"{split}.flags.bin", dtype=np.uint8, mode="r", shape=shape)
        else:
            self.tokens = np.zeros(shape, dtype=dtype)
            self.flags = np.zeros(shape, dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def take(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(indices, kind="stable")  # sorted reads are kinder to the page cache
        toks = np.empty((len(indices), self.seq_len), dtype=np.int64)
        flags = np.empty((len(indices), self.seq_len), dtype=np.uint8)
        toks[order] = self.tokens[indices[order]]
        flags[order] = self.flags[indices[order]]
        return toks, flags


def cache_key(corpus_dirs: Sequence[str | os.PathLike], tokenizer, seq_len: int, heldout_fraction: float) -> str:
    h = hashlib.sha256()
    h.update(f"{PACK_VERSION}|{seq_len}|{heldout_fraction}".encode())
    for d in map(Path, corpus_dirs):
        prov = d / "provenance.json"
        if prov.is_file():
            h.update(prov.read_bytes())
        for shard in sorted(d.glob("shard~*.parquet")):
            st = shard.stat()
            h.update(f"{shard.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    h.update(type(tokenizer.backend_tokenizer.pre_tokenizer).__name__.encode() if hasattr(tokenizer, "backend_tokenizer") else b"")
    return h.hexdigest()[:16]


def build_blocks(corpus_dirs: Sequence[str | os.PathLike], tokenizer, seq_len: int, heldout_fraction: float, target: Path) -> None:
    """Tokenise and pack the corpus into ``target`` (a directory, written atomically)."""
    specials = Specials.of(tokenizer, "tokenizer")
    dtype = np.uint16 if specials.vocab_size <= 65535 else np.int32
    shards = corpus_shards(corpus_dirs)
    with atomic_dir(target) as tmp:
        writers = {s: BlockWriter(tmp, s, seq_len, specials, dtype) for s in ("train", "heldout")}
        docs = 0
        bar = progress(f"tokenising for seq_len {seq_len}", unit="docs")
        batch: list[tuple[str, str]] = []

        def flush() -> None:
            # whole documents are wanted (packing cuts them into blocks), so no length warning
            enc = tokenizer([t for _, t in batch], add_special_tokens=False, verbose=False)
            for i, (doc_id, _) in enumerate(batch):
                ids = enc["input_ids"][i]
                if not ids:
                    continue
                try:
                    wids = enc.word_ids(i)
                except (ValueError, AttributeError):
                    wids = None
                flags = word_start_flags(tokenizer.convert_ids_to_tokens(ids) if wids is None else (), wids)
                writers["heldout" if is_heldout(doc_id, heldout_fraction) else "train"].add(ids, flags)
            bar.update(len(batch))
            batch.clear()

        for doc in iter_documents(shards):
            batch.append(doc)
            docs += 1
            if len(batch) >= _BATCH_DOCS:
                flush()
        if batch:
            flush()
        bar.close()
        blocks = {s: w.close() for s, w in writers.items()}
        if blocks["train"] == 0:
            raise PipelineError(
                f"{', '.join(map(str, corpus_dirs))}: {docs} documents give no training block of {seq_len} tokens; "
                "add text or lower phases[].seq_len"
            )
        (tmp / "meta.json").write_text(
            json.dumps({"seq_len": seq_len, "dtype": np.dtype(dtype).name, "blocks": blocks, "documents": docs,
                        "heldout_fraction": heldout_fraction, "version": PACK_VERSION}, indent=2)
        )
    log.info("packed %d documents into %s train / %s held-out blocks of %d tokens", docs, blocks["train"], blocks["heldout"], seq_len)


def prepare_blocks(corpus_dirs, tokenizer, seq_len: int, heldout_fraction: float, data_dir: Path, build: bool = True) -> Path:
    """The cache directory for this corpus/tokenizer/length, built if missing (by the caller's rank 0)."""
    target = data_dir / f"seq~{seq_len}-{cache_key(corpus_dirs, tokenizer, seq_len, heldout_fraction)}"
    if build and not (target / "meta.json").is_file():
        build_blocks(corpus_dirs, tokenizer, seq_len, heldout_fraction, target)
    return target


class BlockOrder:
    """Which block is the g-th sample of a phase: a fresh permutation per epoch; epochs wrap."""

    def __init__(self, n: int, seed: int, phase: int) -> None:
        self.n, self.seed, self.phase = n, seed, phase
        self._epoch, self._perm = -1, np.empty(0, dtype=np.int64)

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch != self._epoch:
            rng = np.random.Generator(np.random.PCG64([self.seed, self.phase, epoch]))
            self._epoch, self._perm = epoch, rng.permutation(self.n)
        return self._perm

    def indices(self, start: int, count: int) -> np.ndarray:
        g = np.arange(start, start + count, dtype=np.int64)
        epochs, pos = np.divmod(g, self.n)
        out = np.empty(count, dtype=np.int64)
        for epoch in np.unique(epochs):
            sel = epochs == epoch
            out[sel] = self._permutation(int(epoch))[pos[sel]]
        return out
