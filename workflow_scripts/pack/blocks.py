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
