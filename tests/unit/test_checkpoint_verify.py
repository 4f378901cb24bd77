"""Checkpoint and tokenizer directories are checked against their producer's provenance where
each consumer loads them: continued pretraining and decay branches, the distillation teacher and
student, pretraining from a vocabulary and packing (tokenizer only), the random-weight controls,
hub snapshots and pinned local folders."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
import test_finetune_run as ft
import torch
from pretrain_fixtures import make_wordpiece, sentences, tiny_bert
from transformers import BertTokenizerFast

from workflow_scripts import checkpoint_integrity as verify
from workflow_scripts import provenance
from workflow_scripts.controls.control import random_checkpoint
from workflow_scripts.download.pin_checkpoints import pin_local
from workflow_scripts.integrity import IntegrityError, sha256_file
from workflow_scripts.pretrain.checkpoint import export_model
from workflow_scripts.pretrain.model import load_pretrained
from workflow_scripts.tokenizer import load_tokenizer

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Each test starts with nothing verified, outside any Slurm allocation."""
    monkeypatch.setattr(verify, "_verified", set())
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """A tiny BERT exported and recorded as pretraining exports it (engine.py)."""
    root = tmp_path_factory.mktemp("ckpt")
    vocab = make_wordpiece(root / "vocab", sentences(200), 120)
    tokenizer = BertTokenizerFast.from_pretrained(vocab)
    out = root / "results" / "pretrain" / "m"
    written = export_model(tiny_bert(16, 1, 2, len(tokenizer)), tokenizer, out)
    provenance.record(out, step="pretrain", inputs={"tokenizer": vocab}, outputs=written)
    return out


@pytest.fixture
def ckpt(exported, tmp_path) -> Path:
    """A copy of the checkpoint elsewhere (the record's paths name the original; names inside count)."""
    copy = tmp_path / "m"
    shutil.copytree(exported, copy)
    return copy


def _change(path: Path) -> tuple[str, str]:
    """Flip one byte, keeping the time stamp (as bit rot does); return (expected, found) sha256."""
    before, st = sha256_file(path), path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return before, sha256_file(path)


def _names_both(exc: pytest.ExceptionInfo, path: Path, sums: tuple[str, str]) -> None:
    message = str(exc.value)
    assert message.startswith(f"{path}:") and f"expected sha256 {sums[0]}, found {sums[1]}" in message


def _finetune(model: Path, tmp_path: Path) -> None:
    task_dir = ft.write_task(tmp_path, "relation", sizes=(8, 4, 4))
    settings = ft.write_settings(tmp_path / "run.yaml", "relation", {"epochs": 1, "max_steps": 1, "max_length": 16})
    ft.main([*ft.cli_args(settings, model, task_dir, tmp_path / "run"), "--fold", "0"])


# each consumer as it loads a checkpoint directory
CONSUMERS = {
    "fine-tuning": _finetune,
    "continued pretraining, decay branch, distilled student": lambda d, _: load_pretrained(str(d), "--init"),
    "distillation teacher": lambda d, _: load_pretrained(str(d), "--teacher"),
    "random-weight control": lambda d, tmp: random_checkpoint(str(d), 0, tmp / "control"),
    "pretraining from a vocabulary, packing": lambda d, _: load_tokenizer(str(d), "--tokenizer"),
}
TOKENIZER_ONLY = "pretraining from a vocabulary, packing"


# a tokenizer load does not read the weights (the next test)
LOADED = [
    (consumer, changed)
    for consumer in CONSUMERS
    for changed in ("model.safetensors", "tokenizer.json", "config.json")
    if not (consumer == TOKENIZER_ONLY and changed == "model.safetensors")
]


@pytest.mark.parametrize(("consumer", "changed"), LOADED)
def test_every_consumer_stops_on_a_changed_file_naming_it_and_both_checksums(ckpt, tmp_path, consumer, changed):
    sums = _change(ckpt / changed)
    with pytest.raises(IntegrityError) as exc:
        CONSUMERS[consumer](ckpt, tmp_path)
    _names_both(exc, ckpt / changed, sums)
    assert f"snakemake --forcerun {ckpt}/provenance.json" in str(exc.value)
    assert not (tmp_path / "run").exists() and not (tmp_path / "control").exists()


def test_intact_checkpoints_load_and_a_tokenizer_load_skips_the_weights(ckpt):
    model, _ = load_pretrained(str(ckpt), "--teacher")
    assert model.config.hidden_size == 16
    _change(ckpt / "model.safetensors")  # not what packing or pretraining from a vocabulary reads
    assert len(load_tokenizer(str(ckpt), "--tokenizer")) > 10


def test_a_missing_recorded_file_and_a_missing_record_are_errors(ckpt, tmp_path, monkeypatch):
    (ckpt / "tokenizer.json").unlink()
    recorded = r"missing \(its producer recorded sha256 [0-9a-f]{64}\)"
    with pytest.raises(IntegrityError, match=rf"{ckpt}/tokenizer.json: {recorded}"):
        load_pretrained(str(ckpt), "--init")
    # a product of the workflow (under the run directory's results/) must have its record
    monkeypatch.chdir(tmp_path)
    product = Path("results/pretrain/m")
    shutil.copytree(ckpt, product)
    (product / "provenance.json").unlink()
    missing = r"results/pretrain/m/provenance.json: missing, so the checkpoint given as --init cannot"
    with pytest.raises(IntegrityError, match=missing):
        load_pretrained(str(product), "--init")


def test_a_hub_snapshot_is_checked_against_its_file_list(ckpt):
    files = [
        {"path": p.name, "sha256": sha256_file(p), "bytes": p.stat().st_size}
        for p in sorted(ckpt.iterdir())
        if p.name != provenance.FILENAME
    ]
    provenance.record(ckpt, step="download_model", inputs={}, extra={"files": files})
    sums = _change(ckpt / "tokenizer.json")
    with pytest.raises(IntegrityError) as exc:
        load_pretrained(str(ckpt), "--init")
    _names_both(exc, ckpt / "tokenizer.json", sums)


def test_a_local_folder_is_read_with_a_warning_until_pinned_then_checked(ckpt, tmp_path, monkeypatch, caplog):
    folder = tmp_path / "mine"
    shutil.copytree(ckpt, folder, ignore=shutil.ignore_patterns(provenance.FILENAME))
    run = tmp_path / "study"
    run.mkdir()
    monkeypatch.chdir(run)
    with caplog.at_level(logging.WARNING):
        load_pretrained(str(folder), "--init")
    assert f"{folder} (--init): read unverified" in caplog.text and "pin_checkpoints" in caplog.text
    config = {"models": {"mine": {"kind": "external", "checkpoint": str(folder)}}}
    assert pin_local(config, run) == {"mine": run / "results/raw/models/mine.pinned.json"}
    caplog.clear()
    with caplog.at_level(logging.INFO):
        load_pretrained(str(folder), "--init")
    assert "verified against results/raw/models/mine.pinned.json" in caplog.text
    sums = _change(folder / "config.json")
    with pytest.raises(IntegrityError) as exc:
        load_pretrained(str(folder), "--init")
    _names_both(exc, folder / "config.json", sums)
    assert "if you changed the checkpoint on purpose, record it again" in str(exc.value)


def test_a_slurm_allocation_hashes_a_file_once_and_says_so(ckpt, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    hashed = []
    real = verify.sha256_stream
    monkeypatch.setattr(verify, "sha256_stream", lambda p: hashed.append(p.name) or real(p))
    verify.verify_checkpoint(ckpt, "fine-tuned")
    assert "model.safetensors" in hashed
    n = len(hashed)
    verify._verified.clear()  # another run of the allocation: a new process
    with caplog.at_level(logging.INFO):
        verify.verify_checkpoint(ckpt, "fine-tuned")
    assert len(hashed) == n
    assert f"0 hashed, {n} unchanged since checked in Slurm job 4242" in caplog.text
    # a file written since, even with its modification time set back, is hashed again
    verify._verified.clear()
    sums = _change(ckpt / "model.safetensors")
    with pytest.raises(IntegrityError) as exc:
        verify.verify_checkpoint(ckpt, "fine-tuned")
    _names_both(exc, ckpt / "model.safetensors", sums)
