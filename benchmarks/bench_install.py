"""``make install`` from nothing in two trees, side by side: wall time, CPU and byte-compiled modules.

    python benchmarks/bench_install.py --tree before=/tmp/clone_before --tree after=/tmp/clone_after \\
        [--rounds 2] [--out benchmarks/results/install.json]

Each tree is a clone of the workflow (its ``.venv`` is deleted before every run). The runs alternate
before, after, after, before for each round, so that drifting load hits both alike; pip reads the
same package cache for both. CPU is user plus system time of ``make`` and everything it waited for.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dag import cpu_name  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def install_once(tree: Path) -> dict:
    """One ``make install`` in ``tree`` from no venv at all."""
    shutil.rmtree(tree / ".venv", ignore_errors=True)
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(["make", "install"], cwd=tree, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode:
        sys.exit(f"error: make install failed in {tree}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    compiled = sum(1 for _ in (tree / ".venv" / "lib").rglob("*.pyc"))
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "pyc_files": compiled}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH, twice: before, then after")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    trees = dict(item.split("=", 1) for item in args.tree)
    if len(trees) != 2:
        parser.error("--tree twice: LABEL=PATH for before and for after")
    first, second = trees
    order = [first, second, second, first] * args.rounds
    runs = {label: [] for label in trees}
    for label in order:
        run = install_once(Path(trees[label]))
        runs[label].append(run)
        print(f"{label}: {run['wall_s']} s wall, {run['cpu_s']} CPU s, {run['pyc_files']} .pyc", flush=True)
    median = {label: statistics.median(r["wall_s"] for r in rs) for label, rs in runs.items()}
    result = {
        "cpu": cpu_name(),
        "trees": trees,
        "order": order,
        "runs": runs,
        "median_wall_s": median,
        "speedup": round(median[first] / median[second], 2),
    }
    print(f"median wall: {first} {median[first]:.1f} s, {second} {median[second]:.1f} s ({result['speedup']}x)")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
