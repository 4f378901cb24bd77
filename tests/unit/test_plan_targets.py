"""Named targets' pure helpers: run lists of one task or model, one task's report settings."""

from pathlib import Path

import yaml

from workflow_scripts.config import plan, step_settings
from workflow_scripts.config.validate import load_config

ROOT = Path(__file__).resolve().parents[2]


def _demo():
    return load_config(yaml.safe_load((ROOT / "demo/config.yaml").read_text()), ROOT / "schemas/config.schema.yaml")


def test_run_metrics_of_one_task_or_model_partition_the_study():
    study = _demo()
    every = plan.run_metrics(study)
    by_task = [p for t in study.resolved_tasks for p in plan.run_metrics(study, task=t)]
    by_model = [p for m in study.models for p in plan.run_metrics(study, model=m)]
    assert sorted(by_task) == sorted(every) == sorted(by_model)
    assert plan.run_metrics(study, task="demo-ner", model="demo-student") == [
        f"results/finetune/demo-student/demo-ner/fold~0/seed~{s}/metrics.json" for s in study.seeds
    ]
    study.models["demo-student-control"].evaluate = False
    assert plan.run_metrics(study, model="demo-student-control") == []


def test_task_report_settings_keep_every_model_and_only_that_tasks_runs():
    study = _demo()
    full = step_settings.report_settings(study, str(ROOT))
    one = plan.task_report_settings(full, "demo-pico")
    assert list(one["tasks"]) == ["demo-pico"]
    assert one["models"] == full["models"] and one["reference"] == full["reference"]
    assert {r["task"] for r in one["runs"]} == {"demo-pico"}
    assert len(one["runs"]) == len(plan.run_metrics(study, task="demo-pico"))
    assert len(full["tasks"]) > 1  # the full settings are left as they were
