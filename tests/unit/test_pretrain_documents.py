"""Pretraining on blocks that keep documents apart, and phases longer than a continued model's positions."""

from __future__ import annotations

import json

import pretrain_fixtures as fx
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from transformers import (
    AutoModelForMaskedLM,
    BertConfig,
    BertForMaskedLM,
    ModernBertConfig,
    ModernBertModel,
    RobertaConfig,
    RobertaForMaskedLM,
)

from workflow_scripts.distill import distill as distill_cli
from workflow_scripts.distill.objective import attention_maps
from workflow_scripts.distill.settings import DistillSettings
from workflow_scripts.errors import PipelineError
from workflow_scripts.pretrain.documents import document_inputs
from workflow_scripts.pretrain.engine import training_key
from workflow_scripts.pretrain.model import MLMObjective
from workflow_scripts.pretrain.positions import grow
from workflow_scripts.pretrain.settings import Phase, PretrainSettings
from workflow_scripts.typed import parse

SHAPE = dict(vocab_size=100, hidden_size=32, num_attention_heads=4, intermediate_size=64)


def encoder(kind: str, attention: str, head: bool = False):
    """A tiny randomly initialised encoder (``head``: with its masked-LM head) of each position scheme:
    learned from 0, learned from the padding index + 1, rotary with local (sliding-window) layers."""
    torch.manual_seed(0)
    if kind == "bert":
        config, cls = BertConfig(num_hidden_layers=2, max_position_embeddings=64, **SHAPE), BertForMaskedLM
    elif kind == "roberta":
        config, cls = RobertaConfig(num_hidden_layers=2, max_position_embeddings=66, pad_token_id=1, **SHAPE), None
        cls = RobertaForMaskedLM
    else:
        config = ModernBertConfig(
            num_hidden_layers=3, max_position_embeddings=64, local_attention=8, global_attn_every_n_layers=3, **SHAPE
        )
        config.pad_token_id, cls = 0, ModernBertModel
    config._attn_implementation = attention
    model = cls(config).eval()
    return model if kind == "modernbert" or head else model.base_model


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("kind", ["bert", "roberta", "modernbert"])
def test_a_block_of_two_documents_reads_each_as_if_alone(kind, attention):
    model = encoder(kind, attention)
    gen = torch.Generator().manual_seed(1)
    # [CLS] document [SEP], twice: 15 and 11 tokens, longer than ModernBERT's local window of 8
    docs = [
        torch.cat([torch.tensor([2]), torch.randint(5, 100, (n,), generator=gen), torch.tensor([3])]) for n in (13, 9)
    ]
    block = torch.cat(docs)[None]
    position_ids = torch.cat([torch.arange(len(d)) for d in docs])[None]
    with torch.no_grad():
        packed = model(input_ids=block, **document_inputs(model, position_ids)).last_hidden_state[0]
        alone = torch.cat([model(input_ids=d[None]).last_hidden_state[0] for d in docs])
        across = model(input_ids=block).last_hidden_state[0]
    torch.testing.assert_close(packed, alone, atol=2e-5, rtol=1e-4)
    assert (across - alone).abs().max() > 1e-3  # attending across the boundary reads something else


def test_distillations_attention_maps_stay_within_each_document():
    model = encoder("bert", "eager", head=True)
    block = torch.randint(5, 100, (2, 12))
    position_ids = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2]])
    with torch.no_grad():
        out = model.base_model(
            input_ids=block, output_hidden_states=True, output_attentions=True, **document_inputs(model, position_ids)
        )
        maps = attention_maps(model, out.hidden_states, [1, 2], position_ids)
    for layer in (1, 2):
        torch.testing.assert_close(maps[layer], out.attentions[layer - 1], atol=1e-6, rtol=1e-5)
    assert maps[1][0, :, :5, 5:].abs().max() == 0 and maps[1][1, :, 9:, :9].abs().max() == 0


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_pretraining_on_document_blocks_trains_and_evaluates(tmp_path, objective):
    base = fx.corpus_and_wordpiece(tmp_path, n_docs=200)
    arch = {"architecture": "electra", "objective": "electra"} if objective == "electra" else {}
    out = fx.pretrain(base, tmp_path, packing="documents", max_steps=8, batch_size=4, **arch)
    packed = out / "packed" / "corpus" / "packing~documents" / "seq~32" / "heldout~0.1" / "shard~0"
    assert json.loads((packed / "meta.json").read_text())["packing"] == "documents"
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    result = json.loads((out / "eval.json").read_text())
    assert log[-1]["step"] == 8 and result["heldout_blocks"] > 0 and 0 < result["heldout_loss"] < 10
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["params"]["pretrain"]["packing"] == "documents"


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_growing_positions_copies_rows_and_changes_nothing_else(kind):
    model = encoder(kind, "sdpa")
    offset = 2 if kind == "roberta" else 0
    before = {k: v.clone() for k, v in model.state_dict().items()}
    config_before = model.config.to_dict()
    grow(model, 150)
    after = model.state_dict()
    old = before["embeddings.position_embeddings.weight"]
    new = after["embeddings.position_embeddings.weight"]
    assert new.shape[0] == 150 + offset and model.config.max_position_embeddings == 150 + offset
    usable = old.shape[0] - offset
    for row in (offset, offset + usable - 1, offset + usable, offset + 2 * usable + 5, 149 + offset):
        assert torch.equal(new[row], old[offset + (row - offset) % usable])
    assert torch.equal(new[:offset], old[:offset])
    changed = {k for k in after if k not in before or not torch.equal(after[k], before[k])}
    assert changed == {"embeddings.position_embeddings.weight"}
    assert {k for k, v in model.config.to_dict().items() if config_before.get(k) != v} == {"max_position_embeddings"}
    with torch.no_grad():  # the grown model reads 150 tokens
        assert model(input_ids=torch.randint(5, 100, (1, 150))).last_hidden_state.shape == (1, 150, 32)


def test_a_longer_phase_continues_from_the_previous_checkpoint_and_trains(tmp_path):
    base = fx.corpus_and_wordpiece(tmp_path, n_docs=200)
    short = fx.pretrain(base, tmp_path, "short", max_steps=4, batch_size=4)
    longer = [{"seq_len": 64, "fraction": 1.0}]
    with pytest.raises(PipelineError, match=r"phases\[0\].seq_len: 64 exceeds the 32 positions .*grow_positions: copy"):
        fx.pretrain(base, tmp_path, "refused", init=short, max_steps=4, batch_size=4, phases=longer)
    longer[0]["grow_positions"] = "copy"
    out = fx.pretrain(base, tmp_path, "long", init=short, max_steps=4, batch_size=4, phases=longer)
    grown, start = AutoModelForMaskedLM.from_pretrained(out), AutoModelForMaskedLM.from_pretrained(short)
    assert grown.config.max_position_embeddings == 64 and start.config.max_position_embeddings == 32
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert {row["seq_len"] for row in log} == {64} and log[-1]["step"] == 4
    # it trained: the weights moved away from the checkpoint it grew from
    moved = (
        grown.bert.encoder.layer[0].attention.self.query.weight
        - start.bert.encoder.layer[0].attention.self.query.weight
    )
    assert moved.abs().max() > 0


def test_the_documents_step_compiles_once_as_boundaries_move():
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    objective = MLMObjective(encoder("bert", "sdpa", head=True))
    compiled = torch.compile(objective, backend=counter, fullgraph=True)  # fullgraph: a graph break is an error
    gen = torch.Generator().manual_seed(0)
    norms = {"masked": 10.0, "tokens": 64.0}
    for _ in range(6):
        ids = torch.randint(5, 100, (2, 32), generator=gen)
        starts = torch.rand(2, 32, generator=gen) < 0.1
        starts[:, 0] = True
        column = torch.arange(32).expand(2, -1)
        position_ids = column - torch.cummax(torch.where(starts, column, 0), dim=1).values
        positions, labels = torch.arange(0, 64, 7), ids.reshape(-1)[torch.arange(0, 64, 7)]
        loss, _ = compiled(ids, positions, labels, norms, position_ids=position_ids)
        torch.testing.assert_close(loss, objective(ids, positions, labels, norms, position_ids=position_ids)[0])
    assert counter.frame_count == 1  # one graph for every layout of documents in the blocks
    torch._dynamo.reset()


def test_distillation_on_document_blocks_trains_with_every_teacher_term(tmp_path):
    base = fx.corpus_and_wordpiece(tmp_path, n_docs=200)
    teacher = fx.pretrain(base, tmp_path, "teacher", max_steps=4, batch_size=4, packing="documents")
    loss = {"mlm": 1.0, "kl": 1.0, "cosine": 1.0, "hidden_mse": 1.0, "attention_kl": 1.0}
    settings = fx.write_settings(
        tmp_path / "s.yaml", "s", key="distill", packing="documents", max_steps=4, batch_size=4, loss=loss
    )
    out = tmp_path / "s"
    distill_cli.main(
        ["--settings", str(settings), "--teacher", str(teacher), "--corpus", str(base["corpus"]), "--out", str(out)]
    )
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 4 and all(0 <= rows[-1][f"loss_{k}"] < 50 for k in loss)


def test_distillation_refuses_to_grow_positions():
    with pytest.raises(PipelineError, match=r"d\.phases: grow_positions applies to pretraining only"):
        parse(DistillSettings, {"phases": [{"seq_len": 64, "grow_positions": "copy"}]}, "d")


def test_a_run_keeping_the_default_packing_and_positions_resumes_under_its_earlier_key():
    model = encoder("bert", "sdpa", head=True)
    plain = training_key(PretrainSettings(), {}, model, {})["recipe"]
    assert "packing" not in plain and plain["phases"] == [{"seq_len": 128, "fraction": 1.0}]
    grown = PretrainSettings(packing="documents", phases=[Phase(128, 1.0, grow_positions="copy")])
    recipe = training_key(grown, {}, model, {})["recipe"]
    assert recipe["packing"] == "documents" and recipe["phases"][0]["grow_positions"] == "copy"
