"""The tables do not depend on the core count: make demo takes every core (CORES=N caps it), and each
job's torch and tokenizer threads come from the config, never from the cores Snakemake hands it."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_harness import TEST_CORES, most_jobs_at_once, run_small_study

pytestmark = pytest.mark.slow

# what a run measures (seconds, examples per second) differs from run to run at any core count
TIMED = ("cost.",)


def _tables(workdir: Path) -> dict[str, bytes]:
    tables = workdir / "results" / "tables"
    return {
        path.relative_to(tables).as_posix(): path.read_bytes()
        for path in sorted(tables.rglob("*"))
        if path.suffix in (".csv", ".md", ".tex") and not path.name.startswith(TIMED)
    }


def test_one_core_computes_the_tables_of_two(small_study_run, tmp_path):
    """The small study (pretraining, distillation, a decay branch, fine-tuning, tables) on one core, byte for
    byte as the session's run on two, which ran jobs side by side."""
    one = run_small_study(tmp_path, cores=1)
    assert most_jobs_at_once(one) == 1
    assert most_jobs_at_once(small_study_run) == TEST_CORES
    single, shared = _tables(one), _tables(small_study_run)
    assert "medians.csv" in shared and "blurb.csv" in shared
    assert sorted(single) == sorted(shared)
    assert [name for name in shared if single[name] != shared[name]] == []
