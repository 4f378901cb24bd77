"""Faults met by the workflow as a whole, on a small study cut from the demo: an upstream
model deleted under a finished fine-tuning run is rebuilt by a plain rerun; a moved
checkout reruns no report job; a NOTEEVENTS file ending inside a quoted field and a
negative seed are refused naming the file and line, or the key."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_harness import ROOT, copy_demo, copy_finished, planned_jobs, run_demo, snakemake

from workflow_scripts.config.study import load_study
from workflow_scripts.corpus.mimic import Note, iter_notes
from workflow_scripts.errors import PipelineError

RUN = "results/finetune/tiny/demo-ner/fold~0/seed~1/metrics.json"
MODEL = "results/pretrain/tiny"


@pytest.fixture(scope="module")
def finished(small_study_run, tmp_path_factory) -> Path:
    """A copy of the session's finished small study (workflow_harness.small_study: its model `tiny`, 4 steps,
    fine-tuned on demo-ner with seed 1 among others): the test here deletes files of it."""
    return copy_finished(small_study_run, tmp_path_factory.mktemp("study"))


def test_a_model_deleted_under_its_runs_is_rebuilt_by_a_plain_rerun(finished):
    assert "Nothing to be done" in run_demo(finished, "-n", RUN).stdout
    # the weights vanish while the run is loading them: the run fails and leaves no output
    weights = finished / MODEL / "model.safetensors"
    weights.chmod(0o644)
    weights.unlink()
    (finished / RUN).unlink()
    plan = run_demo(finished, "-n", RUN)
    assert planned_jobs(plan.stdout) == {"pretrain": 1, "finetune": 1}, plan.stdout[-3000:]


def test_a_moved_checkout_reruns_no_report_job(tmp_path):
    first = tmp_path / "a" / "checkout"
    first.mkdir(parents=True)
    for part in ("Snakefile", "rules", "schemas", "resources", "profiles"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, first / part)
    demo = copy_demo(first)
    targets = ["results/configs/report.yaml", "results/configs/report/task~demo-ner.yaml"]
    done = snakemake("--directory", "demo", "--cores", "1", *targets, cwd=first)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "../resources/reference/" in (demo / "results/configs/report.yaml").read_text()
    moved = tmp_path / "b" / "elsewhere"
    moved.parent.mkdir()
    shutil.move(first, moved)
    again = snakemake("--directory", "demo", "-n", *targets, cwd=moved)
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]


def test_notes_ending_inside_a_quoted_field_are_refused_naming_file_and_line(tmp_path):
    sample = (ROOT / "tests/fixtures/corpus/NOTEEVENTS_sample.csv").read_text()
    start = sample.count("\n") + 1  # the line the unterminated record starts on
    cut = sample + '999,1,2,"2100-01-01",,,"Nursing","Report",,,"Patient stable overnight.\nPlan: continue'
    path = tmp_path / "NOTEEVENTS.csv.gz"
    path.write_bytes(gzip.compress(cut.encode()))
    with pytest.raises(PipelineError, match=rf"NOTEEVENTS\.csv\.gz: line {start}: malformed CSV"):
        list(iter_notes(path))
    path.write_bytes(gzip.compress(sample.encode()))
    assert all(isinstance(n, Note) for n in iter_notes(path))  # the intact file reads whole


@pytest.mark.parametrize("where", ["seeds", "tasks.demo-ner.seeds"])
def test_a_negative_seed_is_refused_naming_the_key(where):
    cfg = yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())
    if where == "seeds":
        cfg["seeds"] = [-1]
    else:
        cfg["tasks"]["demo-ner"]["seeds"] = [1, -1]
    with pytest.raises(PipelineError, match=rf"^{where}: each seed must be an integer from 0 to 4294967295, got -1"):
        load_study(cfg)
