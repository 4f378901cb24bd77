"""What the control steps read: a random-weight model's seed, and the part of a task a
no-training baseline scores (the fine-tuning run's model and task, without its hyper-parameters,
so a learning-rate change never reruns a baseline)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..finetune.settings import FinetuneModel, FinetuneTask
from ..typed import load_settings


@dataclass
class ControlSettings:
    """The ``model`` key of a no-pretraining control's settings file."""

    name: str = field(metadata={"help": "Control name (the results/control/<name> directory)."})
    seed: int = field(default=0, metadata={"help": "Seed of the random weights."})


@dataclass
class BaselineSettings:
    """Everything one no-training baseline run reads."""

    model: FinetuneModel = field(metadata={"help": "the baseline model entry"})
    task: FinetuneTask = field(metadata={"help": "the task's type, labels, metric and folds"})


def load_control(path: str | Path) -> ControlSettings:
    return load_settings(path, ControlSettings, "model")


def load_baseline(path: str | Path) -> BaselineSettings:
    return load_settings(path, BaselineSettings)
