"""Which fine-tuning value a run uses (docs/settings-precedence.md): a value the user writes beats
the task registry's, the more specific of two written levels wins, and a written key no run uses is
refused at load, naming the key, its level and the levels that override it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from workflow_scripts.config import step_settings
from workflow_scripts.config.validate import load_config
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "config.schema.yaml"
# registry: chemprot lr 2e-5, batch 16, 10 epochs, max_length 256; biosses lr 3e-5, batch 16,
# 30 epochs and a grid of lr [1e-5, 3e-5, 5e-5] x batch [16, 32]; ncbi-disease lr 1e-5, batch 32
BASE = {
    "models": {
        "small": {"kind": "external", "checkpoint": "/models/small"},
        "large": {"kind": "external", "checkpoint": "/models/large"},
    },
    "tasks": {"chemprot": {}, "biosses": {}, "ncbi-disease": {}},
}


def config(**levels) -> dict:
    """BASE with finetune levels added: study=..., <model>=..., <model>_per_task=..., <task>=..."""
    cfg = copy.deepcopy(BASE)
    for name, keys in levels.items():
        if name == "study":
            cfg["finetune"] = keys
        elif name.endswith("_per_task"):
            cfg["models"][name.removesuffix("_per_task")]["finetune_per_task"] = keys
        elif name in cfg["models"]:
            cfg["models"][name]["finetune"] = keys
        else:
            cfg["tasks"][name.replace("_", "-")] = {"finetune": keys}
    return cfg


def run(cfg: dict, model: str, task: str) -> dict:
    """The finetune part of the resolved settings file a run reads (results/configs/finetune/...)."""
    return step_settings.finetune_settings(load_config(cfg, SCHEMA), model, task)["finetune"]


def refusal(cfg: dict) -> str:
    with pytest.raises(PipelineError) as exc:
        load_config(cfg, SCHEMA)
    return str(exc.value)


def test_a_model_level_lr_reaches_the_runs_settings():
    cfg = config(large={"lr": 1.0e-5, "epochs": 4})
    assert (run(cfg, "large", "chemprot")["lr"], run(cfg, "large", "chemprot")["epochs"]) == (1.0e-5, 4)
    assert run(cfg, "small", "chemprot")["lr"] == 2.0e-5  # the registry's, where nobody writes one
    # on a task whose registry entry tries several learning rates, the written lr replaces them;
    # its batch sizes are still tried
    biosses = run(cfg, "large", "biosses")
    assert (biosses["lr"], biosses["grid"]) == (1.0e-5, {"lr": [], "batch_size": [16, 32]})
    assert run(cfg, "small", "biosses")["grid"]["lr"] == [1.0e-5, 3.0e-5, 5.0e-5]


def test_a_study_level_key_reaches_runs_whose_task_does_not_set_it():
    cfg = config(study={"lr": 9.0e-5, "dropout": 0.2}, chemprot={"lr": 4.0e-5})
    for model in ("small", "large"):
        assert run(cfg, model, "ncbi-disease")["lr"] == 9.0e-5  # beats the registry's 1e-5
        assert run(cfg, model, "chemprot")["lr"] == 4.0e-5  # one task beats the study
        assert run(cfg, model, "chemprot")["dropout"] == 0.2
        assert run(cfg, model, "chemprot")["batch_size"] == 16  # nobody writes it: the registry's


def test_the_more_specific_written_level_wins():
    cfg = config(
        study={"lr": 9.0e-5, "epochs": 2},
        large={"lr": 1.0e-5, "epochs": 3},
        chemprot={"lr": 4.0e-5},
        large_per_task={"chemprot": {"lr": 5.0e-6}, "biosses": {"grid": {"lr": [1.0e-6, 2.0e-6]}}},
    )
    # one model on one task > one task > one model > the study
    assert run(cfg, "large", "chemprot")["lr"] == 5.0e-6
    assert run(cfg, "small", "chemprot")["lr"] == 4.0e-5
    assert run(cfg, "large", "ncbi-disease")["lr"] == 1.0e-5
    assert run(cfg, "small", "ncbi-disease")["lr"] == 9.0e-5
    assert (run(cfg, "large", "chemprot")["epochs"], run(cfg, "small", "chemprot")["epochs"]) == (3, 2)
    # a per-task grid replaces the model's lr on that task only (its whole grid: no batch sizes)
    assert run(cfg, "large", "biosses")["grid"] == {"lr": [1.0e-6, 2.0e-6], "batch_size": []}


def test_max_length_null_is_the_tasks_own_at_any_level():
    assert run(config(), "large", "chemprot")["max_length"] == 256
    cfg = config(study={"max_length": 128}, large_per_task={"chemprot": {"max_length": None}})
    assert (run(cfg, "large", "chemprot")["max_length"], run(cfg, "small", "chemprot")["max_length"]) == (256, 128)


def test_a_key_overridden_on_every_run_is_refused_naming_both_levels():
    every_task = {task: {"lr": 1.0e-5} for task in ("chemprot", "biosses", "ncbi_disease")}
    msg = refusal(config(study={"lr": 9.0e-5}, **every_task))
    assert msg.startswith("finetune.lr: takes effect on no run: tasks.chemprot.finetune.lr, ")
    assert "tasks.biosses.finetune.lr" in msg and "docs/settings-precedence.md" in msg
    per_task = {task: {"epochs": 2} for task in ("chemprot", "biosses", "ncbi-disease")}
    msg = refusal(config(large={"epochs": 5}, large_per_task=per_task))
    assert msg.startswith("models.large.finetune.epochs: takes effect on no run: ")
    assert "models.large.finetune_per_task.chemprot.epochs" in msg
    # an lr beside a grid of learning rates at the same level: the grid's are tried, never the lr
    msg = refusal(config(biosses={"lr": 1.0e-5, "grid": {"lr": [1.0e-5, 2.0e-5]}}))
    assert msg.startswith("tasks.biosses.finetune.lr: takes effect on no run: tasks.biosses.finetune.grid.lr overrides")
    # used on one run is enough: a study-level lr that one task leaves alone stands
    load_config(config(study={"lr": 9.0e-5}, chemprot={"lr": 1.0e-5}, biosses={"lr": 1.0e-5}), SCHEMA)


def test_keys_that_reach_no_run_at_all_are_refused():
    cfg = config(large={"lr": 1.0e-5})
    cfg["models"]["large"]["evaluate"] = False
    assert refusal(cfg) == (
        "models.large.finetune.lr: takes effect on no run: models.large is not fine-tuned (evaluate: false); remove it"
    )
    cfg = config()
    cfg["models"]["majority"] = {"kind": "baseline", "finetune_per_task": {"chemprot": {"dropout": 0.2}}}
    assert refusal(cfg).startswith(
        "models.majority.finetune_per_task.chemprot.dropout: takes effect on no run: models.majority is a "
        "no-training baseline"
    )


def test_per_task_settings_name_a_bad_task_or_key():
    msg = refusal(config(large_per_task={"chemprot-blurb": {"lr": 1.0e-5}}))
    assert msg.startswith("models.large.finetune_per_task.chemprot-blurb: 'chemprot-blurb' is not a task of this")
    msg = refusal(config(large_per_task={"chemprot": {"learning_rate": 1.0e-5}}))
    assert msg.startswith("models.large.finetune_per_task.chemprot.learning_rate: unknown key")
    msg = refusal(config(large={"learning_rate": 1.0e-5}))
    assert msg.startswith("models.large.finetune.learning_rate: unknown key")
    assert refusal(config(large_per_task={"chemprot": {"lr": -1.0}})).startswith(
        "models.large.finetune_per_task.chemprot.lr: must be > 0"
    )
