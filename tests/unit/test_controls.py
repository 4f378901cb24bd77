"""Controls: the no-training baseline of each task type, and the config of control models."""

from __future__ import annotations

import json

import pytest
from test_finetune_run import TASKS, make_bert, write_settings, write_task

from workflow_scripts.config import plan
from workflow_scripts.config.study import load_study
from workflow_scripts.controls import baseline, control
from workflow_scripts.errors import PipelineError


def test_each_type_predicts_from_training_labels_only():
    rows = [{"tokens": ["a", "b", "c"]}, {"tokens": ["d"]}]
    assert baseline.predict("ner", [["B-X", "O"]], rows, "O") == [["O", "O", "O"], ["O"]]
    assert baseline.predict("relation", ["false", "CPR:3", "false"], rows, "false") == ["false", "false"]
    assert baseline.predict("similarity", [1.0, 2.0, 4.5], rows, "O") == [2.5, 2.5]
    sets = [["b", "a"], ["a", "b"], ["c"], []]
    assert baseline.predict("doc_classification", sets, rows, "O") == [["a", "b"], ["a", "b"]]
    with pytest.raises(PipelineError, match="no training examples"):
        baseline.predict("qa", [], rows, "O")


@pytest.mark.parametrize("task_type", sorted(TASKS))
def test_baseline_run_is_scored_like_a_fine_tuning_run(tmp_path, task_type):
    task_dir = write_task(tmp_path, task_type)
    settings = write_settings(tmp_path / "s.yaml", task_type)
    out = tmp_path / "run"
    baseline.main(["--settings", str(settings), "--task-dir", str(task_dir), "--seed", "2", "--out", str(out)])
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["seed"], metrics["fold"], metrics["metric"]) == (2, 0, TASKS[task_type][1])
    assert 0.0 <= metrics["test"]["score"] <= 1.0
    if task_type in ("ner", "similarity"):
        assert metrics["test"]["score"] == 0.0  # nothing found, or a constant with no correlation
    gold = [json.loads(line) for line in (task_dir / "test.jsonl").read_text().splitlines()]
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in preds] == [g["id"] for g in gold]
    assert len({json.dumps(p["pred"]) for p in preds if task_type not in ("ner", "pico")}) <= 1
    assert json.loads((out / "provenance.json").read_text())["step"] == "controls.baseline"


def test_control_checkpoint_has_the_architecture_and_vocabulary_but_new_weights(tmp_path):
    from transformers import AutoModelForMaskedLM

    source = make_bert(tmp_path / "bert")
    control.main(["--of", str(source), "--seed", "7", "--out", str(tmp_path / "control")])
    trained = AutoModelForMaskedLM.from_pretrained(source)
    control = AutoModelForMaskedLM.from_pretrained(tmp_path / "control")
    assert control.config.to_dict()["hidden_size"] == trained.config.hidden_size
    assert (tmp_path / "control/tokenizer_config.json").is_file()
    a = trained.get_input_embeddings().weight
    b = control.get_input_embeddings().weight
    assert a.shape == b.shape and not bool((a == b).all())


def _config(**models) -> dict:
    return {"models": {"base": {"kind": "external", "checkpoint": "some/dir"}, **models}}


def test_control_kinds_are_checked():
    study = load_study(_config(ctl={"kind": "control", "init": "base"}, none={"kind": "baseline"}))
    assert study.models["ctl"].init == "base"
    with pytest.raises(PipelineError, match=r"models\.ctl\.init: a control model needs init"):
        load_study(_config(ctl={"kind": "control"}))
    with pytest.raises(PipelineError, match=r"models\.none: a baseline model trains on nothing"):
        load_study(_config(none={"kind": "baseline", "corpora": ["x"]}))


def test_controls_pack_nothing():
    study = load_study(_config(ctl={"kind": "control", "init": "base"}, none={"kind": "baseline"}))
    assert plan.model_packed(study, "ctl") == [] and plan.model_packed(study, "none") == []
    assert plan.pack_tokenizers(study) == {}
