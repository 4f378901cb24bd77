"""Static checks of the workflow: snakemake's linter, snakefmt and ruff (lint and format) over every Python file."""

import subprocess
import sys
from pathlib import Path

from workflow_harness import ROOT, snakemake


def test_snakemake_lint_is_clean():
    result = snakemake("--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_snakefmt_check_is_clean():
    snakefmt = Path(sys.executable).parent / "snakefmt"
    result = subprocess.run([str(snakefmt), "--check", "Snakefile", "rules"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = Path(sys.executable).parent / "ruff"
    return subprocess.run([str(ruff), *args, "."], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    result = _ruff("check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_check_is_clean():
    result = _ruff("format", "--check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
