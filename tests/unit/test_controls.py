"""Controls: the no-training baseline of each task type, and the config of control models."""

from __future__ import annotations

import json

import pytest
import yaml
from test_finetune_run import TASKS, make_bert, task_spec, write_task

from workflow_scripts.config import plan, step_settings
from workflow_scripts.config.study import load_study
from workflow_scripts.controls import baseline, control
from workflow_scripts.controls.settings import BaselineSettings, ControlSettings
from workflow_scripts.errors import PipelineError
from workflow_scripts.typed import parse


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
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"model": {"name": "none"}, "task": task_spec(task_type)}))
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
    settings = tmp_path / "control.yaml"
    settings.write_text(yaml.safe_dump({"model": {"name": "control", "seed": 7}}))
    control.main(["--settings", str(settings), "--of", str(source), "--out", str(tmp_path / "control")])
    trained = AutoModelForMaskedLM.from_pretrained(source)
    random = AutoModelForMaskedLM.from_pretrained(tmp_path / "control")
    assert random.config.to_dict()["hidden_size"] == trained.config.hidden_size
    assert (tmp_path / "control/tokenizer_config.json").is_file()
    a = trained.get_input_embeddings().weight
    b = random.get_input_embeddings().weight
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


def test_control_and_baseline_settings_hold_only_what_their_steps_read():
    config = _config(ctl={"kind": "control", "init": "base"}, none={"kind": "baseline"})
    study = load_study({**config, "tasks": {"chemprot": {"finetune": {"lr": 1e-3}}}})
    assert step_settings.model_settings(study, "ctl") == {"model": {"name": "ctl", "seed": 0}}
    parse(ControlSettings, step_settings.model_settings(study, "ctl")["model"], "model")
    written = step_settings.baseline_settings(study, "none", "chemprot")
    assert set(written) == {"model", "task"} and written["task"]["negative_label"] == "false"
    assert parse(BaselineSettings, written, "baseline").task.type == "relation"
    # a learning-rate change reaches the fine-tuning runs, not the baseline
    other = load_study({**config, "tasks": {"chemprot": {"finetune": {"lr": 5e-4}}}})
    assert step_settings.baseline_settings(other, "none", "chemprot") == written
    runs = [step_settings.finetune_settings(s, "ctl", "chemprot") for s in (study, other)]
    assert runs[0]["finetune"]["lr"] == 1e-3 and runs[1]["finetune"]["lr"] == 5e-4
