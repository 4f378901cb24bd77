"""Which job scheduler Snakemake uses under the workflow's profiles, read by Snakemake's own parser.

Snakemake's default ILP scheduler writes and solves an integer program over every ready job each
time it chooses jobs: run locally, the full study's 1,002 settings jobs cost it 2.7 times the
greedy scheduler's CPU (benchmarks/README.md, "Choosing jobs: the ILP and the greedy
scheduler"). Every profile the workflow brings asks for the greedy one, and a user's
`--scheduler` still wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.cli import parse_args

ROOT = Path(__file__).resolve().parents[2]


def _scheduler(*argv: str) -> str:
    _, args = parse_args(["--dry-run", *argv])
    return args.scheduler


@pytest.fixture
def site_profile(tmp_path, monkeypatch):
    """profiles/slurm installed as a user installs it (its SITE_ values left: nothing is submitted)."""
    installed = tmp_path / "snakemake" / "slurm" / "config.yaml"
    installed.parent.mkdir(parents=True)
    installed.write_text((ROOT / "profiles/slurm/config.yaml").read_text())
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))


def test_every_workflow_profile_asks_for_the_greedy_scheduler(monkeypatch, site_profile):
    monkeypatch.chdir(ROOT)  # where Snakemake finds profiles/default by itself
    assert _scheduler() == "greedy"
    assert _scheduler("--workflow-profile", "profiles/local") == "greedy"
    assert _scheduler("--workflow-profile", "profiles/gpu-server") == "greedy"
    assert _scheduler("--profile", "slurm") == "greedy"


def test_the_command_line_still_chooses(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert _scheduler("--scheduler", "ilp") == "ilp"
    assert _scheduler("--workflow-profile", "profiles/local", "--scheduler", "ilp") == "ilp"
