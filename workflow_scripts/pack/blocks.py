"""A token stream -> ``[CLS] content [SEP]`` blocks of fixed length, cut with numpy and appended to disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..tokenizer import Specials
from .format import SPECIAL


def cut_blocks(
    ids: np.ndarray, flags: np.ndarray, seq_len: int, specials: Specials, dtype
) -> tuple[np.ndarray, np.ndarray, int]:
    """Whole blocks of the stream (tokens, flags) and how many stream tokens they used."""
    content = seq_len - 2
    n = len(ids) // content
    used = n * content
    toks = np.empty((n, seq_len), dtype=dtype)
    toks[:, 0], toks[:, -1] = specials.cls, specials.sep
    toks[:, 1:-1] = ids[:used].reshape(n, content)
    flg = np.full((n, seq_len), SPECIAL, dtype=np.uint8)
    flg[:, 1:-1] = flags[:used].reshape(n, content)
    return toks, flg, used


class BlockWriter:
    """Append documents (each followed by the separator) and write every complete block."""

    def __init__(self, directory: Path, split: str, seq_len: int, specials: Specials, dtype) -> None:
        self.seq_len, self.specials, self.dtype = seq_len, specials, dtype
        self.tok_fh = open(directory / f"{split}.tokens.bin", "wb")
        self.flag_fh = open(directory / f"{split}.flags.bin", "wb")
        self.ids: list[np.ndarray] = []
        self.flags: list[np.ndarray] = []
        self.pending = 0
        self.blocks = 0
        self.tokens = 0

    def add(self, ids: np.ndarray, flags: np.ndarray) -> None:
        """``ids``/``flags``: a stream of whole documents, separators included."""
        self.ids.append(ids)
        self.flags.append(flags)
        self.pending += len(ids)
        self.tokens += len(ids)
        if self.pending >= 64 * (self.seq_len - 2):
            self._flush()

    def _flush(self) -> None:
        ids, flags = np.concatenate(self.ids), np.concatenate(self.flags)
        toks, flg, used = cut_blocks(ids, flags, self.seq_len, self.specials, self.dtype)
        self.tok_fh.write(toks.tobytes())
        self.flag_fh.write(flg.tobytes())
        self.blocks += len(toks)
        self.ids, self.flags, self.pending = [ids[used:]], [flags[used:]], len(ids) - used

    def close(self) -> int:
        if self.ids:
            self._flush()  # the incomplete last block is dropped
        self.tok_fh.close()
        self.flag_fh.close()
        return self.blocks


def cut_document_blocks(
    ids: np.ndarray, flags: np.ndarray, starts: np.ndarray, seq_len: int, dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Whole blocks of a stream of wrapped documents (tokens, flags), the offset of every document start
    in each block (a block opening inside a document starts a part of it at 0), their count per block,
    and how many stream tokens the blocks used."""
    n = len(ids) // seq_len
    used = n * seq_len
    toks = ids[:used].reshape(n, seq_len).astype(dtype, copy=False)
    flg = flags[:used].reshape(n, seq_len)
    begins = starts[:used].reshape(n, seq_len).copy()
    begins[:, 0] = True
    rows, offsets = np.nonzero(begins)  # row-major: by block, then by offset
    return toks, flg, offsets.astype(np.uint32), np.bincount(rows, minlength=n), used


class DocumentBlockWriter(BlockWriter):
    """Blocks cut from ``[CLS] document [SEP]`` after ``[CLS] document [SEP]``, with the document starts of
    each block (``{split}.starts.bin``: offsets, ``{split}.starts_index.bin``: where each block's begin)."""

    def __init__(self, directory: Path, split: str, seq_len: int, specials: Specials, dtype) -> None:
        super().__init__(directory, split, seq_len, specials, dtype)
        self.starts_fh = open(directory / f"{split}.starts.bin", "wb")
        self.index_path = directory / f"{split}.starts_index.bin"
        self.starts: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def add(self, ids: np.ndarray, flags: np.ndarray, starts: np.ndarray) -> None:
        """``starts`` marks each document's first token (its ``[CLS]``)."""
        self.starts.append(starts)
        super().add(ids, flags)

    def _flush(self) -> None:
        ids, flags, starts = np.concatenate(self.ids), np.concatenate(self.flags), np.concatenate(self.starts)
        toks, flg, offsets, counts, used = cut_document_blocks(ids, flags, starts, self.seq_len, self.dtype)
        self.tok_fh.write(toks.tobytes())
        self.flag_fh.write(flg.tobytes())
        self.starts_fh.write(offsets.tobytes())
        self.counts.append(counts)
        self.blocks += len(toks)
        self.ids, self.flags, self.starts = [ids[used:]], [flags[used:]], [starts[used:]]
        self.pending = len(ids) - used

    def close(self) -> int:
        blocks = super().close()
        self.starts_fh.close()
        index = np.concatenate([[0], np.cumsum(np.concatenate([np.zeros(0, np.int64), *self.counts]))])
        self.index_path.write_bytes(index.astype(np.int64).tobytes())
        return blocks
