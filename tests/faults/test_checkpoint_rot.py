"""Bit rot in a pretrained checkpoint stops the fine-tuning run that would read it.

The sign bits of 1,024 weights in a pretraining run's model.safetensors are flipped and its
modification time set back, so Snakemake sees nothing; the fine-tuning run forced on it must
fail naming the file, the sha256 its producer recorded and the one found, and how to rebuild it,
and write no metrics."""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import test_finetune_run as ft

from workflow_scripts.integrity import sha256_file


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    base = fx.corpus_and_wordpiece(tmp_path_factory.mktemp("rot"))
    return fx.pretrain(base, tmp_path_factory.mktemp("pretrained"), max_steps=2, checkpoint_every=2)


def flip_sign_bits(path: Path, count: int = 1024) -> None:
    """Negate the first ``count`` float32 weights of a safetensors file, keeping its times."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]  # after the length-prefixed JSON header
    for i in range(count):
        data[start + 4 * i + 3] ^= 0x80  # little-endian: the sign bit is in the fourth byte
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def finetune_args(model: Path, tmp_path: Path, name: str) -> list[str]:
    task_dir = ft.write_task(tmp_path, "relation", sizes=(16, 8, 8))
    settings = ft.write_settings(tmp_path / f"{name}.yaml", "relation", {"epochs": 1, "max_steps": 1, "max_length": 32})
    return [*ft.cli_args(settings, model, task_dir, tmp_path / name), "--fold", "0"]


def test_a_flipped_weight_stops_fine_tuning_naming_the_file_and_both_checksums(pretrained, tmp_path, caplog):
    model = tmp_path / "model"
    shutil.copytree(pretrained, model, ignore=shutil.ignore_patterns("training_state"))
    weights = model / "model.safetensors"
    outputs = json.loads((model / "provenance.json").read_text())["outputs"]
    recorded = {Path(o["path"]).name: o["sha256"] for o in outputs}
    assert sha256_file(weights) == recorded["model.safetensors"]
    with caplog.at_level(logging.INFO):
        ft.main(finetune_args(model, tmp_path, "before"))
    assert f"{model} (--model): verified against {model}/provenance.json" in caplog.text
    assert (tmp_path / "before" / "metrics.json").is_file()

    mtime = weights.stat().st_mtime_ns
    flip_sign_bits(weights)
    assert weights.stat().st_mtime_ns == mtime
    found = sha256_file(weights)
    cmd = [sys.executable, "-m", "workflow_scripts.finetune.finetune", *finetune_args(model, tmp_path, "after")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if str(weights) in line]
    assert lines, run.stderr[-2000:]
    assert f"expected sha256 {recorded['model.safetensors']}, found {found}" in lines[-1]
    assert f"snakemake --forcerun {model}/provenance.json" in lines[-1]
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "after" / "metrics.json").exists()
