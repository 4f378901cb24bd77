"""On a Snakemake outside the versions the engine's patches were tested on, the workflow runs on stock
Snakemake, says so in one line, and plans the demo job for job as it does with the patches."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from workflow_harness import BIN, ROOT, copy_demo, planned_jobs

from workflow_scripts import engine

OUTSIDE = "9.30.0"
# Snakemake's own command line (argv[0] as the snakemake script's), reporting another version
AS_VERSION = """\
import sys, snakemake
snakemake.__version__, sys.argv[0] = sys.argv.pop(1), sys.argv.pop(1)
from snakemake.cli import main
main()
"""
CLOCK = re.compile(r"\[\w{3} \w{3} [ \d]\d [\d:]{8} \d{4}\]|Date: .*|Workflow ID: .*")
CACHE = re.compile(r"runtime-cache/tmp\w+/")  # Snakemake's source cache, a new folder each run


def plan(output: str, drop: list[str]) -> list[str]:
    """Every printed line but ``drop``, sorted, with what differs between any two runs left out."""
    return sorted(CACHE.sub("runtime-cache/", CLOCK.sub("", line)) for line in output.splitlines() if line not in drop)


def dry_run(demo: Path, version: str | None = None) -> str:
    snakemake = str(BIN / "snakemake")
    command = [snakemake] if version is None else [sys.executable, "-c", AS_VERSION, version, snakemake]
    args = ["--snakefile", str(ROOT / "Snakefile"), "--directory", str(demo), "-n", "-p"]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    env.pop(engine.SWITCH, None)
    result = subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def test_the_demo_plans_the_same_jobs_on_a_snakemake_the_patches_were_not_tested_on(tmp_path):
    demo = copy_demo(tmp_path)
    patched, stock = dry_run(demo), dry_run(demo, OUTSIDE)
    notes = [line for line in stock.splitlines() if line.startswith("note: snakemake")]
    assert notes == [f"note: {engine.refusal(OUTSIDE, {})}"]
    assert "outside the versions" not in patched
    assert plan(patched, []) == plan(stock, notes)
    assert sum(planned_jobs(patched).values()) > 500
