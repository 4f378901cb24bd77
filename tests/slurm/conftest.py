"""One local Slurm cluster for every test here that submits jobs: started by the first of them
(tests/slurm/start-local-slurm.sh, about 5 s once installed), stopped by PID when the session ends.
Each test works in its own folder and tells its jobs apart by their job ids, so none sees another's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from workflow_harness import BIN

HERE = Path(__file__).resolve().parent
# the partitions the tests' profiles name: the CPU one is the cluster's default
PARTITIONS = "debug gpu"


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root: start-local-slurm.sh installs Slurm with apt-get and runs its daemons"
    if shutil.which("apt-get") is None or shutil.which("dpkg-query") is None:
        return "needs a Debian system with apt-get to install slurm-wlm, munge and slurmdbd"
    if shutil.which("timeout") is None:
        return "needs coreutils' timeout"
    return None


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """The environment of a client of the cluster: SLURM_CONF and the wrapped commands on PATH."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    directory = tmp_path_factory.mktemp("local-slurm")
    try:
        started = subprocess.run(
            [str(HERE / "start-local-slurm.sh"), str(directory)],
            env={**os.environ, "LOCAL_SLURM_PARTITIONS": PARTITIONS},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert started.returncode == 0, started.stdout + started.stderr
        path = os.pathsep.join([str(directory / "bin"), str(BIN), os.environ.get("PATH", "")])
        yield {**os.environ, "SLURM_CONF": str(directory / "slurm.conf"), "PATH": path}
    finally:
        subprocess.run([str(HERE / "stop-local-slurm.sh"), str(directory), "--purge"], timeout=300)
