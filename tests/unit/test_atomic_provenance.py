"""Atomic writes and provenance records, on real files."""

from __future__ import annotations

import json
import os
import stat

import pytest

from workflow_scripts import provenance
from workflow_scripts.atomic import atomic_dir, atomic_file, write_json


def test_failed_write_leaves_the_old_file_untouched(tmp_path):
    target = tmp_path / "stats.json"
    write_json(target, {"documents": 1})
    with pytest.raises(RuntimeError):
        with atomic_file(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert json.loads(target.read_text()) == {"documents": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]


def test_atomic_dir_replaces_whole_directory_and_respects_umask(tmp_path):
    target = tmp_path / "corpus"
    with atomic_dir(target) as tmp:
        (tmp / "shard~0.parquet").write_text("a")
    with atomic_dir(target) as tmp:
        (tmp / "shard~1.parquet").write_text("b")
    assert sorted(p.name for p in target.iterdir()) == ["shard~1.parquet"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~mask
    write_json(tmp_path / "x.json", {})
    assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == 0o666 & ~mask


def test_record_checksums_inputs_and_propagates_restriction(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = tmp_path / "NOTEEVENTS.csv.gz"
    raw.write_bytes(b"notes")
    provenance.record(raw, step="fetch", inputs={}, restricted=True)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    provenance.record(corpus, step="build", inputs={"raw": [raw]}, params={"shards": 1})
    rec = provenance.load(corpus / "provenance.json")
    assert rec["restricted"] is True
    entry = rec["inputs"]["raw"][0]
    assert entry["sha256"] == provenance.sha256_file(raw)
    assert entry["provenance"].endswith("NOTEEVENTS.csv.gz.provenance.json")
    assert rec["versions"]["python"] and rec["host"] and rec["started"] <= rec["ended"]
    model = tmp_path / "model"
    model.mkdir()
    provenance.record(model, step="pretrain", inputs={"corpus": corpus})
    downstream = provenance.load(model / "provenance.json")
    assert downstream["restricted"] is True
    assert downstream["inputs"]["corpus"]["provenance_sha256"] == provenance.sha256_file(corpus / "provenance.json")


def test_credentials_never_reach_the_record(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "sys.argv",
        ["fetch", "--url", "https://alice:s3cret@physionet.org/files/x", "password=hunter2"],
    )
    path = provenance.record(tmp_path / "x", step="fetch", inputs={}, params={})
    text = path.read_text()
    assert "s3cret" not in text and "hunter2" not in text and "alice" not in text
