"""PMC JATS parsing: reading order, options, licence, retraction, archive errors."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pubmed_parser
import pytest
from corpus_fixtures import parse_settings

from workflow_scripts.corpus.build_corpus import main as build_main
from workflow_scripts.corpus.parse_corpus_file import main as parse_main
from workflow_scripts.corpus.pmc import Article, BadMember, classify_licence, drop_markers, iter_pmc, parse_article
from workflow_scripts.corpus.pmc_filelist import ListedArticle, read_filelist
from workflow_scripts.corpus.settings import PmcOptions
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = ROOT / "tests" / "fixtures" / "corpus" / "jats_article.nxml"
DEMO_TAR = ROOT / "demo" / "raw_source" / "pmc" / "oa_demo.tar.gz"


def tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_default_text_in_reading_order():
    a = parse_article(ARTICLE.read_bytes(), "a.nxml", PmcOptions())
    assert a.id == "PMC9900001" and a.pmid == "37000001" and a.doi == "10.5555/fixture.1"
    assert a.paragraphs == [
        "Tacrolimus and CYP3A4 in kidney transplantation",
        "Background",
        "Tacrolimus exposure depends on CYP3A4 activity.",
        "Results",
        "Carriers of the variant (CYP3A4*22) needed lower doses.",
        "Introduction",
        "Tacrolimus is a calcineurin inhibitor, cleared by the liver.",
        "Its clearance CL varies widely between patients.",
        "Methods",
        "Patients",
        "We studied 120 kidney transplant recipients.",
        "Trough levels.",
        "Levels by genotype group.",
        "Characteristics of the cohort.",
    ]


def test_options_switch_parts_on_and_off():
    opts = PmcOptions(captions=False, tables=True, formulas=True, references=True, section_titles=False)
    text = parse_article(ARTICLE.read_bytes(), "a.nxml", opts).text
    assert "Background" not in text and "Trough levels." not in text
    captions_only = parse_article(ARTICLE.read_bytes(), "a.nxml", PmcOptions(section_titles=False)).text
    assert "Methods" not in captions_only and "Trough levels.\nLevels by genotype group." in captions_only
    assert "Carriers | 24" in text and "D = k" in text
    assert "calcineurin inhibitor 1, cleared" in text and "Smith A. Calcineurin inhibitors." in text


def test_keeps_paragraph_text_that_pubmed_parser_loses():
    ours = parse_article(ARTICLE.read_bytes(), "a.nxml", PmcOptions(references=True)).text
    theirs = [p["text"].strip() for p in pubmed_parser.parse_pubmed_paragraph(str(ARTICLE))]
    for para in theirs:  # where pubmed_parser finds a paragraph, ours has the same text
        assert para in ours
    assert "Its clearance CL varies widely between patients." not in theirs
    assert "We studied 120 kidney transplant recipients." not in theirs


@pytest.mark.parametrize(
    "url,text,expected",
    [
        ("https://creativecommons.org/licenses/by/4.0/", "", "commercial"),
        ("http://creativecommons.org/publicdomain/zero/1.0/", "", "commercial"),
        ("", "This article is distributed under CC BY-SA.", "commercial"),
        ("https://creativecommons.org/licenses/by-nc-nd/4.0/", "", "noncommercial"),
        ("", "Free to read; all rights reserved.", "other"),
    ],
)
def test_licence_classes(url, text, expected):
    assert classify_licence(url, text) == expected


def test_demo_tarball_licences_and_retraction():
    arts = list(iter_pmc(DEMO_TAR, PmcOptions()))
    assert len(arts) == 20 and all(isinstance(a, Article) for a in arts)
    assert sum(a.licence == "commercial" for a in arts) == 14
    assert sum(a.licence == "noncommercial" for a in arts) == 6
    assert [a.id for a in arts if a.retracted] == ["PMC8100007"]


def test_directory_and_single_file_inputs(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "PMC9900001.nxml").write_bytes(ARTICLE.read_bytes())
    assert [a.id for a in iter_pmc(tmp_path / "d", PmcOptions())] == ["PMC9900001"]
    assert [a.id for a in iter_pmc(ARTICLE, PmcOptions())] == ["PMC9900001"]


def test_malformed_member_is_reported_with_its_name(tmp_path):
    tar = tarball(
        tmp_path / "oa.tar.gz", {"oa/good.nxml": ARTICLE.read_bytes(), "oa/bad.nxml": b"<article><front></article>"}
    )
    items = list(iter_pmc(tar, PmcOptions()))
    assert isinstance(items[0], Article)
    assert isinstance(items[1], BadMember) and items[1].member == "oa/bad.nxml"
    assert "malformed XML" in items[1].reason


def test_truncated_tarball_names_the_file(tmp_path):
    tar = tarball(tmp_path / "oa.tar.gz", {f"oa/{i}.nxml": ARTICLE.read_bytes() for i in range(3)})
    data = tar.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(PipelineError, match=r"cut\.tar\.gz: unreadable or truncated archive"):
        list(iter_pmc(cut, PmcOptions()))
    not_gzip = tmp_path / "junk.tar.gz"
    not_gzip.write_bytes(gzip.compress(b"not a tar archive at all" * 40)[:30])
    with pytest.raises(PipelineError, match=r"junk\.tar\.gz"):
        list(iter_pmc(not_gzip, PmcOptions()))


def test_file_list_gives_licence_and_retraction():
    listed = read_filelist(DEMO_TAR.with_name("oa_demo.filelist.csv"))
    assert len(listed) == 20
    assert listed["PMC8100002"] == ListedArticle("noncommercial", False)
    assert listed["PMC8100004"] == ListedArticle("commercial", True)  # retracted after deposit


def test_file_list_without_licence_column_is_named(tmp_path):
    bad = tmp_path / "list.csv"
    bad.write_text("Article File,AccessionID\na.nxml,PMC1\n")
    with pytest.raises(PipelineError, match=r"list\.csv: no licence column"):
        read_filelist(bad)


def test_malformed_member_stops_or_is_counted_through_the_cli(tmp_path):
    tar = tarball(tmp_path / "oa.tar.gz", {"oa/good.nxml": ARTICLE.read_bytes(), "oa/bad.nxml": b"<article>"})
    settings = tmp_path / "s.yaml"
    out = tmp_path / "p.parquet"
    settings.write_text("corpus: {name: pmc, type: pmc, clean: {on_malformed: error}}\n")
    with pytest.raises(PipelineError, match=r"oa\.tar\.gz:oa/bad\.nxml: malformed XML"):
        parse_main(["--settings", str(settings), "--in", str(tar), "--out", str(out)])
    assert not out.exists()
    settings.write_text("corpus: {name: pmc, type: pmc, clean: {on_malformed: skip, min_words: 0}}\n")
    parse_main(["--settings", str(parse_settings(settings)), "--in", str(tar), "--out", str(out)])
    build_main(["--settings", str(settings), "--in", str(out), "--out", str(tmp_path / "c")])
    stats = json.loads((tmp_path / "c" / "stats.json").read_text())
    assert stats["dropped"]["malformed"] == 1 and stats["documents"] == 1


@pytest.mark.parametrize(
    "marked,clean",
    [
        ("in disease [\x00\u2013\x00].", "in disease."),
        ("the axis (\x00;\x00; \x00). In", "the axis. In"),
        ("host lipids\x00,\x00,\x00,\x00. Then", "host lipids. Then"),
        ("infection process \x00, \x00, and in vivo", "infection process, and in vivo"),
        ("by White et al. \x00.", "by White et al."),
        ("levels (Table 1; \x00) rose", "levels (Table 1) rose"),
        ("levels (\x00; Table 1) rose", "levels (Table 1) rose"),
        ("as shown \x00 and \x00 here", "as shown here"),
        ("no marker , here", "no marker, here"),
    ],
)
def test_dropped_citation_markers_leave_no_debris(marked, clean):
    assert drop_markers(marked) == clean


def test_table_footnotes_follow_the_rows_when_tables_are_kept():
    doc = ARTICLE.read_bytes().replace(
        b"</table>", b"</table><table-wrap-foot><fn><label>a</label><p>Median (range).</p></fn></table-wrap-foot>", 1
    )
    assert "Median (range)." in parse_article(doc, "a.nxml", PmcOptions(tables=True)).text
    assert "Median (range)." not in parse_article(doc, "a.nxml", PmcOptions()).text


def test_floats_group_figures_and_tables_are_read():
    src = ARTICLE.read_bytes()
    start, end = src.index(b'<table-wrap id="T1">'), src.index(b"</table-wrap>") + len(b"</table-wrap>")
    table = src[start:end]
    moved = (src[:start] + src[end:]).replace(b"</back>", b"</back><floats-group>" + table + b"</floats-group>")
    assert (
        parse_article(moved, "a.nxml", PmcOptions(tables=True)).text
        == parse_article(src, "a.nxml", PmcOptions(tables=True)).text
    )
