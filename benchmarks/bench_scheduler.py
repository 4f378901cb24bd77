"""Scheduling on the head node: the full study's settings jobs run under Snakemake's ILP scheduler
beside its greedy one, in one run.

    python benchmarks/bench_scheduler.py [--sizes 250 500 1002] [--repeat 2] [--slurm] [--out FILE]
    python benchmarks/bench_scheduler.py --passes [--ready 1002 5504] [--slots 2 20 200] [--out FILE]

The settings rules are the first jobs of every study: local rules without inputs, run on the
head node, all ready at once (1,002 of them in the full study). Each size takes the first N of
them (`workflow_harness.settings_files`) in a fresh directory holding only the study's config,
and runs them with `--workflow-profile profiles/local` and `--scheduler ilp` or `greedy`,
alternating. Snakemake chooses jobs in a pass over every ready job each time one finishes; the
ILP scheduler writes an integer program over all of them and solves it with CBC (a child process:
its CPU is counted, /usr/bin/time reports waited-for children). Recorded per run: wall and CPU
seconds (user + sys) and the jobs that ran; each measurement is the least CPU of `--repeat`.

`--slurm` runs them as the full study runs them on a cluster: `--profile slurm` (the template
installed as tests/slurm/test_slurm_profile.py installs it, with profiles/default) against a
one-node Slurm started for the run with tests/slurm/start-local-slurm.sh (root, Debian). The
settings rules are local rules, so the head node runs them itself, but Snakemake chooses them
as it chooses cluster jobs: up to the profile's 200 jobs at once, cores unbounded.

`--passes` times one choice alone: Snakemake's own ILP and greedy selectors, called as its job
scheduler calls them, over N ready jobs (the scheduler-plugin interface's `DummyJob`, one core
each) with S slots free (cluster slots: `_nodes`, cores unbounded), at the full study's sizes
(1,002 settings jobs; 5,504 packing jobs ready together). Wall seconds, the CBC child included;
the least of `--repeat`.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "workflow"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "slurm"))
from bench_dag import SNAKEMAKE, cpu_name, measure_once  # noqa: E402
from test_slurm_profile import install_profile  # noqa: E402
from workflow_harness import settings_files  # noqa: E402

from workflow_scripts.config.validate import load_config  # noqa: E402

SCHEDULERS = ("ilp", "greedy")
SLURM = ROOT / "tests" / "slurm"


@contextmanager
def executor(tmp: Path, slurm: bool):
    """The profile arguments of the runs; with `slurm`, a local cluster up while they run."""
    if not slurm:
        yield ["--workflow-profile", str(ROOT / "profiles" / "local")], {}
        return
    cluster = tmp / "cluster"
    started = subprocess.run([str(SLURM / "start-local-slurm.sh"), str(cluster)], capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"start-local-slurm.sh: {started.stdout[-2000:]}{started.stderr[-2000:]}")
    env = {
        "SLURM_CONF": str(cluster / "slurm.conf"),
        "PATH": os.pathsep.join([str(cluster / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "XDG_CONFIG_HOME": str(install_profile(tmp / "xdg")),
    }
    try:
        yield ["--profile", "slurm"], env
    finally:
        subprocess.run([str(SLURM / "stop-local-slurm.sh"), str(cluster), "--purge"], capture_output=True)


def study_files(config: dict) -> list[str]:
    return settings_files(load_config(copy.deepcopy(config), ROOT / "schemas/config.schema.yaml"))


def run_jobs(config: dict, files: list[str], scheduler: str, tmp: Path, timeout: int, profile: tuple) -> dict:
    """One run of `files`' jobs from nothing under `scheduler` (the directory is removed after)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{scheduler}-", dir=tmp))
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ["--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    args += [*profile[0], "--scheduler", scheduler, "--quiet", "all"]
    run = measure_once([*args, "--", *files], workdir, timeout, ROOT, profile[1])
    written = sum((workdir / f).is_file() for f in files)
    shutil.rmtree(workdir)
    if run.get("returncode") != 0 or written != len(files):
        raise SystemExit(f"{scheduler}, {len(files)} jobs: {written} written, {run.get('output', '')[-3000:]}")
    return {key: run[key] for key in ("wall_s", "cpu_s", "peak_rss_mb")} | {"jobs": len(files)}


def bench_size(config: dict, files: list[str], args, tmp: Path, profile: tuple) -> dict:
    runs: dict[str, list[dict]] = {s: [] for s in SCHEDULERS}
    for _ in range(args.repeat):
        for scheduler in SCHEDULERS:
            runs[scheduler].append(run_jobs(config, files, scheduler, tmp, args.timeout, profile))
    best = {s: min(r, key=lambda run: run["cpu_s"]) for s, r in runs.items()}
    row = {"jobs": len(files), **{s: {**best[s], "cpu_s_runs": [r["cpu_s"] for r in runs[s]]} for s in SCHEDULERS}}
    row["ilp_over_greedy"] = round(best["ilp"]["cpu_s"] / best["greedy"]["cpu_s"], 2)
    return row


def one_pass(selector, ready: int, slots: int) -> tuple[float, int]:
    from snakemake.io import AnnotatedString
    from snakemake_interface_scheduler_plugins.tests import DummyJob

    jobs = [
        DummyJob([AnnotatedString(f"in/{i}")], [AnnotatedString(f"out/{i}")], {"_cores": 1, "_nodes": 1})
        for i in range(ready)
    ]
    sizes = {f: 0 for job in jobs for f in job.input}
    free = {"_cores": sys.maxsize, "_nodes": slots, "_job_count": sys.maxsize}
    began = time.perf_counter()
    chosen = selector.select_jobs(jobs, jobs, free, sizes)
    return time.perf_counter() - began, len(chosen)


def bench_passes(ready_sizes: list[int], slot_counts: list[int], repeat: int) -> list[dict]:
    from snakemake.scheduling import greedy, milp
    from snakemake_interface_scheduler_plugins.tests import DummyDAG

    log = logging.getLogger("bench_scheduler")
    selectors = {
        "ilp": milp.Scheduler(DummyDAG(), milp.SchedulerSettings(), log),
        "greedy": greedy.Scheduler(DummyDAG(), greedy.SchedulerSettings(), log),
    }
    rows = []
    for ready in ready_sizes:
        for slots in slot_counts:
            row = {"ready": ready, "slots": slots}
            for name, selector in selectors.items():
                runs = [one_pass(selector, ready, slots) for _ in range(repeat)]
                row[name] = {"pass_s": round(min(r[0] for r in runs), 4), "chosen": runs[0][1]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def passes_table(rows: list[dict]) -> str:
    lines = ["| ready jobs | free slots | ILP pass | greedy pass |", "|---|---|---|---|"]
    for row in rows:
        ilp, greedy = row["ilp"]["pass_s"], row["greedy"]["pass_s"]
        lines.append(f"| {row['ready']:,} | {row['slots']} | {ilp:.3f} s | {greedy:.3f} s |")
    return "\n".join(lines)


def table(result: dict) -> str:
    lines = ["| settings jobs | ILP CPU s | greedy CPU s | ILP / greedy |", "|---|---|---|---|"]
    for row in result["rows"]:
        ilp, greedy = row["ilp"], row["greedy"]
        lines.append(f"| {row['jobs']:,} | {ilp['cpu_s']} | {greedy['cpu_s']} | {row['ilp_over_greedy']}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1002])
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement, the least CPU kept")
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml", help="the study (default: the full one)")
    parser.add_argument("--slurm", action="store_true", help="through --profile slurm on a local cluster")
    parser.add_argument("--passes", action="store_true", help="time single choices instead of runs")
    parser.add_argument("--ready", type=int, nargs="+", default=[1002, 5504], help="--passes: ready jobs")
    parser.add_argument("--slots", type=int, nargs="+", default=[2, 20, 200], help="--passes: free slots")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per snakemake call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scheduler.json")
    args = parser.parse_args(argv)
    result = {
        "benchmark": "scheduler_passes" if args.passes else "scheduler",
        "snakemake": subprocess.run([SNAKEMAKE, "--version"], capture_output=True, text=True).stdout.strip(),
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version()},
    }
    if args.passes:
        result["rows"] = bench_passes(args.ready, args.slots, args.repeat)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(passes_table(result["rows"]))
        return
    config = yaml.safe_load(args.config.read_text())
    files = study_files(config)
    result |= {
        "study": str(args.config),
        "settings_jobs": len(files),
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-scheduler-") as tmp:
        with executor(Path(tmp), args.slurm) as profile:
            result["profile"] = profile[0]
            for size in args.sizes:
                result["rows"].append(bench_size(config, files[:size], args, Path(tmp), profile))
                print(json.dumps(result["rows"][-1]), flush=True)
                args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
