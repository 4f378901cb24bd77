"""PMC file lists: the CSV metadata published beside the bulk packages and the cloud articles.

Their licence and retraction columns are authoritative (an article's XML may predate its
retraction), so when a file list is given it overrides what the article itself says.
Both header spellings in use are accepted (``AccessionID`` / ``Accession ID``,
``Article File`` / ``File``).
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path

from ..errors import PipelineError
from .pmc import classify_licence

_ACCESSION = ("AccessionID", "Accession ID", "PMCID", "pmcid", "accession_id")
_LICENCE = ("License", "license", "License Type", "license_code")
_RETRACTED = ("Retracted", "retracted", "is_retracted")


@dataclass(frozen=True)
class ListedArticle:
    licence: str
    retracted: bool


def _column(header: list[str], names: tuple[str, ...], path: Path, what: str, required: bool) -> int | None:
    for name in names:
        if name in header:
            return header.index(name)
    if required:
        raise PipelineError(f"{path}: no {what} column (one of {', '.join(names)}) in the file list header")
    return None


def read_filelist(path: str | Path) -> dict[str, ListedArticle]:
    """PMCID -> licence class (commercial / noncommercial / other) and retraction mark."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            header = next(reader, None) or []
            acc = _column(header, _ACCESSION, path, "accession", True)
            lic = _column(header, _LICENCE, path, "licence", True)
            ret = _column(header, _RETRACTED, path, "retraction", False)
            out: dict[str, ListedArticle] = {}
            for row in reader:
                if len(row) != len(header):
                    raise PipelineError(f"{path}:{reader.line_num}: {len(row)} fields instead of {len(header)}")
                pmcid = row[acc].strip()
                pmcid = pmcid if pmcid.upper().startswith("PMC") else f"PMC{pmcid}"
                retracted = ret is not None and row[ret].strip().lower() in ("yes", "y", "true", "1")
                out[pmcid] = ListedArticle(classify_licence("", row[lic]), retracted)
            return out
    except (OSError, EOFError, csv.Error, UnicodeDecodeError) as exc:
        raise PipelineError(f"{path}: unreadable file list ({exc})") from exc
