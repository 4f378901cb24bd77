"""A command run through the preloaded interpreter behaves as the same command run by ``python -m``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import os, sys, time
from pathlib import Path
print("argv", sys.argv[1:])
print("cwd", os.getcwd())
print("env", os.environ.get("PROBE_VALUE"))
print("preloaded", "torch" in sys.modules)
mapping = sys.modules.get("transformers.conversion_mapping")
print("mapping", getattr(mapping, "_checkpoint_conversion_mapping_cache", None) is not None)
print("marked", os.environ.get("WORKFLOW_PRELOADED"))
print("version", VERSION)
print("to stderr", file=sys.stderr)
if sys.argv[1:2] == ["sleep"]:
    Path(sys.argv[2]).write_text(str(os.getpid()))
    time.sleep(60)
if sys.argv[1:2] == ["raise"]:
    raise RuntimeError("the probe failed")
sys.exit(int(sys.argv[1]) if sys.argv[1:2] and sys.argv[1].isdigit() else 0)
"""


@pytest.fixture
def probe(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "preload_probe.py").write_text("VERSION = 1\n" + PROBE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)]),
        "TMPDIR": str(tmp_path),
        "WORKFLOW_PRELOAD": "1",
        "WORKFLOW_PRELOAD_IDLE": "3",
        "PROBE_VALUE": "from the caller",
    }
    workdir = tmp_path / "work"
    workdir.mkdir()
    yield code, env, workdir
    for sock in sockets(tmp_path):
        subprocess.run(["pkill", "-f", "--", f"--serve {sock}"], check=False)


def launch(env, workdir, *args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "workflow_scripts.preload", "preload_probe", *args],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def eventually(condition, seconds: float) -> bool:
    """Whether ``condition()`` holds within ``seconds``, looked at every 0.1 s."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def sockets(folder: Path) -> list[Path]:
    """The preload servers' sockets in ``folder``: one for each server still running."""
    return list(folder.glob("workflow-preload-*.sock"))


def lines(output: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in output.splitlines())


def test_the_run_sees_the_callers_arguments_directory_environment_and_streams(probe):
    code, env, workdir = probe
    first = launch(env, workdir, "5", "--flag")
    second = launch(env, workdir, "0")
    assert first.returncode == 5 and second.returncode == 0
    out = lines(second.stdout)
    assert out["argv"] == "['0']" and out["cwd"] == str(workdir) and out["env"] == "from the caller"
    assert out["preloaded"] == "True", "the second command should run in a fork of the preloaded server"
    # what the first from_pretrained of a process builds is built once, in the server
    assert out["mapping"] == "True"
    assert second.stderr == "to stderr\n"


def test_a_tmpdir_deeper_than_a_socket_address_still_gets_its_server(probe, tmp_path):
    code, env, workdir = probe
    # a Slurm job's or a pytest-xdist worker's TMPDIR can pass the 108 bytes a Unix socket address holds
    deep = tmp_path / ("job" * 20) / ("step" * 10)
    deep.mkdir(parents=True)
    env = {**env, "TMPDIR": str(deep)}
    launch(env, workdir)
    out = lines(launch(env, workdir).stdout)
    assert out["preloaded"] == "True"
    (sock,) = sockets(deep)
    assert len(os.fsencode(sock)) > 108


def test_a_server_that_cannot_start_is_named_and_the_run_goes_on_in_the_command(probe, tmp_path):
    code, env, workdir = probe
    where = [sys.executable, "-c", "from workflow_scripts.preload import socket_path; print(socket_path())"]
    sock = Path(subprocess.run(where, env=env, capture_output=True, text=True, check=True).stdout.strip())
    sock.mkdir()  # the server cannot replace a folder by its socket
    result = launch(env, workdir, "3")
    assert result.returncode == 3 and lines(result.stdout)["preloaded"] == "False"
    assert f"the preloaded interpreter did not start (its log: {sock}.log)" in result.stderr
    assert "IsADirectoryError" in Path(f"{sock}.log").read_text()


def test_code_edits_apply_to_the_next_run(probe):
    code, env, workdir = probe
    assert lines(launch(env, workdir).stdout)["version"] == "1"
    (code / "preload_probe.py").write_text("VERSION = 2\n" + PROBE)
    assert lines(launch(env, workdir).stdout)["version"] == "2"


def test_an_exception_prints_its_traceback_and_exits_1(probe):
    code, env, workdir = probe
    result = launch(env, workdir, "raise")
    assert result.returncode == 1 and "RuntimeError: the probe failed" in result.stderr


def sleeping_run(env, workdir, tmp_path) -> tuple[subprocess.Popen, int]:
    """A command whose run sleeps, once the run has started: the command and the run's pid."""
    launch(env, workdir)
    pid_file = tmp_path / "run.pid"
    command = subprocess.Popen(
        [sys.executable, "-m", "workflow_scripts.preload", "preload_probe", "sleep", str(pid_file)],
        env=env,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    eventually(pid_file.exists, 60)
    return command, int(pid_file.read_text())


def ended(pid: int) -> bool:
    """Whether the process ``pid`` ends (or is left a zombie) within 30 s."""

    def gone() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
        except FileNotFoundError:
            return True

    return eventually(gone, 30)


def test_a_signal_to_the_command_stops_the_run(probe, tmp_path):
    code, env, workdir = probe
    command, run_pid = sleeping_run(env, workdir, tmp_path)
    assert run_pid != command.pid
    command.send_signal(signal.SIGTERM)
    assert command.wait(timeout=30) == -signal.SIGTERM
    assert ended(run_pid)


def test_a_command_killed_outright_stops_its_run(probe, tmp_path):
    code, env, workdir = probe
    command, run_pid = sleeping_run(env, workdir, tmp_path)
    command.kill()  # no signal to forward: the server sees the connection close
    command.wait(timeout=30)
    assert ended(run_pid)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd on this system")
def test_a_runs_status_arrives_when_it_ends_not_at_the_next_poll(monkeypatch):
    from workflow_scripts import preload

    monkeypatch.setattr(preload, "POLL_SECONDS", 3600.0)
    pid = os.fork()
    if pid == 0:
        time.sleep(0.2)
        os._exit(7)
    ours, theirs = socket.socketpair()
    statuses: list[int] = []
    with ours, theirs, preload.exit_notice(pid) as exit_fd:
        waiter = threading.Thread(target=lambda: statuses.append(preload.wait_for(pid, ours, exit_fd)), daemon=True)
        waiter.start()
        waiter.join(timeout=60)
    assert statuses and os.waitstatus_to_exitcode(statuses[0]) == 7


def test_the_server_leaves_when_idle(probe, tmp_path):
    code, env, workdir = probe
    launch(env, workdir)
    assert sockets(tmp_path)
    assert eventually(lambda: not sockets(tmp_path), 30)
    assert lines(launch(env, workdir).stdout)["version"] == "1"


def test_without_the_variable_the_module_runs_in_the_command(probe, tmp_path):
    code, env, workdir = probe
    result = launch({**env, "WORKFLOW_PRELOAD": "0"}, workdir, "3")
    assert result.returncode == 3 and lines(result.stdout)["preloaded"] == "False"
    assert not sockets(tmp_path)


def test_inside_a_slurm_job_step_runs_fork_from_that_steps_server_only(probe, tmp_path):
    code, env, workdir = probe
    step = {k: v for k, v in env.items() if k != "WORKFLOW_PRELOAD"}
    # servers that outlast the test's commands, so that each command shows which one it reached
    step.update(SLURM_JOB_ID="77", SLURM_STEP_ID="0", WORKFLOW_PRELOAD_GROUP_JOB="1", WORKFLOW_PRELOAD_IDLE="60")
    # the step's task, which Slurm names in SLURM_TASK_PID: the group job's Snakemake
    task = subprocess.Popen(["sleep", "300"])
    step["SLURM_TASK_PID"] = str(task.pid)
    failed = launch(step, workdir, "3")
    after = launch(step, workdir, "0")
    # a failing run fails only itself: the next run of the step forks from the same server
    assert failed.returncode == 3 and after.returncode == 0
    assert lines(after.stdout)["preloaded"] == "True" and lines(after.stdout)["marked"] == "1"
    assert len(sockets(tmp_path)) == 1
    # another step of the allocation, or another allocation, never reaches this step's server
    launch({**step, "SLURM_STEP_ID": "1"}, workdir)
    launch({**step, "SLURM_JOB_ID": "78"}, workdir)
    assert len(sockets(tmp_path)) == 3
    # the batch script has no step to bound a server's life; a Slurm job that is no group job's
    # runs as it always did, even with WORKFLOW_PRELOAD=1; WORKFLOW_PRELOAD=0 turns it off
    batch = {k: v for k, v in step.items() if k != "SLURM_STEP_ID"}
    no_group = {**{k: v for k, v in step.items() if k != "WORKFLOW_PRELOAD_GROUP_JOB"}, "WORKFLOW_PRELOAD": "1"}
    for plain in (batch, no_group, {**step, "WORKFLOW_PRELOAD": "0"}):
        out = lines(launch(plain, workdir).stdout)
        assert out["preloaded"] == "False" and out["marked"] == "None"
    # the servers leave with the step's task, long before their idle timeout
    task.kill()
    task.wait()
    assert eventually(lambda: not sockets(tmp_path), 20)
