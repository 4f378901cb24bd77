"""How the controls (no-pretraining models and no-training baselines) are told apart from
the real models in tables and plots."""

from __future__ import annotations

from .settings import ReportSettings

CONTROL_LABEL = "(control)"
CONTROL_NOTE = (
    f"{CONTROL_LABEL}: not a pretrained model: the same architecture fine-tuned from random weights, or the "
    "task's no-training baseline (all-O tags, most frequent label or label set, mean similarity); its group "
    "means and BLURB score are its own and never averaged with the real models'."
)


def label(settings: ReportSettings, model: str) -> str:
    m = settings.models[model]
    return f"{m.display} {CONTROL_LABEL}" if m.is_control else m.display


def labels(settings: ReportSettings, models: list[str]) -> list[str]:
    return [label(settings, m) for m in models]


def notes(settings: ReportSettings) -> list[str]:
    return [CONTROL_NOTE] if any(m.is_control for m in settings.models.values()) else []


def real_models(settings: ReportSettings) -> list[str]:
    return [name for name, m in settings.models.items() if not m.is_control]
