"""Pack-stage benchmark: one pack job (read a shard, encode, word-start flags, held-out split,
blocks written to disk) beside a plain ``tokenizer(batch)`` on the same text and threads.

    python benchmarks/bench_pack.py [--megabytes 40] [--shard-mb 40] [--threads 1 2] [--repeats 2] [--out FILE]

The corpus is bench_vocab.py's synthetic one (demo lexicon plus a Zipf tail of pseudo-words)
in shards of ``--shard-mb`` (one pack job each; a paper-scale shard holds about 100 MB). A 50k
byte-level BPE and a 30k WordPiece are learned on it by the workflow's vocabulary CLI. For
each vocabulary and thread count a child process (RAYON_NUM_THREADS set) alternates the two
contenders ``--repeats`` times, each with a freshly loaded tokenizer: the plain call encodes
texts already in memory; the pack jobs read each parquet shard, hash it, encode, flag, split
and write their blocks. Rates are MB of text per CPU second (process time over all threads,
so other load on the machine does not distort them), i.e. MB/s per core, and MB per wall
second.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_vocab import VOCABS, synthetic_corpus, train  # noqa: E402

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
import pyarrow.parquet as pq
from transformers import AutoTokenizer
from workflow_scripts.pack.shard import pack_shard
vocab, corpus, seq_len, repeats = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
shards = sorted(corpus.glob("shard~*.parquet"))
texts = [t for s in shards for t in pq.read_table(s, columns=["text"])["text"].to_pylist()]
mb = sum(len(t.encode()) for t in texts) / 1e6
runs = {"plain": [], "pack": []}
tokens = 0


def plain():
    tok = AutoTokenizer.from_pretrained(vocab)  # each contender starts with a cold tokenizer cache
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(0, len(texts), 1024):
        tok(texts[i:i + 1024], add_special_tokens=False)
    return time.process_time() - c0, time.perf_counter() - w0


def pack():
    global tokens
    tok = AutoTokenizer.from_pretrained(vocab)
    with tempfile.TemporaryDirectory() as d:
        c0, w0 = time.process_time(), time.perf_counter()
        metas = [pack_shard(s, tok, seq_len, 0.01, Path(d) / s.stem) for s in shards]
        took = time.process_time() - c0, time.perf_counter() - w0
    tokens = sum(sum(m["tokens"].values()) for m in metas)
    return took


for r in range(repeats):
    # alternate who goes first, so that a drift in the machine's load favours neither
    for name, fn in ((("plain", plain), ("pack", pack)) if r % 2 == 0 else (("pack", pack), ("plain", plain))):
        runs[name].append(fn())
print(json.dumps({"megabytes": mb, "documents": len(texts), "tokens": tokens, "runs": runs}))
"""


def measure(vocab: Path, corpus: str, threads: int, repeats: int, seq_len: int) -> dict:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "TOKENIZERS_PARALLELISM": "true"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(vocab), corpus, str(seq_len), str(repeats)],
                         env=env, capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    mb = r["megabytes"]
    mid = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in r["runs"].items()}
    per_core = {k: round(mb / c, 3) for k, (c, _) in mid.items()}
    return {
        "threads": threads, "megabytes": round(mb, 2), "documents": r["documents"], "tokens": r["tokens"],
        "plain_tokenizer_batch": {"mb_per_cpu_s": per_core["plain"], "mb_per_wall_s": round(mb / mid["plain"][1], 3)},
        "pack_job": {"mb_per_cpu_s": per_core["pack"], "mb_per_wall_s": round(mb / mid["pack"][1], 3)},
        "ratio_per_core": round(per_core["pack"] / per_core["plain"], 3),
        # the same ratio within each repeat: both contenders ran back to back under the same load
        "ratio_per_core_by_repeat": [
            round(plain / pack, 3) for (plain, _), (pack, _) in zip(r["runs"]["plain"], r["runs"]["pack"])
        ],
        "runs_cpu_wall_s": r["runs"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=40.0, help="size of the synthetic corpus")
    parser.add_argument("--shard-mb", type=float, default=40.0, help="text per shard, i.e. per pack job")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/bench_pack.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = synthetic_corpus(work / "corpus", args.megabytes, shard_mb=args.shard_mb)
        result = {
            "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "corpus": {k: v for k, v in corpus.items() if k != "path"}, "seq_len": args.seq_len,
            "vocab_training": {name: train(name, [corpus["path"]], work, max(args.threads)) for name in VOCABS},
        }
        result["encode"] = {
            name: [measure(work / name, corpus["path"], t, args.repeats, args.seq_len) for t in args.threads]
            for name in VOCABS
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
