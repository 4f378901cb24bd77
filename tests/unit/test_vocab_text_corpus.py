"""A plain-text file becomes a corpus directory the vocabulary step reads like any other."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workflow_scripts.corpus import build_text_corpus as text_corpus
from workflow_scripts.errors import PipelineError
from workflow_scripts.vocab import sample

ROOT = Path(__file__).resolve().parents[2]


def test_paragraphs_become_documents(tmp_path):
    src = tmp_path / "general.txt"
    src.write_text("The match ended\nin a draw.\n\n\n  Bake the pie for an hour.  \n\n", encoding="utf-8")
    out = tmp_path / "corpus" / "general"
    text_corpus.main(["--in", str(src), "--name", "general", "--out", str(out)])
    table = pq.read_table(out / "shard~0.parquet").to_pylist()
    assert [r["text"] for r in table] == ["The match ended in a draw.", "Bake the pie for an hour."]
    assert [r["id"] for r in table] == ["general-0", "general-1"] and table[0]["words"] == 6
    assert json.loads((out / "stats.json").read_text())["documents"] == 2
    assert (out / "provenance.json").is_file()
    assert list(sample.iter_texts(sample.plan_sample([out], "g", None, 0)))[1] == "Bake the pie for an hour."


def test_empty_text_is_refused(tmp_path):
    src = tmp_path / "empty.txt"
    src.write_text("\n\n  \n", encoding="utf-8")
    with pytest.raises(PipelineError, match=r"empty.txt: no text"):
        text_corpus.main(["--in", str(src), "--name", "g", "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_a_text_saved_by_windows_reads_the_same_and_a_latin1_one_stops_naming_its_line(tmp_path):
    windows = tmp_path / "windows.txt"
    windows.write_bytes(b"\xef\xbb\xbfThe match ended\r\nin a draw.\r\n\r\nBake the pie.\r\n")
    assert text_corpus.paragraphs(windows) == ["The match ended in a draw.", "Bake the pie."]
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\u00e9 society.\n\nNa\u00efve.\n".encode("latin-1"))
    with pytest.raises(PipelineError, match=r"latin1.txt:1: byte 0xE9 is not UTF-8 .*re-save it as UTF-8"):
        text_corpus.paragraphs(latin1)


def test_bundled_general_sample_is_small_and_rich_enough_for_the_demo_vocabulary():
    path = ROOT / "demo/raw_source/general/general.txt"
    assert path.stat().st_size < 300_000
    docs = text_corpus.paragraphs(path)
    assert len(docs) >= 300
    assert sample.count_distinct_words(iter(docs), lowercase=True, stop_at=10**6) >= 2000
