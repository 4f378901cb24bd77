"""The audit traces a table cell through real provenance records and detects tampering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_scripts import provenance
from workflow_scripts.errors import PipelineError
from workflow_scripts.provenance import audit as audit_mod
from workflow_scripts.report import tables

RAW = "results/raw/pubmed/pubmed24n0001.xml.gz"
SHARD = "results/corpus/pubmed/shard~0.parquet"


def write(path: str, data: bytes | str) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def build_chain(root: Path, monkeypatch) -> None:
    """raw file -> corpus -> vocabulary -> checkpoint -> runs -> tables, recorded as the steps do."""
    monkeypatch.chdir(root)
    write(RAW, b"\x1f\x8b raw medline bytes")
    provenance.record("results/raw/pubmed", step="download", inputs={}, outputs=[RAW])
    write(SHARD, b"PAR1 cleaned documents")
    provenance.record("results/corpus/pubmed", step="corpus", inputs={"raw": [RAW]}, outputs=[SHARD])
    write("results/vocab/pm/vocab.txt", "[PAD]\n[UNK]\naspirin\n")
    provenance.record(
        "results/vocab/pm",
        step="vocab",
        inputs={"corpus": "results/corpus/pubmed"},
        outputs=["results/vocab/pm/vocab.txt"],
    )
    write("results/pretrain/pm/model.safetensors", b"weights")
    provenance.record(
        "results/pretrain/pm",
        step="pretrain",
        seed=0,
        inputs={"corpus": "results/corpus/pubmed", "tokenizer": "results/vocab/pm"},
        outputs=["results/pretrain/pm/model.safetensors"],
    )
    write("results/tasks/bc5chem/test.jsonl", '{"tokens": ["aspirin"], "tags": ["B-Chemical"]}\n')
    provenance.record("results/tasks/bc5chem/test.jsonl", step="tasks", inputs={})
    runs = []
    for seed in (1, 2, 3):
        run_dir = f"results/finetune/pm/bc5chem/fold~0/seed~{seed}"
        metrics = f"{run_dir}/metrics.json"
        write(
            metrics,
            json.dumps(
                {
                    "model": "pm",
                    "task": "bc5chem",
                    "fold": 0,
                    "seed": seed,
                    "metric": "entity_f1",
                    "dev": {"score": 0.8},
                    "test": {"score": 0.9 + seed / 100},
                }
            ),
        )
        provenance.record(
            run_dir,
            step="finetune",
            seed=seed,
            outputs=[metrics],
            inputs={"model": "results/pretrain/pm", "test": "results/tasks/bc5chem/test.jsonl"},
        )
        runs.append({"model": "pm", "task": "bc5chem", "fold": 0, "seed": seed, "metrics": metrics})
    settings = {
        "models": {"pm": {"display": "ours-PM"}},
        "tasks": {
            "bc5chem": {
                "display": "BC5CDR-C.",
                "type": "ner",
                "metric": "entity_f1",
                "benchmarks": ["lewis"],
                "seeds": [1, 2, 3],
            }
        },
        "runs": runs,
        "aggregation": {"bootstrap_samples": 50},
    }
    write("results/configs/report.yaml", yaml.safe_dump(settings))
    tables.main(["--settings", "results/configs/report.yaml", "--out", "results/tables"])


def test_cell_is_traced_to_raw_files_with_checksums(tmp_path, monkeypatch):
    build_chain(tmp_path, monkeypatch)
    monkeypatch.chdir("/")
    result = audit_mod.audit(tmp_path / "results/tables/medians.csv", "ours-PM", "BC5CDR-C.")
    assert Path(result.root) == tmp_path.resolve()
    assert sorted(r["seed"] for r in result.runs) == [1, 2, 3]
    steps = {r.category: r.step for r in result.records}
    assert steps == {
        "table": "report.tables",
        "run": "finetune",
        "checkpoint": "pretrain",
        "vocabulary": "vocab",
        "corpus": "corpus",
        "raw file": "download",
        "task data": "tasks",
    }
    files = {f.path: f for f in result.files}
    for path in (
        RAW,
        SHARD,
        "results/pretrain/pm/model.safetensors",
        "results/vocab/pm/vocab.txt",
        "results/finetune/pm/bc5chem/fold~0/seed~2/metrics.json",
        "results/tables/medians.csv",
    ):
        assert files[path].status == "ok", path
    assert files[RAW].recorded == provenance.sha256_file(tmp_path / RAW)
    assert not result.changed and not result.missing
    text = audit_mod.format_text(result)
    assert "fold 0  seed 3  score 0.9300" in text
    assert "Package versions: " in text and "numpy" in text
    assert "0 changed, 0 missing" in text


def test_tampered_and_deleted_inputs_are_reported(tmp_path, monkeypatch, capsys):
    build_chain(tmp_path, monkeypatch)
    (tmp_path / RAW).write_bytes(b"edited by hand")
    (tmp_path / SHARD).unlink()
    assert audit_mod.main(["results/tables", "pm", "bc5chem", "--json"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    status = {f["path"]: f["status"] for f in report["files"]}
    assert status[RAW] == "changed" and status[SHARD] == "missing"
    assert report["summary"]["changed"] == 1 and report["summary"]["missing"] == 1
    assert f"changed: {RAW}" in err and f"missing: {SHARD}" in err


def test_rewritten_upstream_record_is_reported_as_changed(tmp_path, monkeypatch):
    build_chain(tmp_path, monkeypatch)
    # retraining rewrites the checkpoint's record after the runs consumed it
    write("results/pretrain/pm/model.safetensors", b"other weights")
    provenance.record(
        "results/pretrain/pm",
        step="pretrain",
        seed=1,
        inputs={"corpus": "results/corpus/pubmed"},
        outputs=["results/pretrain/pm/model.safetensors"],
    )
    result = audit_mod.audit("results/tables", "pm", "bc5chem")
    changed = {f.path for f in result.changed}
    assert changed == {"results/pretrain/pm/provenance.json"}


def test_group_row_traces_runs_of_its_member_tasks(tmp_path, monkeypatch):
    build_chain(tmp_path, monkeypatch)
    result = audit_mod.audit("results/tables/groups.csv", "pm", "Seq. Lab.")
    assert len(result.runs) == 3 and not result.changed


def test_unknown_cell_names_the_choices(tmp_path, monkeypatch):
    build_chain(tmp_path, monkeypatch)
    with pytest.raises(PipelineError, match=r"no cell for model 'pm' and task 'gad' \(models: pm; tasks: bc5chem\)"):
        audit_mod.audit("results/tables", "pm", "gad")
    with pytest.raises(PipelineError, match="no provenance record"):
        (tmp_path / "results/tables/provenance.json").unlink()
        audit_mod.audit("results/tables", "pm", "bc5chem")


def test_command_line_exit_status(tmp_path, monkeypatch):
    build_chain(tmp_path, monkeypatch)
    cmd = [sys.executable, "-m", "workflow_scripts.provenance", "results/tables/medians.csv", "pm", "bc5chem"]
    ok = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "raw file    results/raw/pubmed/pubmed24n0001.xml.gz" in ok.stdout
    (tmp_path / "results/vocab/pm/vocab.txt").write_text("[PAD]\n")
    tampered = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert tampered.returncode == 1
    assert "changed: results/vocab/pm/vocab.txt" in tampered.stderr
    bad = subprocess.run(cmd[:-1] + ["nope"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: results/tables/medians.csv: no cell")
