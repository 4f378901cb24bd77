"""The `slurm` profile against a real one-node Slurm cluster on localhost.

The user's literal command, `snakemake --profile slurm`, with the template from
profiles/slurm installed into a temporary XDG_CONFIG_HOME, runs part of the demo (one
corpus, a vocabulary and a short pretraining) through sbatch. The pretraining job is
sent SIGTERM with `scancel --signal=TERM` once it has checkpointed (what Slurm sends at
preemption or the time limit), the same command is run again, and the outputs are compared
with an uninterrupted local run. Misconfigured partitions must stop the run before
anything is submitted.

The cluster comes from tests/slurm/start-local-slurm.sh (root and apt-get needed; it
installs slurm-wlm, munge, slurmdbd and MariaDB) and is stopped by PID afterwards.
Run these alone with `pytest -m slurm tests/slurm`.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from workflow_harness import BIN, ROOT, copy_demo

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TEMPLATE = ROOT / "profiles" / "slurm" / "config.yaml"
CPU_PARTITION, GPU_PARTITION = "debug", "gpu"
MODEL = "demo-roberta"
TARGET = f"results/pretrain/{MODEL}/model.safetensors"
STATE = f"results/pretrain/{MODEL}/training_state"
# A short pretraining on one corpus (about 20 steps/s on a 2-core Zen 4), with a checkpoint every
# 10 of its 150 steps: the signal lands about 0.3 s after the first checkpoint (step 16 there),
# some 130 steps before the end.
STEPS = 150
OVERRIDES = {
    "vocabularies": {"demo-bpe": {"corpora": ["pubmed"]}},
    "models": {MODEL: {"corpora": ["pubmed"], "pretrain": {"max_steps": STEPS, "checkpoint_every": 10}}},
}
SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/")
RUN_LIMIT = 900


def install_profile(home: Path, **site: str | None) -> Path:
    """The template as a user installs it, SITE_ values replaced by `site` (None: kept)."""
    values = {"SITE_CPU_PARTITION": CPU_PARTITION, "SITE_GPU_PARTITION": GPU_PARTITION, **site}
    profile = yaml.safe_load(TEMPLATE.read_text())
    # This cluster has no accounts and no GPUs (there is no GPU model to ask for).
    del profile["default-resources"]["slurm_account"]
    for resources in profile["set-resources"].values():
        del resources["gpu_model"]
    profile["slurm-no-account"] = True
    # sacct is asked after 1 s, then 10 s later each time no job has ended (1, 12, 33 s): a few seconds'
    # job is seen ended at 12 s, not at 14 s as with 2
    profile["slurm-init-seconds-before-status-checks"] = 1
    profile["slurm-keep-successful-logs"] = True
    profile["retries"] = 0  # a cancelled job stays failed: the user re-runs by hand
    text = yaml.safe_dump(profile, sort_keys=False)
    for placeholder, value in values.items():
        if value is not None:
            text = text.replace(placeholder, value)
    target = home / "snakemake" / "slurm" / "config.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return home


def demo_copy(dest: Path) -> Path:
    """The demo with the overrides; the repository's profiles/default applies as it is."""
    work = copy_demo(dest)
    (work / "overrides.yaml").write_text(yaml.safe_dump(OVERRIDES))
    return work


def snakemake_command(*args: str) -> list[str]:
    # `timeout -k`: a snakemake stuck polling the cluster ignores SIGTERM
    return [
        "timeout",
        "-k",
        "20",
        str(RUN_LIMIT),
        str(BIN / "snakemake"),
        *args,
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--configfile",
        "overrides.yaml",
    ]


def start_slurm_run(work: Path, env: dict, home: Path, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            snakemake_command(TARGET, "--profile", "slurm"),
            cwd=work,
            env={**env, "XDG_CONFIG_HOME": str(home)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )


def slurm_run(work: Path, env: dict, home: Path, log: Path) -> int:
    proc = start_slurm_run(work, env, home, log)
    return proc.wait(timeout=RUN_LIMIT + 60)


def submitted(log: Path) -> list[tuple[str, str]]:
    """(Slurm job id, rule) of every job the plugin reports as submitted."""
    return SUBMITTED.findall(log.read_text()) if log.exists() else []


def sacct_jobs(env: dict) -> dict[str, str]:
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-S", "now-1days", "-o", "JobID,State"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return dict(line.split("|", 1) for line in out.splitlines() if line)


def wait_until(predicate, limit: float, what: str, proc: subprocess.Popen | None = None):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"snakemake exited ({proc.returncode}) before {what}")
        time.sleep(0.2)
    raise AssertionError(f"timed out after {limit} s waiting for {what}")


def checksums(work: Path) -> dict[str, str]:
    """sha256 of every compared output: corpus shards and stats, vocabulary, weights."""
    files = [
        *sorted((work / "results/corpus/pubmed").glob("shard~*.parquet")),
        work / "results/corpus/pubmed/stats.json",
        *sorted(p for p in (work / "results/vocab/demo-bpe").iterdir() if p.is_file() and p.name != "provenance.json"),
        work / TARGET,
        work / f"results/pretrain/{MODEL}/config.json",
    ]
    return {str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="module")
def local_run(cluster, tmp_path_factory):
    """The same targets without Slurm, pretraining uninterrupted (the Slurm runs' reference: run where they run)."""
    work = demo_copy(tmp_path_factory.mktemp("local"))
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    proc = subprocess.run(
        snakemake_command(TARGET, "--cores", "2"),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT + 60,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work


@pytest.fixture(scope="module")
def slurm_runs(cluster, tmp_path_factory):
    """Submit through the profile, signal pretraining after a checkpoint, run again.

    `scancel --signal=TERM` rather than a plain `scancel`: sacct then reports the job
    FAILED, which the plugin acts on. A plain scancel leaves it "CANCELLED by <uid>", a state
    snakemake-executor-plugin-slurm 2.8.0 does not recognise, and snakemake waits forever.
    """
    tmp = tmp_path_factory.mktemp("slurm")
    home = install_profile(tmp / "xdg")
    work = demo_copy(tmp)
    first_log, second_log = tmp / "first.log", tmp / "second.log"
    proc = start_slurm_run(work, cluster, home, first_log)
    try:
        job = wait_until(
            lambda: next((j for j, rule in submitted(first_log) if rule == "pretrain"), None),
            RUN_LIMIT,
            "the pretraining job's submission",
            proc,
        )
        latest = work / STATE / "latest"
        wait_until(latest.exists, 600, f"a checkpoint in {STATE}", proc)
        subprocess.run(["scancel", "--signal=TERM", job], env=cluster, check=True, timeout=60)
        first_rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    # SIGTERM makes pretraining write one more checkpoint before it exits
    checkpoint_step = int(latest.read_text().split("~")[-1])
    second_rc = slurm_run(work, cluster, home, second_log)
    return {
        "work": work,
        "first_rc": first_rc,
        "second_rc": second_rc,
        "signalled": job,
        "checkpoint_step": checkpoint_step,
        "first_log": first_log,
        "second_log": second_log,
        "sacct": sacct_jobs(cluster),
    }


def test_jobs_went_through_sbatch(slurm_runs):
    assert slurm_runs["second_rc"] == 0, slurm_runs["second_log"].read_text()[-4000:]
    jobs = submitted(slurm_runs["first_log"]) + submitted(slurm_runs["second_log"])
    rules = {rule for _, rule in jobs}
    assert {"download_corpus_file", "parse_corpus_file", "build_corpus", "train_vocab", "pretrain"} <= rules
    # settings YAMLs are local rules: never submitted
    assert not rules & {"corpus_settings", "vocab_settings", "model_settings"}
    for job, rule in jobs:
        assert job in slurm_runs["sacct"], f"{rule} job {job} is not known to sacct"
    finished = [slurm_runs["sacct"][job] for job, rule in jobs if job != slurm_runs["signalled"]]
    assert set(finished) == {"COMPLETED"}
    assert slurm_runs["sacct"][slurm_runs["signalled"]] == "FAILED"


def test_partitions_come_from_the_site_profile(slurm_runs):
    log = slurm_runs["first_log"].read_text()
    assert "slurm_partition=gpu" in log.split("rule pretrain:")[1].split("has been submitted")[0]
    assert "slurm_partition=debug" in log.split("rule train_vocab:")[1].split("has been submitted")[0]


def test_signalled_pretraining_resumes_from_its_checkpoint(slurm_runs):
    assert slurm_runs["first_rc"] == 1  # snakemake saw the job fail and stopped by itself
    log = (slurm_runs["work"] / f"results/logs/pretrain/{MODEL}.log").read_text()
    step = slurm_runs["checkpoint_step"]
    assert 10 <= step < STEPS, f"signalled at step {step}: nothing left to resume"
    assert re.search(rf"resuming from \S*step~0*{step} \(step {step} of {STEPS}\)", log), log[-3000:]


def test_outputs_equal_a_local_run(slurm_runs, local_run):
    # Same seed, same torch thread count, same CPU: an interrupted and resumed
    # pretraining through Slurm gives the uninterrupted local run's weights bit for bit.
    assert checksums(slurm_runs["work"]) == checksums(local_run)


def misconfigured_run(cluster, tmp: Path, **site: str | None) -> tuple[subprocess.CompletedProcess, set]:
    home = install_profile(tmp / "xdg", **site)
    work = demo_copy(tmp)
    before = set(sacct_jobs(cluster))
    proc = subprocess.run(
        snakemake_command(TARGET, "--profile", "slurm"),
        cwd=work,
        env={**cluster, "XDG_CONFIG_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT + 60,
    )
    return proc, set(sacct_jobs(cluster)) - before


def test_placeholder_gpu_partition_stops_before_submission(cluster, tmp_path):
    proc, new_jobs = misconfigured_run(cluster, tmp_path, SITE_GPU_PARTITION=None)
    assert proc.returncode != 0
    assert not new_jobs
    output = proc.stdout + proc.stderr
    assert "set SITE_GPU_PARTITION in ~/.config/snakemake/slurm/config.yaml" in output
    assert "rule pretrain" in output
    assert "submitted with SLURM jobid" not in output


def test_unknown_partition_stops_before_submission(cluster, tmp_path):
    proc, new_jobs = misconfigured_run(cluster, tmp_path, SITE_CPU_PARTITION="no-such-partition")
    assert proc.returncode != 0
    assert not new_jobs
    output = proc.stdout + proc.stderr
    assert "slurm_partition 'no-such-partition'" in output
    assert f"sinfo lists: {CPU_PARTITION}, {GPU_PARTITION}" in output
    assert "submitted with SLURM jobid" not in output
