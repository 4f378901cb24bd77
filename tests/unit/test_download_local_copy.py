"""Credentialed data from the user's local copy, and checksum pinning, through the real fetch CLI."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_scripts.config.plan import task_directories, task_fetch_args
from workflow_scripts.config.validate import load_config
from workflow_scripts.download.fetch import main
from workflow_scripts.download.local_copy import local_source, tree_digest, tree_state
from workflow_scripts.errors import PipelineError

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "tests" / "fixtures" / "tasks" / "i2b2_2010_rel"
TRAIN = "concept_assertion_relation_training_data"
ACCESS = "n2c2 NLP Research Data Sets: sign the Data Use Agreement at the DBMI portal"


def fetch_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workflow_scripts.download.fetch", *args], cwd=cwd, capture_output=True, text=True
    )


def test_local_folder_is_copied_whole_with_every_file_in_its_provenance(tmp_path):
    out = tmp_path / "results/raw/tasks/i2b2-2010-re" / TRAIN
    result = fetch_cli("--url", str(RELEASE / TRAIN), "--directory", "--restricted", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sources = sorted(p.relative_to(RELEASE / TRAIN).as_posix() for p in (RELEASE / TRAIN).rglob("*") if p.is_file())
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == sorted(sources + ["provenance.json"])
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["restricted"] is True
    listed = {f["path"]: f["sha256"] for f in prov["files"]}
    assert listed == {s: hashlib.sha256((RELEASE / TRAIN / s).read_bytes()).hexdigest() for s in sources}
    assert prov["params"]["tree_sha256"] == tree_digest(prov["files"])
    assert prov["params"]["files"] == len(sources)
    # nothing of the user's data reaches the log: no file names, no text
    assert "record-2" not in result.stderr and "metoprolol" not in result.stderr
    assert f"{len(sources)} files" in result.stderr
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_tree_digest_changes_with_any_file_and_not_with_the_order():
    files = [{"path": "txt/a.txt", "sha256": "1" * 64}, {"path": "rel/a.rel", "sha256": "2" * 64}]
    assert tree_digest(files) == tree_digest(files[::-1])
    assert tree_digest(files) != tree_digest([files[0], {**files[1], "sha256": "3" * 64}])


def test_failed_copy_keeps_the_previous_one(tmp_path):
    out = tmp_path / "copy"
    main(["--url", str(RELEASE / "test_data"), "--directory", "--out", str(out)])
    before = (out / "provenance.json").read_bytes()
    with pytest.raises(PipelineError, match="missing-folder: folder not found"):
        main(["--url", str(tmp_path / "missing-folder"), "--directory", "--out", str(out)])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PipelineError, match="holds no files"):
        main(["--url", str(empty), "--directory", "--out", str(out)])
    assert (out / "provenance.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "empty"]


def test_a_folder_where_a_file_is_declared_says_how_to_declare_it(tmp_path):
    with pytest.raises(PipelineError, match=r"is a folder; declare the entry as one \(directory: true"):
        main(["--url", str(RELEASE / "test_data"), "--out", str(tmp_path / "test_data")])
    assert not (tmp_path / "test_data").exists()


def test_credentialed_data_without_local_dir_names_access_and_config_key(tmp_path):
    out = tmp_path / TRAIN
    result = fetch_cli(
        "--out",
        str(out),
        "--directory",
        "--access",
        ACCESS,
        "--local-dir-key",
        "tasks.i2b2-2010-re.source.local_dir",
        cwd=tmp_path,
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: {out}: no download source is configured for this folder. {ACCESS}; then set "
        "tasks.i2b2-2010-re.source.local_dir in config.yaml to the folder holding your copy."
    )
    assert not out.exists()


def test_unpinned_file_records_its_sha256_and_says_which_key_pins_it(tmp_path, caplog):
    src = tmp_path / "train.tsv"
    src.write_bytes(b"token\tO\n")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "raw" / "train.tsv"
    key = "tasks.bc5cdr-chem.source.files.train.tsv.sha256"
    with caplog.at_level(logging.WARNING):
        main(["--url", src.as_uri(), "--out", str(out), "--sha256-key", key])
    assert f"{key}: {digest}" in caplog.text
    prov = json.loads((tmp_path / "raw" / "train.tsv.provenance.json").read_text())
    assert prov["outputs"][0]["sha256"] == digest and prov["params"]["expected"] is None


def test_pinned_sha256_mismatch_fails_and_leaves_no_file(tmp_path, caplog):
    src = tmp_path / "train.tsv"
    src.write_bytes(b"token\tO\n")
    out = tmp_path / "raw" / "train.tsv"
    with pytest.raises(PipelineError, match="sha256 mismatch for train.tsv: expected 0{64}"):
        main(["--url", str(src), "--out", str(out), "--sha256", "0" * 64])
    assert list((tmp_path / "raw").iterdir()) == []
    with caplog.at_level(logging.WARNING):
        main(["--url", str(src), "--out", str(out), "--sha256", hashlib.sha256(src.read_bytes()).hexdigest()])
    assert out.read_bytes() == src.read_bytes() and "Pin it" not in caplog.text


def test_plan_passes_folders_access_and_config_keys():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config.setdefault("tasks", {}).setdefault("i2b2-2010-re", {})["source"] = {"local_dir": "/data/n2c2 2010"}
    study = load_config(config, ROOT / "schemas" / "config.schema.yaml")
    args = task_fetch_args(study, "i2b2-2010-re", TRAIN)
    assert args.startswith(f"--url '/data/n2c2 2010/{TRAIN}' --directory ")
    assert "--local-dir-key tasks.i2b2-2010-re.source.local_dir" in args and "--restricted" in args
    assert "--sha256" not in args
    public = task_fetch_args(study, "jnlpba", "train.tsv")
    assert "--sha256-key tasks.jnlpba.source.files.train.tsv.sha256" in public
    assert "--directory" not in public and "--restricted" not in public
    pinned = task_fetch_args(study, "bc5cdr-chem", "train.tsv")
    assert "--sha256 165c4cd2efadd0caf1bb8f3c6bcd3acca199446bb3d55eb06d9137114c9a0b2d" in pinned
    # BLURB's index tarball is downloaded even where local_dir holds the registration-only files.
    config["tasks"]["bioasq-blurb"] = {"source": {"local_dir": "/data/bioasq"}}
    study = load_config(config, ROOT / "schemas" / "config.schema.yaml")
    assert task_fetch_args(study, "bioasq-blurb", "data_generation.tar.gz").startswith("--url https://microsoft.")
    assert task_fetch_args(study, "bioasq-blurb", "7B1_golden.json").startswith("--url /data/bioasq/7B1_golden.json")
    folders = task_directories(study)
    assert {f"i2b2-2010-re/{TRAIN}", "i2b2-2010/test_data", "i2b2-2014/training-PHI-Gold-Set1"} <= set(folders)
    assert not [f for f in folders if f.startswith(("bc5cdr-chem/", "mednli/"))]


def test_local_sources_are_tracked_and_urls_are_not(tmp_path):
    data = tmp_path / "my task" / "dev.tsv"
    data.parent.mkdir()
    data.write_text("a\tO\n")
    assert local_source(str(data)) == [str(data)]
    assert local_source(f"file://{data}") == [str(data)]
    assert local_source("https://example.org/dev.tsv") == [] and local_source(str(tmp_path / "absent.tsv")) == []
    before = tree_state(str(data.parent))
    assert before and tree_state(str(data.parent)) == before
    data.write_text("a\tB-X\n")
    edited = tree_state(str(data.parent))
    (data.parent / "extra.tsv").write_text("")
    assert len({before, edited, tree_state(str(data.parent))}) == 3
    assert tree_state("https://example.org/release/") == ""
