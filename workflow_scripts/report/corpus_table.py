"""The corpus table: our cleaned corpora beside the sizes the papers report.

    python -m workflow_scripts.report.corpus_table --corpus results/corpus/NAME [...] \\
        --published resources/reference/corpora_published.csv --out results/tables

Reads each corpus's ``stats.json`` (and its ``provenance.json`` for the restricted mark) and
writes to --out: corpora.{csv,md,tex} (one row per corpus of ours, each followed by the
published corpora of the same type, with their citation), corpora_stages.csv (documents,
words and bytes left after each filter, per corpus) and corpora.provenance.json (last).
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from . import render
from .render import NO_VALUE, RESTRICTED

log = logging.getLogger(__name__)
PUBLISHED_COLUMNS = ("type", "corpus", "documents", "unit", "words", "gigabytes", "note", "citation")
HEADER = [
    "row",
    "corpus",
    "type",
    "documents",
    "words",
    "bytes",
    "gigabytes",
    "dropped",
    "restricted",
    "note",
    "citation",
]


@dataclass
class Published:
    type: str
    corpus: str
    documents: int | None
    unit: str
    words: int | None
    gigabytes: float | None
    note: str
    citation: str


def _number(text: str, where: str, cast: type) -> float | None:
    if not text.strip():
        return None
    try:
        return cast(text)
    except ValueError:
        raise PipelineError(f"{where}: {text!r} is not a number") from None


def read_published(path: str | Path) -> list[Published]:
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in PUBLISHED_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise PipelineError(f"{path}: missing column(s) {', '.join(missing)}")
            return [
                Published(
                    r["type"],
                    r["corpus"],
                    _number(r["documents"], f"{path}:{i}", int),
                    r["unit"],
                    _number(r["words"], f"{path}:{i}", int),
                    _number(r["gigabytes"], f"{path}:{i}", float),
                    r["note"],
                    r["citation"],
                )
                for i, r in enumerate(reader, 2)
            ]
    except OSError as exc:
        raise PipelineError(f"{path}: unreadable ({exc})") from exc


def read_stats(corpus_dir: str | Path) -> tuple[dict, bool]:
    """A corpus's stats.json and whether it derives from credentialed data."""
    corpus_dir = Path(corpus_dir)
    path = corpus_dir / "stats.json"
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PipelineError(f"{path}: unreadable corpus statistics ({exc}); build the corpus again") from exc
    for key in ("documents", "words", "bytes", "type"):
        if key not in stats:
            raise PipelineError(f"{path}: no {key!r}; build the corpus again")
    record = corpus_dir / "provenance.json"
    restricted = record.is_file() and bool(json.loads(record.read_text(encoding="utf-8")).get("restricted"))
    return stats, restricted


def human(value: float | None) -> str:
    """4.2B, 22.0M, 93.4k, 608."""
    if value is None:
        return NO_VALUE
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{render.number(value / size, 1)}{suffix}"
    return render.number(value, 0)


def _dropped(stats: dict) -> str:
    """Documents dropped per reason, the cloud selection's (before download) included."""
    parts = [f"{k} {v}" for k, v in (stats.get("dropped") or {}).items() if v]
    before = (stats.get("source_selection") or {}).get("dropped") or {}
    parts += [f"{k} {v} before download" for k, v in before.items() if v]
    return ", ".join(parts)


def build(corpora: Sequence[str | Path], published: Sequence[Published], out: Path) -> list[Path]:
    rows, display = [], []
    stage_rows = []
    for corpus_dir in corpora:
        stats, restricted = read_stats(corpus_dir)
        name = stats.get("corpus") or Path(corpus_dir).name
        rows.append(
            {
                "row": "ours",
                "corpus": name,
                "type": stats["type"],
                "documents": stats["documents"],
                "words": stats["words"],
                "bytes": stats["bytes"],
                "gigabytes": round(stats["bytes"] / 1e9, 3),
                "dropped": _dropped(stats),
                "restricted": restricted,
                "note": "",
                "citation": "",
            }
        )
        display.append(
            [
                (f"{name} (ours)", RESTRICTED if restricted else ""),
                (stats["type"], ""),
                (human(stats["documents"]), ""),
                (human(stats["words"]), ""),
                (render.number(stats["bytes"] / 1e9, 3), ""),
                (_dropped(stats) or NO_VALUE, ""),
            ]
        )
        for stage in stats.get("stages", []):
            stage_rows.append({"corpus": name, **stage})
        for p in (p for p in published if p.type == stats["type"]):
            rows.append(
                {
                    "row": "published",
                    "corpus": p.corpus,
                    "type": p.type,
                    "documents": p.documents,
                    "words": p.words,
                    "bytes": None,
                    "gigabytes": p.gigabytes,
                    "dropped": "",
                    "restricted": False,
                    "note": p.note,
                    "citation": p.citation,
                }
            )
            display.append(
                [
                    (f"{p.corpus} [{p.citation.split(',')[0]}]", ""),
                    (p.type, ""),
                    (human(p.documents), ""),
                    (human(p.words), ""),
                    (NO_VALUE if p.gigabytes is None else render.number(p.gigabytes, 1), ""),
                    (p.note or NO_VALUE, ""),
                ]
            )
    out.mkdir(parents=True, exist_ok=True)
    notes = ["Published rows follow each corpus of ours of the same type; their sources are in corpora.csv."]
    written = render.write_table(
        out,
        "corpora",
        HEADER,
        rows,
        "Pretraining corpora: ours and as published",
        ["Corpus", "Type", "Documents", "Words", "GB", "Dropped"],
        display,
        notes,
    )
    stages = out / "corpora_stages.csv"
    write_text(stages, render.csv_text(["corpus", "stage", "documents", "words", "bytes"], stage_rows))
    return written + [stages]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True, help="a corpus directory (repeatable)")
    ap.add_argument("--published", required=True, help="CSV of the corpus sizes the papers report")
    ap.add_argument("--out", required=True, help="tables directory")
    args = ap.parse_args(argv)
    started = provenance.now()
    out = Path(args.out)
    written = build(args.corpus, read_published(args.published), out)
    provenance.record(
        out / "corpora.csv",
        step="report.corpora",
        inputs={"stats": [str(Path(c) / "stats.json") for c in args.corpus], "published": args.published},
        outputs=written,
        started=started,
        path=out / "corpora.provenance.json",
    )
    log.info("corpus table of %d corpora in %s", len(args.corpus), out)


if __name__ == "__main__":
    run(main)
