"""Which level's value a fine-tuning run uses, key by key, and the refusal of a written key no run uses.

The levels, least specific first (docs/settings-precedence.md): the built-in defaults
(``FinetuneSettings``), the registry task's ``finetune``, the study's ``finetune``,
``models.<m>.finetune``, ``tasks.<t>.finetune``, ``models.<m>.finetune_per_task.<t>``. A level's
key replaces the less specific levels' one, so a value the user writes beats a built-in one, and of
two the user writes the more specific wins. ``lr`` and ``grid.lr`` (likewise ``batch_size`` and
``grid.batch_size``) say the same thing, the learning rates a run tries: a level naming ``lr``
drops the ``grid.lr`` of the levels below it, and a grid of its own level or above replaces it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PipelineError
from ..finetune.settings import FinetuneSettings
from ..typed import parse

if TYPE_CHECKING:
    from ..tasks.spec import TaskSpec
    from .study import Study

PAIRED = ("lr", "batch_size")  # a value and the grid dimension that tries several instead
DOCS = "docs/settings-precedence.md"


@dataclass(frozen=True)
class Level:
    where: str  # the config key that holds it, e.g. models.big.finetune
    keys: Mapping[str, Any]
    written: bool = True  # false: a built-in default (the task registry), never refused


def merge(levels: list[Level]) -> dict[str, Any]:
    """The keys of ``levels`` (least specific first), each from the most specific level that sets it."""
    merged: dict[str, Any] = {}
    for level in levels:
        merged.update(level.keys)
        grid = merged.get("grid")
        if "grid" in level.keys or not isinstance(grid, dict):
            continue
        dropped = {key: [] for key in PAIRED if key in level.keys and grid.get(key)}
        if dropped:
            merged["grid"] = {**grid, **dropped}
    return merged


def resolve(levels: list[Level], max_length: int, where: str) -> FinetuneSettings:
    """The settings of one run; ``max_length`` left null at every level is the task's ``max_length``."""
    settings = parse(FinetuneSettings, merge(levels), where)
    if settings.max_length is None:
        settings.max_length = max_length
    return settings


def check_level(level: Level) -> None:
    """Refuse an unknown key or a bad value, naming the level that wrote it."""
    parse(FinetuneSettings, level.keys, level.where)


def task_levels(study_keys: Mapping[str, Any], task: str, spec: TaskSpec, overrides: Any) -> list[Level]:
    """The levels of every model on ``task`` (a model's own levels go between the study and the task)."""
    return [
        Level(f"the task registry's {task}.finetune", spec.finetune, written=False),
        Level("finetune", study_keys),
        Level(f"tasks.{task}.finetune", overrides),
    ]


def run_levels(study: Study, model: str, task: str) -> list[Level]:
    """The levels of ``model`` on ``task``, least specific first."""
    rt, m, name = study.resolved_tasks[task], study.models[model], study.model_and_seed(model)[0]
    registry, top, own_task = task_levels(study.finetune_written, task, rt.spec, rt.overrides)
    return [
        registry,
        top,
        Level(f"models.{name}.finetune", m.finetune),
        own_task,
        Level(f"models.{name}.finetune_per_task.{task}", m.finetune_per_task.get(task) or {}),
    ]


def overridden_by(levels: list[Level], i: int, key: str) -> str | None:
    """Where the run's ``key`` comes from instead of level ``i`` (None: level i's value is used)."""
    above = [level for level in levels[i + 1 :] if key in level.keys]
    if above:
        return f"{above[-1].where}.{key}"
    if key in PAIRED:
        grids = [level for level in levels[i:] if "grid" in level.keys]
        if grids and isinstance(grid := grids[-1].keys["grid"], Mapping) and grid.get(key):
            return f"{grids[-1].where}.grid.{key}"
    if key == "grid" and isinstance(grid := levels[i].keys["grid"], Mapping):
        tried = [k for k in PAIRED if grid.get(k)]
        named = [f"{level.where}.{k}" for k in tried for level in levels[i + 1 :] if k in level.keys]
        if tried and len({n.rsplit(".", 1)[1] for n in named}) == len(tried):
            return " and ".join(named)
    return None


def written_levels(study: Study) -> Iterator[tuple[Level, str | None]]:
    """Every finetune mapping the config writes, each with why it may reach no run (None: it reaches
    every run, and a study that fine-tunes nothing plans none)."""
    yield Level("finetune", study.finetune_written), None
    for name, rt in study.resolved_tasks.items():
        yield Level(f"tasks.{name}.finetune", rt.overrides), None
    for model, m in study.models.items():
        name = study.model_and_seed(model)[0]
        why = (
            f"models.{name} is a no-training baseline"
            if m.kind == "baseline"
            else f"models.{name} is not fine-tuned (evaluate: false)"
        )
        yield Level(f"models.{name}.finetune", m.finetune), why
        for task, keys in m.finetune_per_task.items():
            yield Level(f"models.{name}.finetune_per_task.{task}", keys or {}), why


def check_written(study: Study) -> None:
    """Refuse a bad key, a per-task mapping of an unknown task, and any written key that no
    fine-tuning run uses, naming the key, its level and the levels that override it."""
    for model, m in study.models.items():
        for task in m.finetune_per_task:
            if task not in study.resolved_tasks:
                known = ", ".join(sorted(study.resolved_tasks)) or "none"
                where = f"models.{study.model_and_seed(model)[0]}.finetune_per_task.{task}"
                raise PipelineError(f"{where}: {task!r} is not a task of this config (tasks: {known})")
    for level, _ in written_levels(study):
        check_level(level)
    used: set[tuple[str, str]] = set()
    overrides: dict[tuple[str, str], list[str]] = {}
    tuned = [name for name, m in study.models.items() if m.evaluate and m.kind != "baseline"]
    for model in tuned:
        for task in study.resolved_tasks:
            levels = run_levels(study, model, task)
            for i, level in enumerate(levels):
                for key in level.keys if level.written else ():
                    other = overridden_by(levels, i, key)
                    if other is None:
                        used.add((level.where, key))
                    elif other not in (seen := overrides.setdefault((level.where, key), [])):
                        seen.append(other)
    for level, why in written_levels(study):
        for key in level.keys:
            if (level.where, key) not in used:
                _refuse(level.where, key, overrides.get((level.where, key)), why)


def _refuse(where: str, key: str, overrides: list[str] | None, why: str | None) -> None:
    if not overrides and why is None:
        return
    if not overrides:
        raise PipelineError(f"{where}.{key}: takes effect on no run: {why}; remove it")
    shown = ", ".join(overrides[:4]) + (f" and {len(overrides) - 4} more" if len(overrides) > 4 else "")
    raise PipelineError(
        f"{where}.{key}: takes effect on no run: {shown} override{'s' if len(overrides) == 1 else ''} it on "
        f"every run it reaches (the more specific level wins, {DOCS}); remove it, or remove the "
        "overriding key where this value should hold"
    )
