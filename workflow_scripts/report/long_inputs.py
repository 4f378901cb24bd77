"""How runs with chunking on read their inputs, as the tables state it: the length read and, for
a model whose context is shorter, the chunks (``metrics.json``'s ``encoding.chunking``). Runs
with chunking off state nothing, so their tables read as before."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

TAGGING = ("ner", "pico")


def reading(encoding: Any, task_type: str) -> str:
    """A run's reading of its inputs, e.g. "8192 tokens in 512-token chunks (at most 6), stride 0,
    max"; "8192 tokens whole" for a model whose context holds them; "" with chunking off."""
    chunking = encoding.get("chunking") if isinstance(encoding, dict) else None
    if not isinstance(chunking, dict):
        return ""
    length, size = encoding.get("max_length"), chunking.get("chunk_length")
    if size is None:
        return f"{length} tokens whole"
    if task_type in TAGGING:
        return f"windows of {size} tokens, stride {chunking.get('stride')}"
    cap = f" (at most {chunking['max_chunks']})" if chunking.get("max_chunks") else ""
    return f"{length} tokens in {size}-token chunks{cap}, stride {chunking.get('stride')}, {chunking.get('pooling')}"


def of_runs(runs: list[Any]) -> str:
    """The readings of a cell's runs (one unless its runs differ)."""
    return " / ".join(dict.fromkeys(r.reading for r in runs if r.reading))


def notes(tasks: dict[str, Any], models: dict[str, Any], cells: dict[str, dict[str, Any]]) -> list[str]:
    """One line per task whose runs read long inputs: each reading with the models that used it
    (no names where every model read it alike)."""
    out = []
    for name, by_model in cells.items():
        users: dict[str, list[str]] = defaultdict(list)
        for model, cell in by_model.items():
            if text := of_runs(cell.runs):
                users[text].append(models[model].display)
        if len(users) == 1:
            out.append(f"{tasks[name].display}: inputs read as {next(iter(users))}.")
        elif users:
            parts = "; ".join(f"{text} ({', '.join(shown)})" for text, shown in users.items())
            out.append(f"{tasks[name].display}: inputs read as {parts}.")
    return out
