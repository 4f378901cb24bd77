"""The fine-tuning step's GPU path, proved on the CPU: the SDPA backends it chooses are in force
inside every step, lengths padded to buckets bound the shapes an epoch sees and change no loss
or prediction, evaluation never waits for the device per batch, and compiled bucketed shapes
compile once each."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from workflow_scripts import optim
from workflow_scripts.errors import PipelineError
from workflow_scripts.finetune import loop
from workflow_scripts.finetune.batching import ahead, collate, train_batches
from workflow_scripts.finetune.buckets import Padding, bucket_for, bucket_lengths, padding_for
from workflow_scripts.finetune.execution import Execution, execution_for
from workflow_scripts.finetune.settings import FinetuneSettings

CPU = torch.device("cpu")
TAGS = 3


def tiny_bert(task_type: str = "ner", dropout: float = 0.0):
    from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

    config = BertConfig(
        vocab_size=60,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=TAGS,
        max_position_embeddings=128,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    torch.manual_seed(0)
    head = BertForTokenClassification if task_type == "ner" else BertForSequenceClassification
    return head(config)


def features(n: int, task_type: str = "ner", low: int = 5, high: int = 60, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(low, high))
        ids = rng.integers(5, 60, k).tolist()
        labels = {"labels": rng.integers(0, TAGS, k).tolist()} if task_type == "ner" else {"label": int(k % TAGS)}
        out.append({"input_ids": ids, **labels})
    return out


def graphs_on_a_gpu(limit: int, compile_backend) -> Execution:
    """What a GPU run with cuda_graphs uses, its padding and compiled shapes run here on the CPU
    (compiled by ``compile_backend``: inductor would take minutes on the CPU)."""
    return Execution(padding=Padding("graphs", limit), graphs=True, compile_backend=compile_backend)


def test_bucket_sets_and_the_cpu_keeps_padding_to_the_longest_member():
    assert bucket_lengths(128, graphs=True) == (32, 64, 96, 128)
    assert bucket_lengths(512, graphs=True) == (32, 64, 96, 128, 192, 256, 384, 512)
    assert bucket_lengths(500, graphs=True) == (32, 64, 96, 128, 192, 256, 384, 500)
    assert bucket_lengths(20, graphs=True) == (20,)
    assert bucket_lengths(30, graphs=False) == (8, 16, 24, 30)
    assert [bucket_for(n, (32, 64, 96, 128)) for n in (1, 32, 33, 90, 128, 130)] == [32, 32, 64, 96, 128, 130]
    assert bucket_for(45, ()) == 45
    assert padding_for("cpu", True, 128) == Padding()
    assert padding_for("cuda", False, 128).width(45) == 48 and padding_for("cuda", True, 128).width(45) == 64
    cfg = FinetuneSettings(cuda_graphs=True)
    assert execution_for(cfg, CPU, 128).record() == {
        "sdpa_backends": ["flash", "efficient", "math"],
        "padding": {"policy": "longest", "buckets": None},
        "cuda_graphs": False,
    }
    batch = [{"input_ids": [2] * n, "labels": [0] * n} for n in (7, 13)]
    assert collate(batch, 0, "ner", "cpu")["input_ids"].shape == (2, 13)
    bucketed = collate(batch, 0, "ner", "cpu", Padding("graphs", 128))
    assert bucketed["input_ids"].shape == (2, 32) and bucketed["labels"][:, 13:].eq(-100).all()


@pytest.fixture
def sdpa_flags(monkeypatch):
    """The backend flags torch's SDPA dispatch reads, as they stand at each attention call."""
    seen: list[tuple[bool, bool, bool, bool]] = []
    original = torch.nn.functional.scaled_dot_product_attention
    cuda = torch.backends.cuda

    def recording(*args, **kwargs):
        flags = (cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled())
        seen.append((*flags, cuda.cudnn_sdp_enabled()))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    return seen


def one_step(model, cfg: FinetuneSettings, execution: Execution | None = None) -> torch.Tensor:
    update = optim.updater(
        model, lr=1e-3, weight_decay=0.0, eps=1e-8, total_steps=4, warmup_ratio=0.0, precision="fp32", device=CPU
    )
    padding = execution.padding if execution else None
    ((_, batch),) = ahead([[0, 1, 2]], features(3), 0, "ner", CPU, padding=padding)
    return loop.train_step(model, batch, update, cfg, "ner", CPU, execution)


def test_the_backend_choice_is_in_force_inside_the_step_and_only_there(sdpa_flags):
    model = tiny_bert()
    one_step(model, FinetuneSettings())
    assert set(sdpa_flags) == {(True, True, True, False)}  # no cuDNN attention inside the step
    assert torch.backends.cuda.cudnn_sdp_enabled()  # and the process's own setting is back after it
    # two runs sharing a process, steps interleaved: each step trains with its own run's choice
    sdpa_flags.clear()
    math_only = FinetuneSettings(sdpa_backends=["math"])
    for cfg in (math_only, FinetuneSettings(), math_only):
        one_step(model, cfg)
    per_step = [sdpa_flags[i] for i in (0, 2, 4)]  # two layers, one call each per step
    assert per_step == [(False, False, True, False), (True, True, True, False), (False, False, True, False)]
    sdpa_flags.clear()
    loop.predict(model, features(5), "ner", 0, FinetuneSettings(eval_batch_size=2), CPU)
    assert set(sdpa_flags) == {(True, True, True, False)}


def test_bucketed_shapes_per_epoch_are_bounded_by_the_bucket_set(sdpa_flags):
    lengths = [len(f["input_ids"]) for f in features(400, low=12, high=91)]
    batches = train_batches(lengths, 32, np.random.default_rng(0), True)
    feats = features(400, low=12, high=91)

    def widths(padding: Padding) -> set[int]:
        return {b["input_ids"].shape[1] for _, b in ahead(batches, feats, 0, "ner", CPU, padding=padding)}

    assert widths(Padding("graphs", 128)) <= {32, 64, 96, 128}
    assert widths(Padding("multiple", 128)) <= set(range(8, 129, 8))
    assert len(widths(Padding())) > 4  # the CPU's dynamic padding: a shape for nearly every batch
    # and fit pads the batches it trains on by its execution's buckets
    shapes = set()
    model = tiny_bert()
    model.register_forward_pre_hook(lambda m, args, kw: shapes.add(kw["input_ids"].shape[1]), with_kwargs=True)
    cfg = FinetuneSettings(batch_size=8, epochs=2, eval_every=0)
    execution = Execution(padding=Padding("graphs", 64))
    loop.fit(model, features(40), "ner", lambda m: {"score": 0.0}, cfg, 1, 0, CPU, execution=execution)
    assert shapes <= {32, 64}


@pytest.mark.parametrize("task_type", ["ner", "nli"])
def test_bucketed_and_unbucketed_runs_give_the_same_losses_and_predictions(task_type):
    data = features(24, task_type)
    cfg = FinetuneSettings(batch_size=6, eval_batch_size=5, epochs=2, eval_every=2, dropout=0.0)
    runs = {}
    for name, execution in (("plain", None), ("bucketed", Execution(padding=Padding("graphs", 64)))):
        model = tiny_bert(task_type)
        fit = loop.fit(model, data, task_type, lambda m: {"score": 0.0}, cfg, 3, 0, CPU, execution=execution)
        runs[name] = ([h["loss"] for h in fit.history], loop.predict(model, data, task_type, 0, cfg, CPU, execution))
    (plain_losses, plain_logits), (losses, logits) = runs["plain"], runs["bucketed"]
    assert len(plain_losses) == 4 and losses == pytest.approx(plain_losses, rel=1e-4)
    for a, b in zip(plain_logits, logits, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-4)


def test_evaluation_waits_for_the_device_once_per_split_not_per_batch(monkeypatch):
    model = tiny_bert()
    calls: list[tuple[str, str]] = []
    names = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__")
    originals = {name: getattr(torch.Tensor, name) for name in names}

    def counting(name):
        def wrapped(self, *args, **kwargs):
            caller = sys._getframe(1)
            calls.append((name, f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}"))
            return originals[name](self, *args, **kwargs)

        return wrapped

    gc.collect()
    gc.disable()  # a collection inside predict would run other objects' finalisers
    try:
        for name in names:
            monkeypatch.setattr(torch.Tensor, name, counting(name))
        for execution in (None, graphs_on_a_gpu(64, "eager")):
            cfg = FinetuneSettings(eval_batch_size=4)
            loop.predict(model, features(23), "ner", 0, cfg, CPU, execution)  # compiles its shapes, once
            calls.clear()
            out = loop.predict(model, features(23), "ner", 0, cfg, CPU, execution)
            assert len(out) == 23  # six batches
            assert [name for name, _ in calls] == ["cpu"], calls
    finally:
        gc.enable()


def test_compiled_bucketed_shapes_compile_once_each_and_a_new_shape_runs_eagerly():
    torch._dynamo.reset()
    # restored by hand: monkeypatch's undo deletes the attribute and hides dynamo's setting
    limit = torch._dynamo.config.recompile_limit
    compiled = []

    def counting_backend(graph, example_inputs):
        compiled.append(tuple(tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor))[:1])
        return graph.forward

    execution = graphs_on_a_gpu(64, counting_backend)
    cfg = FinetuneSettings(batch_size=4, eval_batch_size=4, epochs=1, dropout=0.0)
    model = tiny_bert()
    data = features(18, low=5, high=60)  # four batches of 4 and a last one of 2: eager
    try:
        loop.fit(model, data, "ner", lambda m: {"score": 0.0}, cfg, 1, 0, CPU, execution=execution)
        first = len(compiled)
        loop.fit(model, data, "ner", lambda m: {"score": 0.0}, cfg, 2, 0, CPU, execution=execution)
        loop.predict(model, data, "ner", 0, cfg, CPU, execution)
        again = len(compiled)
        loop.predict(model, data, "ner", 0, cfg, CPU, execution)
    finally:
        torch._dynamo.reset()
        torch._dynamo.config.recompile_limit = limit
    # training: at most one graph per bucket (rows 4 x widths 32, 64); evaluation: the same again
    assert 1 <= first <= 2 and again <= 4 and len(compiled) == again


def test_a_run_records_its_backends_padding_and_graphs_and_the_cpu_keeps_its_numbers(tmp_path):
    from test_finetune_run import make_bert, run_cli

    bert = make_bert(tmp_path / "bert")
    finetune = {"sdpa_backends": ["efficient", "math"], "cuda_graphs": True, "epochs": 1}
    metrics = run_cli(tmp_path, bert, "nli", finetune=finetune)
    assert metrics["execution"] == {
        "sdpa_backends": ["efficient", "math"],
        "padding": {"policy": "longest", "buckets": None},  # the CPU pads as it always did
        "cuda_graphs": False,  # ignored on the CPU
    }
    # the CPU's numbers are those of torch's own choice, the kernels it used before any was named
    before = run_cli(tmp_path, bert, "nli", finetune={**finetune, "sdpa_backends": []}, name="torch-choice")
    assert (metrics["history"], metrics["test"]) == (before["history"], before["test"])
    with pytest.raises(PipelineError, match="sdpa_backends.*efficient or math"):
        run_cli(tmp_path, bert, "nli", finetune={"sdpa_backends": ["flash"]}, name="flash-only")
