"""Running the workflow from tests: the real snakemake CLI on the real Snakefile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def snakemake(*args: str, cwd: Path = ROOT, timeout: int = 1800, preload: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if preload:
        env["WORKFLOW_PRELOAD"] = "1"
    return subprocess.run(
        [str(BIN / "snakemake"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def copy_demo(dest: Path) -> Path:
    """A fresh copy of the demo working directory (raw sources and config, no results)."""
    target = dest / "demo"
    shutil.copytree(
        ROOT / "demo",
        target,
        ignore=shutil.ignore_patterns("results", ".snakemake", "__pycache__"),
    )
    return target


def run_demo(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """The demo as `make demo` runs it: fine-tuning runs fork a preloaded interpreter."""
    return snakemake(
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--workflow-profile",
        str(ROOT / "profiles" / "local"),
        *args,
        preload=True,
    )


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
