"""Packed shards are verified where training reads them: a changed byte stops the job naming the
shard and how to rebuild it; each file is read for this once per job; shards packed before
checksums were recorded are checked against their provenance, or refused with what to do."""

from __future__ import annotations

import json

import numpy as np
import pretrain_fixtures as fx
import pytest
import torch

from workflow_scripts.integrity import IntegrityError
from workflow_scripts.pack import verify
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.pretrain.data import PackedCorpus

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    base = fx.corpus_and_wordpiece(tmp_path_factory.mktemp("packed"), shards=2)
    return {**base, "index": fx.pack(base["corpus"], base["wordpiece"], base["root"] / "packed")}


def _train(packed, out, max_steps=4):
    settings = fx.write_settings(out.parent / f"{out.name}.yaml", max_steps=max_steps)
    argv = ["--settings", str(settings), "--packed", str(packed["index"]), "--tokenizer", str(packed["wordpiece"])]
    pretrain_cli.main([*argv, "--out", str(out)])


def _flip_low_bits(path, count: int) -> None:
    """Flip the low bit of ``count`` token ids spread over the file, as a failing disk or copy might."""
    ids = np.fromfile(path, dtype=np.uint16)
    at = np.linspace(0, len(ids) - 1, count).astype(np.int64)
    ids[at] ^= 1
    ids.tofile(path)


@pytest.fixture
def fresh_job(monkeypatch):
    """A new training job: nothing verified yet in this process."""
    monkeypatch.setattr(verify, "_verified", set())


def test_flipped_token_ids_stop_training_naming_the_shard_and_the_rebuild(packed, tmp_path, fresh_job):
    shard = packed["index"].parent / "shard~1"
    tokens = shard / "train.tokens.bin"
    original = tokens.read_bytes()
    _flip_low_bits(tokens, 248)
    try:
        with pytest.raises(IntegrityError) as err:
            _train(packed, tmp_path / "m")
    finally:
        tokens.write_bytes(original)
    message = str(err.value)
    assert message.startswith(f"{tokens}: changed since it was packed")
    assert f"python -m workflow_scripts.pack.pack --shard {packed['root']}/corpus/shard~1.parquet" in message
    assert f"--out {shard}" in message and "\n" not in message
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_each_block_file_is_read_for_its_checksum_once_per_job(packed, monkeypatch, fresh_job):
    reads = []
    real = verify.sha256_stream
    monkeypatch.setattr(verify, "sha256_stream", lambda path: reads.append(path.name) or real(path))
    dirs = sorted(packed["index"].parent.glob("shard~*"))
    for _ in range(3):  # phases and the held-out evaluation open the same shards again
        PackedCorpus(dirs, "train")
        PackedCorpus(dirs, "heldout")
    files = [f"{s}.{k}.bin" for s in ("train", "heldout") for k in ("tokens", "flags")]
    assert sorted(reads) == sorted(files * len(dirs))


def test_a_shard_packed_before_checksums_is_checked_against_its_provenance(packed, tmp_path, fresh_job):
    shard = packed["index"].parent / "shard~0"
    meta_file = shard / "meta.json"
    meta = json.loads(meta_file.read_text())
    older = {k: v for k, v in meta.items() if k != "sha256"}
    provenance = (shard / "provenance.json").read_bytes()
    try:
        meta_file.write_text(json.dumps(older))
        verify.verify_blocks(shard, "train")  # the pack step's provenance holds the same sums
        verify._verified.clear()
        (shard / "provenance.json").unlink()
        with pytest.raises(
            IntegrityError, match=rf"{shard}/train.tokens.bin: no checksum was recorded .*delete {shard}"
        ):
            verify.verify_blocks(shard, "train")
    finally:
        meta_file.write_text(json.dumps(meta, indent=2) + "\n")
        (shard / "provenance.json").write_bytes(provenance)
