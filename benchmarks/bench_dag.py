"""DAG scale: `snakemake -n` of the full study and a no-op rerun after completion, beside a
bare synthetic Snakefile with the same number of jobs per stage, at 1x, 4x and 16x the jobs.

    python benchmarks/bench_dag.py [--scales 1 4 16] [--timeout 1800] [--out FILE]

Scale k multiplies the PubMed update/baseline file ranges, the PMC batches and every task's
seeds by k, so downloads, parses and fine-tuning runs grow k-fold (models, vocabularies,
corpora and tasks stay as configured). The bare Snakefile mirrors the study's DAG stage by
stage (downloads -> parses -> corpora -> vocabularies -> models -> task data -> fine-tuning
fan-out -> tables) with the job counts of our dry run and `touch` shells, no config parsing
and no input functions beyond index arithmetic.

"After completion" is reproduced for both workflows the same way: every output file of the
dry run is created, in dependency order with increasing mtimes, and no run metadata is
written (so both decide by file existence and mtimes). Each snakemake is its own process;
wall seconds, CPU seconds (user+sys, from wait4, so other load on the machine matters less)
and peak RSS are recorded. The ratio is ours / bare on CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

BARE = """\
N = config["n"]
FETCH, PARSE, SETTINGS, CORPUS = N["fetch"], N["parse"], N["settings"], N["corpus"]
VOCAB, MODEL, TASK, FINETUNE, REPORT = N["vocab"], N["model"], N["task"], N["finetune"], N["report"]


rule all:
    input:
        expand("out/report/{r}.txt", r=range(REPORT - 1)),


rule fetch:
    output:
        "out/raw/{i}.txt",
    shell:
        "touch {output}"


rule parse:
    input:
        "out/raw/{i}.txt",
    output:
        "out/parsed/{i}.txt",
    shell:
        "touch {output}"


rule settings:
    output:
        "out/settings/{i}.yaml",
    shell:
        "touch {output}"


rule corpus:
    input:
        parsed=lambda w: expand("out/parsed/{i}.txt", i=range(int(w.c), PARSE, CORPUS)),
        settings="out/settings/{c}.yaml",
    output:
        "out/corpus/{c}.txt",
    shell:
        "touch {output}"


rule vocab:
    input:
        lambda w: f"out/corpus/{int(w.v) % CORPUS}.txt",
    output:
        "out/vocab/{v}.txt",
    shell:
        "touch {output}"


rule model:
    input:
        lambda w: f"out/vocab/{int(w.m) % VOCAB}.txt",
    output:
        "out/model/{m}.txt",
    shell:
        "touch {output}"


rule task:
    input:
        lambda w: expand("out/raw/{i}.txt", i=range(PARSE + int(w.t), FETCH, TASK)),
    output:
        "out/task/{t}.txt",
    shell:
        "touch {output}"


rule finetune:
    input:
        settings=lambda w: f"out/settings/{int(w.j) % SETTINGS}.yaml",
        model=lambda w: f"out/model/{int(w.j) % MODEL}.txt",
        task=lambda w: f"out/task/{int(w.j) % TASK}.txt",
    output:
        "out/finetune/{j}/metrics.json",
    shell:
        "touch {output}"


rule report:
    input:
        expand("out/finetune/{j}/metrics.json", j=range(FINETUNE)),
    output:
        "out/report/{r}.txt",
    shell:
        "touch {output}"
"""


def scaled_config(k: int) -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    for entry in cfg["corpora"].values():
        src = entry["source"]
        if "baseline" in src:
            first, last = src["baseline"]
            n_base = (last - first + 1) * k
            src["baseline"] = [first, first + n_base - 1]
            if src.get("updates"):
                n_upd = (src["updates"][1] - src["updates"][0] + 1) * k
                src["updates"] = [first + n_base, first + n_base + n_upd - 1]
        if "batches" in src:
            src["batches"] *= k
    cfg["seeds"] = list(range(1, len(cfg["seeds"]) * k + 1))
    for task in cfg["tasks"].values():
        if task and "seeds" in task:
            task["seeds"] = list(range(1, len(task["seeds"]) * k + 1))
    return cfg


def measure(args: list[str], cwd: Path, timeout: int) -> dict:
    """One snakemake process under /usr/bin/time: wall and CPU seconds, peak RSS, output."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing, tempfile.TemporaryFile("w+") as log:
        cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", timing.name, SNAKEMAKE, *args]
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=ENV, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"timed_out": timeout}
        log.seek(0)
        wall, user, system, rss_kb = timing.read().split()[-4:]
        return {
            "wall_s": float(wall),
            "cpu_s": round(float(user) + float(system), 2),
            "peak_rss_mb": round(int(rss_kb) / 1024, 1),
            "returncode": proc.returncode,
            "output": log.read(),
        }


JOB_RE = re.compile(r"^(?:local)?rule (\S+):$")


def parse_jobs(output: str) -> list[tuple[str, list[str], list[str]]]:
    """(rule, inputs, outputs) of every job printed by `snakemake -n`."""
    jobs, current = [], None
    for line in output.splitlines():
        m = JOB_RE.match(line.strip())
        if m:
            current = [m.group(1), [], []]
            jobs.append(current)
        elif current is not None and line.startswith("    input: "):
            current[1] = [p.strip() for p in line[len("    input: ") :].split(",")]
        elif current is not None and line.startswith("    output: "):
            current[2] = [p.strip() for p in line[len("    output: ") :].split(",")]
    return [tuple(j) for j in jobs]


def complete(workdir: Path, jobs) -> int:
    """Create every output, each stage newer than what it reads."""
    producer = {out: i for i, (_, _, outs) in enumerate(jobs) for out in outs}
    depth: dict[int, int] = {}

    def level(i: int) -> int:
        if i not in depth:
            depth[i] = 0  # guards a cycle; the DAG has none
            depth[i] = 1 + max((level(producer[p]) for p in jobs[i][1] if p in producer), default=0)
        return depth[i]

    sys.setrecursionlimit(100_000)
    # newer than any source file of the workflow (reference tables, schemas) it may read
    base = time.time()
    created = 0
    for i, (_, _, outs) in enumerate(jobs):
        stamp = base + level(i)
        for out in outs:
            path = workdir / out
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (stamp, stamp))
            created += 1
    return created


def stage_counts(rules: Counter) -> dict[str, int]:
    """Our job counts per rule, folded into the bare workflow's stages."""
    n = Counter()
    for rule, count in rules.items():
        if rule.startswith("download"):
            n["fetch"] += count
        elif rule == "parse_corpus_file":
            n["parse"] += count
        elif rule.endswith("_settings"):
            n["settings"] += count
        elif rule == "build_corpus":
            n["corpus"] += count
        elif rule in ("train_vocab", "vocab_diagnostics"):
            n["vocab"] += count
        elif rule in ("pretrain", "distill"):
            n["model"] += count
        elif rule == "prepare_task":
            n["task"] += count
        elif rule == "finetune":
            n["finetune"] += count
        else:
            n["report"] += count
    return dict(n)


def bench_scale(k: int, tmp: Path, timeout: int) -> dict:
    ours, bare = tmp / f"ours-{k}x", tmp / f"bare-{k}x"
    ours.mkdir()
    bare.mkdir()
    (ours / "config.yaml").write_text(yaml.safe_dump(scaled_config(k), sort_keys=False))
    for name in ("pmc-metadata.txt",):
        (ours / name).touch()  # a run-directory input of the PMC cloud layout
    ours_args = ["--snakefile", str(ROOT / "Snakefile"), "--directory", str(ours)]
    row: dict = {"scale": k}

    dry = measure([*ours_args, "-n"], ours, timeout)
    if "timed_out" in dry:
        return {**row, "ours_dry_run": dry}
    assert dry["returncode"] == 0, dry["output"][-3000:]
    jobs = parse_jobs(dry.pop("output"))
    rules = Counter(rule for rule, _, _ in jobs)
    row["jobs"] = len(jobs)
    row["ours_dry_run"] = dry
    n = stage_counts(rules)
    (bare / "Snakefile").write_text(BARE)
    (bare / "config.yaml").write_text(yaml.safe_dump({"n": n}))
    bare_args = ["--snakefile", "Snakefile", "--configfile", "config.yaml"]
    bdry = measure([*bare_args, "-n"], bare, timeout)
    assert bdry["returncode"] == 0, bdry["output"][-3000:]
    bare_jobs = parse_jobs(bdry.pop("output"))
    row["bare_jobs"] = len(bare_jobs)
    row["bare_dry_run"] = bdry

    complete(ours, jobs)
    complete(bare, bare_jobs)
    for label, args in (("noop_dry_run", ["-n"]), ("noop_run", ["--cores", "1"])):
        for name, wd, base in (("ours", ours, ours_args), ("bare", bare, bare_args)):
            result = measure([*base, *args], wd, timeout)
            if "output" in result:
                out = result.pop("output")
                result["nothing_to_be_done"] = "Nothing to be done" in out
                if not result["nothing_to_be_done"]:
                    result["tail"] = out[-1500:]
            row[f"{name}_{label}"] = result
    for label in ("dry_run", "noop_dry_run", "noop_run"):
        o, b = row.get(f"ours_{label}", {}), row.get(f"bare_{label}", {})
        if "cpu_s" in o and "cpu_s" in b:
            row[f"ratio_{label}"] = round(o["cpu_s"] / b["cpu_s"], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per snakemake call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/dag_scale.json")
    args = parser.parse_args()
    result = {
        "benchmark": "dag_scale",
        "snakemake": subprocess.run([SNAKEMAKE, "--version"], capture_output=True, text=True).stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "note": "ratio_* = ours / bare CPU seconds; no-op = every output present, no run metadata",
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-dag-") as tmp:
        for k in args.scales:
            result["rows"].append(bench_scale(k, Path(tmp), args.timeout))
            print(json.dumps(result["rows"][-1]), flush=True)
            args.out.write_text(json.dumps(result, indent=2) + "\n")  # kept if a larger scale is cut off


if __name__ == "__main__":
    main()
