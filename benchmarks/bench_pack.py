"""Pack-stage benchmark: one pack job (read a shard, encode, word-start flags, held-out split,
blocks written to disk) beside a plain ``tokenizer(batch)`` on the same text and threads.

    python benchmarks/bench_pack.py [--megabytes 40] [--shard-mb 40] [--threads 1 2] [--repeats 3] [--out FILE]

The corpus is bench_vocab.py's synthetic one (demo lexicon plus a Zipf tail of pseudo-words)
in shards of ``--shard-mb`` (one pack job each; a paper-scale shard holds about 100 MB). A 50k
byte-level BPE and a 30k WordPiece are learned on it by the workflow's vocabulary CLI. For
each vocabulary and thread count a child process (RAYON_NUM_THREADS set) runs whole pack jobs
(read each parquet shard, hash it, encode, flag, split, write the blocks) ``--repeats`` times,
and the plain call interleaved with them: each batch of 1,024 documents the job reads is also
encoded by ``tokenizer(batch)`` (a second, freshly loaded tokenizer), before or after the job's
own work on it in turn, and that time is taken out of the job's. So both contenders run on
the same text under the same load, second by second. Rates are MB of text per CPU second
(process time over all threads), i.e. MB/s per core, and MB per wall second; the median of
the repeats counts.
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
from transformers import AutoTokenizer
from workflow_scripts.pack import pack
vocab, corpus, seq_len, repeats = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
shards = sorted(corpus.glob("shard~*.parquet"))
read_batches = pack.iter_batches
runs = {"plain": [], "pack": []}
mb = documents = tokens = 0


def with_plain(tok, spent):
    # the plain call on each batch the pack job reads, before or after the job's own work on it in turn
    def batches(shard, *args, **kwargs):
        for n, (ids, texts) in enumerate(read_batches(shard, *args, **kwargs)):
            if n % 2:
                yield ids, texts
            c0, w0 = time.process_time(), time.perf_counter()
            tok(texts, add_special_tokens=False)
            spent[0] += time.process_time() - c0
            spent[1] += time.perf_counter() - w0
            if not n % 2:
                yield ids, texts
    return batches


for _ in range(repeats):
    # fresh tokenizers: each contender starts with a cold cache
    tok, spent = AutoTokenizer.from_pretrained(vocab), [0.0, 0.0]
    pack.iter_batches = with_plain(AutoTokenizer.from_pretrained(vocab), spent)
    with tempfile.TemporaryDirectory() as d:
        c0, w0 = time.process_time(), time.perf_counter()
        metas = [pack.pack_shard(s, tok, seq_len, 0.01, Path(d) / s.stem) for s in shards]
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    runs["plain"].append(tuple(spent))
    runs["pack"].append((cpu - spent[0], wall - spent[1]))
    tokens = sum(sum(m["tokens"].values()) for m in metas)
    documents = sum(m["documents"] for m in metas)
texts = [t for s in shards for _, batch in read_batches(s) for t in batch]
mb = sum(len(t.encode()) for t in texts) / 1e6
print(json.dumps({"megabytes": mb, "documents": documents, "tokens": tokens, "runs": runs}))
"""


def measure(vocab: Path, corpus: str, threads: int, repeats: int, seq_len: int) -> dict:
    env = {
        **os.environ,
        "RAYON_NUM_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "true",
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(vocab), corpus, str(seq_len), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    mb = r["megabytes"]
    mid = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in r["runs"].items()}
    per_core = {k: round(mb / c, 3) for k, (c, _) in mid.items()}
    return {
        "threads": threads,
        "megabytes": round(mb, 2),
        "documents": r["documents"],
        "tokens": r["tokens"],
        "plain_tokenizer_batch": {"mb_per_cpu_s": per_core["plain"], "mb_per_wall_s": round(mb / mid["plain"][1], 3)},
        "pack_job": {"mb_per_cpu_s": per_core["pack"], "mb_per_wall_s": round(mb / mid["pack"][1], 3)},
        "ratio_per_core": round(per_core["pack"] / per_core["plain"], 3),
        # the same ratio within each repeat: both contenders ran back to back under the same load
        "ratio_per_core_by_repeat": [
            round(plain / pack, 3) for (plain, _), (pack, _) in zip(r["runs"]["plain"], r["runs"]["pack"], strict=True)
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
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "corpus": {k: v for k, v in corpus.items() if k != "path"},
            "seq_len": args.seq_len,
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
