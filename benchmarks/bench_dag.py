"""DAG scale: `snakemake -n` of the full study beside a bare synthetic Snakefile with the same
number of jobs per stage, at 1x, 2x and 4x the fine-tuning fan-out, and the planning of partial
reruns (one run, one task of one model, a named target); optionally the workflow as it was
(`--before DIR`, e.g. `git archive main | tar -x -C DIR`) and this workflow on stock Snakemake
(`--stock`: the engine's patches off, `WORKFLOW_ENGINE_PATCHES=0`) in the same run, side by side.

    python benchmarks/bench_dag.py [--scales 1 2 4] [--before DIR] [--before-scales 1] [--stock]
                                   [--corpora] [--noop] [--timeout 1800] [--out FILE]

Scale k multiplies every task's seeds by k (with `--corpora` also the PubMed update/baseline
file ranges and the PMC batches), so the fine-tuning runs grow k-fold (models, vocabularies,
corpora and tasks stay as configured). The bare Snakefile mirrors the study's DAG stage by
stage (downloads -> parses -> corpora -> vocabularies -> models -> task data -> fine-tuning
fan-out -> tables) with the job counts of our dry run and `touch` shells, no config parsing
and no input functions beyond index arithmetic.

`--noop`: "after completion" is reproduced for both workflows the same way: every output file
of the dry run is created, in dependency order with increasing mtimes, and no run metadata is
written (so both decide by file existence and mtimes). Each snakemake is its own process;
wall seconds, CPU seconds (user+sys, from wait4, so other load on the machine matters less)
and peak RSS are recorded; each measurement is the best (least CPU) of `--repeat` runs. The
ratio is ours / bare on CPU seconds.
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
sys.path.insert(0, str(ROOT / "tests" / "workflow"))
from workflow_harness import planned_jobs  # noqa: E402  (the tests' reading of `snakemake -n`'s job table)

from workflow_scripts import engine  # noqa: E402

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
ENV.pop(engine.SWITCH, None)  # the patches as the workflow installs them, but in the "stock" measurement
STOCK = "stock"  # this tree with the engine's patches off

BARE = """\
N = config["n"]
FETCH, PARSE, SETTINGS, CORPUS = N["fetch"], N["parse"], N["settings"], N["corpus"]
VOCAB, PACK, MODEL, TASK = N["vocab"], N["pack"], N["model"], N["task"]
FINETUNE, REPORT = N["finetune"], N["report"]


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


rule pack:
    input:
        corpus=lambda w: f"out/corpus/{int(w.p) % CORPUS}.txt",
        vocab=lambda w: f"out/vocab/{int(w.p) % VOCAB}.txt",
    output:
        "out/pack/{p}.txt",
    shell:
        "touch {output}"


rule model:
    input:
        lambda w: expand("out/pack/{p}.txt", p=range(int(w.m), PACK, MODEL)),
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


# two tables read every run (tables, plots), the others a share of them (one task's tables)
rule report:
    input:
        lambda w: expand(
            "out/finetune/{j}/metrics.json",
            j=range(FINETUNE) if int(w.r) < 2 else range(int(w.r), FINETUNE, REPORT),
        ),
    output:
        "out/report/{r}.txt",
    shell:
        "touch {output}"
"""


def scaled_config(k: int, corpora: bool) -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    for entry in cfg["corpora"].values() if corpora else ():
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


def measure_once(args: list[str], cwd: Path, timeout: int, tree: Path, env: dict | None = None) -> dict:
    """One snakemake process under /usr/bin/time: wall and CPU seconds, peak RSS, output."""
    env = {**ENV, **(env or {}), "PYTHONPATH": str(tree)}  # the tree's own workflow_scripts
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing, tempfile.TemporaryFile("w+") as log:
        cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", timing.name, SNAKEMAKE, *args]
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
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


def measure(args: list[str], cwd: Path, timeout: int, tree: Path = ROOT, repeat: int = 1, name: str = "") -> dict:
    """The run of least CPU time of ``repeat``, with every run's CPU seconds (``name`` "stock": the patches off)."""
    env = {engine.SWITCH: "0"} if name == STOCK else None
    runs = [measure_once(args, cwd, timeout, tree, env) for _ in range(repeat)]
    done = [r for r in runs if "cpu_s" in r]
    if not done:
        return runs[0]
    best = min(done, key=lambda r: r["cpu_s"])
    return {**best, "cpu_s_runs": [r["cpu_s"] for r in done]} if repeat > 1 else best


JOB_RE = re.compile(r"^(?:local)?rule (\S+):$")


def parse_jobs(output: str) -> list[tuple[str, list[str], list[str]]]:
    """(rule, inputs, outputs) of every job printed by `snakemake -n` (a group job's members indented further)."""
    jobs, current = [], None
    for line in output.splitlines():
        line = line.strip()
        m = JOB_RE.match(line)
        if m:
            current = [m.group(1), [], []]
            jobs.append(current)
        elif current is not None and line.startswith(("input: ", "output: ")):
            key, paths = line.split(": ", 1)
            current[1 if key == "input" else 2] = [p.strip() for p in paths.split(",")]
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
    stages = {
        "parse_corpus_file": "parse",
        "build_corpus": "corpus",
        "build_text_corpus": "corpus",
        "train_vocab": "vocab",
        "vocab_diagnostics": "vocab",
        "pack": "pack",
        "pack_index": "pack",
        "pretrain": "model",
        "distill": "model",
        "control": "model",
        "prepare_task": "task",
        "finetune": "finetune",
        "baseline": "finetune",
    }
    n = Counter(dict.fromkeys(("fetch", "parse", "settings", "corpus", "vocab", "pack", "model", "task"), 0))
    for rule, count in rules.items():
        if rule.startswith("download"):
            n["fetch"] += count
        elif rule.endswith("_settings") or rule.endswith("_settings_of_task"):
            n["settings"] += count
        else:
            n[stages.get(rule, "report")] += count
    return dict(n)


def study_dir(tmp: Path, name: str, k: int, corpora: bool) -> Path:
    wd = tmp / name
    wd.mkdir()
    (wd / "config.yaml").write_text(yaml.safe_dump(scaled_config(k, corpora), sort_keys=False))
    (wd / "pmc-metadata.txt").touch()  # a run-directory input of the PMC cloud layout
    return wd


def dry_run(tree: Path, wd: Path, args, extra=(), name: str = "") -> dict:
    """Our dry run with job counts (the whole output kept only for --noop)."""
    quiet = [] if args.noop else ["--quiet", "rules"]
    base = ["--snakefile", str(tree / "Snakefile"), "--directory", str(wd)]
    result = measure([*base, *extra, "-n", *quiet], wd, args.timeout, tree, args.repeat, name)
    if "output" in result:
        assert result["returncode"] == 0, result["output"][-3000:]
        out = result.pop("output")
        assert (name == STOCK) == (f"note: {engine.SWITCH}=0" in out), f"{name}: patches on or off as asked"
        result["jobs"] = sum(planned_jobs(out).values())
        result["rules"] = dict(sorted(planned_jobs(out).items()))
        if args.noop:
            result["job_list"] = parse_jobs(out)
    return result


# A partial rerun after the models and the task data exist, narrowed to the fine-tuning rules:
# Snakemake plans no job upstream of the runs (README: "Partial reruns").
NARROW = ["--allowed-rules", "finetune", "finetune_settings"]


def partial_targets(wd: Path) -> tuple[dict[str, list[str]], list[str]]:
    """A partial rerun's targets: one run (a model pretrained here, one task, one seed), that
    task of that model (every fold and seed), and the named target of the task (every model's
    runs and the task's own tables); and the files a narrowed rerun finds in place."""
    from workflow_scripts.config.plan import model_marker, run_metrics, target_rule, task_dir
    from workflow_scripts.config.validate import load_config

    study = load_config(yaml.safe_load((wd / "config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")
    model = next(m for m, e in study.models.items() if e.kind == "pretrain" and e.evaluate)
    task = next(iter(study.resolved_tasks))
    of_model = run_metrics(study, task=task, model=model)
    targets = {"one_run": of_model[:1], "one_task_of_one_model": of_model, "named_task": [target_rule("task", task)]}
    return targets, [*model_marker(study, model), f"{task_dir(task)}/data_card.json"]


def bench_partial(tree: Path, wd: Path, args) -> dict:
    targets, in_place = partial_targets(wd)
    out = {}
    for name, files in targets.items():
        out[name] = {"targets": files if len(files) < 4 else f"{files[0]} and {len(files) - 1} more"}
        out[name].update(dry_run(tree, wd, args, files))
    for path in in_place:
        (wd / path).parent.mkdir(parents=True, exist_ok=True)
        (wd / path).touch()
    for name in ("one_run", "one_task_of_one_model"):
        out[f"{name}_narrowed"] = {"targets": out[name]["targets"], "args": NARROW}
        out[f"{name}_narrowed"].update(dry_run(tree, wd, args, [*targets[name], *NARROW]))
    return out


def bench_scale(k: int, tmp: Path, args, trees: dict[str, Path]) -> dict:
    row: dict = {"scale": k}
    dirs = {}
    for name, tree in trees.items():
        dirs[name] = wd = study_dir(tmp, f"{name}-{k}x", k, args.corpora)
        row[f"{name}_dry_run"] = dry_run(tree, wd, args, name=name)
        if "timed_out" in row[f"{name}_dry_run"]:
            return row
    first = row[f"{next(iter(trees))}_dry_run"]
    row["jobs"] = first["jobs"]
    for name in trees:
        # the same plan before and after, rule by rule
        assert row[f"{name}_dry_run"]["rules"] == first["rules"], name
    bare = tmp / f"bare-{k}x"
    bare.mkdir()
    (bare / "Snakefile").write_text(BARE)
    (bare / "config.yaml").write_text(yaml.safe_dump({"n": stage_counts(Counter(first["rules"]))}))
    bare_args = ["--snakefile", "Snakefile", "--configfile", "config.yaml"]
    quiet = [] if args.noop else ["--quiet", "rules"]
    bdry = measure([*bare_args, "-n", *quiet], bare, args.timeout, repeat=args.repeat)
    assert bdry["returncode"] == 0, bdry["output"][-3000:]
    bout = bdry.pop("output")
    row["bare_jobs"] = sum(planned_jobs(bout).values())
    row["bare_dry_run"] = bdry
    if args.noop:
        complete(bare, parse_jobs(bout))
        for name in trees:
            complete(dirs[name], row[f"{name}_dry_run"]["job_list"])
        for label, extra in (("noop_dry_run", ["-n"]), ("noop_run", ["--cores", "1"])):
            runs = {
                name: (dirs[name], ["--snakefile", str(tree / "Snakefile"), "--directory", str(dirs[name])])
                for name, tree in trees.items()
            }
            for name, (wd, base) in {**runs, "bare": (bare, bare_args)}.items():
                result = measure([*base, *extra], wd, args.timeout, trees.get(name, ROOT), args.repeat, name)
                if "output" in result:
                    out = result.pop("output")
                    result["nothing_to_be_done"] = "Nothing to be done" in out
                    if not result["nothing_to_be_done"]:
                        result["tail"] = out[-1500:]
                row[f"{name}_{label}"] = result
    for name in trees:
        row[f"{name}_dry_run"].pop("job_list", None)
        if k == min(args.scales) and name == "ours" and not args.noop:
            row[f"{name}_partial"] = bench_partial(trees[name], dirs[name], args)
    for name in trees:
        for label in ("dry_run", "noop_dry_run", "noop_run"):
            o, b = row.get(f"{name}_{label}", {}), row.get(f"bare_{label}", {})
            if "cpu_s" in o and "cpu_s" in b:
                row[f"ratio_{name}_{label}"] = round(o["cpu_s"] / b["cpu_s"], 2)
            patched = row.get(f"ours_{label}", {})
            if name == STOCK and "cpu_s" in o and "cpu_s" in patched:
                row[f"ratio_stock_ours_{label}"] = round(o["cpu_s"] / patched["cpu_s"], 2)
        for result in row.get(f"{name}_partial", {}).values():
            if "cpu_s" in result:
                result["of_full_dry_run"] = round(result["cpu_s"] / row[f"{name}_dry_run"]["cpu_s"], 3)
    return row


def cpu_name() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    name = fields.get("model name", platform.processor())
    return f"{name} (family {fields.get('cpu family')}, model {fields.get('model')})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--before", type=Path, help="a tree of the workflow as it was, measured beside this one")
    parser.add_argument("--before-scales", type=int, nargs="+", default=[1])
    parser.add_argument("--stock", action="store_true", help="also this tree with the engine's patches off")
    parser.add_argument("--corpora", action="store_true", help="scale the PubMed files and PMC batches too")
    parser.add_argument("--noop", action="store_true", help="also a no-op dry run and run after completion")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement, the least CPU kept")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per snakemake call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/dag_scale.json")
    args = parser.parse_args()
    result = {
        "benchmark": "dag_scale",
        "snakemake": subprocess.run([SNAKEMAKE, "--version"], capture_output=True, text=True).stdout.strip(),
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "scaled": "seeds of every task" + (", PubMed files, PMC batches" if args.corpora else ""),
        "note": "ratio_* = ours / bare CPU seconds; ratio_stock_ours_* = stock / ours (stock: this tree with "
        f"{engine.SWITCH}=0); partial: of_full_dry_run = CPU seconds / the full dry run's",
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-dag-") as tmp:
        for k in args.scales:
            trees = {"ours": ROOT, **({STOCK: ROOT} if args.stock else {})}
            if args.before is not None and k in args.before_scales:
                trees["before"] = args.before.resolve()
            result["rows"].append(bench_scale(k, Path(tmp), args, trees))
            print(json.dumps(result["rows"][-1]), flush=True)
            args.out.write_text(json.dumps(result, indent=2) + "\n")  # kept if a larger scale is cut off
    # a "no-op" that found work measured something else: its ratio is no figure
    busy = [
        f"{row['scale']}x {key}"
        for row in result["rows"]
        for key, value in row.items()
        if isinstance(value, dict) and value.get("nothing_to_be_done") is False
    ]
    if busy:
        raise SystemExit(f"{args.out}: these no-op runs found work to do (their 'tail' says why): {', '.join(busy)}")


if __name__ == "__main__":
    main()
