"""Pretraining engine: data packing, masking, the training loop, checkpoints and the CLI."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pretrain_fixtures as fx
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoTokenizer

from workflow_scripts.errors import PipelineError
from workflow_scripts.pack import format as packfmt
from workflow_scripts.pack.encode import Encoder
from workflow_scripts.pretrain import data as pdata
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.pretrain.masking import apply_mask, draw, step_generator
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return fx.corpus_and_tokenizers(tmp_path_factory.mktemp("pretrain"))


_pretrain = fx.pretrain


@pytest.fixture(scope="module")
def trained(base, tmp_path_factory):
    """One from-scratch run shared by the reload, continual and error tests."""
    return _pretrain(base, tmp_path_factory.mktemp("trained"), max_steps=80, checkpoint_every=40)


def _log_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _log(out: Path) -> list[dict]:
    return _log_rows(out / "train_log.jsonl")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- settings -------------------------------------------------------------------------


def test_settings_defaults_follow_the_papers():
    s = parse(PretrainSettings, {}, "model.pretrain")
    assert (s.betas, s.eps, s.weight_decay, s.mask_prob) == ((0.9, 0.98), 1e-6, 0.01, 0.15)
    assert parse(PretrainSettings, {"size": "large"}, "p").peak_lr() == 4e-4
    assert parse(PretrainSettings, {"size": "tiny", "hidden_size": 32}, "p").shape() == (32, 2, 4, 128)


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"phases": [{"seq_len": 128, "fraction": 0.9}, {"seq_len": 512, "fraction": 0.2}]}, "phases"),
        ({"size": "tiny", "num_heads": 5}, "num_heads"),
        ({"mask_prob": 1.5}, "mask_prob"),
        ({"micro_batch_size": 64, "batch_size": 32}, "micro_batch_size"),
        ({"betas": [0.9]}, "betas"),
    ],
)
def test_settings_validation_names_the_key(bad, key):
    with pytest.raises(PipelineError, match=rf"model\.pretrain\.{key}"):
        parse(PretrainSettings, bad, "model.pretrain")


def test_two_phase_schedule_splits_steps():
    s = parse(
        PretrainSettings,
        {"max_steps": 1001, "phases": [{"seq_len": 128, "fraction": 0.9}, {"seq_len": 512, "fraction": 0.1}]},
        "p",
    )
    assert s.phase_steps() == [901, 100]


# --- data -----------------------------------------------------------------------------


def test_heldout_split_is_by_document_and_stable():
    ids = [f"doc{i}" for i in range(4000)]
    held = [i for i in ids if packfmt.is_heldout(i, 0.1)]
    assert 300 < len(held) < 500
    assert held == [i for i in ids if packfmt.is_heldout(i, 0.1)]


def test_epochs_wrap_with_a_fresh_order():
    order = pdata.BlockOrder(5, seed=1, phase=0)
    idx = order.indices(0, 15)
    for epoch in range(3):
        assert sorted(idx[epoch * 5 : (epoch + 1) * 5]) == [0, 1, 2, 3, 4]
    assert list(idx[:5]) != list(idx[5:10]) or list(idx[5:10]) != list(idx[10:15])
    assert list(order.indices(7, 4)) == list(idx[7:11])


# --- masking --------------------------------------------------------------------------


def test_masking_80_10_10_statistics():
    B, L, V, mask_id = 64, 512, 1000, 3
    ids = torch.randint(10, V, (B, L))
    flags = torch.ones(B, L, dtype=torch.uint8)
    flags[:, 0] = flags[:, -1] = packfmt.SPECIAL
    draws = draw(step_generator(0, 0, 0), B, L, V)
    masked, selected = apply_mask(ids, flags, draws, mask_prob=0.15, mask_id=mask_id)
    n = selected.sum().item()
    assert abs(n / (B * (L - 2)) - 0.15) < 0.01
    assert not selected[:, 0].any() and not selected[:, -1].any()
    as_mask = (masked[selected] == mask_id).float().mean().item()
    unchanged = (masked[selected] == ids[selected]).float().mean().item()
    assert abs(as_mask - 0.8) < 0.02
    assert abs(unchanged - 0.1) < 0.015  # kept; a random replacement rarely hits the same id
    assert abs(1 - as_mask - unchanged - 0.1) < 0.015
    assert torch.equal(masked[~selected], ids[~selected])
    again, _ = apply_mask(ids, flags, draw(step_generator(0, 0, 0), B, L, V), mask_prob=0.15, mask_id=mask_id)
    other, _ = apply_mask(ids, flags, draw(step_generator(0, 0, 1), B, L, V), mask_prob=0.15, mask_id=mask_id)
    assert torch.equal(masked, again) and not torch.equal(masked, other)  # dynamic: new mask each step


@pytest.mark.parametrize("family", ["wordpiece", "bpe", "sentencepiece"])
def test_whole_word_masking_takes_all_pieces_of_a_word(base, family):
    tok = AutoTokenizer.from_pretrained(base[family])
    enc = Encoder(tok).encode(["Cardiomyopathy and hepatotoxicity with nephrotoxicity in cardiomyocytes"] * 200)
    flags = torch.from_numpy(enc.flags.reshape(200, -1))
    ids = torch.from_numpy(enc.ids.reshape(200, -1))
    draws = draw(step_generator(3, 0, 0), *ids.shape, len(tok))
    _, selected = apply_mask(ids, flags, draws, mask_prob=0.3, mask_id=tok.mask_token_id, whole_word=True)
    word = torch.cumsum(flags.long(), dim=1)
    for row in range(200):
        for w in word[row].unique():
            in_word = selected[row][word[row] == w]
            assert in_word.all() or not in_word.any()
    assert 0.2 < selected.float().mean() < 0.4
    _, tokenwise = apply_mask(ids, flags, draws, mask_prob=0.3, mask_id=tok.mask_token_id, whole_word=False)
    split = sum(
        0 < tokenwise[r][word[r] == w].sum() < (word[r] == w).sum() for r in range(200) for w in word[r].unique()
    )
    assert split > 0  # without whole-word masking words do get split


# --- training -------------------------------------------------------------------------


def test_loss_falls_and_checkpoint_reloads(trained, base):
    rows = _log(trained)
    assert rows[-1]["step"] == 80
    assert np.mean([r["loss"] for r in rows[-3:]]) < rows[0]["loss"] - 0.8
    assert all(r["tokens_per_s"] > 0 and r["memory_mb"] > 0 for r in rows)
    # curve linear, peak 2e-3, 8 warm-up updates of 80; a row logs the lr its last update ran at
    lrs = {r["step"]: r["lr"] for r in rows}
    assert lrs[5] == pytest.approx(2e-3 * 4 / 8) and lrs[10] == pytest.approx(2e-3 * 71 / 72)
    assert lrs[80] == pytest.approx(2e-3 / 72)
    model = AutoModelForMaskedLM.from_pretrained(trained)
    tok = AutoTokenizer.from_pretrained(trained)
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2
    assert len(tok) == model.config.vocab_size
    result = json.loads((trained / "eval.json").read_text())
    assert result["heldout_masked_tokens"] > 100
    assert result["heldout_loss"] < math.log(len(tok)) - 1.0  # far better than a uniform guess
    prov = json.loads((trained / "provenance.json").read_text())
    assert prov["step"] == "pretrain" and prov["seed"] == 7
    assert {o["path"].rsplit("/", 1)[1] for o in prov["outputs"]} >= {"model.safetensors", "config.json"}
    intermediate = trained / "training_state" / "step~00000040" / "model"
    assert AutoModelForMaskedLM.from_pretrained(intermediate).config.vocab_size == len(tok)  # usable as a model


def test_rerun_after_completion_retrains_nothing(trained, base, tmp_path):
    before = load_file(trained / "model.safetensors")
    settings = trained.parent / "m.yaml"
    pretrain_cli.main(fx.flags(settings=settings, corpus=base["corpus"], tokenizer=base["wordpiece"], out=trained))
    after = load_file(trained / "model.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert (trained / "training_state" / "latest").read_text().strip() == "step~00000080"
    assert [r["step"] for r in _log(trained)][-1] == 80


def test_stopped_run_resumes_to_the_same_weights(base, tmp_path):
    common = dict(max_steps=24, checkpoint_every=100, dropout=0.1)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    full = _pretrain(base, tmp_path / "a", "full", **common)
    part = _pretrain(base, tmp_path / "b", "part", stop_after=9, **common)
    assert not (part / "model.safetensors").exists()
    assert (part / "training_state" / "latest").read_text().strip() == "step~00000009"
    _pretrain(base, tmp_path / "b", "part", **common)
    a, b = load_file(full / "model.safetensors"), load_file(part / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [r["step"] for r in _log(part)] == [r["step"] for r in _log(full)]


def test_a_wsd_run_holds_its_peak_then_decays_in_the_last_fifth(base, tmp_path):
    out = _pretrain(base, tmp_path, "wsd", max_steps=20, log_every=1, schedule="wsd", decay_ratio=0.2)
    rates = [row["lr"] for row in _log(out)]
    assert rates[:2] == pytest.approx([0.0, 1e-3])  # two warm-up updates to the peak of 2e-3
    assert rates[2:17] == pytest.approx([2e-3] * 15)
    assert rates[16:] == pytest.approx([2e-3, 1.5e-3, 1e-3, 0.5e-3])


def test_batches_built_in_series_train_the_weights_prefetched_ones_do(base, tmp_path):
    common = dict(max_steps=12, checkpoint_every=100, dropout=0.1)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ahead = _pretrain(base, tmp_path / "a", "ahead", **common)
    serial = _pretrain(base, tmp_path / "b", "serial", prefetch=False, **common)
    a, b = load_file(ahead / "model.safetensors"), load_file(serial / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_sigterm_checkpoints_and_the_rerun_resumes(base, tmp_path):
    settings = fx.write_settings(tmp_path / "s.yaml", "sig", max_steps=3000, checkpoint_every=100000, log_every=1)
    out = tmp_path / "sig"
    cmd = [
        sys.executable,
        "-m",
        "workflow_scripts.pretrain.pretrain",
        *fx.flags(settings=settings, corpus=base["corpus"], tokenizer=base["wordpiece"], out=out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = out / "training_state" / "train_log.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and not (log.is_file() and log.read_text().count("\n") >= 5):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, output
    assert "re-run to resume" in output
    step = int((out / "training_state" / "latest").read_text().strip().split("~")[1])
    assert 5 <= step < 3000
    assert not (out / "provenance.json").exists()
    state = torch.load(out / "training_state" / f"step~{step:08d}" / "state.pt", weights_only=False)
    assert state["step"] == step and state["scheduler"]["last_epoch"] == step
    # the re-run continues from that step instead of starting again
    pretrain_cli.main(
        fx.flags(settings=settings, corpus=base["corpus"], tokenizer=base["wordpiece"], out=out, stop_after=step + 2)
    )
    assert [r["step"] for r in _log_rows(log)] == list(range(1, step + 3))


def test_continual_pretraining_keeps_the_vocabulary(trained, base, tmp_path):
    out = _pretrain(base, tmp_path, "cont", init=trained, max_steps=10, architecture="roberta", size="base")
    model = AutoModelForMaskedLM.from_pretrained(out)
    assert model.config.model_type == "bert" and model.config.hidden_size == 64  # the init's shape, not the settings'
    assert AutoTokenizer.from_pretrained(out).get_vocab() == AutoTokenizer.from_pretrained(trained).get_vocab()
    assert (
        json.loads((out / "eval.json").read_text())["heldout_loss"]
        <= json.loads((trained / "eval.json").read_text())["heldout_loss"] + 0.3
    )


def test_a_continued_models_dropout_follows_the_seed_not_what_ran_before(trained, base, tmp_path):
    outs = []
    for name, noise in (("a", 1), ("b", 2)):
        torch.manual_seed(noise)  # the process's random state before the run
        outs.append(_pretrain(base, tmp_path, name, init=trained, max_steps=4))
    assert AutoModelForMaskedLM.from_pretrained(outs[0]).config.hidden_dropout_prob > 0
    a, b = (load_file(out / "model.safetensors") for out in outs)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_roberta_from_scratch_with_byte_level_bpe(base, tmp_path):
    out = _pretrain(
        base,
        tmp_path,
        "rob",
        tokenizer="bpe",
        architecture="roberta",
        max_steps=12,
        whole_word_mask=True,
        phases=[{"seq_len": 16, "fraction": 0.5}, {"seq_len": 32, "fraction": 0.5}],
    )
    model = AutoModelForMaskedLM.from_pretrained(out)
    assert model.config.model_type == "roberta"
    assert [r["seq_len"] for r in _log(out)] == [16, 32, 32]


# --- errors ---------------------------------------------------------------------------


def test_vocabulary_model_mismatch_is_refused(trained, base, tmp_path):
    broken = tmp_path / "broken"
    # a folder of the user's with another vocabulary: no producer's record (a recorded one would
    # stop the load first, as a changed file)
    shutil.copytree(trained, broken, ignore=shutil.ignore_patterns("training_state", "data", "provenance.json"))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (broken / f).unlink()
    fx.make_wordpiece(broken, fx.documents(300), vocab_size=400)
    with pytest.raises(PipelineError, match="tokenizer has .* tokens but the model's embedding has"):
        _pretrain(base, tmp_path, "x", init=broken)


def test_missing_init_and_tokenizer_are_clear(base, tmp_path):
    with pytest.raises(PipelineError, match="checkpoint directory not found"):
        _pretrain(base, tmp_path, "x", init=tmp_path / "results" / "pretrain" / "none")
    settings = fx.write_settings(tmp_path / "s.yaml")
    with pytest.raises(PipelineError, match="tokenizer directory not found"):
        pretrain_cli.main(
            fx.flags(settings=settings, corpus=base["corpus"], tokenizer=tmp_path / "v", out=tmp_path / "o")
        )


def test_damaged_checkpoints_are_errors_not_restarts(base, tmp_path):
    out = _pretrain(base, tmp_path, "d", stop_after=4, max_steps=10)
    state = out / "training_state"
    (state / "step~00000004" / "state.pt").write_bytes(b"garbage")
    with pytest.raises(PipelineError, match=r"state\.pt: checksum differs"):
        _pretrain(base, tmp_path, "d", max_steps=10)
    shutil.rmtree(state / "step~00000004")
    with pytest.raises(PipelineError, match="not a complete checkpoint directory"):
        _pretrain(base, tmp_path, "d", max_steps=10)
    (state / "latest").unlink()
    (state / "step~00000002").mkdir()
    with pytest.raises(PipelineError, match="step directories but no 'latest' file"):
        _pretrain(base, tmp_path, "d", max_steps=10)
    assert not (out / "model.safetensors").exists()


def test_changed_settings_do_not_resume_silently(base, tmp_path):
    _pretrain(base, tmp_path, "c", stop_after=4, max_steps=10)
    with pytest.raises(PipelineError, match=r"made from different inputs: recipe\.lr: 0\.002 -> 0\.001"):
        _pretrain(base, tmp_path, "c", max_steps=10, lr=1e-3)
    _pretrain(base, tmp_path, "c", max_steps=10, log_every=2)  # operational settings may change


def test_a_packed_corpus_trains_without_its_parquet_files(base, tmp_path):
    corpus = fx.make_corpus(tmp_path / "corpus", 300, shards=2)
    index = fx.pack(corpus, base["wordpiece"], tmp_path / "packed")
    for shard in corpus.glob("shard~*.parquet"):
        shard.write_bytes(b"")  # unreadable: the training job must not open it
    settings = fx.write_settings(tmp_path / "s.yaml", max_steps=6)
    out = tmp_path / "o"
    vocab = ["--tokenizer", str(base["wordpiece"])]
    pretrain_cli.main(["--settings", str(settings), "--packed", str(index), *vocab, "--out", str(out)])
    assert [r["step"] for r in _log(out)][-1] == 6
    prov = json.loads((out / "provenance.json").read_text())
    assert [Path(e["path"]).name for e in prov["inputs"]["packed"]] == ["shard~0", "shard~1"]
    # each packed shard's record leads back to its corpus shard
    assert all(e["provenance"].endswith("provenance.json") for e in prov["inputs"]["packed"])
    longer = fx.write_settings(tmp_path / "s64.yaml", phases=[{"seq_len": 64, "fraction": 1.0}])
    with pytest.raises(
        PipelineError, match=r"phases\[0\]\.seq_len 64: no packed data of that length \(given: \[32\]\)"
    ):
        pretrain_cli.main(["--settings", str(longer), "--packed", str(index), *vocab, "--out", str(tmp_path / "o64")])
    with pytest.raises(PipelineError, match="packed with a different tokenizer than the model's"):
        pretrain_cli.main(fx.flags(settings=settings, packed=index, tokenizer=base["bpe"], out=tmp_path / "obpe"))


def test_too_little_text_for_one_block_is_named(base, tmp_path):
    small = fx.make_corpus(tmp_path / "small", n_docs=1, shards=1)
    settings = fx.write_settings(tmp_path / "s.yaml", phases=[{"seq_len": 512, "fraction": 1.0}], heldout_fraction=0.0)
    with pytest.raises(PipelineError, match="no training block of 512 tokens; add text or lower phases"):
        pretrain_cli.main(fx.flags(settings=settings, corpus=small, tokenizer=base["wordpiece"], out=tmp_path / "o"))


def test_a_small_corpus_wraps_into_more_epochs(base, tmp_path):
    small = fx.make_corpus(tmp_path / "small", n_docs=12, shards=1)
    settings = fx.write_settings(tmp_path / "s.yaml", heldout_fraction=0.0, max_steps=20)
    out = tmp_path / "o"
    pretrain_cli.main(
        ["--settings", str(settings), "--corpus", str(small), "--tokenizer", str(base["wordpiece"]), "--out", str(out)]
    )
    index = json.loads((out / "packed/small/seq~32/heldout~0.0/index.json").read_text())
    blocks = index["shards"][0]["blocks"]["train"]
    assert blocks * 2 < 20 * 8  # many epochs
    assert json.loads((out / "eval.json").read_text())["heldout_loss"] is None


# --- data parallelism -----------------------------------------------------------------


@pytest.mark.slow  # two torchrun worker processes: ~15-25 s on two shared cores
def test_two_processes_equal_one_process_with_double_batch(base, tmp_path):
    common = dict(max_steps=6, batch_size=8, dropout=0.0, attention_dropout=0.0, heldout_fraction=0.0, num_threads=1)
    one = tmp_path / "one"
    settings = fx.write_settings(tmp_path / "one.yaml", micro_batch_size=4, **common)
    pretrain_cli.main(fx.flags(settings=settings, corpus=base["corpus"], tokenizer=base["wordpiece"], out=one))
    two = tmp_path / "two"
    settings2 = fx.write_settings(tmp_path / "two.yaml", **common)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            "-m",
            "workflow_scripts.pretrain.pretrain",
            *fx.flags(settings=settings2, corpus=base["corpus"], tokenizer=base["wordpiece"], out=two),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = load_file(one / "model.safetensors"), load_file(two / "model.safetensors")
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5)
    assert json.loads((two / "eval.json").read_text())["world_size"] == 2
