"""Read a task's normalised JSONL splits and check each line against its type's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PipelineError
from ..jsonl import read_jsonl
from ..tasks.spec import TaskSpec

# field -> required Python type, per task type (see tasks.prepare's normalised schemas)
SCHEMAS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "ner": {"id": str, "tokens": list, "tags": list},
    "pico": {"id": str, "tokens": list, "tags": list},
    "relation": {"id": str, "text": str, "label": str},
    "similarity": {"id": str, "text_a": str, "text_b": str, "score": (int, float)},
    "doc_classification": {"id": str, "text": str, "labels": list},
    "qa": {"id": str, "question": str, "context": str, "label": str},
    "nli": {"id": str, "text_a": str, "text_b": str, "label": str},
}
SPLITS = ("train", "dev", "test")


def split_dir(task_dir: str | Path, task: TaskSpec, fold: int) -> Path:
    """Folded tasks keep each fold's splits in fold~{k}/; others have no folds (fold 0)."""
    task_dir = Path(task_dir)
    if task.folds:
        if not 0 <= fold < task.folds:
            raise PipelineError(f"--fold {fold}: task {task.name} has folds 0..{task.folds - 1}")
        return task_dir / f"fold~{fold}"
    if fold != 0:
        raise PipelineError(f"--fold {fold}: task {task.name} has no folds; use --fold 0")
    return task_dir


def read_split(path: Path, task_type: str) -> list[dict[str, Any]]:
    if not path.is_file():
        raise PipelineError(f"{path}: split file not found; run the task's prepare rule first")
    schema = SCHEMAS[task_type]
    rows = []
    for lineno, row in read_jsonl(path):
        for key, tp in schema.items():
            if key not in row:
                raise PipelineError(f"{path}:{lineno}: missing field {key!r} of a {task_type} example")
            if not isinstance(row[key], tp) or isinstance(row[key], bool):
                raise PipelineError(f"{path}:{lineno}: field {key!r} has the wrong type")
        if task_type in ("ner", "pico") and len(row["tokens"]) != len(row["tags"]):
            raise PipelineError(f"{path}:{lineno}: {len(row['tokens'])} tokens but {len(row['tags'])} tags")
        rows.append(row)
    if not rows:
        raise PipelineError(f"{path}: no examples; the split is empty")
    return rows


def read_splits(directory: Path, task_type: str) -> dict[str, list[dict[str, Any]]]:
    return {split: read_split(directory / f"{split}.jsonl", task_type) for split in SPLITS}


def gold(rows: list[dict[str, Any]], task_type: str) -> list[Any]:
    """Gold values in the form metrics.compute expects for this task type."""
    key = {"ner": "tags", "pico": "tags", "similarity": "score", "doc_classification": "labels"}.get(task_type, "label")
    if task_type == "similarity":
        return [float(r[key]) for r in rows]
    return [r[key] for r in rows]


def label_set(task: TaskSpec, splits: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The task's declared labels (a label outside them stops the run), else every label the
    splits use, sorted."""
    if task.type == "similarity":
        return []
    seen: set[str] = set()
    for split, rows in splits.items():
        for value in gold(rows, task.type):
            values = value if isinstance(value, list) else [value]
            undeclared = [v for v in values if task.labels and v not in task.labels]
            if undeclared:
                raise PipelineError(
                    f"{split}.jsonl: label {undeclared[0]!r} is not in task.labels "
                    f"({', '.join(task.labels)}); declare it in the task registry"
                )
            seen.update(values)
    return list(task.labels) if task.labels else sorted(seen)
