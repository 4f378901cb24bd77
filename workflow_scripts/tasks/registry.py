"""The task registry: every benchmark task declared as data (registry.yaml), resolved to a TaskSpec.

``load_registry()`` gives the raw entries; ``resolve(name, overrides)`` deep-merges a run's
overrides (from config.yaml ``tasks.<name>``) into the entry and checks the result, so a task
not in the registry can be declared completely in the config.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import PipelineError
from ..typed import parse, parse_yaml
from .metrics import check_task_metric
from .readers import READERS
from .spec import TaskSpec

REGISTRY = Path(__file__).with_name("registry.yaml")


@cache
def _load(path: str) -> dict[str, dict]:
    try:
        data = parse_yaml(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PipelineError(f"{path}: not valid YAML ({exc})") from exc
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise PipelineError(f"{path}: expected a top-level 'tasks' mapping")
    return tasks


def load_registry(path: str | Path | None = None) -> dict[str, dict]:
    """The registry's entries, name -> plain mapping (a copy: callers may modify it)."""
    return copy.deepcopy(_load(str(path or REGISTRY)))


def registered(name: str) -> bool:
    """Whether the task registry has an entry ``name`` (else the config declares the task)."""
    return name in _load(str(REGISTRY))


def deep_merge(base: Any, override: Any) -> Any:
    """Mappings merge key by key; anything else in ``override`` replaces ``base``. A null in
    an override mapping removes the key (a registry file the config does not want, or a
    setting back to its default)."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def resolve(name: str, overrides: dict | None = None, *, path: str | Path | None = None) -> TaskSpec:
    """The TaskSpec of ``name``: its registry entry (if any) with ``overrides`` merged in."""
    where = f"tasks.{name}"
    if overrides is not None and not isinstance(overrides, dict):
        raise PipelineError(f"{where}: expected a mapping of task settings, got {overrides!r}")
    entry = load_registry(path).get(name, {})
    data = deep_merge(entry, overrides or {})
    if data.get("name", name) != name:
        raise PipelineError(f"{where}.name: {data['name']!r} differs from the task's key {name!r}")
    data["name"] = name
    if not entry:
        required = [k for k in ("display", "type", "domain", "format", "source", "splits", "metric") if k not in data]
        if required:
            raise PipelineError(
                f"{where}.{required[0]}: required key is missing; {name!r} is not in the task registry "
                "(workflow_scripts/tasks/registry.yaml), so the config must declare it completely"
            )
    spec = parse(TaskSpec, data, where)
    if spec.format not in READERS:
        raise PipelineError(f"{where}.format: unknown format {spec.format!r}; known: {', '.join(sorted(READERS))}")
    check_task_metric(spec.metric, spec.benchmarks, f"{where}.metric")
    return spec
