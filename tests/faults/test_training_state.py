"""The training state's two remaining gaps: its lock is held until the final export is written,
and a checkpoint written before checkpoints recorded checksums is checked against the model it
resumes into, or refused saying how to go on."""

from __future__ import annotations

import fcntl
import logging

import pretrain_fixtures as fx
import pytest
import torch

from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain import checkpoint as ckpt

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return fx.corpus_and_wordpiece(tmp_path_factory.mktemp("state"))


def _free(lock_file) -> bool:
    """Whether a second trainer could take the lock now."""
    with open(lock_file, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


def test_the_lock_is_held_while_the_model_is_exported(base, tmp_path, monkeypatch):
    seen = []
    export = ckpt.export_model

    def watched(model, tokenizer, out):
        seen.append(_free(out / "training_state" / ckpt.LOCK))
        return export(model, tokenizer, out)

    monkeypatch.setattr(ckpt, "export_model", watched)
    out = fx.pretrain(base, tmp_path, max_steps=2, checkpoint_every=2)
    assert seen == [False]
    assert (out / "model.safetensors").is_file() and _free(out / "training_state" / ckpt.LOCK)


def _unsealed(base, tmp_path, name: str):
    """A run stopped at step 2 whose checkpoint lost its checksums, as older versions wrote them."""
    out = fx.pretrain(base, tmp_path, name, stop_after=2, max_steps=4, checkpoint_every=2)
    step = out / "training_state" / "step~00000002"
    (step / "checksums.json").unlink()
    for side in step.glob("*.sha256"):
        side.unlink()
    return out, step


def test_an_unsealed_checkpoint_is_checked_against_the_model_and_resumed(base, tmp_path, caplog):
    out, step = _unsealed(base, tmp_path, "old")
    # with nothing to check it against, it is refused
    with pytest.raises(PipelineError, match=rf"{step}: written before checkpoints recorded checksums .*delete"):
        ckpt.load_latest(out / "training_state", "any", 0)
    with caplog.at_level(logging.WARNING):
        fx.pretrain(base, tmp_path, "old", max_steps=4, checkpoint_every=2)
    assert f"{step}: written before checkpoints recorded checksums; checked against the model" in caplog.text
    assert (out / "model.safetensors").is_file()


def test_an_unsealed_checkpoint_that_does_not_fit_is_refused_saying_what_to_do(base, tmp_path):
    out, step = _unsealed(base, tmp_path, "bad")
    payload = torch.load(step / "state.pt", weights_only=False)
    name = next(k for k, v in payload["trainable"].items() if v.is_floating_point())
    payload["trainable"][name].view(-1)[0] = float("nan")
    torch.save(payload, step / "state.pt")
    with pytest.raises(PipelineError) as err:
        fx.pretrain(base, tmp_path, "bad", max_steps=4, checkpoint_every=2)
    assert str(err.value).startswith(f"{step}: tensor {name} holds values that are not finite; name an earlier")
    assert f"or delete {out / 'training_state'} to start again from scratch" in str(err.value)
    assert not (out / "model.safetensors").exists()
