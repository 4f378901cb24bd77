"""Where a finished demo run's time went: job-seconds by rule, jobs per rule, wall time, cores busy.

    python benchmarks/bench_demo.py --directory demo --label before \\
        [--log demo/.snakemake/log/<run>.snakemake.log] [--time-log time.txt] [--note "..."] \\
        [--out benchmarks/results/demo_before.json]
    python benchmarks/bench_demo.py --compare benchmarks/results/demo_before.json benchmarks/results/demo_after.json

Read from the run's own records, nothing re-run:
- Snakemake's log (the newest under ``.snakemake/log/`` unless ``--log``): each job from its start
  to its ``Finished jobid`` line, by rule. Its clock has one-second steps, so a job's figure is
  within a second and a rule's sum over many jobs is good to a fraction of that per job. Wall time
  is Snakemake's start (the log's name) to its last record; "cores busy" is the jobs' threads times
  their seconds over wall time and cores, the fraction of the machine the jobs held.
- Each fine-tuning run's ``metrics.json`` (``runtime_s``, the run's own time from its first line
  to its metrics): the rest of the job's seconds is per-run overhead (Snakemake's scheduling and
  bookkeeping, the shell, the preloaded fork, imports, writing predictions and provenance).
- The per-rule benchmark files (``results/benchmarks/<rule>/``): seconds and CPU seconds.
- Optionally GNU ``time``'s summary for the whole command (``--time-log``): wall, user and system
  CPU (the runs forked from the preloaded interpreter are not its descendants: not counted), and
  ``--process-cpu``, the last line ``epoch utime stime cutime cstime`` (clock ticks) of a sampler
  of Snakemake's ``/proc/<pid>/stat``: the CPU seconds of Snakemake's own process.
Prints a table and writes the figures as JSON; ``--compare`` prints two such files side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
LOG_NAME = re.compile(r"^(\d{4}-\d\d-\d\dT\d{6})")
TIME_LINE = re.compile(r"([\d.]+)user ([\d.]+)system ([\d:.]+)elapsed")
TIME_VERBOSE = re.compile(
    r"User time \(seconds\): ([\d.]+)\s+System time \(seconds\): ([\d.]+).*?"
    r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)",
    re.S,
)


def parse_log(path: Path) -> dict:
    """Jobs (rule, start, end, threads, wildcards) and Snakemake's start and last record."""
    jobs: dict[int, dict] = {}
    stamp = current = None
    last = None
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if m := STAMP.match(line):
            stamp = last = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            current = None
        elif (m := START.match(line)) and stamp is not None:
            current = {"rule": m.group(1), "start": stamp, "threads": 1, "wildcards": {}}
        elif current is not None and line.startswith("jobid: "):
            jobs[int(line.split()[1])] = current
        elif current is not None and line.startswith("threads: "):
            current["threads"] = int(line.split()[1])
        elif current is not None and line.startswith("wildcards: "):
            current["wildcards"] = dict(kv.split("=", 1) for kv in line[len("wildcards: ") :].split(", "))
        elif (m := FINISHED.match(line)) and int(m.group(1)) in jobs:
            jobs[int(m.group(1))]["end"] = stamp
    named = LOG_NAME.match(path.name)
    began = (
        datetime.strptime(named.group(1), "%Y-%m-%dT%H%M%S")
        if named
        else min((j["start"] for j in jobs.values()), default=None)
    )
    return {"jobs": [j for j in jobs.values() if "end" in j], "began": began, "last": last}


def run_dir(wildcards: dict) -> str:
    return "results/finetune/{model}/{task}/fold~{fold}/seed~{seed}".format(**wildcards)


def finetune_own_seconds(directory: Path, jobs: list[dict]) -> dict:
    """Per fine-tuning job: Snakemake's seconds against the run's own ``runtime_s``."""
    pairs = []
    for job in jobs:
        if job["rule"] != "finetune":
            continue
        metrics = directory / run_dir(job["wildcards"]) / "metrics.json"
        if metrics.is_file():
            own = json.loads(metrics.read_text()).get("runtime_s")
            if own is not None:
                pairs.append(((job["end"] - job["start"]).total_seconds(), float(own)))
    if not pairs:
        return {}
    job_s, own_s = zip(*pairs, strict=True)
    return {
        "runs": len(pairs),
        "job_s_median": statistics.median(job_s),
        "job_s_mean": round(statistics.fmean(job_s), 3),
        "own_s_median": statistics.median(own_s),
        "own_s_mean": round(statistics.fmean(own_s), 3),
        "overhead_s_mean": round(statistics.fmean(j - o for j, o in pairs), 3),
        "own_s_total": round(sum(own_s), 1),
    }


def benchmark_files(directory: Path) -> dict:
    """Seconds and CPU seconds summed per rule from Snakemake's ``benchmark:`` files."""
    out: dict[str, dict] = {}
    for tsv in sorted((directory / "results" / "benchmarks").glob("**/*.tsv")):
        rule = tsv.relative_to(directory / "results" / "benchmarks").parts[0]
        lines = tsv.read_text().splitlines()
        if len(lines) < 2:
            continue
        row = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=False))
        entry = out.setdefault(rule, {"files": 0, "s": 0.0, "cpu_s": 0.0})
        entry["files"] += 1
        entry["s"] = round(entry["s"] + float(row.get("s", 0) or 0), 2)
        entry["cpu_s"] = round(entry["cpu_s"] + float(row.get("cpu_time", 0) or 0), 2)
    return out


def gnu_time(path: Path) -> dict:
    """Wall, user and system seconds from GNU time's summary: its default line or ``-v``'s."""
    text = path.read_text(errors="replace")
    if m := TIME_LINE.search(text):
        user, system, wall = m.groups()
    elif m := TIME_VERBOSE.search(text):
        user, system, wall = m.group(1), m.group(2), m.group(3)
    else:
        raise SystemExit(f"{path}: no GNU time summary ('...user ...system ...elapsed' or time -v) found")
    seconds = 0.0
    for part in wall.split(":"):
        seconds = seconds * 60 + float(part)
    return {"wall_s": seconds, "user_s": float(user), "system_s": float(system)}


def process_cpu(path: Path) -> dict:
    """Snakemake's own CPU seconds and its waited-for children's, from a /proc/<pid>/stat sampler."""
    last = path.read_text().split("\n")
    fields = [line.split() for line in last if len(line.split()) == 5][-1]
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(f) / tick for f in fields[1:])
    return {"snakemake_cpu_s": round(utime + stime, 1), "children_cpu_s": round(cutime + cstime, 1)}


def cpu() -> dict:
    """The machine's CPU as /proc/cpuinfo names it: model, family, model number, vector ISA, cores."""
    info: dict[str, str] = {}
    flags: set[str] = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key in ("model name", "cpu family", "model") and key not in info:
                info[key] = value
            elif key == "flags" and not flags:
                flags = set(value.split())
    isa = [name for name in ("avx2", "avx512f") if name in flags]
    return {
        "model_name": info.get("model name", platform.processor()),
        "family": info.get("cpu family"),
        "model": info.get("model"),
        "isa": isa,
        "cores": os.cpu_count(),
    }


def summarise(directory: Path, log: Path, time_log: Path | None, sampled: Path | None) -> dict:
    parsed = parse_log(log)
    jobs = parsed["jobs"]
    if not jobs:
        raise SystemExit(f"{log}: no finished job recorded; pass the log of the run itself (--log)")
    wall = (parsed["last"] - parsed["began"]).total_seconds()
    by_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "job_s": 0.0, "core_s": 0.0})
    for job in jobs:
        seconds = (job["end"] - job["start"]).total_seconds()
        entry = by_rule[job["rule"]]
        entry["jobs"] += 1
        entry["job_s"] += seconds
        entry["core_s"] += seconds * job["threads"]
    cores = os.cpu_count() or 1
    job_s = sum(e["job_s"] for e in by_rule.values())
    core_s = sum(e["core_s"] for e in by_rule.values())
    out = {
        "log": str(log),
        "jobs": len(jobs),
        "wall_s": wall,
        "first_job_s": (min(j["start"] for j in jobs) - parsed["began"]).total_seconds(),
        "job_s": job_s,
        "jobs_running_mean": round(job_s / wall, 3) if wall else None,
        "cores_busy": round(min(core_s, wall * cores) / (wall * cores), 3) if wall else None,
        "by_rule": dict(sorted(by_rule.items(), key=lambda kv: -kv[1]["job_s"])),
        "finetune": finetune_own_seconds(directory, jobs),
        "benchmark_files": benchmark_files(directory),
    }
    if time_log is not None:
        out["command"] = gnu_time(time_log)
    if sampled is not None:
        out.setdefault("command", {}).update(process_cpu(sampled))
    return out


def newest_log(directory: Path) -> Path:
    """The newest Snakemake log with a finished job: ``make demo`` ends with a run that only writes
    the report, whose log has none."""
    for log in sorted((directory / ".snakemake" / "log").glob("*.snakemake.log"), reverse=True):
        if "Finished jobid: " in log.read_text(encoding="utf-8", errors="replace"):
            return log
    raise SystemExit(f"{directory}/.snakemake/log: no Snakemake log with a finished job; run the demo first")


def minutes(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def table(result: dict) -> str:
    rows = ["| rule | jobs | job-seconds | mean s | share |", "|---|---:|---:|---:|---:|"]
    total = result["job_s"] or 1
    for rule, e in result["by_rule"].items():
        rows.append(
            f"| {rule} | {e['jobs']} | {e['job_s']:.0f} | {e['job_s'] / e['jobs']:.2f} | {e['job_s'] / total:.0%} |"
        )
    rows.append(f"| total | {result['jobs']} | {result['job_s']:.0f} | | |")
    lines = [
        f"{result.get('label', '')}: {result['jobs']} jobs, wall {minutes(result['wall_s'])}, "
        f"{result['job_s']:.0f} job-seconds, {result['jobs_running_mean']} jobs running on average, "
        f"cores busy {result['cores_busy']:.0%}",
        *rows,
    ]
    ft = result.get("finetune")
    if ft:
        lines.append(
            f"fine-tuning: {ft['runs']} runs, job {ft['job_s_mean']:.2f} s mean (median {ft['job_s_median']:.0f}), "
            f"the run's own time {ft['own_s_mean']:.2f} s mean (median {ft['own_s_median']:.2f}), "
            f"overhead {ft['overhead_s_mean']:.2f} s a run"
        )
    c = result.get("command", {})
    if "wall_s" in c:
        lines.append(f"command: wall {minutes(c['wall_s'])}, user {c['user_s']:.0f} s, system {c['system_s']:.0f} s")
    if "snakemake_cpu_s" in c:
        lines.append(
            f"Snakemake's own process: {c['snakemake_cpu_s']:.0f} CPU s (jobs it waited for: {c['children_cpu_s']:.0f})"
        )
    return "\n".join(lines)


def compare(before: dict, after: dict) -> str:
    a, b = before.get("label", "before"), after.get("label", "after")
    rows = [f"| rule | jobs {a} | jobs {b} | job-s {a} | job-s {b} | ratio |", "|---|---:|---:|---:|---:|---:|"]
    for rule in dict.fromkeys([*before["by_rule"], *after["by_rule"]]):
        x, y = before["by_rule"].get(rule, {}), after["by_rule"].get(rule, {})
        xs, ys = x.get("job_s", 0.0), y.get("job_s", 0.0)
        ratio = f"{ys / xs:.2f}" if xs else "-"
        rows.append(f"| {rule} | {x.get('jobs', 0)} | {y.get('jobs', 0)} | {xs:.0f} | {ys:.0f} | {ratio} |")
    rows.append(
        f"| total | {before['jobs']} | {after['jobs']} | {before['job_s']:.0f} | {after['job_s']:.0f} "
        f"| {after['job_s'] / before['job_s']:.2f} |"
    )
    rows.append(
        f"| wall | | | {minutes(before['wall_s'])} | {minutes(after['wall_s'])} "
        f"| {after['wall_s'] / before['wall_s']:.2f} |"
    )
    rows.append(f"| cores busy | | | {before['cores_busy']:.0%} | {after['cores_busy']:.0%} | |")
    own = [r.get("command", {}).get("snakemake_cpu_s") for r in (before, after)]
    if None not in own:
        rows.append(f"| Snakemake's own CPU s | | | {own[0]:.0f} | {own[1]:.0f} | {own[1] / own[0]:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--directory", type=Path, default=ROOT / "demo", help="the run's working directory")
    parser.add_argument("--log", type=Path, default=None, help="Snakemake's log (default: the newest)")
    parser.add_argument("--time-log", type=Path, default=None, help="GNU time's output for the whole command")
    parser.add_argument("--process-cpu", type=Path, default=None, help="sampler of Snakemake's /proc/<pid>/stat")
    parser.add_argument("--label", default="run", help="a name for this run (before, after)")
    parser.add_argument("--note", default="", help="how the run was made (load on the machine, the command)")
    parser.add_argument("--out", type=Path, default=None, help="JSON to write")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="two JSON files")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        print(compare(before, after))
        return
    result = {"label": args.label, "note": args.note, "cpu": cpu()}
    result.update(summarise(args.directory, args.log or newest_log(args.directory), args.time_log, args.process_cpu))
    print(table(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
