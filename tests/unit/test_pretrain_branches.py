"""Decay branches and per-phase masking: a branch resumes its parent's stable-phase checkpoint
exactly and runs only its decay; each phase masks at its own rate."""

from __future__ import annotations

import json
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoTokenizer

from workflow_scripts.integrity import sha256_file
from workflow_scripts.pack.index import read_index
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.pretrain.batches import BatchBuilder, prediction_slots
from workflow_scripts.pretrain.data import PackedCorpus
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.tokenizer import Specials
from workflow_scripts.typed import parse

torch.set_num_threads(1)

# a tiny RoBERTa on wsd: 2 warm-up updates, stable to step 15, then a linear decay to 0 at step 20
PARENT = dict(
    fx.TINY,
    architecture="roberta",
    max_steps=20,
    log_every=1,
    checkpoint_every=5,
    keep_checkpoints=1,
    keep_steps=[15],
    dropout=0.1,
    schedule="wsd",
    decay_ratio=0.25,
)
PEAK = PARENT["lr"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("branches")
    corpus = fx.make_corpus(root / "corpus", 200)
    return {"root": root, "corpus": corpus, "bpe": fx.make_bpe(root / "bpe", fx.documents(200))}


@pytest.fixture(scope="module")
def parent(base):
    return fx.pretrain(base, base["root"], "parent", tokenizer="bpe", **PARENT)


def _branch(base: dict, parent: Path, name: str, max_steps: int, corpus: Path | None = None, **recipe) -> Path:
    """The settings the workflow writes for a branch from step 15 of ``parent`` (on its corpus, or on
    ``corpus``): the parent's recipe, a wsd curve with no warm-up whose decay spans exactly the
    branch's own steps."""
    decay = max_steps - 15
    pretrain = {**PARENT, "max_steps": max_steps, "warmup_ratio": 0.0, "decay_ratio": decay / max_steps, **recipe}
    del pretrain["keep_steps"]
    start = {"parent": "parent", "step": 15, "phase": 0, "position": 15, "parent_phases": 1, "continues": not corpus}
    settings = base["root"] / f"{name}.yaml"
    settings.write_text(yaml.safe_dump({"model": {"name": name, "pretrain": pretrain, "branch": start}}))
    out = base["root"] / name
    data = corpus or base["corpus"]
    argv = ["--settings", str(settings), "--corpus", str(data), "--init", str(parent), "--out", str(out)]
    pretrain_cli.main(argv)
    return out


def _log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]


def test_the_parent_keeps_the_branch_step_that_keep_checkpoints_would_delete(parent):
    kept = sorted(p.name for p in (parent / "training_state").glob("step~*"))
    assert kept == ["step~00000015", "step~00000020"]  # step 5 and 10 rolled off keep_checkpoints: 1


def test_a_branch_on_the_parents_own_decay_reaches_the_parents_weights_bit_exactly(base, parent):
    branch = _branch(base, parent, "same-decay", 20)
    a, b = load_file(parent / "model.safetensors"), load_file(branch / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows, theirs = _log(branch), _log(parent)[15:]
    assert [r["step"] for r in rows] == list(range(16, 21))  # only the decay ran
    for key in ("loss", "lr", "grad_norm", "masked_fraction"):
        assert [r[key] for r in rows] == [r[key] for r in theirs]


def test_a_longer_branch_decays_from_the_stable_rate_over_its_own_steps(base, parent):
    branch = _branch(base, parent, "long-decay", 24, decay_shape="1-sqrt")
    rates = [r["lr"] for r in _log(branch)]
    assert len(rates) == 9
    assert rates == pytest.approx([PEAK * (1 - ((n - 15) / 9) ** 0.5) for n in range(15, 24)])
    record = json.loads((branch / "provenance.json").read_text())
    assert record["branch"]["parent"] == "parent" and record["branch"]["step"] == 15
    assert record["branch"]["parent_provenance_sha256"] == sha256_file(parent / "provenance.json")
    assert "continues" in record["branch"]["data"]
    AutoModelForMaskedLM.from_pretrained(branch)
    AutoTokenizer.from_pretrained(branch)


def test_a_branch_on_other_corpora_restarts_its_data_position_and_says_so(base, parent):
    other = fx.make_corpus(base["root"] / "clinical", 120, seed=5)
    same = _branch(base, parent, "same-data", 17)
    moved = _branch(base, parent, "other-data", 17, corpus=other)
    assert "restarts at position 0" in json.loads((moved / "provenance.json").read_text())["branch"]["data"]
    # the same weights, optimiser and random states from step 15; other blocks from there on
    assert [r["lr"] for r in _log(moved)] == [r["lr"] for r in _log(same)]
    assert _log(moved)[0]["loss"] != _log(same)[0]["loss"]


def test_a_branch_whose_parent_dropped_the_step_is_refused(base, parent, tmp_path):
    copy = tmp_path / "parent"
    copy.mkdir()
    for f in parent.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    (copy / "training_state").mkdir()
    (copy / "training_state" / "key.json").write_text("{}")
    with pytest.raises(Exception, match=r"no complete checkpoint of step 15 to branch from.*keep_steps"):
        _branch(base, copy, "orphan", 20)


def test_each_phase_masks_at_its_own_rate_with_slots_sized_for_it(base, tmp_path):
    phases = [{"seq_len": 32, "fraction": 0.5, "mask_prob": 0.3}, {"seq_len": 32, "fraction": 0.5, "mask_prob": 0.15}]
    out = fx.pretrain(base, tmp_path, "masks", tokenizer="bpe", max_steps=10, log_every=1, phases=phases)
    rows = _log(out)
    for phase, rate in ((0, 0.3), (1, 0.15)):
        fractions = [r["masked_fraction"] for r in rows if r["phase"] == phase]
        # specials (<s>, </s>) are never masked: the rate applies to 30 of 32 positions
        assert sum(fractions) / len(fractions) == pytest.approx(rate * 30 / 32, abs=0.03)
    # the FLOPs behind MFU count the head on each phase's own share of positions
    flops = json.loads((out / "provenance.json").read_text())["flops"]["per_phase"]
    assert [(f["seq_len"], f["mask_prob"]) for f in flops] == [(32, 0.3), (32, 0.15)]
    assert {r["phase"]: r["flops_per_token"] for r in rows} == {
        0: flops[0]["flops_per_token"],
        1: flops[1]["flops_per_token"],
    }
    assert flops[0]["flops_per_token"] > flops[1]["flops_per_token"]
    s = parse(PretrainSettings, {**fx.TINY, "max_steps": 10, "phases": phases}, "s")
    _, dirs = read_index(next((out / "packed").rglob("index.json")))
    specials = Specials.of(AutoTokenizer.from_pretrained(base["bpe"]), "t")
    build = BatchBuilder(s, [PackedCorpus(dirs, "train")] * 2, specials, 0, 8, 4)
    assert len(build(0).micro[0].positions) == prediction_slots(0.3, 4, 32, False)
    assert len(build(9).micro[0].positions) == prediction_slots(0.15, 4, 32, False)
    assert prediction_slots(0.3, 4, 32, False) > prediction_slots(0.15, 4, 32, False)
