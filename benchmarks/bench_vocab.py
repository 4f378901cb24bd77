"""Vocabulary benchmark: training time and peak memory of a 50k byte-level BPE and a 30k WordPiece,
and encode throughput of the pretraining tokenisation of corpus shards beside a plain tokenizer(batch).

    python benchmarks/bench_vocab.py [--megabytes 100] [--corpus DIR ...] [--threads 1] [--out FILE]

Without ``--corpus`` it writes a synthetic corpus of ``--megabytes`` of text: biomedical
sentences from the demo lexicon mixed with pseudo-words drawn from a Zipf distribution
over 300,000 syllable-built word forms, so that a 50k vocabulary has the long tail of
rare words it meets on PubMed. Each training run is a separate process (the CLI the
workflow runs) and its peak resident memory is read from ``wait4``. Encode throughput is
measured in a child process with ``--threads`` threads, as MB of text per CPU second (process
time summed over its threads, so other load on the machine does not distort it): MB/s per core.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[1]
SYLLABLES = [
    "ab",
    "ac",
    "al",
    "am",
    "an",
    "ar",
    "ba",
    "be",
    "bi",
    "ca",
    "ce",
    "ci",
    "co",
    "da",
    "de",
    "di",
    "do",
    "el",
    "en",
    "er",
    "es",
    "fa",
    "fi",
    "ga",
    "ge",
    "gi",
    "ha",
    "he",
    "hy",
    "id",
    "il",
    "in",
    "io",
    "is",
    "ka",
    "la",
    "le",
    "li",
    "lo",
    "ma",
    "me",
    "mi",
    "mo",
    "na",
    "ne",
    "ni",
    "no",
    "ol",
    "om",
    "on",
    "or",
    "os",
    "pa",
    "pe",
    "ph",
    "pi",
    "po",
    "ra",
    "re",
    "ri",
    "ro",
    "sa",
    "se",
    "si",
    "ta",
    "te",
    "ti",
    "to",
    "tr",
    "ul",
    "um",
    "un",
    "ur",
    "va",
    "ve",
    "vi",
    "xa",
    "yl",
    "za",
    "zo",
]
VOCABS = {
    "bpe50k": {"algorithm": "bpe", "size": 50265, "family": "roberta", "lowercase": False},
    "wordpiece30k": {"algorithm": "wordpiece", "size": 30522, "family": "bert", "lowercase": True},
}


def synthetic_corpus(directory: Path, megabytes: float, seed: int = 0, shard_mb: float = 25.0) -> dict:
    spec = importlib.util.spec_from_file_location("demo_lexicon", ROOT / "demo/generator/lexicon.py")
    lx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lx)
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    forms = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(2, 5))) for _ in range(400_000)})[:300_000]
    rng.shuffle(forms)
    weights = 1.0 / np.arange(1, len(forms) + 1) ** 1.1
    weights /= weights.sum()
    entities = lx.DISEASES + lx.CHEMICALS + lx.GENES + lx.SPECIES + lx.CELLS + lx.ORGANS

    def document() -> str:
        words = [forms[i] for i in nprng.choice(len(forms), size=int(nprng.integers(80, 250)), p=weights)]
        for _ in range(len(words) // 12):
            words.insert(int(nprng.integers(0, len(words))), rng.choice(entities))
        sentences = [" ".join(words[i : i + 15]).capitalize() + "." for i in range(0, len(words), 15)]
        return " ".join(sentences)

    directory.mkdir(parents=True, exist_ok=True)
    target, shard, total, docs = megabytes * 1e6, 0, 0, 0
    while total < target:
        texts, size = [], 0
        while size < shard_mb * 1e6 and total + size < target:
            texts.append(document())
            size += len(texts[-1].encode())
        pq.write_table(
            pa.table(
                {
                    "id": [f"s{shard}-{i}" for i in range(len(texts))],
                    "source": ["synthetic"] * len(texts),
                    "text": texts,
                }
            ),
            directory / f"shard~{shard}.parquet",
        )
        total, docs, shard = total + size, docs + len(texts), shard + 1
    return {"path": str(directory), "bytes": total, "documents": docs, "shards": shard}


def train(name: str, corpora: list[str], work: Path, threads: int) -> dict:
    settings = work / f"{name}.yaml"
    settings.write_text(yaml.safe_dump({"vocab": {"name": name, "train": {**VOCABS[name], "threads": threads}}}))
    cmd = [
        sys.executable,
        "-m",
        "workflow_scripts.vocab.train_vocab",
        "--settings",
        str(settings),
        "--corpus",
        *corpora,
        "--out",
        str(work / name),
    ]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{name}: training failed: {proc.stderr.read()[-2000:]}")
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        **VOCABS[name],
    }


ENCODE_CHILD = r"""
import json, os, sys, tempfile, time
from pathlib import Path
from transformers import AutoTokenizer
import pyarrow.parquet as pq
from workflow_scripts.pack.pack import pack_shard
vocab, corpora, seq_len = sys.argv[1], sys.argv[2:-1], int(sys.argv[-1])
tok = AutoTokenizer.from_pretrained(vocab)
shards = [s for c in corpora for s in sorted(Path(c).glob("shard~*.parquet"))]
texts = [t for s in shards for t in pq.read_table(s, columns=["text"])["text"].to_pylist()]
mb = sum(len(t.encode()) for t in texts) / 1e6
t0 = time.process_time()
for i in range(0, len(texts), 512):
    tok(texts[i:i + 512], add_special_tokens=False)
plain = time.process_time() - t0
with tempfile.TemporaryDirectory() as d:
    t0 = time.process_time()
    for c in corpora:
        for s in sorted(Path(c).glob("shard~*.parquet")):
            pack_shard(s, tok, seq_len, 0.01, Path(d) / Path(c).name / s.stem)
    ours = time.process_time() - t0
print(json.dumps({"megabytes": mb, "plain_seconds": plain, "pretrain_pack_seconds": ours}))
"""


def encode(vocab: Path, corpora: list[str], threads: int, seq_len: int = 128) -> dict:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run(
        [sys.executable, "-c", ENCODE_CHILD, str(vocab), *corpora, str(seq_len)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {
        "megabytes": round(r["megabytes"], 2),
        "threads": threads,
        "plain_tokenizer_batch_mb_per_cpu_s": round(r["megabytes"] / r["plain_seconds"], 3),
        "pretrain_packing_mb_per_cpu_s": round(r["megabytes"] / r["pretrain_pack_seconds"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=100.0, help="size of the synthetic corpus")
    parser.add_argument("--corpus", nargs="*", default=[], help="corpus directories to use instead")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/bench_vocab.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = {"paths": args.corpus} if args.corpus else synthetic_corpus(work / "corpus", args.megabytes)
        corpora = args.corpus or [corpus["path"]]
        result = {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "corpus": {k: v for k, v in corpus.items() if k != "path"},
            "train": {name: train(name, corpora, work, args.threads) for name in VOCABS},
        }
        result["encode"] = {name: encode(work / name, corpora, args.threads) for name in VOCABS}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
