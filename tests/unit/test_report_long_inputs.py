"""The tables state how long inputs were read: per cell in medians.csv's note, per task in medians.md."""

from __future__ import annotations

import json

from test_report_tables import build, cell, make_study, read_csv

from workflow_scripts.report.long_inputs import reading

CHUNKED = {"chunk_length": 128, "stride": 16, "pooling": "max", "max_chunks": 4}
WHOLE = {"chunk_length": None, "stride": 16, "pooling": "max", "max_chunks": 4}


def test_chunked_and_whole_readings_are_stated_and_other_cells_are_unchanged(tmp_path):
    settings = make_study(tmp_path)
    plain = tmp_path / "plain"
    build(plain, make_study(plain))
    for path in (tmp_path / "results/finetune").glob("*/mednli/*/*/metrics.json"):
        data = json.loads(path.read_text())
        chunking = CHUNKED if data["model"] == "pm" else WHOLE
        data["encoding"] = {"max_length": 512, "scheme": "plain", "chunking": chunking}
        path.write_text(json.dumps(data))
    build(tmp_path, settings)
    rows = read_csv(tmp_path / "results/tables/medians.csv")
    assert cell(rows, "pm", "mednli")["note"] == "512 tokens in 128-token chunks (at most 4), stride 16, max"
    assert cell(rows, "scratch", "mednli")["note"] == "512 tokens whole"
    before = read_csv(plain / "results/tables/medians.csv")
    assert [r for r in rows if r["task"] != "mednli"] == [r for r in before if r["task"] != "mednli"]
    md = (tmp_path / "results/tables/medians.md").read_text()
    assert "MedNLI: inputs read as 512 tokens in 128-token chunks (at most 4), stride 16, max (ours-PM); " in md
    assert "512 tokens whole (scratch)." in md
    assert "inputs read as" not in (plain / "results/tables/medians.md").read_text()


def test_tagging_states_its_windows_and_a_run_without_chunking_states_nothing():
    encoding = {"max_length": 8192, "chunking": {"chunk_length": 512, "stride": 128, "pooling": "mean"}}
    assert reading(encoding, "ner") == "windows of 512 tokens, stride 128"
    assert reading(encoding, "qa") == "8192 tokens in 512-token chunks, stride 128, mean"
    assert reading({"max_length": 512, "scheme": "bio"}, "ner") == "" and reading(None, "qa") == ""
