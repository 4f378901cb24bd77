"""What every task reader shares: the file's lines (read by ``textfile``), label checks and the TSV dialects."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from pathlib import Path

from ...errors import PipelineError
from ...textfile import read_text
from ..spec import TaskSpec

Record = dict
Reader = Callable[..., list[Record]]


def numbered_lines(path: Path, name: str) -> Iterator[tuple[int, str]]:
    lines = read_text(path, name).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # Only newlines end a line: str.splitlines would also split on form feeds or U+2028
    # inside a sentence and shift every later line number.
    yield from enumerate(lines, start=1)


def check_label(label: str, spec: TaskSpec, where: str) -> str:
    if spec.labels and label not in spec.labels:
        raise PipelineError(
            f"{where}: label {label!r} is not one of the task's labels "
            f"({', '.join(spec.labels)}); fix the file or the registry's labels"
        )
    return label


def tsv_rows(path: Path, name: str, *, quoted: bool) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank row of a tab-separated file, parsed as its writer
    wrote it. ``quoted``: Python's csv.writer and pandas ``to_csv`` (BLUE's files) quote a field
    holding a tab, newline or quote char and double the quotes inside, so a row may span lines;
    otherwise (BioBERT's folds) every line is one row and quotes are text."""
    text = read_text(path, name)
    if not quoted:
        for number, line in numbered_lines(path, name):
            if line.strip():
                yield number, line.split("\t")
        return
    rows = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar='"', doublequote=True, strict=True)
    start = 1
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            raise PipelineError(f"{name}:{rows.line_num}: not a valid quoted TSV row ({exc})") from exc
        if any(field.strip() for field in row):
            yield start, row
        start = rows.line_num + 1


def header_columns(fields: list[str], required: tuple[str, ...]) -> dict[str, int] | None:
    """Column positions by lower-cased name when ``fields`` is a header naming every required column."""
    cols = [c.strip().lower() for c in fields]
    if all(r in cols for r in required):
        return {c: i for i, c in enumerate(cols)}
    return None


def dummify(line: str, a: dict, b: dict) -> tuple[str, list[dict]]:
    """Replace two entities (``start``, ``end``, ``type``) of ``line`` by @TYPE$ placeholders
    (overlapping ones by one @TYPE1-TYPE2$, as BLUE does); return the text and the
    placeholders' spans in it."""
    first, second = sorted((a, b), key=lambda c: (c["start"], c["end"]))
    if second["start"] < first["end"]:
        kind = f"{a['type'].upper()}-{b['type'].upper()}"
        start, end = first["start"], max(first["end"], second["end"])
        text = f"{line[:start]}@{kind}$"
        return text + line[end:], [{"start": start, "end": len(text), "type": kind}]
    pieces, entities, last = [], [], 0
    for c in (first, second):
        pieces.append(line[last : c["start"]])
        at = sum(len(p) for p in pieces)
        placeholder = f"@{c['type'].upper()}$"
        pieces.append(placeholder)
        entities.append({"start": at, "end": at + len(placeholder), "type": c["type"].upper()})
        last = c["end"]
    pieces.append(line[last:])
    return "".join(pieces), entities
