"""Running the workflow from tests: the real snakemake CLI on the real Snakefile."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from workflow_scripts import paths
from workflow_scripts.config import plan
from workflow_scripts.console import STEPS

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def snakemake(*args: str, cwd: Path = ROOT, timeout: int = 1800, preload: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if preload:
        env["WORKFLOW_PRELOAD"] = "1"
    try:
        return subprocess.run(
            [str(BIN / "snakemake"), *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as hung:
        command = " ".join(args)
        raise AssertionError(f"snakemake {command} did not end in {timeout} s: {_progress(hung.stderr)}") from None


def _progress(stderr: bytes | str | None) -> str:
    """Snakemake's last 'N of M steps (P%) done' line: how far a run got before it was stopped."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr or ""
    done = [line.strip() for line in text.splitlines() if STEPS.match(line.strip())]
    return done[-1] if done else "no job had finished"


def copy_demo(dest: Path) -> Path:
    """A fresh copy of the demo working directory (raw sources and config, no results)."""
    target = dest / "demo"
    shutil.copytree(
        ROOT / "demo",
        target,
        ignore=shutil.ignore_patterns("results", ".snakemake", "__pycache__"),
    )
    return target


def small_study(demo: dict[str, Any]) -> dict[str, Any]:
    """The demo cut down to one corpus, vocabulary, teacher (at a constant rate after warm-up), its student,
    a decay branch from its last step, two tasks and one seed."""
    tiny = {
        **demo["models"]["demo-roberta"]["pretrain"],
        "architecture": "bert",
        "max_steps": 4,
        "batch_size": 8,
        "phases": [{"seq_len": 32, "fraction": 1.0}],
        "checkpoint_every": 2,
        "num_threads": 1,
        "schedule": "constant_with_warmup",
    }
    student = {**tiny, "num_layers": 1, "max_steps": 2, "student": {"init": "random"}}
    # the models' context is their 32-token blocks: tasks read at most that
    fast = {"epochs": 1, "max_steps": 2, "eval_every": 0, "patience": 0, "max_length": 32}
    tasks = {name: copy.deepcopy(demo["tasks"][name]) for name in ("demo-ner", "demo-re")}
    for task in tasks.values():
        task["finetune"] = {**task["finetune"], **fast}
    return {
        "corpora": {"pubmed": {**demo["corpora"]["pubmed"], "shards": 1, "decontaminate": ["demo-ner"]}},
        "vocabularies": {"wp": {**demo["vocabularies"]["demo-wordpiece"], "corpora": ["pubmed"], "compare": []}},
        "models": {
            "tiny": {"kind": "pretrain", "display": "Tiny", "vocab": "wp", "corpora": ["pubmed"], "pretrain": tiny},
            "student": {"kind": "distill", "teacher": "tiny", "corpora": ["pubmed"], "distill": student},
            "tiny-decay": {
                "kind": "pretrain",
                "init": "tiny",
                "branch": {"step": 4},
                "corpora": ["pubmed"],
                "pretrain": {"max_steps": 6, "mask_prob": 0.1},
            },
        },
        "tasks": tasks,
        "seeds": [1],
        "finetune": demo["finetune"],
        "aggregation": {**demo["aggregation"], "compare": [], "bootstrap_samples": 20},
        "resources": demo["resources"],
    }


def run_small_study(dest: Path, cores: int | None = None) -> Path:
    """A copy of the demo cut down to `small_study`, run to its end (tests/conftest.py runs it once a session)."""
    workdir = copy_demo(dest)
    cfg = small_study(yaml.safe_load((workdir / "config.yaml").read_text()))
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    result = run_demo(workdir, cores=cores or TEST_CORES)
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


def copy_finished(workdir: Path, dest: Path) -> Path:
    """A copy of a finished run directory, modification times kept: it plans nothing, as the original."""
    return Path(shutil.copytree(workdir, dest / workdir.name, symlinks=True))


# A guard against a hung run, not a speed bar: the whole demo beside the other test worker took 24 to 31
# minutes on a 2-core AVX2-only Zen 3 (over 30 on one CI machine), against 15 to 17 on a 2-core Zen 4.
DEMO_RUN_LIMIT_S = 3600
# profiles/local takes every core; the tests take two whatever the machine: the guards above were measured so,
# and make test runs two workers side by side. A `--cores` among a test's own arguments comes later and wins.
TEST_CORES = 2


def run_demo(workdir: Path, *args: str, cores: int = TEST_CORES) -> subprocess.CompletedProcess:
    """The demo as `make demo` runs it: fine-tuning runs fork a preloaded interpreter."""
    return snakemake(
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--workflow-profile",
        str(ROOT / "profiles" / "local"),
        "--cores",
        str(cores),
        *args,
        timeout=DEMO_RUN_LIMIT_S,
        preload=True,
    )


def most_jobs_at_once(workdir: Path) -> int:
    """The most jobs the first run's Snakemake log shows running at one time: each job's record starts with
    its rule, each finish is a `Finished jobid` line (every demo job asks for one thread)."""
    log = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))[0].read_text()
    assert "threads: " not in log, "a job asked for more than one thread"
    running = most = 0
    for line in log.splitlines():
        if line.startswith(("rule ", "localrule ")):
            running += 1
            most = max(most, running)
        elif line.startswith("Finished jobid: "):
            running -= 1
    return most


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts per rule from `snakemake -n` output (its 'Job stats' table)."""
    counts: dict[str, int] = {}
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("job") and "count" in line:
            for row in lines[i + 2 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                if parts[0] != "total":
                    counts[parts[0]] = int(parts[1])
            break
    return counts


def planned_after(workdir: Path, change, *args: str) -> tuple[dict, dict[str, int]]:
    """The edited config and the job counts of a dry run after `change(cfg)` edits it (restored afterwards)."""
    config = workdir / "config.yaml"
    original = config.read_text()
    cfg = yaml.safe_load(original)
    change(cfg)
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    try:
        result = run_demo(workdir, "-n", "--quiet", "rules", *args)
    finally:
        config.write_text(original)
    assert result.returncode == 0, result.stderr[-3000:]
    return cfg, planned_jobs(result.stdout + result.stderr)


def settings_files(study) -> list[str]:
    """Every settings file the settings rules write for a study: local rules without inputs, the
    jobs a head node runs first."""
    files = [paths.REPORT_SETTINGS]
    for corpus, entry in study.corpora.items():
        if entry.type != "text":
            files += [paths.PARSE_SETTINGS.format(corpus=corpus), paths.CORPUS_SETTINGS.format(corpus=corpus)]
    files += [paths.VOCAB_SETTINGS.format(vocab=vocab) for vocab in study.vocabularies]
    trained = [m for m, e in study.models.items() if e.kind not in ("external", "baseline")]
    files += [paths.MODEL_SETTINGS.format(model=m) for m in trained]
    baselines = plan.baseline_models(study)
    for task in study.resolved_tasks:
        files += [paths.TASK_SETTINGS.format(task=task), paths.TASK_REPORT_SETTINGS.format(task=task)]
        for m in plan.evaluated_models(study):
            template = paths.BASELINE_SETTINGS if m in baselines else paths.FINETUNE_SETTINGS
            files.append(template.format(model=m, task=task))
    return files
