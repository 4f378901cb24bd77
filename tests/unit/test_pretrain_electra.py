"""ELECTRA pretraining: generator + discriminator through the shared loop, export, resume, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pretrain_fixtures as fx
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForPreTraining, AutoModelForTokenClassification

from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain.electra import generator_shape, sample_tokens
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse

torch.set_num_threads(1)


ELECTRA = {"architecture": "electra", "objective": "electra", "electra": {"generator_size": 0.5}}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("electra")
    texts = fx.documents(300)
    return {"corpus": fx.make_corpus(root / "corpus", 300), "wordpiece": fx.make_wordpiece(root / "wordpiece", texts)}


def _pretrain(base, tmp_path, name="e", init=None, stop_after=None, **overrides) -> Path:
    return fx.pretrain(base, tmp_path, name, init=init, stop_after=stop_after, **{**ELECTRA, **overrides})


@pytest.fixture(scope="module")
def trained(base, tmp_path_factory):
    return _pretrain(base, tmp_path_factory.mktemp("trained"), max_steps=80, checkpoint_every=40)


def _log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]


# --- settings and pieces --------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"architecture": "roberta", "objective": "electra"}, "objective"),
        ({"architecture": "electra"}, "objective"),
        ({**ELECTRA, "electra": {"generator_size": 0}}, r"electra\.generator_size"),
        ({**ELECTRA, "electra": {"discriminator_weight": -1}}, r"electra\.discriminator_weight"),
        ({**ELECTRA, "electra": {"sampling": "greedy"}}, r"electra\.sampling"),
    ],
)
def test_invalid_combinations_name_the_key(bad, key):
    with pytest.raises(PipelineError, match=rf"model\.pretrain\.{key}"):
        parse(PretrainSettings, bad, "model.pretrain")


def test_defaults_follow_electra():
    s = parse(PretrainSettings, {"architecture": "electra", "objective": "electra"}, "p")
    assert (s.electra.discriminator_weight, s.electra.share_embeddings, s.mask_prob) == (50.0, True, 0.15)
    assert math.isclose(s.electra.generator_size, 1 / 3)
    assert parse(PretrainSettings, {}, "p").objective == "mlm"


def test_generator_shape_keeps_the_head_width():
    assert generator_shape(768, 12, 3072, 1 / 3) == (256, 4, 1024)  # ELECTRA-base's generator
    assert generator_shape(1024, 16, 4096, 0.25) == (256, 4, 1024)  # ELECTRA-large's generator
    assert generator_shape(64, 4, 256, 0.1) == (16, 1, 64)  # never fewer than one head


@pytest.mark.parametrize("method", ["gumbel", "multinomial"])
def test_sampling_follows_the_softmax_without_gradient(method):
    probs = torch.tensor([0.7, 0.2, 0.1, 0.0])
    logits = torch.log(probs).expand(20000, 4).clone().requires_grad_(True)
    draws = sample_tokens(logits, method, torch.Generator().manual_seed(0))
    assert not draws.requires_grad
    freq = torch.bincount(draws, minlength=4).float() / len(draws)
    assert torch.allclose(freq, probs, atol=0.015)
    again = sample_tokens(logits, method, torch.Generator().manual_seed(0))
    assert torch.equal(draws, again)


# --- training -------------------------------------------------------------------------


def test_losses_fall_and_the_discriminator_reloads(trained):
    rows = _log(trained)
    assert rows[-1]["step"] == 80
    first, last = rows[0], rows[-3:]
    for key in ("loss", "loss_generator", "loss_discriminator"):
        assert np.mean([r[key] for r in last]) < first[key], key
    assert all(0 <= r["rtd_accuracy"] <= 1 and r["tokens_per_s"] > 0 for r in rows)
    for r in rows:
        assert math.isclose(r["loss"], r["loss_generator"] + 50.0 * r["loss_discriminator"], rel_tol=1e-4)
    assert np.mean([r["loss_discriminator"] for r in last]) < math.log(2) - 0.2  # below an uninformed guess
    assert (
        0.08 < np.mean([r["replaced_fraction"] for r in rows]) < 0.15
    )  # the 15% selected, less what the generator gets right

    disc = AutoModelForPreTraining.from_pretrained(trained)
    assert type(disc).__name__ == "ElectraForPreTraining" and disc.config.hidden_size == 64
    assert AutoModel.from_pretrained(trained).config.model_type == "electra"
    assert AutoModelForTokenClassification.from_pretrained(trained, num_labels=3).config.num_labels == 3
    gen = AutoModelForMaskedLM.from_pretrained(trained / "generator")
    assert gen.config.hidden_size == 32 and gen.config.embedding_size == 64
    shared = "electra.embeddings.word_embeddings.weight"
    assert torch.equal(
        load_file(trained / "model.safetensors")[shared], load_file(trained / "generator" / "model.safetensors")[shared]
    )

    result = json.loads((trained / "eval.json").read_text())
    assert result["heldout_loss"] < math.log(disc.config.vocab_size) - 1.0  # the generator learnt the text
    assert result["heldout_rtd_accuracy"] > 0.5
    prov = json.loads((trained / "provenance.json").read_text())
    assert {o["path"] for o in prov["outputs"]} >= {
        str(trained / "model.safetensors"),
        str(trained / "generator" / "model.safetensors"),
    }


def test_stopped_run_resumes_to_the_same_weights(base, tmp_path):
    common = dict(max_steps=16, checkpoint_every=100)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    full = _pretrain(base, tmp_path / "a", "full", **common)
    part = _pretrain(base, tmp_path / "b", "part", stop_after=7, **common)
    assert not (part / "model.safetensors").exists()
    _pretrain(base, tmp_path / "b", "part", **common)
    for sub in (".", "generator"):
        a, b = load_file(full / sub / "model.safetensors"), load_file(part / sub / "model.safetensors")
        assert all(torch.equal(a[k], b[k]) for k in a), sub

    # log windows after the resumption see the same steps, so the same losses
    def after(out):
        return [(r["step"], r["loss"], r["rtd_accuracy"]) for r in _log(out) if r["step"] > 10]

    assert after(part) == after(full)


def test_continual_electra_keeps_generator_and_embeddings_shared(trained, base, tmp_path):
    out = _pretrain(base, tmp_path, "cont", init=trained, max_steps=6, size="base")
    disc = AutoModelForPreTraining.from_pretrained(out)
    assert disc.config.hidden_size == 64  # the init's shape, not the settings'
    gen = AutoModelForMaskedLM.from_pretrained(out / "generator")
    assert torch.equal(gen.electra.embeddings.word_embeddings.weight, disc.electra.embeddings.word_embeddings.weight)


def test_checkpoint_and_objective_mismatches_are_refused(trained, base, tmp_path):
    with pytest.raises(PipelineError, match="generator/ subfolder"):
        _pretrain(base, tmp_path, "nogen", init=trained / "training_state" / "step~00000040" / "model", max_steps=4)
    with pytest.raises(PipelineError, match="objective: electra"):
        _pretrain(base, tmp_path, "asmlm", init=trained, max_steps=4, architecture="bert", objective="mlm")
