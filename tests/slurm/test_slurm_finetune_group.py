"""Fine-tuning runs of one group job under a real one-node Slurm: side by side in one allocation,
each forked from the job step's preloaded interpreter, each its own Snakemake job with its own log.

A public checkpoint (MiniLM-L6) on one local NER task, four seeds, on the CPU (this cluster has no
GPUs): `resources.finetune.runs_per_gpu: 2` puts two runs at a time in the allocation, which asks
for two runs' cores and memory and two layers' runtime. Start and end times come from each run's
provenance.json, the allocation from its SLURM_JOB_ID. Run alone: `pytest -m slurm tests/slurm`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_external_study import minilm, write_study
from workflow_harness import BIN, ROOT

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SEEDS = [1, 2, 3, 4]
RUNS = [f"results/finetune/minilm/my-ner/fold~0/seed~{s}" for s in SEEDS]
RUN_LIMIT = 900


def install_profile(home: Path) -> None:
    """The template as installed on a cluster without accounts or GPU models."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    del profile["default-resources"]["slurm_account"]
    for resources in profile["set-resources"].values():
        del resources["gpu_model"]
    # sacct first asked after 1 s, then 10 s later each time no job has ended (1, 12, 33 s)
    profile.update({"slurm-no-account": True, "slurm-init-seconds-before-status-checks": 1, "retries": 0})
    text = yaml.safe_dump(profile).replace("SITE_CPU_PARTITION", "debug").replace("SITE_GPU_PARTITION", "gpu")
    (home / "snakemake" / "slurm").mkdir(parents=True)
    (home / "snakemake" / "slurm" / "config.yaml").write_text(text)


@pytest.fixture(scope="module")
def group_run(cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("group")
    study = write_study(tmp, checkpoint=shutil.copytree(minilm(), tmp / "checkpoint"))
    config = yaml.safe_load((study / "config.yaml").read_text())
    config["seeds"] = SEEDS
    config["finetune"]["num_threads"] = 1
    # two runs at a time, a core each; a run holds torch, the model and its fork of the server
    config["resources"] = {"finetune": {"threads": 1, "gpu": 0, "mem_mb": 1500, "runtime": 10, "runs_per_gpu": 2}}
    (study / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    install_profile(tmp / "xdg")
    command = ["timeout", "-k", "20", str(RUN_LIMIT), str(BIN / "snakemake"), "--profile", "slurm"]
    command += ["--snakefile", str(ROOT / "Snakefile"), "--verbose"]
    # the jobs inherit TMPDIR (sbatch --export=ALL): the step's preload server puts its socket there
    (tmp / "sockets").mkdir()
    env = {**cluster, "XDG_CONFIG_HOME": str(tmp / "xdg"), "TMPDIR": str(tmp / "sockets")}
    env.pop("WORKFLOW_PRELOAD", None)
    targets = [f"{run}/metrics.json" for run in RUNS]
    proc = subprocess.run(command + targets, cwd=study, env=env, capture_output=True, text=True, timeout=RUN_LIMIT + 60)
    return study, proc, command, env


def test_the_group_job_asks_for_one_layer_at_a_time(group_run):
    study, proc, _, _ = group_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    calls = [line for line in proc.stderr.splitlines() if "sbatch call:" in line and "group_finetune" in line]
    assert len(calls) == 1, "the four runs are one group job"
    # two runs side by side (a core and 1500 MB each), two such layers of 10 minutes in sequence
    assert re.search(r"--cpus-per-task=2\b", calls[0]) and " --mem 3000 " in calls[0] and " -t 20 " in calls[0]


def test_runs_of_one_allocation_overlap_in_time(group_run):
    study, proc, _, _ = group_run
    records = [json.loads((study / run / "provenance.json").read_text()) for run in RUNS]
    assert len({r["slurm_job_id"] for r in records}) == 1 and records[0]["slurm_job_id"]
    spans = sorted((r["started"], r["ended"]) for r in records)
    overlapping = [a for a, b in itertools.pairwise(spans) if b[0] < a[1]]
    assert overlapping, f"no two runs of allocation {records[0]['slurm_job_id']} overlapped: {spans}"


def test_each_run_is_its_own_preloaded_job_with_its_own_log(group_run):
    study, proc, _, _ = group_run
    for run, seed in zip(RUNS, SEEDS, strict=True):
        record = json.loads((study / run / "provenance.json").read_text())
        assert record["preloaded"], f"{run} did not fork from the step's preloaded interpreter"
        assert (study / f"results/logs/finetune/minilm/my-ner/fold~0/seed~{seed}.log").stat().st_size > 0
    # the server lived no longer than the group job (its socket goes with it)
    sockets = study.parent / "sockets"
    deadline = time.monotonic() + 20
    while list(sockets.glob("workflow-preload-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not list(sockets.glob("workflow-preload-*.sock"))
    # each run stays a job of its own: one alone reruns alone
    again = subprocess.run(
        [str(BIN / "snakemake"), "-n", f"{RUNS[0]}/metrics.json", "--forcerun", "finetune", "--cores", "1"]
        + ["--snakefile", str(ROOT / "Snakefile")],
        cwd=study,
        env={k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert re.search(r"^finetune\s+1$", again.stdout, re.M), again.stdout[-2000:]


def test_a_failed_run_fails_only_itself(group_run):
    """A fifth seed and a run of a checkpoint with broken weights, side by side in one group job."""
    study, _, command, env = group_run
    broken = shutil.copytree(minilm(), study.parent / "broken")
    (broken / "model.safetensors").write_bytes(b"no weights")
    config = yaml.safe_load((study / "config.yaml").read_text())
    config["models"]["broken"] = {"kind": "external", "checkpoint": str(broken)}
    config["seeds"] = [*SEEDS, 5]
    (study / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    fifth, failed = RUNS[0].replace("seed~1", "seed~5"), "results/finetune/broken/my-ner/fold~0/seed~1"
    targets = [f"{fifth}/metrics.json", f"{failed}/metrics.json"]
    proc = subprocess.run(command + targets, cwd=study, env=env, capture_output=True, text=True, timeout=RUN_LIMIT + 60)
    assert proc.returncode != 0
    assert "safetensors" in (study / "results/logs/finetune/broken/my-ner/fold~0/seed~1.log").read_text()
    assert json.loads((study / fifth / "provenance.json").read_text())["preloaded"]
    plan = subprocess.run(
        [str(BIN / "snakemake"), "-n", *targets, "--cores", "1", "--snakefile", str(ROOT / "Snakefile")],
        cwd=study,
        env={k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    # the next run of the workflow redoes the failed run alone
    assert re.search(r"^finetune\s+1$", plan.stdout, re.M) and f"output: {failed}/" in plan.stdout, plan.stdout[-2000:]
