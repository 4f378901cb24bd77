"""Exact and near-duplicate detection; the first occurrence in corpus order is kept.

Exact duplicates are found in the stream by a digest of the normalised text. Near
duplicates take a batch step: MinHash signatures of word shingles (stored on disk by the
caller) are cut into bands; documents whose band hashes collide are candidates, and a
candidate is a near duplicate when its estimated Jaccard similarity with the earliest
document of the bucket reaches the threshold. Each band is one sort, so time grows as
n log n and memory with one band of hashes, not with the corpus.
"""

from __future__ import annotations

import hashlib
import zlib

import numpy as np

from .text import normalise, word_tokens

_PRIME = np.uint64((1 << 61) - 1)
_MAX = np.uint64((1 << 32) - 1)
CHUNK = 1 << 16


class ExactDedup:
    def __init__(self) -> None:
        self.seen: set[bytes] = set()

    def is_duplicate(self, text: str) -> bool:
        key = hashlib.blake2b(normalise(text).encode("utf-8"), digest_size=16).digest()
        if key in self.seen:
            return True
        self.seen.add(key)
        return False


def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """Bands and rows per band whose S-curve midpoint (1/b)^(1/r) is nearest the threshold."""
    best = (1, num_perm)
    best_err = float("inf")
    for r in range(1, num_perm + 1):
        b = num_perm // r
        err = abs((1.0 / b) ** (1.0 / r) - threshold)
        if err < best_err:
            best, best_err = (b, r), err
    return best


def minhash_params(opts) -> dict:
    """What a stored signature depends on; signatures are reused only when these match."""
    return {"num_perm": opts.num_perm, "shingle": opts.shingle, "seed": opts.seed, "tokens": "word_tokens-v1"}


class MinHasher:
    def __init__(self, num_perm: int = 128, shingle: int = 5, seed: int = 1) -> None:
        self.num_perm, self.shingle = num_perm, shingle
        gen = np.random.RandomState(seed)
        self.a = gen.randint(1, (1 << 32) - 1, size=num_perm, dtype=np.uint64)
        self.b = gen.randint(0, (1 << 32) - 1, size=num_perm, dtype=np.uint64)

    def signature(self, text: str) -> np.ndarray:
        toks = word_tokens(text)
        k = self.shingle
        grams = {" ".join(toks[i : i + k]) for i in range(max(1, len(toks) - k + 1))}
        hv = np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64, count=len(grams))
        with np.errstate(over="ignore"):
            ph = ((hv[:, None] * self.a[None, :] + self.b[None, :]) % _PRIME) & _MAX
        return ph.min(axis=0).astype(np.uint32)


def _band_keys(sigs: np.ndarray, cols: slice, mult: np.ndarray) -> np.ndarray:
    keys = np.empty(len(sigs), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, len(sigs), CHUNK):
            block = np.asarray(sigs[start : start + CHUNK, cols], dtype=np.uint64)
            keys[start : start + CHUNK] = (block * mult[None, :]).sum(axis=1)
    return keys


def find_near_duplicates(sigs: np.ndarray, threshold: float, seed: int = 1) -> np.ndarray:
    """Boolean mask over the rows of ``sigs`` (n x num_perm, in corpus order, may be a
    memmap): True where a row nearly repeats an earlier one."""
    n, num_perm = sigs.shape
    dup = np.zeros(n, dtype=bool)
    if n < 2:
        return dup
    bands, rows = lsh_params(threshold, num_perm)
    mult = np.random.RandomState(seed + 7919).randint(1, 1 << 62, size=rows, dtype=np.uint64) | np.uint64(1)
    idx = np.arange(n)
    for b in range(bands):
        keys = _band_keys(sigs, slice(b * rows, (b + 1) * rows), mult)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        starts = np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]])
        first = order[np.maximum.accumulate(np.where(starts, idx, 0))]
        cand, ref = order[~starts], first[~starts]
        for s in range(0, len(cand), CHUNK):
            c, r = cand[s : s + CHUNK], ref[s : s + CHUNK]
            similar = (np.asarray(sigs[c]) == np.asarray(sigs[r])).mean(axis=1) >= threshold
            dup[c[similar]] = True
    return dup
