"""Where a task's files, splits and counts were declared, for the errors about them.

A task the config declares itself is fixed in the config: errors name its key
(``tasks.<name>.source.files.<file>``). A registry task is fixed by overriding its registry
entry in the config: errors name the entry and the override.
"""

from __future__ import annotations

from pathlib import Path

from . import subsets
from .registry import registered
from .spec import PrepareTaskSettings

ENTRY = "workflow_scripts/tasks/registry.yaml"


def source_file(spec: PrepareTaskSettings, path: str) -> str:
    """The config key of the source a split path reads: its ``source.files`` entry, else ``local_dir``."""
    source = subsets.parse(path)[2].split("+", 1)[0].partition("#")[0]
    parts = Path(source).parts
    first = parts[0] if parts else source
    if first in spec.source.files or not spec.source.local_dir:
        return f"tasks.{spec.name}.source.files.{first}"
    return f"tasks.{spec.name}.source.local_dir"


def _registry(spec: PrepareTaskSettings, what: str, override: str) -> str:
    return (
        f"{what} come from the task registry's entry {spec.name!r} ({ENTRY}); if your copy of the "
        f"release differs, override {override} in config.yaml"
    )


def split_hint(spec: PrepareTaskSettings, split: str) -> str:
    """What to check when a split comes out wrong (empty, missing)."""
    path = spec.splits.get(split, "")
    if not registered(spec.name):
        return f"check {source_file(spec, path)} in your config (read by tasks.{spec.name}.splits.{split}: {path!r})"
    return _registry(spec, f"its path {path!r} and files", f"tasks.{spec.name}.splits.{split}")


def path_hint(spec: PrepareTaskSettings, path: str) -> str:
    """What to check when a split path names nothing in the raw files."""
    if not registered(spec.name):
        return f"check tasks.{spec.name}.splits and {source_file(spec, path)} in your config"
    return _registry(spec, "the split paths", f"tasks.{spec.name}.splits")


def format_hint(spec: PrepareTaskSettings, path: str) -> str:
    """Which file and format a reader error is about."""
    if not registered(spec.name):
        return f"the file is {source_file(spec, path)}, read as tasks.{spec.name}.format {spec.format!r}"
    return _registry(spec, f"the file and its format {spec.format!r}", f"tasks.{spec.name}.format or .splits")


def count_hint(spec: PrepareTaskSettings, key: str) -> str:
    """What to do when a split's size differs from its expected count."""
    counts = f"tasks.{spec.name}.expected_counts.{key}"
    if not registered(spec.name):
        return f"correct {counts} in your config, or check the file it counts"
    return _registry(spec, "the expected counts", f"{counts} (null drops the check)")
