"""MIMIC-III ``NOTEEVENTS.csv.gz``: notes with whitespace normalised and placeholders handled.

The file is read as a stream (quoted TEXT spans many lines), as strictly as every user text file
(``textfile``); ISERROR and CATEGORY are kept on each note so the build step drops and counts
them with the other filters.
"""

from __future__ import annotations

import csv
import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import PipelineError
from ..textfile import text_lines

COLUMNS = [
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "CHARTDATE",
    "CHARTTIME",
    "STORETIME",
    "CATEGORY",
    "DESCRIPTION",
    "CGID",
    "ISERROR",
    "TEXT",
]
PLACEHOLDER = re.compile(r"\[\*\*(.*?)\*\*\]", re.S)
_DATE = re.compile(r"^\d{4}-\d{1,2}(-\d{1,2})?$|^\d{1,2}[-/]\d{1,2}$|^\d{4}$")
# Placeholder descriptions as they appear in MIMIC-III, checked in this order.
_TAGS = [
    ("DATE", re.compile(r"date|month|year|day|holiday", re.I)),
    ("AGE", re.compile(r"age over 90", re.I)),
    ("HOSPITAL", re.compile(r"hospital|ward|wardname", re.I)),
    ("NAME", re.compile(r"name|initials|doctor", re.I)),
    ("PHONE", re.compile(r"telephone|phone|fax|pager", re.I)),
    ("LOCATION", re.compile(r"location|address|street|state|country|apartment|zip", re.I)),
    ("ORGANIZATION", re.compile(r"company|university|college", re.I)),
    ("ID", re.compile(r"number|identifier|serial|clip|job|record|provider|social security", re.I)),
]
csv.field_size_limit(1 << 27)


@dataclass
class Note:
    row_id: str
    subject_id: str
    hadm_id: str
    chartdate: str
    category: str
    description: str
    iserror: bool
    text: str
    line: int


@dataclass
class BadRow:
    line: int
    reason: str


def placeholder_tag(inner: str) -> str:
    inner = inner.strip()
    if _DATE.match(inner):
        return "[DATE]"
    for tag, pattern in _TAGS:
        if pattern.search(inner):
            return f"[{tag}]"
    return "[OTHER]"


def clean_text(text: str, placeholders: Literal["keep", "tag"]) -> str:
    """Collapse spaces within lines, keep paragraph breaks, make each placeholder one token."""
    if placeholders == "tag":
        text = PLACEHOLDER.sub(lambda m: placeholder_tag(m.group(1)), text)
    else:
        text = PLACEHOLDER.sub(lambda m: "[**" + "_".join(m.group(1).split()) + "**]", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    text = "\n".join(lines).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def iter_notes(path: str | Path, placeholders: Literal["keep", "tag"] = "keep") -> Iterator[Note | BadRow]:
    """Notes of a NOTEEVENTS file (gzip or plain CSV) in file order."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    start = 1
    try:
        with opener(path, "rb") as raw:
            fh = text_lines(raw, str(path))
            # strict: a file ending inside a quoted field is an error, not one note swallowing the rest
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            if header is None:
                raise PipelineError(f"{path}: empty file; expected the MIMIC-III NOTEEVENTS header")
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise PipelineError(
                    f"{path}: missing column(s) {', '.join(missing)} in the header; expected the MIMIC-III "
                    f"NOTEEVENTS columns {', '.join(COLUMNS)}"
                )
            idx = {c: header.index(c) for c in COLUMNS}
            start = reader.line_num + 1
            for row in reader:
                if len(row) != len(header):
                    yield BadRow(start, f"{len(row)} fields instead of {len(header)}")
                else:
                    field = {c: row[i] for c, i in idx.items()}
                    yield Note(
                        row_id=field["ROW_ID"],
                        subject_id=field["SUBJECT_ID"],
                        hadm_id=field["HADM_ID"],
                        chartdate=field["CHARTDATE"],
                        category=field["CATEGORY"].strip(),
                        description=field["DESCRIPTION"],
                        iserror=field["ISERROR"].strip() == "1",
                        text=clean_text(field["TEXT"], placeholders),
                        line=start,
                    )
                start = reader.line_num + 1
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise PipelineError(f"{path}: truncated or corrupt gzip ({exc}); download it again") from exc
    except csv.Error as exc:
        raise PipelineError(
            f"{path}: line {start}: malformed CSV in the record starting there ({exc}); "
            "the file may be truncated or edited: download it again"
        ) from exc
