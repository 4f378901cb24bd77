"""Partial reruns: named task and model targets, one seed by its path, --forcerun of a
stage, and a task added to a finished study running only its own jobs."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from workflow_harness import ROOT, copy_demo, planned_jobs, run_demo, snakemake

from workflow_scripts.config import plan
from workflow_scripts.config.validate import load_config

SCHEMA = ROOT / "schemas/config.schema.yaml"


def _study(path: Path):
    return load_config(yaml.safe_load(path.read_text()), SCHEMA)


def planned_outputs(output: str, rule: str) -> set[str]:
    """First output file of every job of `rule` in `snakemake -n` output."""
    found, current = set(), None
    for line in output.splitlines():
        line = line.strip()  # the runs of a group job are listed indented under it
        if line.startswith("rule ") or line.startswith("localrule "):
            current = line.split()[1].rstrip(":")
        elif current == rule and line.strip().startswith("output:"):
            found.add(line.split(":", 1)[1].split(",")[0].strip())
            current = None
    return found


def _output(result) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def _dry_run(*args: str, workdir: Path | None = None) -> str:
    return _output(snakemake("-n", *args) if workdir is None else run_demo(workdir, "-n", *args))


# the full study's dry runs of this module, by test
FULL_STUDY_TARGETS = {
    "task": ("task_ncbi_disease",),
    "model": ("model_pubmedbert_ours",),
    "torchrun": (
        "-p",
        "--cores",
        "32",
        "--",
        "results/pretrain/pubmedbert-ours/model.safetensors",
        "results/distill/distil-pubmedbert/model.safetensors",
    ),
}


def _assert_runs(output: str, expected: list[str]) -> None:
    assert planned_outputs(output, "finetune") == set(expected)
    assert planned_jobs(output)["finetune"] == len(expected)


@pytest.fixture(scope="module")
def full_study():
    return _study(ROOT / "config.yaml")


@pytest.fixture(scope="module")
def full_study_plans() -> dict:
    """The full study's dry runs, two at a time: each is a snakemake process on one core."""
    with ThreadPoolExecutor(2) as pool:
        results = pool.map(lambda args: snakemake("-n", *args), FULL_STUDY_TARGETS.values())
        return dict(zip(FULL_STUDY_TARGETS, results, strict=True))


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory):
    return copy_demo(tmp_path_factory.mktemp("targets"))


def test_task_target_runs_every_model_fold_and_seed_of_that_task_only(full_study, full_study_plans):
    output = _output(full_study_plans["task"])
    expected = plan.run_metrics(full_study, task="ncbi-disease")
    rt = full_study.resolved_tasks["ncbi-disease"]
    assert len(expected) == len(plan.evaluated_models(full_study)) * len(rt.folds) * len(rt.seeds)
    # the no-training baseline's runs are jobs of rule baseline
    baselines = [f"/{m}/" for m, entry in full_study.models.items() if entry.kind == "baseline"]
    trained = [p for p in expected if not any(b in p for b in baselines)]
    _assert_runs(output, trained)
    jobs = planned_jobs(output)
    assert jobs["baseline"] == len(expected) - len(trained) > 0
    assert jobs["tables_of_task"] == 1 and jobs["task_ncbi_disease"] == 1
    assert "tables" not in jobs and "all" not in jobs
    # the models those runs need are built upstream
    assert jobs["pretrain"] == sum(m.kind == "pretrain" for m in full_study.models.values())


def test_model_target_builds_the_model_and_its_runs_on_every_task(full_study, full_study_plans):
    output = _output(full_study_plans["model"])
    _assert_runs(output, plan.run_metrics(full_study, model="pubmedbert-ours"))
    assert planned_outputs(output, "pretrain") >= {"results/pretrain/pubmedbert-ours/model.safetensors"}
    jobs = planned_jobs(output)
    assert "distill" not in jobs and "tables" not in jobs


def test_demo_targets(demo_copy):
    study = _study(demo_copy / "config.yaml")
    trained = [p for p in plan.run_metrics(study, task="demo-ner") if "/demo-baseline/" not in p]
    _assert_runs(_dry_run("task_demo_ner", workdir=demo_copy), trained)
    output = _dry_run("model_demo_student", workdir=demo_copy)
    _assert_runs(output, plan.run_metrics(study, model="demo-student"))
    assert planned_outputs(output, "distill") == {"results/distill/demo-student/model.safetensors"}
    # the no-training baseline: its runs are computed, nothing is trained
    jobs = planned_jobs(_dry_run("model_demo_baseline", workdir=demo_copy))
    assert "finetune" not in jobs and "pretrain" not in jobs
    assert jobs["baseline"] == len(plan.run_metrics(study, model="demo-baseline"))


def test_target_names_are_identifiers():
    assert plan.target_rule("task", "ncbi-disease") == "task_ncbi_disease"
    assert plan.target_rule("model", "bert-base.v1") == "model_bert_base_v1"
    assert all(re.fullmatch(r"\w+", plan.target_rule("task", t)) for t in ["i2b2-2010-re", "species-800"])


def test_one_seed_by_its_output_path(demo_copy):
    path = "results/finetune/demo-roberta/demo-ner/fold~0/seed~2/metrics.json"
    output = _dry_run(path, workdir=demo_copy)
    _assert_runs(output, [path])


@pytest.fixture(scope="module")
def prepared(demo_copy):
    """The demo with one task really prepared (download, settings, normalised splits)."""
    result = run_demo(demo_copy, "results/tasks/demo-ner/data_card.json")
    assert result.returncode == 0, result.stderr[-3000:]
    return demo_copy


def test_forcerun_of_a_stage(prepared):
    card = "results/tasks/demo-ner/data_card.json"
    assert "Nothing to be done" in _dry_run(card, workdir=prepared)
    jobs = planned_jobs(_dry_run("--forcerun", "prepare_task", "--", card, workdir=prepared))
    assert jobs == {"prepare_task": 1}
    # forcing an upstream stage reruns what depends on it, and nothing else
    jobs = planned_jobs(_dry_run("--forcerun", "task_settings", "--", card, workdir=prepared))
    assert jobs == {"task_settings": 1, "prepare_task": 1}


def test_adding_a_task_to_a_finished_study_runs_only_its_jobs(prepared):
    config = prepared / "config.yaml"
    original = config.read_text()
    cfg = yaml.safe_load(original)
    cfg["tasks"]["demo-ner-again"] = cfg["tasks"]["demo-ner"]
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    try:
        output = _dry_run(
            "results/tasks/demo-ner/data_card.json", "results/tasks/demo-ner-again/data_card.json", workdir=prepared
        )
    finally:
        config.write_text(original)
    files = len(cfg["tasks"]["demo-ner"]["source"]["files"])
    assert planned_jobs(output) == {"download_task_file": files, "task_settings": 1, "prepare_task": 1}
    assert planned_outputs(output, "prepare_task") == {"results/tasks/demo-ner-again/data_card.json"}


def test_full_study_pretraining_launches_one_torchrun_per_node_and_distillation_on_one(full_study_plans):
    output = _output(full_study_plans["torchrun"])
    commands = [line for line in output.splitlines() if "torchrun" in line]
    pretrain = next(c for c in commands if "workflow_scripts.pretrain.pretrain" in c)
    distill = next(c for c in commands if "workflow_scripts.distill.distill" in c)
    assert (
        "srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpus-per-task=16 torchrun --nnodes 2 --nproc-per-node 8 "
        "--rdzv-backend c10d --rdzv-endpoint $(hostname):29500 --rdzv-id $SLURM_JOB_ID -m workflow_scripts.pretrain"
    ) in pretrain
    assert "torchrun --standalone --nproc-per-node 8 -m workflow_scripts.distill.distill" in distill
    assert "srun" not in distill
