"""benchmarks/bench_demo.py reads a finished demo's own Snakemake log, whatever ran after it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_demo import newest_log, summarise  # noqa: E402

# Excerpts of a real `make demo` run's two logs (Snakemake 9.27): the workflow, then the report.
RUN = """\
Building DAG of jobs...
Provided cores: 2
[Sat Nov 28 17:08:29 2026]
localrule download_task_file:
    input: raw_source/tasks/demo-sts/dev.tsv
    jobid: 62
    wildcards: task=demo-sts, file=dev.tsv
    resources: tmpdir=/tmp, downloads=1
[Sat Nov 28 17:08:29 2026]
localrule download_task_file:
    input: raw_source/tasks/demo-hoc/train.tsv
    jobid: 75
    wildcards: task=demo-hoc, file=train.tsv
[Sat Nov 28 17:08:30 2026]
Finished jobid: 62 (Rule: download_task_file)
1 of 575 steps (0.2%) done
[Sat Nov 28 17:08:31 2026]
Finished jobid: 75 (Rule: download_task_file)
2 of 575 steps (0.3%) done
"""
REPORT = """\
Building DAG of jobs...
Creating report...
Adding medians.md (2.58 KB).
Report created.
"""


@pytest.fixture
def demo(tmp_path):
    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    (logs / "2026-11-28T170828.598069.snakemake.log").write_text(RUN)
    (logs / "2026-11-28T171849.700472.snakemake.log").write_text(REPORT)
    return tmp_path


def test_the_runs_log_is_read_not_the_report_written_after_it(demo):
    log = newest_log(demo)
    assert log.name.startswith("2026-11-28T170828")
    summary = summarise(demo, log, None, None)
    assert summary["jobs"] == 2 and summary["by_rule"]["download_task_file"]["job_s"] == 3.0
    assert summary["wall_s"] == 3.0  # from the log's name, 17:08:28, to its last record


def test_a_log_without_a_finished_job_is_named(demo):
    report = demo / ".snakemake" / "log" / "2026-11-28T171849.700472.snakemake.log"
    with pytest.raises(SystemExit, match=f"{report}: no finished job recorded"):
        summarise(demo, report, None, None)
    report.parent.joinpath("2026-11-28T170828.598069.snakemake.log").unlink()
    with pytest.raises(SystemExit, match="no Snakemake log with a finished job"):
        newest_log(demo)
