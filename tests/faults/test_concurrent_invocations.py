"""Two Snakemake invocations at once in one run directory: one runs, the other stops with one
clear "Directory cannot be locked" line, never Snakemake's bare FileNotFoundError on
.snakemake/locks/0.input.lock (workflow_scripts/workdir_lock.py).

The lock itself is raced many times by plain processes (fast); the real CLI on a copy of the
demo, twice, with a real run of a finished target (which takes Snakemake's own lock) against
another real run and against a dry run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workflow_harness import BIN, ROOT, copy_demo, run_demo

from workflow_scripts import workdir_lock

LOCKED = "Error: Directory cannot be locked. Another Snakemake instance is running in"
TARGET = "results/configs/report.yaml"  # a settings file: a local job of milliseconds
HOLD = (
    "import sys, time; from workflow_scripts import workdir_lock as w; "
    "print(w.acquire(sys.argv[1:]) or 'held', flush=True); time.sleep({})"
)


def _hold(workdir: Path, *argv: str, seconds: float = 60) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(seconds), "snakemake", *argv], cwd=workdir, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_held_directory_is_refused_with_the_holder_named_and_freed_when_it_dies(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir_lock, "_held", {})
    first = _hold(tmp_path, "--cores", "4")
    try:
        for argv in (["snakemake"], ["snakemake", "--unlock"], ["snakemake", "-np"]):
            message = workdir_lock.acquire(argv, tmp_path)
            assert message.startswith(LOCKED) and f"(pid {first.pid}: snakemake --cores 4)" in message
        assert "add --nolock to the dry run" in workdir_lock.acquire(["snakemake", "-n"], tmp_path)
        assert workdir_lock.acquire(["snakemake", "-n", "--nolock"], tmp_path) is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # a killed instance holds nothing: no --unlock needed
    assert workdir_lock.acquire(["snakemake"], tmp_path) is None
    assert workdir_lock.acquire(["snakemake"], tmp_path) is None  # the same process again


def test_dry_runs_share_the_directory_and_a_run_waits_for_none_of_them(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir_lock, "_held", {})
    look = _hold(tmp_path, "-n")
    try:
        assert workdir_lock.acquire(["snakemake", "--dry-run"], tmp_path) is None
        monkeypatch.setattr(workdir_lock, "_held", {})
        message = workdir_lock.acquire(["snakemake"], tmp_path)
        assert message.startswith(LOCKED) and "pid" not in message  # a look leaves no name behind
    finally:
        look.kill()
        look.wait()


def test_processes_started_together_many_times_one_gets_the_lock_the_others_one_clear_line(tmp_path):
    # each waits for a common start time, tries, says how it went and holds on until told to end
    race = (
        "import sys, time; from workflow_scripts import workdir_lock as w; "
        "time.sleep(max(0, float(sys.argv[1]) - time.time())); "
        "print(w.acquire(['snakemake']) or 'held', flush=True); sys.stdin.read()"
    )
    for _ in range(10):
        start = str(time.time() + 0.3)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", race, start],
                cwd=tmp_path,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        outs = sorted(p.stdout.readline().strip() for p in procs)
        for p in procs:
            p.communicate(timeout=60)
        assert outs.count("held") == 1 and all(o.startswith(LOCKED) for o in outs if o != "held"), outs


def _start(workdir: Path, *args: str) -> subprocess.Popen:
    cmd = [str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    cmd += ["--workflow-profile", str(ROOT / "profiles" / "local"), "--cores", "1", *args, TARGET]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    workdir = copy_demo(tmp_path_factory.mktemp("concurrent"))
    done = run_demo(workdir, "--cores", "1", TARGET)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


@pytest.mark.parametrize("second", [(), ("-n",)], ids=["run-and-run", "run-and-dry-run"])
def test_two_snakemake_invocations_at_once_end_with_one_clear_locked_line(workdir, second):
    procs = [_start(workdir), _start(workdir, *second)]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for rc, _, err in results:
        assert "Traceback" not in err and "FileNotFoundError" not in err, err[-3000:]
        assert rc == 0 or (rc == 1 and LOCKED in err), err[-3000:]
    assert sum(rc == 0 for rc, _, _ in results) >= 1
