"""What verifying packed shards costs a training job: seconds per GB, and its share of a job.

    python benchmarks/bench_verify.py [--tokens 13600000] [--repeats 5] [--out FILE]

One packed shard of paper size is written (``--tokens`` uint16 token ids and their flags, split
99:1 into train and held-out as the study packs them: a 100 MB shard of PubMed text gives
about 13.6 million tokens, bench_pack.json's 136k tokens per MB). ``verify_blocks`` (the check
training runs when it opens a shard) is timed with its once-per-job memory cleared, side by side
with plain reads of the same bytes (the floor any check must pay) in alternating order; the
files sit in the page cache, as they do after the first of a node's ranks has read them. The
median of the repeats counts.

The job it is compared with is the study's PubMedBERT: 256 PubMed shards packed at 128 and
512 tokens, 62,500 steps of 8,192 sequences, 90% at 128 and 10% at 512. Its duration is a
prediction, not a measurement: BERT-base's 6 x 110M FLOPs per token on 8 H100s at 40% of their
989 TFLOP/s bf16 peak.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workflow_scripts.pack import verify  # noqa: E402

HELDOUT = 0.01
STUDY = {"shards": 256, "seq_lens": [128, 512], "steps": 62_500, "batch": 8192, "mix": {128: 0.9, 512: 0.1}}
PREDICTED = {"gpus": 8, "peak_flops": 989e12, "mfu": 0.40, "flops_per_token": 6 * 110e6}


def write_shard(directory: Path, tokens: int) -> int:
    """A packed shard directory as the pack step writes it; returns its block bytes."""
    rng = np.random.default_rng(0)
    sums, size = {}, 0
    for split, share in (("train", 1 - HELDOUT), ("heldout", HELDOUT)):
        n = int(tokens * share)
        for name, data in zip(
            verify.block_files(split),
            (rng.integers(0, 30522, n, dtype=np.uint16), rng.integers(0, 3, n, dtype=np.uint8)),
            strict=True,
        ):
            data.tofile(directory / name)
            sums[name] = verify.sha256_stream(directory / name)
            size += data.nbytes
    (directory / "meta.json").write_text(json.dumps({"sha256": sums}))
    return size


def plain_read(directory: Path) -> None:
    buf = memoryview(bytearray(verify.CHUNK))
    for split in ("train", "heldout"):
        for name in verify.block_files(split):
            with open(directory / name, "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass


def checked(directory: Path) -> None:
    verify._verified.clear()
    for split in ("train", "heldout"):
        verify.verify_blocks(directory, split)


def timed(fn, directory: Path) -> float:
    start = time.perf_counter()
    fn(directory)
    return time.perf_counter() - start


def predicted_job_seconds() -> float:
    tokens = STUDY["steps"] * STUDY["batch"] * sum(n * f for n, f in STUDY["mix"].items())
    rate = PREDICTED["gpus"] * PREDICTED["peak_flops"] * PREDICTED["mfu"] / PREDICTED["flops_per_token"]
    return tokens / rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=13_600_000, help="tokens in the shard (paper size: 13.6M)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "verify.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        size = write_shard(directory, args.tokens)
        plain_read(directory)  # into the page cache
        runs = {"verify": [], "plain_read": []}
        for r in range(args.repeats):
            order = [("verify", checked), ("plain_read", plain_read)]
            for name, fn in order if r % 2 == 0 else order[::-1]:
                runs[name].append(timed(fn, directory))
    gb = size / 1e9
    per_gb = {k: round(statistics.median(v) / gb, 3) for k, v in runs.items()}
    study_gb = gb * STUDY["shards"] * len(STUDY["seq_lens"])
    verify_s = per_gb["verify"] * study_gb
    job_s = predicted_job_seconds()
    result = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "shard": {"tokens": args.tokens, "block_bytes": size},
        "seconds_per_gb": per_gb,
        "runs_s": {k: [round(x, 4) for x in v] for k, v in runs.items()},
        "study_job": {
            "packed_gb_opened": round(study_gb, 2),
            "verify_seconds": round(verify_s, 1),
            "predicted_job_seconds": round(job_s),
            "prediction": PREDICTED,
            "share_of_job_percent": round(100 * verify_s / job_s, 4),
        },
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
