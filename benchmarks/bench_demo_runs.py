"""Fine-tuning runs of a finished demo, re-run under two source trees side by side.

    python benchmarks/bench_demo_runs.py --demo /tmp/demo_copy --model demo-roberta \\
        --tree before=/tmp/src_before --tree after=. --out benchmarks/results/demo_runs.json

Each run is re-run the way the demo runs it: forked from an interpreter that has already imported
torch and transformers (``workflow_scripts.preload``), one thread, the CPU kernels pinned to AVX2
as the demo pins them. The trees run in turn, in the order before, after, after, before (``--passes
4``), so drift on a shared machine weighs on both; each run's CPU seconds (the fork's user +
system) and wall seconds are recorded, and its metrics.json (dev, test, history) and
predictions.jsonl are compared with the finished demo's. ``--demo`` must be a copy: the runs
write under the system's temporary directory, but read the demo's feature cache.

With ``--command`` each run is instead the rule's own command (``python -m workflow_scripts.preload
workflow_scripts.finetune.finetune ...``, ``WORKFLOW_PRELOAD=1``, each tree its own server, started
before the first pass): the command's wall seconds, the run's own ``runtime_s``, and the rest, the
per-run overhead (the client, the server's forks, imports, writing, reporting the status). The runs'
CPU is not counted there: they are not the command's descendants.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_demo import cpu  # the same CPU record as a whole demo's

PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
COMPARED = ("dev", "test", "history", "best_step", "steps")

# Runs in one interpreter per tree and pass, each in a fork after the preloads, as the preload server runs them.
WORKER = r"""
import json, os, sys, time
from workflow_scripts.preload import preloads
preloads()
for argv, out in json.loads(sys.argv[1]):
    argv = [*argv, "--out", out]
    wall, before = time.perf_counter(), os.times()
    pid = os.fork()
    if pid == 0:
        import logging
        logging.disable(logging.INFO)
        from workflow_scripts.cli import run
        from workflow_scripts.finetune import finetune
        run(finetune.main, argv)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    after = os.times()
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    print(json.dumps({"out": out, "status": status, "cpu_s": cpu, "wall_s": time.perf_counter() - wall}), flush=True)
"""


def runs(demo: Path, model: str) -> list[tuple[Path, list[str]]]:
    """Each fold-0 run of ``model`` (a directory under results/finetune, e.g. ``demo-roberta`` or
    ``demo-roberta-m3/pseed~42``) in the finished demo: its directory and its command's arguments
    (from its provenance), less ``--out``."""
    found = []
    for path in sorted((demo / "results/finetune" / model).glob("*/fold~0/seed~*/metrics.json")):
        args = json.loads((path.parent / "provenance.json").read_text())["command"].split()
        args = args[args.index("--settings") :]
        k = args.index("--out")
        found.append((path.parent, args[:k] + args[k + 2 :]))
    return found


def run_pass(tree: Path, demo: Path, jobs, out_root: Path) -> list[dict]:
    spec = [(argv, str(out_root / str(i))) for i, (_, argv) in enumerate(jobs)]
    env = {**os.environ, **PINS, "PYTHONPATH": str(tree.resolve())}
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(spec)],
        cwd=demo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


def run_commands(tree: Path, demo: Path, jobs, out_root: Path, server_dir: Path) -> list[dict]:
    preload = {"WORKFLOW_PRELOAD": "1", "TMPDIR": str(server_dir), "WORKFLOW_PRELOAD_IDLE": "30"}  # leave soon after
    env = {**os.environ, **PINS, "PYTHONPATH": str(tree.resolve()), **preload}
    records = []
    for i, (_, argv) in enumerate(jobs):
        out = out_root / str(i)
        command = [sys.executable, "-m", "workflow_scripts.preload", "workflow_scripts.finetune.finetune", *argv]
        start = time.perf_counter()
        done = subprocess.run([*command, "--out", str(out)], cwd=demo, env=env, capture_output=True, check=False)
        wall = time.perf_counter() - start
        own = json.loads((out / "metrics.json").read_text())["runtime_s"] if done.returncode == 0 else 0.0
        records.append(
            {"out": str(out), "status": done.returncode, "wall_s": wall, "runtime_s": own, "overhead_s": wall - own}
        )
    return records


def same_as_demo(out: Path, finished: Path) -> bool:
    new, old = (json.loads((p / "metrics.json").read_text()) for p in (out, finished))
    predictions = (out / "predictions.jsonl").read_bytes() == (finished / "predictions.jsonl").read_bytes()
    return predictions and all(new.get(k) == old.get(k) for k in COMPARED)


def summary(records: list[dict]) -> dict:
    if "overhead_s" in records[0]:
        overhead = [r["overhead_s"] for r in records]
        return {
            "runs": len(records),
            "wall_s": round(sum(r["wall_s"] for r in records), 2),
            "overhead_s": round(sum(overhead), 2),
            "median_overhead_s": round(statistics.median(overhead), 3),
        }
    cpu = [r["cpu_s"] for r in records]
    return {"runs": len(records), "cpu_s": round(sum(cpu), 2), "median_cpu_s": round(statistics.median(cpu), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--demo", required=True, type=Path, help="a copy of a finished demo directory")
    parser.add_argument("--model", required=True, help="the model whose fold-0 runs are re-run")
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH, twice: before, then after")
    parser.add_argument("--passes", type=int, default=4, help="passes over the runs, alternating ABBA")
    parser.add_argument("--command", action="store_true", help="each run as the rule's command, through the preload")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    labels = list(trees)
    jobs = runs(args.demo, args.model)
    order = [labels[0] if p % 4 in (0, 3) else labels[1] for p in range(args.passes)]
    by_tree: dict[str, list[dict]] = {label: [] for label in labels}
    identical = {label: True for label in labels}
    with tempfile.TemporaryDirectory() as tmp:
        servers = {label: Path(tmp) / f"server-{label}" for label in labels}
        if args.command:  # each tree's server started (and its first run, which imports, left out)
            for label in labels:
                servers[label].mkdir()
                run_commands(Path(trees[label]), args.demo, jobs[:1], Path(tmp) / f"warm-{label}", servers[label])
        for p, label in enumerate(order):
            out_root = Path(tmp) / f"{p}-{label}"
            if args.command:
                records = run_commands(Path(trees[label]), args.demo, jobs, out_root, servers[label])
            else:
                records = run_pass(Path(trees[label]), args.demo, jobs, out_root)
            for (finished, _), record in zip(jobs, records, strict=True):
                record.update(task=finished.parts[-3], seed=finished.name.split("~")[1], pass_=p)
                identical[label] &= record["status"] == 0 and same_as_demo(Path(record["out"]), finished)
                del record["out"]
            by_tree[label] += records
            print(f"pass {p} {label}: {summary(records)}", flush=True)
    tasks = sorted({finished.parts[-3] for finished, _ in jobs})
    figure = "overhead_s" if args.command else "cpu_s"
    result = {
        "model": args.model,
        "mode": "command" if args.command else "fork",
        "cpu": cpu(),
        "load_average": os.getloadavg(),
        "order": order,
        "trees": {
            label: {"path": trees[label], **summary(rs), "identical_to_demo": identical[label]}
            for label, rs in by_tree.items()
        },
        f"by_task_{figure}": {
            task: {label: round(sum(r[figure] for r in rs if r["task"] == task), 2) for label, rs in by_tree.items()}
            for task in tasks
        },
        "runs": by_tree,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    before, after = (result["trees"][label][figure] for label in labels)
    unit = "s of overhead" if args.command else "CPU s"
    print(f"{labels[0]} {before:.1f} {unit}, {labels[1]} {after:.1f} {unit} ({after / before - 1:+.1%})")


if __name__ == "__main__":
    main()
