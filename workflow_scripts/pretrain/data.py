"""The packed-block format pretraining reads, and the order it reads blocks in.

The pack stage (workflow_scripts/pack) writes, per corpus shard, blocks of ``seq_len``
token ids wrapped as ``[CLS] ... [SEP]`` (``<s> ... </s>``) and beside them a flag per
token recording where words start, so whole-word masking works for every tokenizer
family (the flags and the held-out split are defined in workflow_scripts/pack/format.py).
Blocks packed with ``packing: documents`` also carry where each document starts, read here
as position ids that restart at 0 on every document's first token.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import PipelineError
from ..pack.verify import verify_blocks


def restarting_positions(seq_len: int, starts: list[np.ndarray]) -> np.ndarray:
    """Position ids [blocks, seq_len] that restart at 0 at every offset of each block's ``starts``."""
    begins = np.zeros((len(starts), seq_len), dtype=bool)
    for row, offsets in enumerate(starts):
        begins[row, offsets] = True
    column = np.arange(seq_len)
    return column - np.maximum.accumulate(np.where(begins, column, 0), axis=1)


class PackedBlocks:
    """Read-only memory-mapped blocks of one split."""

    def __init__(self, directory: Path, split: str) -> None:
        meta = json.loads((directory / "meta.json").read_text())
        self.seq_len = meta["seq_len"]
        self.n = meta["blocks"][split]
        self.packing = meta.get("packing", "concatenate")
        dtype = np.dtype(meta["dtype"])
        shape = (self.n, self.seq_len)
        if self.n:
            verify_blocks(directory, split)
            self.tokens = np.memmap(directory / f"{split}.tokens.bin", dtype=dtype, mode="r", shape=shape)
            self.flags = np.memmap(directory / f"{split}.flags.bin", dtype=np.uint8, mode="r", shape=shape)
        else:
            self.tokens = np.zeros(shape, dtype=dtype)
            self.flags = np.zeros(shape, dtype=np.uint8)
        if self.packing == "documents":
            self.starts = np.fromfile(directory / f"{split}.starts.bin", dtype=np.uint32)
            self.starts_index = np.fromfile(directory / f"{split}.starts_index.bin", dtype=np.int64)

    def __len__(self) -> int:
        return self.n

    def take(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(indices, kind="stable")  # sorted reads are kinder to the page cache
        toks = np.empty((len(indices), self.seq_len), dtype=np.int64)
        flags = np.empty((len(indices), self.seq_len), dtype=np.uint8)
        toks[order] = self.tokens[indices[order]]
        flags[order] = self.flags[indices[order]]
        return toks, flags

    def positions(self, indices: np.ndarray) -> np.ndarray:
        """Position ids of the blocks ``indices``, restarting at each document (packing: documents)."""
        index = self.starts_index
        return restarting_positions(self.seq_len, [self.starts[index[i] : index[i + 1]] for i in indices])


class PackedCorpus:
    """One split of many packed shards, read in place through their memory maps (an index, no copy)."""

    def __init__(self, directories: Sequence[Path], split: str) -> None:
        self.parts = [PackedBlocks(d, split) for d in directories]
        lengths = {p.seq_len for p in self.parts}
        if len(lengths) != 1:
            raise PipelineError(
                f"{', '.join(map(str, directories))}: shards of different lengths {sorted(lengths)} in one phase"
            )
        self.seq_len = lengths.pop()
        packings = {p.packing for p in self.parts}
        if len(packings) > 1:
            raise PipelineError(f"{', '.join(map(str, directories))}: shards of different packings {sorted(packings)}")
        self.packing = packings.pop() if packings else "concatenate"
        self.offsets = np.cumsum([0] + [len(p) for p in self.parts])
        self.n = int(self.offsets[-1])

    def __len__(self) -> int:
        return self.n

    def take(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        part = np.searchsorted(self.offsets, indices, side="right") - 1
        toks = np.empty((len(indices), self.seq_len), dtype=np.int64)
        flags = np.empty((len(indices), self.seq_len), dtype=np.uint8)
        for k in np.unique(part):
            sel = part == k
            toks[sel], flags[sel] = self.parts[k].take(indices[sel] - self.offsets[k])
        return toks, flags

    def positions(self, indices: np.ndarray) -> np.ndarray | None:
        """Position ids restarting per document where the blocks keep documents apart, else None."""
        if self.packing != "documents":
            return None
        part = np.searchsorted(self.offsets, indices, side="right") - 1
        out = np.empty((len(indices), self.seq_len), dtype=np.int64)
        for k in np.unique(part):
            sel = part == k
            out[sel] = self.parts[k].positions(indices[sel] - self.offsets[k])
        return out


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
