"""Documents -> one flat token stream with word-start flags, without a per-token Python loop.

A fast tokenizer's Rust backend encodes a batch on all its threads (RAYON_NUM_THREADS);
the ids of the batch are concatenated once, and the flags are computed on the whole
stream with numpy. A token starts a word when its word id (the pre-tokenizer's word)
differs from the previous token's, or when it opens a document. WordPiece spells the same
boundaries (every piece but a word's first starts with ``##``) and byte-level BPE's follow
from its tokens' characters (bytelevel.py): both are encoded without offsets or word ids,
which costs the encoder a sixth less CPU than the call that keeps them. Other tokenizers
fetch the word ids; without any (a slow tokenizer) the spelling decides: byte-level BPE
(``Ġ``) and SentencePiece (``▁``) mark the token that starts a word.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import bytelevel

BPE_CACHE_WORDS = 250_000  # some 50 MB at most; 7-9% less encoding CPU on the benchmark's 30 MB shard


@dataclass(frozen=True)
class Encoded:
    """A batch as one stream: ``ids``/``flags`` of every token, ``lengths`` per document."""

    ids: np.ndarray
    flags: np.ndarray
    lengths: np.ndarray


def spelling_starts(tokenizer) -> np.ndarray:
    """Per vocabulary id: 1 where the token's spelling starts a word (the fallback without word ids)."""
    vocab = tokenizer.get_vocab()
    table = np.zeros(max(len(tokenizer), max(vocab.values()) + 1), dtype=np.uint8)
    if any(t.startswith("##") for t in vocab):
        for token, i in vocab.items():
            table[i] = not token.startswith("##")
    else:
        for token, i in vocab.items():
            table[i] = token[:1] in ("Ġ", "▁")
    return table


def _doc_starts(lengths: np.ndarray, total: int) -> np.ndarray:
    starts = np.zeros(total, dtype=bool)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    starts[offsets[lengths > 0]] = True
    return starts


def spelling_flags(ids: np.ndarray, lengths: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return (starts[ids].astype(bool) | _doc_starts(lengths, len(ids))).astype(np.uint8)


def word_flags(word_ids: np.ndarray, lengths: np.ndarray, ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """WORD_START/CONTINUATION of a stream; ``word_ids`` is NaN where the tokenizer gave none."""
    changed = np.ones(len(ids), dtype=bool)
    changed[1:] = word_ids[1:] != word_ids[:-1]
    flags = (changed | _doc_starts(lengths, len(ids))).astype(np.uint8)
    missing = np.isnan(word_ids)
    if missing.any():
        # a document with any token lacking a word id is flagged by spelling throughout
        doc_of = np.repeat(np.arange(len(lengths)), lengths)
        by_spelling = np.zeros(len(lengths), dtype=bool)
        by_spelling[np.unique(doc_of[missing])] = True
        sel = by_spelling[doc_of]
        flags[sel] = spelling_flags(ids, lengths, starts)[sel]
    return flags


class Encoder:
    """Encode batches of documents with a tokenizer's backend (fast) or its Python call (slow)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
        if backend is not None and (backend.truncation is not None or backend.padding is not None):
            from tokenizers import Tokenizer

            # whole documents are packed: a copy without the truncation/padding the checkpoint may carry
            backend = Tokenizer.from_str(backend.to_str())
            backend.no_truncation()
            backend.no_padding()
        if backend is not None and type(backend.model).__name__ == "BPE" and hasattr(backend.model, "_resize_cache"):
            # BPE memoises the pieces of its first 10,000 distinct words only; a shard holds many more
            backend.model._resize_cache(BPE_CACHE_WORDS)
        self.backend = backend
        # WordPiece marks every piece but a word's first with "##": the spelling is the word
        # boundary, and the word ids need not be fetched at all
        self.by_spelling = backend is None or type(backend.model).__name__ == "WordPiece"
        self.pieces = bytelevel.ByteLevelStarts(backend) if backend is not None and bytelevel.applies(backend) else None

    @functools.cached_property
    def starts(self) -> np.ndarray:
        return spelling_starts(self.tokenizer)

    def encode(self, texts: Sequence[str]) -> Encoded:
        if self.backend is None:
            return self._encode_slow(texts)
        if not (self.by_spelling or self.pieces):
            return self._encode_with_words(texts)
        # offsets and word ids are not needed: the backend skips computing them
        lengths, ids = _stream(self.backend.encode_batch_fast(list(texts), add_special_tokens=False))
        if self.by_spelling:
            return Encoded(ids, spelling_flags(ids, lengths, self.starts), lengths)
        starts, undecided = self.pieces.boundaries(ids, _doc_starts(lengths, len(ids)))
        flags = starts.astype(np.uint8)
        if undecided.any():
            doc_of = np.repeat(np.arange(len(lengths)), lengths)
            redo = np.unique(doc_of[undecided])
            flags[np.isin(doc_of, redo)] = self._encode_with_words([texts[i] for i in redo]).flags
        return Encoded(ids, flags, lengths)

    def _encode_with_words(self, texts: Sequence[str]) -> Encoded:
        encodings = self.backend.encode_batch(list(texts), add_special_tokens=False)
        lengths, ids = _stream(encodings)
        # numpy turns the None of a token without a word into NaN
        word_ids = np.array(list(itertools.chain.from_iterable(e.word_ids for e in encodings)), dtype=np.float64)
        return Encoded(ids, word_flags(word_ids, lengths, ids, self.starts), lengths)

    def _encode_slow(self, texts: Sequence[str]) -> Encoded:
        enc = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        lengths = np.fromiter((len(x) for x in enc), dtype=np.int64, count=len(enc))
        total = int(lengths.sum())
        ids = np.fromiter(itertools.chain.from_iterable(enc), dtype=np.int64, count=total)
        return Encoded(ids, spelling_flags(ids, lengths, self.starts), lengths)


def _stream(encodings) -> tuple[np.ndarray, np.ndarray]:
    """(tokens per document, all ids in one array) of a batch of ``tokenizers`` encodings."""
    lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
    ids = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=int(lengths.sum()))
    return lengths, ids
