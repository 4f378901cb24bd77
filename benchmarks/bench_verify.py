"""What verifying packed shards costs a training job, and checkpoints a fine-tuning run.

    python benchmarks/bench_verify.py [--tokens 13600000] [--repeats 5] [--out FILE]
    python benchmarks/bench_verify.py --checkpoints [--repeats 5] [--out FILE]

``--checkpoints`` writes a checkpoint directory per size of BERT-base's and BERT-large's
``model.safetensors`` (440,449,768 and 1,340,675,298 bytes of random data, with a config and a
tokenizer) and its provenance record, and times ``verify_checkpoint`` as a fine-tuning run calls
it, with nothing verified before, side by side with plain reads of the same files, alternating;
then the check of a later run in the same Slurm allocation, which finds the allocation's marker
and hashes nothing. The files sit in the page cache. A cluster file system's first read is a
prediction from an assumed read bandwidth (``--bandwidth-gbs``), not a measurement.

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

from workflow_scripts import checkpoint_integrity as checkpoint_verify  # noqa: E402
from workflow_scripts import provenance  # noqa: E402
from workflow_scripts.pack import verify  # noqa: E402

HELDOUT = 0.01
STUDY = {"shards": 256, "seq_lens": [128, 512], "steps": 62_500, "batch": 8192, "mix": {128: 0.9, 512: 0.1}}
PREDICTED = {"gpus": 8, "peak_flops": 989e12, "mfu": 0.40, "flops_per_token": 6 * 110e6}
CHECKPOINTS = {"bert-base": 440_449_768, "bert-large": 1_340_675_298}  # model.safetensors of the uncased models
STUDY_RUNS = 7_920
RUNS_PER_ALLOCATION = 20  # resources.finetune group size in config.yaml


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


def write_checkpoint(directory: Path, weights: int) -> None:
    """A checkpoint directory of ``weights`` bytes of weights, recorded as pretraining records it."""
    directory.mkdir()
    rng = np.random.default_rng(0)
    with open(directory / "model.safetensors", "wb") as fh:
        for start in range(0, weights, 64 << 20):
            fh.write(rng.bytes(min(64 << 20, weights - start)))
    (directory / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    (directory / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {f"w{i}": i for i in range(30522)}}}))
    files = sorted(p for p in directory.iterdir())
    provenance.record(directory, step="bench", inputs={}, outputs=files)


def plain_read_files(directory: Path) -> None:
    buf = memoryview(bytearray(verify.CHUNK))
    for p in directory.iterdir():
        with open(p, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass


def verified(directory: Path) -> None:
    checkpoint_verify._verified.clear()
    checkpoint_verify.verify_checkpoint(directory, "--model")


def checkpoint_rows(repeats: int, bandwidth: float) -> dict:
    """Seconds per check of each checkpoint: hashed, plain read, reused within an allocation."""
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(TMPDIR=tmp)
        for name, weights in CHECKPOINTS.items():
            directory = Path(tmp) / name
            write_checkpoint(directory, weights)
            plain_read_files(directory)
            runs = {"verify": [], "plain_read": [], "reused_in_allocation": []}
            for r in range(repeats):
                order = [("verify", verified), ("plain_read", plain_read_files)]
                for key, fn in order if r % 2 == 0 else order[::-1]:
                    runs[key].append(timed(fn, directory))
                os.environ["SLURM_JOB_ID"] = f"bench-{r}"
                verified(directory)  # the allocation's first run
                runs["reused_in_allocation"].append(timed(verified, directory))
                del os.environ["SLURM_JOB_ID"]
            median = {k: statistics.median(v) for k, v in runs.items()}
            gb = weights / 1e9
            cold = gb / bandwidth + median["verify"]
            rows[name] = {
                "weights_bytes": weights,
                "seconds": {k: round(v, 3) for k, v in median.items()},
                "seconds_per_gb_hashed": round(median["verify"] / gb, 3),
                "runs_s": {k: [round(x, 4) for x in v] for k, v in runs.items()},
                "predicted_cluster_first_read_s": round(cold, 2),
                "study_every_run_hours": round(STUDY_RUNS * median["verify"] / 3600, 2),
                "study_once_per_allocation_hours": round(STUDY_RUNS / RUNS_PER_ALLOCATION * cold / 3600, 2),
            }
    return {
        "assumed_cluster_read_gb_per_s": bandwidth,
        "study_runs": STUDY_RUNS,
        "runs_per_allocation": RUNS_PER_ALLOCATION,
        "checkpoints": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=13_600_000, help="tokens in the shard (paper size: 13.6M)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--checkpoints", action="store_true", help="time checkpoint verification instead")
    ap.add_argument("--bandwidth-gbs", type=float, default=1.0, help="assumed cluster read bandwidth per client")
    ap.add_argument("--out", help="result file (default: benchmarks/results/verify.json or verify_checkpoints.json)")
    args = ap.parse_args()
    if args.checkpoints:
        result = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}
        result.update(checkpoint_rows(args.repeats, args.bandwidth_gbs))
        out = Path(args.out or ROOT / "benchmarks" / "results" / "verify_checkpoints.json")
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return
    args.out = args.out or str(ROOT / "benchmarks" / "results" / "verify.json")
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
