"""Corrupted artifacts are caught with their name, never used silently: a checkpoint's
tokenizer, a checkpoint without one, an edited feature cache, a damaged training
checkpoint (fallback to the previous one), and two trainers on one training state."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch

from workflow_scripts import integrity
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import cache
from workflow_scripts.finetune.run_data import load_tokenizer
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.provenance.audit import Tracer

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return fx.corpus_and_wordpiece(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def trained(base, tmp_path_factory):
    return fx.pretrain(base, tmp_path_factory.mktemp("trained"), max_steps=6, checkpoint_every=3)


def _flip(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if at is None else at
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def _changed(record: Path) -> list[str]:
    tracer = Tracer(record.parent)
    tracer.record(str(record))
    return [Path(f.path).name for f in tracer.files.values() if f.status != "ok"]


def test_a_flipped_byte_in_a_checkpoints_tokenizer_fails_the_audit(trained, tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(trained, copy, ignore=shutil.ignore_patterns("training_state", "data"))
    record = json.loads((copy / "provenance.json").read_text())
    recorded = {Path(o["path"]).name for o in record["outputs"]}
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"} <= recorded
    # the record names the original directory; point it at the copy
    text = (copy / "provenance.json").read_text().replace(f"{trained}/", f"{copy}/")
    (copy / "provenance.json").write_text(text)
    assert _changed(copy / "provenance.json") == []
    tok = copy / "tokenizer.json"
    content = tok.read_text()
    tok.write_text(content.replace('"[MASK]"', '"[MASJ]"', 1))
    assert _changed(copy / "provenance.json") == ["tokenizer.json"]


def test_a_checkpoint_without_tokenizer_stops_naming_the_directory(trained, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("model.safetensors", "config.json"):
        shutil.copy(trained / f, bare / f)
    with pytest.raises(PipelineError, match=rf"--model {bare}: the checkpoint directory has no tokenizer"):
        load_tokenizer(str(bare))
    assert len(load_tokenizer(str(trained))) > 10


def test_an_edited_feature_cache_is_an_error_naming_it(tmp_path):
    built = {"features": {"train": [{"input_ids": [2, 17, 3], "label": 1}]}, "stats": {"truncated": 0}}
    calls = []

    def build():
        calls.append(1)
        return built

    assert cache.cached(tmp_path, "k", build) == built
    assert cache.cached(tmp_path, "k", build) == built and len(calls) == 1  # reused, verified
    entry = tmp_path / "k.json"
    assert not list(tmp_path.glob("*.pkl"))
    entry.write_text(entry.read_text().replace('"label":1', '"label":0'))
    with pytest.raises(PipelineError, match=rf"feature cache {entry}: checksum .* differs.*delete {entry}"):
        cache.cached(tmp_path, "k", build)


def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(base, tmp_path, caplog):
    common = dict(max_steps=8, checkpoint_every=2, keep_checkpoints=2, export_checkpoints=False, log_every=1)
    out = fx.pretrain(base, tmp_path, "d", stop_after=4, **common)
    state = out / "training_state"
    assert (state / "latest").read_text().strip() == "step~00000004"
    _flip(state / "step~00000004" / "state.pt")
    with caplog.at_level(logging.WARNING):
        fx.pretrain(base, tmp_path, "d", stop_after=6, **common)
    warning = next(r.getMessage() for r in caplog.records if "is damaged" in r.getMessage())
    assert str(state / "step~00000004") in warning and str(state / "step~00000002") in warning
    steps = [json.loads(line)["step"] for line in (state / "train_log.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6]  # the log of steps 3 and 4 was cut back to step 2 and redone
    # with no intact checkpoint left, it is an error naming the file
    _flip(state / "step~00000006" / "state.pt")
    _flip(state / "step~00000004" / "state.pt")
    with pytest.raises(PipelineError, match=r"step~00000006/state\.pt: checksum"):
        fx.pretrain(base, tmp_path, "d", **common)


def test_a_second_trainer_on_the_same_state_refuses_to_start(base, tmp_path):
    settings = fx.write_settings(tmp_path / "s.yaml", "lock", max_steps=100000, checkpoint_every=100000)
    out = tmp_path / "lock"
    cmd = [
        sys.executable,
        "-m",
        "workflow_scripts.pretrain.pretrain",
        *fx.flags(settings=settings, corpus=base["corpus"], tokenizer=base["wordpiece"], out=out),
    ]
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lock = out / "training_state" / "lock"
        deadline = time.time() + 120
        while time.time() < deadline and not (lock.is_file() and lock.read_text().strip() == str(first.pid)):
            time.sleep(0.05)
        with pytest.raises(PipelineError, match=rf"another trainer \(pid {first.pid}\) is using this training state"):
            pretrain_cli.main(cmd[3:])
        assert first.poll() is None  # the first one trains on
    finally:
        first.terminate()
        first.communicate(timeout=60)


def test_integrity_layer_names_missing_and_unsealed_files(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"abc")
    with pytest.raises(integrity.IntegrityError, match="no recorded checksum"):
        integrity.verify(f)
    integrity.seal(f)
    integrity.verify(f)
    f.unlink()
    with pytest.raises(integrity.IntegrityError, match=r"a\.bin: missing"):
        integrity.verify(f)
