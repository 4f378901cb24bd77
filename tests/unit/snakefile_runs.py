"""A small Snakefile's dry run, as the tests of our Snakemake patches compare them: once as it
is and once with a patch installed at its top."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLOCK = re.compile(r"Date:|Workflow ID|\d{4}\]$")  # what differs between any two runs
STAMP = re.compile(r"^\[\w{3} \w{3} [ \d]\d [\d:]{8} \d{4}\] ")  # a group job's line starts with the time


def dry_run(workdir: Path, snakefile: str, check: bool = True) -> subprocess.CompletedProcess:
    """`snakemake -n -p` of ``snakefile`` in ``workdir`` (the same directory for both runs:
    Snakemake prints it), with this checkout's package importable and hashing fixed."""
    return run(workdir, snakefile, ["-n", "-p", "--cores", "1"], check)


def run(workdir: Path, snakefile: str, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    """`snakemake ARGS` of ``snakefile`` in ``workdir``, as :func:`dry_run` runs it."""
    workdir.mkdir(exist_ok=True)
    (workdir / "Snakefile").write_text(snakefile)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    snakemake = Path(sys.executable).parent / "snakemake"
    return subprocess.run([str(snakemake), *args], cwd=workdir, env=env, capture_output=True, text=True, check=check)


def printed(result: subprocess.CompletedProcess, drop: str = r"^$") -> list[str]:
    """Every line the run printed, sorted, without the clock's and those matching ``drop``."""
    lines = (result.stdout + result.stderr).splitlines()
    return sorted(STAMP.sub("", line) for line in lines if not CLOCK.search(line) and not re.search(drop, line))


def planned(workdir: Path, template: str, install: str = "") -> list[str]:
    """:func:`printed` of the dry run of ``template`` (a Snakefile with an ``{install}`` field
    at its top and braces doubled) with ``install`` filled in."""
    return printed(dry_run(workdir, textwrap.dedent(template.format(install=install))))


def planned_alike(workdir: Path, template: str, module: str) -> list[str]:
    """:func:`planned` with ``workflow_scripts.<module>`` installed, asserted to print what the
    Snakefile prints without it."""
    installed = f"from workflow_scripts.engine import {module}\nassert {module}.install()"
    patched = planned(workdir, template, installed)
    assert patched == planned(workdir, template)
    return patched
