"""Streaming MEDLINE/PubMed XML parser (baseline and update files).

Compared with ``pubmed_parser.parse_medline_xml`` (the reference on shared fields) it keeps:
- the PMID *Version* and the citation *Status* (versioned citations share a PMID);
- ``DeleteCitation`` blocks, which update files use to withdraw records;
- all text inside nested inline markup (``<b>x <i>K</i><sub><i>d</i></sub></b>``) and
  MathML, where pubmed_parser keeps only the first level of children;
- abstract sections as (label, NLM category, text) triples.
It reads both the ``PubmedArticleSet`` layout and the bare ``MedlineCitation`` records of
``MedlineCitationSet`` files (baselines before 2017), which pubmed_parser skips.
It uses one ``iterparse`` pass over the gzip stream and frees each record after use, so
memory stays flat whatever the file size.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from ..errors import PipelineError

RETRACTED_TYPES = {"Retracted Publication"}
RECORD_TAGS = ("PubmedArticle", "MedlineCitation", "DeleteCitation")
_YEAR = re.compile(r"\d{4}")


@dataclass
class Section:
    label: str
    category: str
    text: str


@dataclass
class Citation:
    pmid: str
    version: int
    status: str
    title: str
    sections: list[Section]
    languages: list[str]
    publication_types: list[str]
    retracted: bool
    journal: str = ""
    year: str = ""
    line: int = 0

    @property
    def abstract(self) -> str:
        return "\n".join(s.text for s in self.sections if s.text)


@dataclass
class Deletion:
    pmid: str
    version: int
    line: int = 0


@dataclass
class Malformed:
    reason: str
    line: int = 0
    pmid: str = ""


def _text(el: etree._Element | None) -> str:
    """All text below ``el`` (nested markup and MathML included), whitespace collapsed."""
    if el is None:
        return ""
    raw = (el.text or "") if len(el) == 0 else "".join(el.itertext())
    return " ".join(raw.split())


def _version(pmid_el: etree._Element) -> int:
    raw = pmid_el.get("Version", "1")
    if not raw.isdigit():
        raise ValueError(f"PMID Version {raw!r} is not a number")
    return int(raw)


def _year(pub_date: etree._Element | None) -> str:
    """``<Year>``, else the first four-digit year of ``<MedlineDate>`` ("2008 Jul-Aug"), as
    pubmed_parser reads it."""
    if pub_date is None:
        return ""
    year = pub_date.find("Year")
    if year is not None:
        return _text(year)
    found = _YEAR.search(_text(pub_date.find("MedlineDate")))
    return found.group() if found else ""


def _citation(record: etree._Element) -> Citation | Malformed:
    """One citation from a ``<PubmedArticle>`` or a bare ``<MedlineCitation>`` (the layout of
    ``MedlineCitationSet`` files before 2017)."""
    line = record.sourceline or 0
    cit = record if record.tag == "MedlineCitation" else record.find("MedlineCitation")
    pmid_el = cit.find("PMID") if cit is not None else None
    if pmid_el is None or not (pmid_el.text or "").strip().isdigit():
        return Malformed("PubmedArticle without a numeric MedlineCitation/PMID", line)
    pmid = pmid_el.text.strip()
    try:
        version = _version(pmid_el)
    except ValueError as exc:
        return Malformed(str(exc), line, pmid)
    art = cit.find("Article")
    if art is None:
        return Malformed("MedlineCitation without Article", line, pmid)
    sections = [
        Section(a.get("Label", ""), a.get("NlmCategory", ""), _text(a)) for a in art.iterfind("Abstract/AbstractText")
    ]
    pub_types = [_text(p) for p in art.iterfind("PublicationTypeList/PublicationType")]
    retracted = bool(RETRACTED_TYPES.intersection(pub_types)) or any(
        c.get("RefType") == "RetractionIn" for c in cit.iterfind("CommentsCorrectionsList/CommentsCorrections")
    )
    return Citation(
        pmid=pmid,
        version=version,
        status=cit.get("Status", ""),
        title=_text(art.find("ArticleTitle")),
        sections=sections,
        languages=[_text(x) for x in art.iterfind("Language")],
        publication_types=pub_types,
        retracted=retracted,
        journal=_text(art.find("Journal/Title")),
        year=_year(art.find("Journal/JournalIssue/PubDate")),
        line=line,
    )


def _free(el: etree._Element) -> None:
    el.clear(keep_tail=True)
    parent = el.getparent()
    if parent is not None:
        while el.getprevious() is not None:
            del parent[0]


def iter_medline(path: str | Path) -> Iterator[Citation | Deletion | Malformed]:
    """Yield citations, deletions and malformed-record markers in file order.

    A truncated or corrupt gzip stream or malformed XML raises PipelineError naming the
    file, the line and the last PMID read, since nothing after that point can be trusted.
    """
    path = Path(path)
    last = "none yet"
    records = 0
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            events = etree.iterparse(
                fh, events=("end",), tag=RECORD_TAGS, resolve_entities=False, no_network=True, huge_tree=True
            )
            for _, el in events:
                if el.tag == "MedlineCitation" and el.getparent() is not None and el.getparent().tag == "PubmedArticle":
                    continue  # read with its PubmedArticle
                records += 1
                if el.tag == "DeleteCitation":
                    for p in el.iterfind("PMID"):
                        try:
                            yield Deletion((p.text or "").strip(), _version(p), p.sourceline or 0)
                        except ValueError as exc:
                            yield Malformed(str(exc), p.sourceline or 0, (p.text or "").strip())
                else:
                    item = _citation(el)
                    if isinstance(item, Citation):
                        last = item.pmid
                    yield item
                _free(el)
            if not records:
                root = events.root.tag if events.root is not None else "none"
                raise PipelineError(
                    f"{path}: no PubmedArticle, MedlineCitation or DeleteCitation record found "
                    f"(root element <{root}>); is this a MEDLINE/PubMed XML file?"
                )
    except etree.XMLSyntaxError as exc:
        raise PipelineError(
            f"{path}: malformed XML at line {exc.lineno}: {exc.msg} (last PMID read: {last}); "
            "re-download the file (its .md5 should then match)"
        ) from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise PipelineError(
            f"{path}: truncated or corrupt gzip ({exc}) after PMID {last}; delete it and download it again"
        ) from exc


def document_text(c: Citation, section_labels: bool = True, include_title: bool = True) -> str:
    """Pretraining text of a citation; empty when it has no abstract."""
    body = []
    for s in c.sections:
        if not s.text:
            continue
        labelled = section_labels and s.label and s.label.upper() != "UNASSIGNED"
        body.append(f"{s.label}: {s.text}" if labelled else s.text)
    if not body:
        return ""
    return "\n".join(([c.title] if include_title and c.title else []) + body)
