"""Our MEDLINE parser: fields, versions, deletions, errors; agreement with pubmed_parser."""

from __future__ import annotations

import gzip
from pathlib import Path

import pubmed_parser
import pytest
import yaml

from workflow_scripts.corpus.medline import Citation, Deletion, Malformed, document_text, iter_medline
from workflow_scripts.corpus.parse_corpus_file import main as parse_main
from workflow_scripts.corpus.records import iter_parsed, read_info
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "corpus"
DEMO = ROOT / "demo" / "raw_source" / "pubmed"


def gz(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / (src.stem + ".xml.gz")
    out.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    return out


def norm(s: str) -> str:
    return " ".join(s.split())


def pp_style_abstract(c: Citation) -> str:
    """Our sections in pubmed_parser's layout: label (except UNASSIGNED) then text."""
    return norm(" ".join(((s.label + " ") if s.label and s.label != "UNASSIGNED" else "") + s.text for s in c.sections))


def dropped_text_only(theirs: str, ours: str) -> bool:
    """``theirs`` is ``ours`` with characters left out (spacing aside)."""
    rest = iter("".join(ours.split()))
    return len(theirs) < len(ours) and all(ch in rest for ch in "".join(theirs.split()))


def test_edge_fixture_fields(tmp_path):
    items = list(iter_medline(gz(FIX / "medline_edge.xml", tmp_path)))
    cits = [i for i in items if isinstance(i, Citation)]
    assert [(c.pmid, c.version) for c in cits] == [
        ("101", 1),
        ("102", 1),
        ("102", 2),
        ("103", 1),
        ("104", 1),
        ("105", 1),
    ]
    assert [(d.pmid, d.version) for d in items if isinstance(d, Deletion)] == [("104", 1)]
    first = cits[0]
    assert first.status == "MEDLINE" and first.title == "Binding of TP53 to cisplatin adducts"
    assert [s.label for s in first.sections] == ["BACKGROUND", "RESULTS", "UNASSIGNED"]
    assert first.sections[1].text == "The complex (Kd = 3 nM) was stable at 37 °C."
    assert cits[1].sections[0].text == "Plasma levels decayed as e-kt in all subjects."
    assert cits[2].status == "PubMed-not-MEDLINE"
    assert cits[3].languages == ["spa"] and cits[3].publication_types == ["Journal Article", "Review"]
    assert cits[4].sections == [] and document_text(cits[4]) == ""
    assert cits[5].retracted and not cits[0].retracted
    assert document_text(first) == (
        "Binding of TP53 to cisplatin adducts\nBACKGROUND: Cisplatin binds DNA in tumour cells.\n"
        "RESULTS: The complex (Kd = 3 nM) was stable at 37 °C.\nTrial registration pending."
    )
    assert document_text(first, section_labels=False, include_title=False).startswith("Cisplatin binds")


@pytest.mark.parametrize(
    "path",
    [
        DEMO / "baseline" / "pubmed26n0001.xml.gz",
        DEMO / "baseline" / "pubmed26n0002.xml.gz",
        DEMO / "updatefiles" / "pubmed26n0003.xml.gz",
        FIX / "medline_edge.xml",
        FIX / "medline_update.xml",
    ],
    ids=lambda p: p.name,
)
def test_agrees_with_pubmed_parser_on_shared_fields(path, tmp_path):
    """Same articles, PMIDs, titles, languages, publication types and abstracts; where
    pubmed_parser loses nested text, its abstract is ours with characters left out."""
    if path.suffix == ".xml":
        path = gz(path, tmp_path)
    ours = [c for c in iter_medline(path) if isinstance(c, Citation)]
    ref = list(pubmed_parser.parse_medline_xml(str(path)))
    assert len(ours) == len(ref)
    lossy = 0
    for o, r in zip(ours, ref, strict=True):
        assert o.pmid == r["pmid"]
        assert o.title == norm(r["title"])
        assert ";".join(o.languages) == r["languages"]
        assert o.publication_types == [p.split(":", 1)[1] for p in r["publication_types"].split("; ") if p]
        if pp_style_abstract(o) != norm(r["abstract"]):
            lossy += 1
            assert dropped_text_only(norm(r["abstract"]), pp_style_abstract(o))
    expected_lossy = {"pubmed26n0001.xml.gz": 2, "medline_edge.xml.gz": 2}.get(path.name, 0)
    assert lossy == expected_lossy


def test_where_pubmed_parser_is_wrong(tmp_path):
    path = gz(FIX / "medline_edge.xml", tmp_path)
    ref = list(pubmed_parser.parse_medline_xml(str(path)))
    # nested markup: "<b>complex (<i>K</i><sub><i>d</i></sub> = 3 nM)</b>" loses "Kd = 3 nM)"
    assert "complex ( was stable" in ref[0]["abstract"]
    # MathML inside an abstract disappears
    assert "decayed as  in all" in ref[1]["abstract"]
    # the PMID Version and the Status are not reported: versions 1 and 2 of 102 look alike
    assert [r["pmid"] for r in ref].count("102") == 2 and "version" not in ref[1] and "status" not in ref[1]
    # DeleteCitation blocks are dropped: no record is flagged deleted
    assert not any(r["delete"] for r in ref)


def test_malformed_xml_names_file_line_and_last_pmid(tmp_path):
    path = gz(FIX / "medline_malformed.xml", tmp_path)
    with pytest.raises(PipelineError) as err:
        list(iter_medline(path))
    msg = str(err.value)
    assert str(path) in msg and "line 17" in msg and "last PMID read: 201" in msg


def test_truncated_gzip_names_file(tmp_path):
    data = gzip.compress((FIX / "medline_edge.xml").read_bytes())
    path = tmp_path / "cut.xml.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(PipelineError, match=r"cut\.xml\.gz: truncated or corrupt gzip"):
        list(iter_medline(path))


def _settings(tmp_path: Path, on_malformed: str) -> Path:
    s = tmp_path / f"s_{on_malformed}.yaml"
    s.write_text(yaml.safe_dump({"corpus": {"name": "pm", "type": "pubmed", "clean": {"on_malformed": on_malformed}}}))
    return s


def test_record_without_pmid_errors_or_is_counted(tmp_path):
    raw = gz(FIX / "medline_bad_record.xml", tmp_path)
    assert isinstance(list(iter_medline(raw))[1], Malformed)
    out = tmp_path / "p.parquet"
    with pytest.raises(PipelineError, match=r"medline_bad_record\.xml\.gz:13 \(PMID unknown\)"):
        parse_main(["--settings", str(_settings(tmp_path, "error")), "--in", str(raw), "--out", str(out)])
    assert not out.exists()
    parse_main(["--settings", str(_settings(tmp_path, "skip")), "--in", str(raw), "--out", str(out)])
    assert read_info(out)["malformed"] == 1
    assert [r["id"] for r in iter_parsed(out)] == ["pubmed:301"]


OLD_LAYOUT = b"""<?xml version="1.0"?>
<MedlineCitationSet>
<MedlineCitation Status="MEDLINE"><PMID Version="1">401</PMID><Article><Journal><JournalIssue><PubDate>
<MedlineDate>2008 Jul-Aug</MedlineDate></PubDate></JournalIssue><Title>J</Title></Journal>
<ArticleTitle>Old layout</ArticleTitle><Abstract><AbstractText>Text of 401.</AbstractText></Abstract>
</Article></MedlineCitation>
<MedlineCitation Status="MEDLINE"><PMID Version="1">402</PMID><Article><Journal><JournalIssue><PubDate>
<MedlineDate>Winter</MedlineDate></PubDate></JournalIssue></Journal><ArticleTitle>No year</ArticleTitle>
</Article></MedlineCitation>
<DeleteCitation><PMID Version="1">399</PMID></DeleteCitation>
</MedlineCitationSet>
"""


def test_old_medline_citation_set_layout_and_medline_dates(tmp_path):
    path = tmp_path / "medline16n0001.xml.gz"
    path.write_bytes(gzip.compress(OLD_LAYOUT))
    items = list(iter_medline(path))
    assert [(type(i).__name__, i.pmid) for i in items] == [
        ("Citation", "401"),
        ("Citation", "402"),
        ("Deletion", "399"),
    ]
    assert [items[0].year, items[1].year] == ["2008", ""]
    assert items[0].title == "Old layout" and items[0].abstract == "Text of 401."


def test_file_without_records_names_its_root(tmp_path):
    path = tmp_path / "other.xml.gz"
    path.write_bytes(gzip.compress(b"<?xml version='1.0'?><PubmedBookArticleSet><X/></PubmedBookArticleSet>"))
    with pytest.raises(PipelineError, match=r"other\.xml\.gz: no PubmedArticle.*root element <PubmedBookArticleSet>"):
        list(iter_medline(path))
