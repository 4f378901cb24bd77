"""The console `make demo` shows: one progress line, Snakemake's records in a log file, failures
whole, and at the end where the results are with the first findings. Runs the real snakemake on a
three-stage workflow of a few shell jobs in a temporary directory."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from workflow_scripts.console import Display, Progress, headline_findings, rule_stages

BIN = Path(sys.executable).parent
SNAKEFILE = """include: "rules/make.smk"
include: "rules/report.smk"


rule all:
    input: "results/tables/findings.md"
"""
MAKE = """rule numbers_settings:
    output: "results/configs/numbers.yaml"
    shell: "echo 'n: 3' > {output}"

rule numbers:
    input: "results/configs/numbers.yaml"
    output: "results/n/{i}.txt"
    log: "results/logs/numbers/{i}.log"
    shell: "echo {wildcards.i} > {output}; echo 'numbers {wildcards.i} written' > {log}"
"""
REPORT = """rule findings:
    input: expand("results/n/{i}.txt", i=range(3))
    output: "results/tables/findings.md"
    log: "results/logs/findings.log"
    shell: "if [ -e FAIL ]; then echo 'cannot read the tables: FAIL is set' > {log}; exit 3; fi; "
        "printf '## Findings\\\\n\\\\n- First.\\\\n- Second.\\\\n- Third.\\\\n- Fourth.\\\\n' > {output}"
"""


def workflow(tmp_path: Path) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "rules" / "make.smk").write_text(MAKE)
    (tmp_path / "rules" / "report.smk").write_text(REPORT)
    return tmp_path


def console(root: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [sys.executable, "-m", "workflow_scripts.console", *extra, "--", "-c1", "--show-failed-logs"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_progress_line_counts_jobs_and_names_the_stages_running():
    progress = Progress({"numbers": "make", "findings": "report"})
    for line in ["total        5", "[Fri Nov 27 21:46:42 2026]", "localrule numbers:", "    jobid: 3"]:
        progress.feed(line)
    assert progress.line(75) == "[0/5 0%] make | 1:15 elapsed"
    for line in ["rule findings:", "    jobid: 4", "Finished jobid: 3 (Rule: numbers)", "1 of 5 steps (20%) done"]:
        progress.feed(line)
    assert progress.line(3725) == "[1/5 20%] report | 1:02:05 elapsed"


def test_a_log_gets_a_line_per_change_of_stage_at_most_every_gap_and_the_last_state():
    out = io.StringIO()
    display = Display(out, interval=30.0, gap=0.0)
    for text, key in [("[1/6] settings", "settings"), ("[2/6] settings", "settings"), ("[3/6] make", "make")]:
        display.show(text, key)
    display.finish("[6/6] report")
    assert out.getvalue().splitlines() == ["[1/6] settings", "[3/6] make", "[6/6] report"]
    quiet = io.StringIO()
    display = Display(quiet, interval=30.0, gap=60.0)
    display.show("[1/6] settings", "settings")
    display.show("[3/6] make", "make")
    assert quiet.getvalue().splitlines() == ["[1/6] settings"]


def test_a_long_single_stage_still_prints_a_line_every_interval_outside_a_terminal(monkeypatch):
    """A pretraining job of many minutes changes no stage: a log still shows that time passes."""
    now = [1000.0]
    monkeypatch.setattr("workflow_scripts.console.time.monotonic", lambda: now[0])
    out = io.StringIO()
    display = Display(out, interval=30.0, gap=5.0)
    for elapsed in range(0, 95, 1):  # the follower redraws about once a second
        now[0] = 1000.0 + elapsed
        display.show(f"[4/9] pretrain | {elapsed} s", "pretrain")
    assert out.getvalue().splitlines() == [f"[4/9] pretrain | {s} s" for s in (0, 30, 60, 90)]


def test_failure_lines_are_shown_and_job_records_are_not():
    progress = Progress({})
    shown = [
        line
        for line in ["rule a:", "    jobid: 1", "RuleException:", "[Fri Nov 27 21:46:43 2026]", "Error in rule a:"]
        + ["    jobid: 1", "Logfile logs/a.log:", "boom", "rule b:", "    jobid: 2"]
        if progress.feed(line)
    ]
    assert shown == ["RuleException:", "Error in rule a:", "    jobid: 1", "Logfile logs/a.log:", "boom"]
    assert progress.failed


def test_stages_are_the_rule_files_the_snakefile_includes(tmp_path):
    stages = rule_stages(workflow(tmp_path) / "Snakefile")
    assert stages == {"numbers_settings": "settings", "numbers": "make", "findings": "report"}


def test_headline_findings_are_the_first_three(tmp_path):
    md = tmp_path / "findings.md"
    md.write_text("## Findings\n\n- A.\n- B.\n- C.\n- D.\n")
    assert headline_findings(md) == ["A.", "B.", "C."]
    assert headline_findings(tmp_path / "missing.md") == []


def test_a_run_shows_progress_and_where_the_results_are(tmp_path):
    root = workflow(tmp_path)
    done = console(root)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "jobid:" not in out and "Finished jobid" not in out
    assert "[6/6 100%]" in out
    assert "Finished 6 of 6 jobs" in out
    assert "1. First." in out and "3. Third." in out and "Fourth" not in out
    assert "Tables:  results/tables/" in out
    log = (root / "results" / "logs" / "snakemake.log").read_text()
    assert "jobid:" in log and "6 of 6 steps (100%) done" in log

    again = console(root, "--verbose")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout


def test_a_failing_job_prints_its_log(tmp_path):
    root = workflow(tmp_path)
    (root / "FAIL").touch()
    failed = console(root)
    assert failed.returncode != 0
    assert "Error in rule findings" in failed.stdout
    assert "cannot read the tables: FAIL is set" in failed.stdout
    assert "localrule numbers:" not in failed.stdout
    assert "results/logs/snakemake.log" in failed.stderr
