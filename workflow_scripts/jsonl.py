"""Reading JSON-lines files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import PipelineError


def parse_lines(lines: Iterable[tuple[int, str]], where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; ``where`` names the file in errors."""
    for lineno, line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PipelineError(f"{where}:{lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise PipelineError(f"{where}:{lineno}: expected a JSON object")
        yield lineno, row


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        yield from parse_lines(enumerate(fh, 1), str(path))
