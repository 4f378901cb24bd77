"""Micro-batches: a batch cut into smaller forward and backward passes gives the whole batch's
gradient (its losses weighted by their share of the loss terms), so a long-input run that would
not fit a card at its batch size takes the same steps in less memory."""

from __future__ import annotations

import random

import pytest
import torch
from test_finetune_chunks import write_long_task
from test_finetune_run import TASKS, make_bert, run_cli, write_task

from workflow_scripts import optim
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import chunks, data, heads
from workflow_scripts.finetune.batching import ahead, loss_terms, micro_batches
from workflow_scripts.finetune.features import Encoding, encode
from workflow_scripts.finetune.loop import backward
from workflow_scripts.finetune.settings import FinetuneSettings

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_bert(tmp_path_factory.mktemp("bert"))


def test_each_batch_is_cut_and_its_parts_weighed_by_their_loss_terms():
    terms = [1, 3, 0, 2, 2, 5].__getitem__
    parts = micro_batches([[0, 1, 2, 3, 4], [5]], 2, terms)
    assert [(p.idx, p.share, p.last) for p in parts] == [
        ([0, 1], 0.5, False),
        ([2, 3], 0.25, False),
        ([4], 0.25, True),
        ([5], 1.0, True),
    ]
    whole = micro_batches([[0, 1, 2, 3, 4]], None, terms)
    assert [(p.idx, p.share, p.last) for p in whole] == [([0, 1, 2, 3, 4], 1.0, True)]
    with pytest.raises(PipelineError, match=r"f\.micro_batch_size: must be > 0 or null"):
        FinetuneSettings(micro_batch_size=0).validate("f")


def _features(bert, tmp_path, task_type: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(bert)
    if task_type == "qa-chunked":  # examples read as two chunks each: a unit is all of them
        rows = data.read_split(write_long_task(tmp_path) / "train.jsonl", "qa")[:10]
        plan = chunks.ChunkPlan(length=128, stride=0, pooling="max")
        return encode(tok, rows, Encoding("qa", ["yes", "no", "maybe"], 512, chunks=plan)), "qa"
    rng = random.Random(5)
    rows = [TASKS[task_type][0](rng, i) for i in range(10)]
    if task_type == "ner":  # sentences of 1 to 9 tagged words: micro-batches of unequal token counts
        rows = [{**r, "tokens": r["tokens"][: 1 + i], "tags": r["tags"][: 1 + i]} for i, r in enumerate(rows)]
    return encode(tok, rows, Encoding(task_type, TASKS[task_type][2], 64)), task_type


def _gradient(bert, features, task_type: str, micro: int | None, shares=None) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = heads.build(str(bert), task_type, TASKS[task_type][2], 0.0, "cls", 0)
    cfg = FinetuneSettings(dropout=0.0, precision="fp32")
    cpu = torch.device("cpu")
    update = optim.updater(
        model, lr=1e-3, weight_decay=0.0, eps=1e-8, total_steps=1, warmup_ratio=0.0, precision="fp32", device=cpu
    )
    units = chunks.units(features)
    n = len(units) if units is not None else len(features)
    parts = micro_batches([list(range(n))], micro, loss_terms(features, task_type))
    batches = ahead([p.idx for p in parts], features, 0, task_type, cpu, units)
    for k, ((_, batch), part) in enumerate(zip(batches, parts, strict=True)):
        backward(model, batch, part.share if shares is None else shares[k], update, cfg, task_type, cpu)
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("task_type", ["ner", "nli", "doc_classification", "qa-chunked"])
def test_micro_batches_add_up_to_the_whole_batchs_gradient(bert, tmp_path, task_type):
    features, kind = _features(bert, tmp_path, task_type)
    whole = _gradient(bert, features, kind, None)
    split = _gradient(bert, features, kind, 3)
    assert whole.keys() == split.keys()
    for name in whole:
        torch.testing.assert_close(split[name], whole[name], rtol=1e-4, atol=1e-6, msg=name)
    if kind == "ner":  # the check can fail: equal weights would overweigh the short sentences' tokens
        naive = _gradient(bert, features, kind, 3, shares=[0.25] * 4)
        assert not all(torch.allclose(naive[k], whole[k], rtol=1e-3, atol=1e-5) for k in whole)


def test_a_run_in_micro_batches_trains_as_the_whole_batch_does(tmp_path, bert):
    task_dir = write_task(tmp_path, "ner")
    whole = run_cli(tmp_path, bert, "ner", task_dir=task_dir, name="whole")
    split = run_cli(tmp_path, bert, "ner", task_dir=task_dir, name="split", finetune={"micro_batch_size": 5})
    assert [h["step"] for h in split["history"]] == [h["step"] for h in whole["history"]]
    for a, b in zip(whole["history"], split["history"], strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3)
    assert split["test"]["score"] == pytest.approx(whole["test"]["score"], abs=0.02)
