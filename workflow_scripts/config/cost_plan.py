"""The cost steps' settings from the study: which models get an inference speed job, and which
records the cost table sums for each model."""

from __future__ import annotations

from typing import Any

from .. import paths
from ..report.cost_settings import CostSettings
from ..typed import parse, to_dict
from .plan import finetune_runs, model_dir, run_dir
from .restricted import restricted as restricted_marks
from .study import Study


def speed_models(study: Study) -> list[str]:
    """Every model with a checkpoint (all but the no-training baselines)."""
    return [name for name, m in study.models.items() if m.kind != "baseline"]


def speed_settings(study: Study) -> dict[str, Any]:
    return to_dict(study.inference_speed)


def _upstream(study: Study, name: str) -> dict[str, int | None]:
    """The models here whose training precedes this one's: a continued model's init (a decay branch's
    parent up to its step), a student's teacher. A control copies only its init's shape."""
    m = study.models[name]
    parents: dict[str, int | None] = {}
    if m.kind == "pretrain" and m.init in study.models:
        parents[m.init] = m.branch.step if m.branch is not None else None
    if m.kind == "distill" and m.teacher in study.models:
        parents[m.teacher] = None
    return {p: step for p, step in parents.items() if study.models[p].kind in ("pretrain", "distill")}


def _display(study: Study, name: str) -> str:
    """The model's display name; one pretraining seed of a seeded model says which."""
    base, seed = study.model_and_seed(name)
    display = study.models[name].display or base
    return display if seed is None else f"{display} (pretraining seed {seed})"


def cost_settings(study: Study, workflow_root: str) -> dict[str, Any]:
    marks = restricted_marks(study)
    runs: dict[str, list[str]] = {}
    for m, t, f, s in finetune_runs(study):
        runs.setdefault(m, []).append(f"{run_dir(m, t, f, s)}/provenance.json")
    speed = set(speed_models(study))
    models = {
        name: {
            "display": _display(study, name),
            "scored_as": study.model_and_seed(name)[0],
            "kind": m.kind,
            "restricted": name in marks.models,
            "training": f"{model_dir(study, name)}/provenance.json" if m.kind in ("pretrain", "distill") else None,
            "speed": paths.SPEED.format(model=name) if name in speed else None,
            "runs": runs.get(name, []),
            "upstream": _upstream(study, name),
            "checkpoint": (m.checkpoint if isinstance(m.checkpoint, str) else m.checkpoint.hub)
            if m.kind == "external" and m.checkpoint is not None
            else None,
        }
        for name, m in study.models.items()
    }
    data = {
        "models": models,
        "groups": f"{paths.TABLES}/groups.csv",
        "blurb": f"{paths.TABLES}/blurb.csv",
        "reported_compute": f"{workflow_root.rstrip('/')}/resources/reference/pretraining_compute.csv",
        "lengths": list(study.inference_speed.lengths),
    }
    return to_dict(parse(CostSettings, data, "cost settings"))
