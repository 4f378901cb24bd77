"""MIMIC-III NOTEEVENTS reading and cleaning."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from workflow_scripts.corpus.mimic import BadRow, Note, clean_text, iter_notes, placeholder_tag
from workflow_scripts.errors import PipelineError

SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus" / "NOTEEVENTS_sample.csv"


def test_sample_notes_keep_placeholders_as_one_token(tmp_path):
    path = tmp_path / "NOTEEVENTS.csv.gz"
    path.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    notes = list(iter_notes(path))
    assert [n.row_id for n in notes] == ["174", "175", "176", "177", "178"]
    assert [n.iserror for n in notes] == [False, False, True, False, False]
    assert notes[0].category == "Discharge summary" and notes[0].hadm_id == "167853"
    assert notes[0].text == (
        "Admission Date: [**2151-7-16**] Discharge Date: [**2151-8-4**]\n\nService: ADDENDUM\n\n"
        'HISTORY: Mr. [**Known_lastname_1234**] was seen at [**Hospital1_18**] for "chest pain".\n'
        "Call [**Telephone/Fax_(1)_5678**] with questions."
    )
    # runs of blank lines shrink to one paragraph break
    assert notes[4].text == (
        "IMPRESSION: No acute process.\n\nDr. [**First_Name_(STitle)_2819**] was notified on [**2162-3-4**]."
    )
    assert notes[4].line == 15


def test_placeholders_replaced_by_type_tags():
    notes = list(iter_notes(SAMPLE, placeholders="tag"))
    assert notes[0].text.startswith("Admission Date: [DATE] Discharge Date: [DATE]")
    assert "Mr. [NAME] was seen at [HOSPITAL]" in notes[0].text and "Call [PHONE]" in notes[0].text
    assert notes[1].text.startswith("Patient is a [AGE] year old")


@pytest.mark.parametrize(
    "inner,tag",
    [
        ("2151-7-16", "[DATE]"),
        ("Month (only) 51", "[DATE]"),
        ("Known firstname 5", "[NAME]"),
        ("Hospital Ward Name 27", "[HOSPITAL]"),
        ("Location (un) 1110", "[LOCATION]"),
        ("Medical Record Number 7", "[ID]"),
        ("Company 3", "[ORGANIZATION]"),
        ("**", "[OTHER]"),
    ],
)
def test_placeholder_tags(inner, tag):
    assert placeholder_tag(inner) == tag


def test_clean_text_collapses_spaces_inside_lines():
    assert clean_text("  a   b \n\n\n\n c\t d ", "keep") == "a b\n\nc d"


def test_missing_column_names_file_and_column(tmp_path):
    text = SAMPLE.read_text().replace('"ISERROR",', "", 1)
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_text(text)
    with pytest.raises(PipelineError, match=r"NOTEEVENTS\.csv: missing column\(s\) ISERROR"):
        list(iter_notes(path))


def test_row_with_wrong_field_count_is_reported_with_line(tmp_path):
    lines = SAMPLE.read_text().splitlines(keepends=True)
    path = tmp_path / "n.csv"
    path.write_text(lines[0] + '1,2,3,"2100-01-01","only five"\n')
    items = list(iter_notes(path))
    assert len(items) == 1 and isinstance(items[0], BadRow) and items[0].line == 2


def test_truncated_gzip_names_file(tmp_path):
    data = gzip.compress(SAMPLE.read_bytes() * 20)
    path = tmp_path / "NOTEEVENTS.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(PipelineError, match=r"NOTEEVENTS\.csv\.gz: truncated or corrupt gzip"):
        list(iter_notes(path))
    assert isinstance(next(iter_notes(SAMPLE)), Note)


def test_a_resaved_noteevents_reads_the_same_and_a_latin1_byte_names_its_line(tmp_path):
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes().replace(b"\n", b"\r\n"))
    assert list(iter_notes(path)) == list(iter_notes(SAMPLE))
    lines = SAMPLE.read_bytes().split(b"\n")
    lines[4] = b"\xe4" + lines[4][1:]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(PipelineError, match=r"NOTEEVENTS.csv:5: byte 0xE4 is not UTF-8 .*re-save it as UTF-8"):
        list(iter_notes(path))
