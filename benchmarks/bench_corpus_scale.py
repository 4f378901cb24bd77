"""Deduplication and decontamination at 10k, 100k and 1M documents: documents/s and peak memory.

Synthetic abstracts are composed from a pool of sentences made with the demo generator's
templates (demo/generator/lexicon.py), ten sentences (about 115 words) each. Known
fractions are planted: exact duplicates (5%: a copy of an earlier document, case and
spacing changed), near duplicates (5%: a copy with one word replaced, about 0.92 Jaccard
similarity of 5-word shingles, above the 0.8 threshold) and contaminated documents (1%: one
of 1,000 test examples, written from a separate sentence pool, inserted whole). Each size runs
in its own single-threaded subprocess, which streams the documents through the corpus code the build step uses:

- exact: ``dedup.ExactDedup`` over every document;
- minhash: ``dedup.MinHasher.signature`` (done by the parse jobs in the workflow) into an
  on-disk signature matrix, as build.py keeps it;
- near: ``dedup.find_near_duplicates`` over that matrix (128 permutations, threshold 0.8);
- decontam: ``decontam.NgramIndex`` (13-grams, threshold 0.5) built from the test examples,
  then ``match`` on every document.

Each step's documents/s counts only the time inside that step (document generation is
excluded), as wall time (``docs_per_s``) and as this process's CPU time
(``docs_per_cpu_s``, which other jobs on a shared machine disturb far less);
``peak_rss_mb`` is the subprocess's maximum resident memory (the signature matrix is a
memory-mapped file, as in build.py: its touched pages count). Detected counts are
reported beside the planted ones: a random document can by chance repeat another, so
detection may exceed what was planted by a little.

Usage: python benchmarks/bench_corpus_scale.py [--sizes 10000 100000 1000000]
           [--timeout 900] [--out benchmarks/results/corpus_scale.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_medline_parse import _generator

ROOT = Path(__file__).resolve().parents[1]
SENTENCES_PER_DOC = 10
POOL = 20000
TEST_EXAMPLES = 1000
FRACTIONS = {"exact": 0.05, "near": 0.05, "contaminated": 0.01}


class Corpus:
    """Document i is rebuilt from integer arrays on demand, so 1M documents never sit in memory."""

    def __init__(self, n: int, seed: int = 1) -> None:
        import random

        gen = _generator()
        rng = random.Random(seed)
        self.pool = [gen._sentence(rng) for _ in range(POOL)]
        test_pool = [gen._sentence(random.Random(seed + 1)) for _ in range(TEST_EXAMPLES * 3)]
        self.tests = [" ".join(test_pool[3 * k : 3 * k + 3]) for k in range(TEST_EXAMPLES)]
        self.words = sorted({w for s in self.pool[:2000] for w in s.split() if w.isalpha() and len(w) > 4})
        g = np.random.default_rng(seed)
        self.n = n
        self.sentences = g.integers(0, POOL, size=(n, SENTENCES_PER_DOC), dtype=np.int32)
        self.kind = np.zeros(n, dtype=np.int8)  # 0 unique, 1 exact, 2 near, 3 contaminated
        self.source = np.full(n, -1, dtype=np.int64)
        self.extra = g.integers(0, 1 << 30, size=n, dtype=np.int64)
        start = max(1, n // 100)  # the first documents are originals
        for code, name in enumerate(("exact", "near", "contaminated"), 1):
            free = np.flatnonzero(self.kind[start:] == 0) + start
            chosen = g.choice(free, size=int(FRACTIONS[name] * n), replace=False)
            self.kind[chosen] = code
        # each copy repeats a random earlier unique document
        dup = np.flatnonzero((self.kind == 1) | (self.kind == 2))
        uniques = np.flatnonzero(self.kind == 0)
        self.source[dup] = uniques[self.extra[dup] % np.searchsorted(uniques, dup)]

    def _base(self, i: int) -> list[str]:
        return [self.pool[j] for j in self.sentences[i]]

    def doc(self, i: int) -> str:
        kind = self.kind[i]
        if kind == 1:
            return "  ".join(self._base(int(self.source[i]))).upper()
        if kind == 2:
            words = " ".join(self._base(int(self.source[i]))).split()
            k = int(self.extra[i] % len(words))
            words[k] = self.words[int(self.extra[i] // 7) % len(self.words)]
            return " ".join(words)
        parts = self._base(i)
        if kind == 3:
            parts.insert(int(self.extra[i] % SENTENCES_PER_DOC), self.tests[int(self.extra[i]) % TEST_EXAMPLES])
        return " ".join(parts)


def rates(n: int, kept: int, seconds: dict[str, float]) -> dict[str, int]:
    """Documents per second of each step; steps after exact deduplication see ``kept`` documents."""
    return {
        "exact": round(n / seconds["exact"]),
        "minhash": round(kept / seconds["minhash"]),
        "near": round(kept / seconds["near"]),
        "dedup_total": round(n / (seconds["exact"] + seconds["minhash"] + seconds["near"])),
        "decontam": round(kept / seconds["decontam"]),
    }


def measure(n: int) -> dict:
    """One size, in this process (run by the parent in a subprocess)."""
    from workflow_scripts.corpus.decontam import NgramIndex
    from workflow_scripts.corpus.dedup import ExactDedup, MinHasher, find_near_duplicates

    t0 = time.perf_counter()
    corpus = Corpus(n)
    setup = time.perf_counter() - t0
    exact, hasher = ExactDedup(), MinHasher(128, 5, 1)
    index = NgramIndex(13, 0.5, 8)
    t = time.perf_counter()
    for k, text in enumerate(corpus.tests):
        index.add(text, f"task{k % 3}")
    index_s = time.perf_counter() - t
    # wall and CPU seconds per step: CPU time shows the scaling on a shared machine
    spent = {k: [0.0, 0.0] for k in ("exact", "minhash", "decontam", "near")}
    found = {"exact": 0, "contaminated": 0}

    def clock() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    def add(step: str, since: tuple[float, float]) -> None:
        now = clock()
        spent[step][0] += now[0] - since[0]
        spent[step][1] += now[1] - since[1]

    with tempfile.TemporaryDirectory() as tmp:
        sigs = np.lib.format.open_memmap(Path(tmp) / "minhash.npy", mode="w+", dtype=np.uint32, shape=(n, 128))
        kept = 0
        for i in range(n):
            text = corpus.doc(i)
            t = clock()
            is_dup = exact.is_duplicate(text)
            add("exact", t)
            if is_dup:
                found["exact"] += 1
                continue
            t = clock()
            sigs[kept] = hasher.signature(text)
            add("minhash", t)
            kept += 1
            t = clock()
            hit = index.match(text)
            add("decontam", t)
            found["contaminated"] += hit is not None
        t = clock()
        near = find_near_duplicates(sigs[:kept], 0.8, 1)
        add("near", t)
        found["near"] = int(near.sum())
        del sigs
    planted = {name: int((corpus.kind == code).sum()) for code, name in enumerate(("exact", "near", "contaminated"), 1)}
    return {
        "documents": n,
        "setup_s": round(setup, 2),
        "wall_s": {k: round(v[0], 3) for k, v in spent.items()},
        "cpu_s": {k: round(v[1], 3) for k, v in spent.items()},
        "docs_per_s": rates(n, kept, {k: v[0] for k, v in spent.items()}),
        "docs_per_cpu_s": rates(n, kept, {k: v[1] for k, v in spent.items()}),
        "decontam_index_s": round(index_s, 3),
        "planted": planted,
        "detected": found,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--timeout", type=float, default=900, help="seconds allowed per size")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "corpus_scale.json"))
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    runs = []
    for n in args.sizes:
        t = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(n)],
                capture_output=True,
                text=True,
                env=env,
                timeout=args.timeout,
                check=True,
            )
        except subprocess.TimeoutExpired:
            runs.append({"documents": n, "status": f"not finished within {args.timeout:.0f} s"})
            print(f"{n}: not finished within {args.timeout:.0f} s", flush=True)
            continue
        result = {**json.loads(proc.stdout.strip().splitlines()[-1]), "total_wall_s": round(time.perf_counter() - t, 1)}
        runs.append(result)
        print(json.dumps(result), flush=True)
    out = {
        "benchmark": "corpus_scale",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "python": platform.python_version(),
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
