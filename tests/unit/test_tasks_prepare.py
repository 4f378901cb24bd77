"""The prepare step: raw task files -> normalised JSONL splits, data card and provenance."""

import dataclasses
import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from workflow_scripts.errors import PipelineError
from workflow_scripts.tasks.prepare_task import main, prepare
from workflow_scripts.tasks.registry import resolve
from workflow_scripts.tasks.spec import PrepareTaskSettings, TaskSpec
from workflow_scripts.typed import parse

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo"
DEMO_SPECS = yaml.safe_load((DEMO / "generator" / "demo_tasks.yaml").read_text())
FIXTURES = ROOT / "tests" / "fixtures" / "tasks"


def jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def write_settings(tmp_path, entry):
    """The task's settings file as the workflow writes it: only the keys preparation reads."""
    path = tmp_path / f"{entry['name']}.yaml"
    read = {f.name for f in dataclasses.fields(PrepareTaskSettings)}
    path.write_text(yaml.safe_dump({"task": {k: v for k, v in entry.items() if k in read}}))
    return path


@pytest.mark.parametrize("task", sorted(DEMO_SPECS))
def test_prepare_cli_on_the_demo_tasks(task, tmp_path, monkeypatch):
    entry = DEMO_SPECS[task]
    monkeypatch.chdir(DEMO)  # the demo's urls are relative to its run directory
    out = tmp_path / "results" / "tasks" / task
    main(["--settings", str(write_settings(tmp_path, entry)), "--raw", f"raw_source/tasks/{task}", "--out", str(out)])
    sizes = {s: len(jsonl(out / f"{s}.jsonl")) for s in ("train", "dev", "test")}
    assert sizes == entry["expected_counts"]
    texts = jsonl(out / "test_texts.jsonl")  # what corpora are decontaminated against
    assert [t["id"] for t in texts] == [r["id"] for r in jsonl(out / "test.jsonl")] and all(t["texts"] for t in texts)
    card = json.loads((out / "data_card.json").read_text())
    assert card["count_check"]["status"] == "ok"
    assert {s: card["splits"][s]["examples"] for s in sizes} == sizes
    record = jsonl(out / "train.jsonl")[0]
    fields = {
        "ner": {"id", "tokens", "tags"},
        "pico": {"id", "tokens", "tags"},
        "relation": {"id", "text", "label", "entities"},
        "similarity": {"id", "text_a", "text_b", "score"},
        "doc_classification": {"id", "text", "labels"},
        "qa": {"id", "question", "context", "label"},
        "nli": {"id", "text_a", "text_b", "label"},
    }[entry["type"]]
    assert set(record) == fields
    ids = {s: {r["id"] for r in jsonl(out / f"{s}.jsonl")} for s in sizes}
    assert not ids["train"] & ids["dev"] and not ids["dev"] & ids["test"]
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["step"] == "tasks.prepare" and prov["restricted"] is False
    splits = {"train.jsonl", "dev.jsonl", "test.jsonl"}
    assert {Path(o["path"]).name for o in prov["outputs"]} == {*splits, "test_texts.jsonl", "data_card.json"}
    assert all("sha256" in i for i in prov["inputs"]["raw"])


def test_ner_data_card_counts_mentions(tmp_path, monkeypatch):
    monkeypatch.chdir(DEMO)
    card = prepare(parse(TaskSpec, DEMO_SPECS["demo-ner"], "t"), Path("raw_source/tasks/demo-ner"), tmp_path / "out")
    train = card["splits"]["train"]
    assert train["mentions"]["Disease"] == train["tags"]["B-Disease"] > 0


def test_count_mismatch_stops_the_run_and_keeps_previous_output(tmp_path, monkeypatch):
    monkeypatch.chdir(DEMO)
    entry = dict(
        DEMO_SPECS["demo-re"], expected_counts={"train": 200, "dev": 51, "test": 100}, expected_counts_checked=True
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.jsonl").write_text("previous\n")
    with pytest.raises(PipelineError, match="task demo-re: split dev has 50 examples, expected 51"):
        prepare(parse(TaskSpec, entry, "t"), Path("raw_source/tasks/demo-re"), out)
    assert (out / "train.jsonl").read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder left behind


def test_mention_count_mismatch(tmp_path, monkeypatch):
    monkeypatch.chdir(DEMO)
    entry = dict(DEMO_SPECS["demo-ner"], expected_counts={"test_mentions": 5}, expected_counts_checked=True)
    with pytest.raises(PipelineError, match=r"split test has \d+ entity mentions, expected 5"):
        prepare(parse(TaskSpec, entry, "t"), Path("raw_source/tasks/demo-ner"), tmp_path / "out")


def test_paper_count_never_checked_warns_and_records_the_real_count(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(DEMO)
    entry = dict(DEMO_SPECS["demo-re"], expected_counts={"train": 200, "dev": 51, "test": 100})
    out = tmp_path / "out"
    card = prepare(parse(TaskSpec, entry, "t"), Path("raw_source/tasks/demo-re"), out)
    assert "split dev has 50 examples, expected 51" in caplog.text and "never checked" in caplog.text
    check = card["count_check"]
    assert check["found"]["dev"] == 50 and check["status"] == "differs from the paper's counts"
    assert not check["checked_against_release"]
    assert json.loads((out / "provenance.json").read_text())["count_check"] == check


def test_cli_reports_errors_in_one_line(tmp_path):
    entry = dict(
        DEMO_SPECS["demo-nli"],
        restricted=True,
        source={"files": {"mli_train_v1.jsonl": {}}, "access": "apply at physionet.org"},
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_scripts.tasks.prepare_task",
            "--settings",
            str(write_settings(tmp_path, entry)),
            "--raw",
            str(tmp_path / "raw"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert not (tmp_path / "out").exists()


def test_credentialed_task_without_files_says_where_to_get_access(tmp_path):
    entry = dict(
        DEMO_SPECS["demo-nli"],
        restricted=True,
        source={"files": {}, "access": "PhysioNet credentialed access: https://physionet.org/content/mednli/"},
    )
    (tmp_path / "raw").mkdir()
    with pytest.raises(PipelineError, match=r"credentialed data: PhysioNet credentialed access: https://physionet.org"):
        prepare(parse(TaskSpec, entry, "t"), tmp_path / "raw", tmp_path / "out")


def test_credentialed_files_from_local_dir_mark_output_restricted(tmp_path):
    local = tmp_path / "my-mednli"
    local.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(FIXTURES / "mednli" / "mli.jsonl", local / f"mli_{split}_v1.jsonl")
    entry = dict(
        DEMO_SPECS["demo-nli"],
        name="mednli",
        restricted=True,
        expected_counts={},
        source={"files": {}, "local_dir": str(local), "access": "PhysioNet"},
    )
    out = tmp_path / "out"
    prepare(parse(TaskSpec, entry, "t"), tmp_path / "raw", out)
    assert len(jsonl(out / "test.jsonl")) == 3
    assert json.loads((out / "provenance.json").read_text())["restricted"] is True


def gad_like_release(tmp_path):
    """A BioBERT-style RE archive: two folds of train.tsv (no header) and test.tsv (header)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    with zipfile.ZipFile(raw / "REdata.zip", "w") as zf:
        for fold in (1, 2):
            train = "".join(f"@GENE$ variant {fold}-{i} and @DISEASE$ .\t{i % 2}\n" for i in range(40))
            test = "index\tsentence\tlabel\n" + "".join(
                f"t{fold}-{i}\t@GENE$ test {i} in @DISEASE$ .\t{i % 2}\n" for i in range(10)
            )
            zf.writestr(f"RE/GAD/{fold}/train.tsv", train)
            zf.writestr(f"RE/GAD/{fold}/test.tsv", test)
    return raw


GAD = {
    "name": "gad-like",
    "display": "GAD",
    "type": "relation",
    "domain": "pubmed",
    "format": "blue_tsv",
    "source": {"files": {"REdata.zip": {}}},
    "splits": {
        "train": "REdata.zip/RE/GAD/{fold1}/train.tsv",
        "dev": "holdout:0.1:REdata.zip/RE/GAD/{fold1}/train.tsv",
        "test": "REdata.zip/RE/GAD/{fold1}/test.tsv",
    },
    "folds": 2,
    "selection_fold": 0,
    "metric": "micro_f1_excl_negative",
    "labels": ["0", "1"],
    "negative_label": "0",
}


def test_folds_from_an_archive_with_dev_held_out_of_train(tmp_path):
    out = tmp_path / "out"
    card = prepare(parse(TaskSpec, GAD, "t"), gad_like_release(tmp_path), out)
    for fold in (0, 1):
        d = out / f"fold~{fold}"
        train, dev, test = (jsonl(d / f"{s}.jsonl") for s in ("train", "dev", "test"))
        assert (len(train), len(dev), len(test)) == (36, 4, 10)
        assert not {r["id"] for r in train} & {r["id"] for r in dev}
        assert all(f"variant {fold + 1}-" in r["text"] for r in dev)  # dev comes from train, never test
        assert card["folds"][str(fold)]["splits"]["dev"]["examples"] == 4
    assert "selection_fold" not in card  # the report's, not preparation's
    again = prepare(parse(TaskSpec, GAD, "t"), tmp_path / "raw", tmp_path / "again")
    assert again == card
    assert (tmp_path / "again/fold~1/dev.jsonl").read_bytes() == (out / "fold~1/dev.jsonl").read_bytes()


def test_missing_member_in_archive_names_the_split_path(tmp_path):
    entry = dict(GAD, splits=dict(GAD["splits"], test="REdata.zip/RE/GAD/{fold1}/devel.tsv"))
    with pytest.raises(PipelineError, match=r"REdata.zip: the archive has no member 'RE/GAD/1/devel.tsv'"):
        prepare(parse(TaskSpec, entry, "t"), gad_like_release(tmp_path), tmp_path / "out")


def test_holdout_by_document_and_joined_sources(tmp_path):
    raw = tmp_path / "raw"
    for name in ("set1", "set2", "test"):
        shutil.copytree(FIXTURES / "i2b2_2014", raw / name)
        (raw / name / "220-01.xml").rename(raw / name / f"{name}-doc.xml")
    labels = ["O"] + [f"{p}-{t}" for t in ("DATE", "DOCTOR", "PATIENT", "HOSPITAL") for p in "BI"]
    entry = {
        "name": "deid",
        "display": "De-id",
        "type": "ner",
        "domain": "clinical",
        "format": "i2b2_xml",
        "source": {"files": {}},
        "metric": "entity_f1_strict",
        "labels": labels,
        "restricted": True,
        "splits": {
            "train": "set1#*:TYPE+set2#*:TYPE",
            "dev": "holdout:1:set1#*:TYPE+set2#*:TYPE",
            "test": "test#*:TYPE",
        },
    }
    out = tmp_path / "out"
    prepare(parse(TaskSpec, entry, "t"), raw, out)
    train, dev = jsonl(out / "train.jsonl"), jsonl(out / "dev.jsonl")

    def docs(records):
        return {r["id"].split(":")[0] for r in records}

    assert len(docs(dev)) == 1 and len(docs(train)) == 1 and not docs(train) & docs(dev)
    assert len(dev) == 2  # both lines of the held-out document


@pytest.mark.parametrize("task, where", [("mednli", "physionet.org"), ("i2b2-2014", "n2c2")])
def test_registry_credentialed_tasks_point_to_their_data_use_agreement(task, where, tmp_path):
    (tmp_path / "raw").mkdir()
    with pytest.raises(PipelineError, match=rf"credentialed data: .*{where}.*local_dir"):
        prepare(resolve(task), tmp_path / "raw", tmp_path / "out")


def test_tar_members_with_dot_slash_prefix(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    with tarfile.open(raw / "bert_data.tar.gz", "w:gz") as tf:
        for split in ("train", "dev", "test"):
            data = (FIXTURES / "blue" / "chemprot.tsv").read_bytes()
            info = tarfile.TarInfo(f"./bert_data/ChemProt/{split}.tsv")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    entry = {
        "name": "chemprot-like",
        "display": "ChemProt",
        "type": "relation",
        "domain": "pubmed",
        "format": "blue_tsv",
        "source": {"files": {"bert_data.tar.gz": {}}},
        "metric": "micro_f1_excl_negative",
        "splits": {s: f"bert_data.tar.gz/bert_data/ChemProt/{s}.tsv" for s in ("train", "dev", "test")},
        "labels": ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"],
        "negative_label": "false",
        "expected_counts": {"train": 3, "dev": 3, "test": 3},
    }
    card = prepare(parse(TaskSpec, entry, "t"), raw, tmp_path / "out")
    assert card["splits"]["test"]["labels"] == {"CPR:4": 1, "CPR:5": 1, "false": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "raw"]


def test_dev_or_train_reading_the_test_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(DEMO)
    entry = dict(
        DEMO_SPECS["demo-re"], splits={"train": "train.tsv", "dev": "holdout:0.1:test.tsv", "test": "test.tsv"}
    )
    with pytest.raises(PipelineError, match="dev and test both read 'test.tsv'"):
        prepare(parse(TaskSpec, entry, "t"), Path("raw_source/tasks/demo-re"), tmp_path / "out")
