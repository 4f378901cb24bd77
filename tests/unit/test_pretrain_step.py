"""The training step: fixed-size predictions, compilation, rank-local draws and the prefetched data path."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pretrain_fixtures as fx
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from transformers import (
    BertConfig,
    BertForMaskedLM,
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
    ModernBertConfig,
    ModernBertForMaskedLM,
)

from workflow_scripts.distill.objective import DistillObjective
from workflow_scripts.distill.settings import LossWeights
from workflow_scripts.pack.index import read_index
from workflow_scripts.pretrain.batches import (
    BatchBuilder,
    MicroBatch,
    StepBatch,
    fixed_predictions,
    prediction_slots,
    prefetched,
)
from workflow_scripts.pretrain.data import PackedCorpus
from workflow_scripts.pretrain.dist import Dist
from workflow_scripts.pretrain.electra import ElectraObjective
from workflow_scripts.pretrain.masking import apply_mask, draw, step_generator
from workflow_scripts.pretrain.model import MLMObjective
from workflow_scripts.pretrain.residual import keep_residual_in_autocast_dtype
from workflow_scripts.pretrain.settings import ElectraSettings, PretrainSettings
from workflow_scripts.pretrain.step import TrainStep, compile_mode, compiles, fixed_slots, replays_graphs
from workflow_scripts.tokenizer import Specials
from workflow_scripts.typed import parse

torch.set_num_threads(1)
V, L, ROWS, MASK_ID = 60, 32, 4, 4


def _tiny(cls, config_cls, **extra):
    torch.manual_seed(0)
    shape = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64) | extra
    return cls(config_cls(vocab_size=V, max_position_embeddings=L, hidden_dropout_prob=0.0, **shape))


def _mlm() -> MLMObjective:
    return MLMObjective(_tiny(BertForMaskedLM, BertConfig, attention_probs_dropout_prob=0.0))


def _modernbert() -> MLMObjective:
    """A ModernBERT whose local layer's 16-token window is shorter than the 32-token blocks."""
    torch.manual_seed(0)
    config = ModernBertConfig(
        vocab_size=V,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=48,
        max_position_embeddings=L,
        layer_types=["full_attention", "sliding_attention"],
        local_attention=16,
        pad_token_id=0,
        cls_token_id=2,
        sep_token_id=3,
    )
    config._attn_implementation = "sdpa"
    return MLMObjective(ModernBertForMaskedLM(config))


def _electra() -> ElectraObjective:
    disc = _tiny(ElectraForPreTraining, ElectraConfig, embedding_size=32)
    gen = _tiny(ElectraForMaskedLM, ElectraConfig, embedding_size=32)
    return ElectraObjective(disc, gen, ElectraSettings(sampling="multinomial"))


def _micro(step: int, slots: int | None):
    """A micro-batch of random blocks ([CLS] ... [SEP]) masked with step ``step``'s draws."""
    ids = torch.randint(5, V, (ROWS, L), generator=torch.Generator().manual_seed(step))
    ids[:, 0], ids[:, -1] = 2, 3
    flags = torch.ones(ROWS, L, dtype=torch.uint8)
    flags[:, 0] = flags[:, -1] = 2  # SPECIAL
    masked, selected = apply_mask(
        ids, flags, draw(step_generator(1, 0, step), ROWS, L, V), mask_prob=0.15, mask_id=MASK_ID
    )
    return (masked, *fixed_predictions(selected, ids, slots)), int(selected.sum())


NORMS = {"masked": 0.15 * ROWS * (L - 2), "tokens": ROWS * L}


def _electra_fixed_draws() -> ElectraObjective:
    objective = _electra()
    objective.sample_with = torch.Generator().manual_seed(3)  # the same replacements in both runs
    return objective


def _distill() -> DistillObjective:
    teacher = _tiny(BertForMaskedLM, BertConfig, attention_probs_dropout_prob=0.0, num_hidden_layers=4)
    return DistillObjective(_mlm().model, teacher.eval(), LossWeights(), 2.0, [2, 4])


@pytest.mark.parametrize(
    "make", [_mlm, _modernbert, _electra_fixed_draws, _distill], ids=["mlm", "modernbert", "electra", "distill"]
)
def test_fixed_prediction_slots_give_the_variable_size_loss_and_gradients(make):
    slots = prediction_slots(0.15, ROWS, L, whole_word=False)
    variable, n = _micro(0, None)
    fixed, _ = _micro(0, slots)
    assert len(fixed[1]) == slots > n == len(variable[1])
    losses, grads = [], []
    for batch in (variable, fixed):
        objective = make()
        loss, _ = objective(*batch, NORMS)
        loss.backward()
        losses.append(loss)
        grads.append([p.grad for p in objective.parameters() if p.grad is not None])
    torch.testing.assert_close(losses[0], losses[1])
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_distillation_pads_predictions_unless_it_compares_distributions_at_masked_positions():
    assert _distill().fixed_predictions
    masked_kl = DistillObjective(_mlm().model, _mlm().model, LossWeights(), 2.0, [1, 2], kl_positions="masked")
    assert not masked_kl.fixed_predictions


@pytest.mark.parametrize("make", [_mlm, _modernbert, _electra], ids=["mlm", "modernbert", "electra"])
def test_objectives_compile_whole_and_do_not_recompile_as_mask_counts_vary(make):
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    objective = make()
    compiled = torch.compile(objective, backend=counter, fullgraph=True)  # fullgraph: a graph break is an error
    slots = prediction_slots(0.15, ROWS, L, whole_word=False)
    counts = set()
    for step in range(20):
        batch, n = _micro(step, slots)
        counts.add(n)
        loss, _ = compiled(*batch, NORMS)
        loss.backward()
    assert len(counts) > 5  # the mask counts did vary
    assert counter.frame_count == 1  # compiled once: no recompilation (variable-size predictions recompile once)
    torch._dynamo.reset()


@pytest.mark.parametrize("make", [_mlm, _electra, _distill], ids=["mlm", "electra", "distill"])
def test_compiled_objectives_give_attention_no_mask_where_blocks_need_none(make):
    """Given any mask, SDPA on a GPU runs math attention in fp32 instead of flash. transformers skips the all-true
    mask only where torch says it is not exporting, which torch before 2.13 also says inside torch.compile:
    there the compiled step lost fused attention (on an H200: 29.1% MFU against 35.0% without the mask)."""
    calls = []

    def record_attention(gm, example_inputs):
        calls.extend(n.kwargs for n in gm.graph.nodes if n.target is torch.nn.functional.scaled_dot_product_attention)
        return gm.forward

    torch._dynamo.reset()
    objective = make()
    batch, _ = _micro(0, prediction_slots(0.15, ROWS, L, whole_word=False))
    torch.compile(objective, backend=record_attention, fullgraph=True)(*batch, NORMS)
    torch._dynamo.reset()
    assert calls  # every layer of every model the objective runs
    assert all(kwargs.get("attn_mask") is None for kwargs in calls)


def test_compile_auto_is_on_for_cuda_only():
    auto = PretrainSettings()
    assert auto.compile == "auto"
    assert compiles(auto, torch.device("cuda")) and not compiles(auto, torch.device("cpu"))
    assert compiles(parse(PretrainSettings, {"compile": True}, "s"), torch.device("cpu"))
    assert not compiles(parse(PretrainSettings, {"compile": False}, "s"), torch.device("cuda"))


def test_cuda_graphs_replay_compiled_steps_on_cuda_only():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    graphs = parse(PretrainSettings, {"cuda_graphs": True}, "s")
    assert replays_graphs(graphs, cuda) and not replays_graphs(graphs, cpu)
    assert not replays_graphs(parse(PretrainSettings, {"cuda_graphs": True, "compile": False}, "s"), cuda)
    assert not replays_graphs(PretrainSettings(), cuda)


def test_the_compile_mode_autotunes_and_replays_graphs_on_cuda_only():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    modes = {
        (graphs, autotune): compile_mode(
            parse(PretrainSettings, {"cuda_graphs": graphs, "autotune": autotune}, "s"), cuda
        )
        for graphs in (False, True)
        for autotune in (False, True)
    }
    assert modes == {
        (False, False): None,
        (True, False): "reduce-overhead",
        (False, True): "max-autotune-no-cudagraphs",
        (True, True): "max-autotune",
    }
    assert compile_mode(parse(PretrainSettings, {"cuda_graphs": True, "autotune": True}, "s"), cpu) is None


def _three_steps(after_each=lambda trainer: None, **settings) -> TrainStep:
    """An fp32 MLM trained 3 steps of 2 micro-batches under ``settings``; ``after_each`` sees it after each step."""
    trainer = TrainStep(_mlm(), PretrainSettings(precision="fp32", max_steps=3, **settings), Dist())
    trainer.wrap()
    slots = prediction_slots(0.15, ROWS, L, whole_word=False)
    for step in range(3):
        trainer(StepBatch(step, 0, L, [MicroBatch(*_micro(10 * step + k, slots)[0]) for k in range(2)], 0), NORMS)
        after_each(trainer)
    return trainer


def test_kept_gradient_buffers_train_as_the_plain_step_and_stay_in_place():
    """Under CUDA graphs gradients accumulate into buffers kept across steps and zeroed in place (a graph's
    replay overwrites its own outputs); 3 steps of 2 micro-batches leave the plain step's weights bit for bit."""

    def train(cuda_graphs: bool):
        buffers = []

        def record(trainer):
            buffers.append([None if p.grad is None else p.grad.data_ptr() for p in trainer.objective.parameters()])

        return _three_steps(record, cuda_graphs=cuda_graphs).objective.state_dict(), buffers

    (plain, plain_buffers), (kept, kept_buffers) = train(False), train(True)
    assert all(torch.equal(plain[k], kept[k]) for k in plain)
    assert set(plain_buffers[-1]) == {None}  # the plain step lets go of its gradients
    assert None not in kept_buffers[0] and kept_buffers[0] == kept_buffers[-1]


def _stream_dtypes(objective, batch) -> set[torch.dtype]:
    """The dtypes of what each layer hands the next (the residual stream), under CPU bf16 autocast."""
    seen = []
    layers = [m for name, m in objective.named_modules() if name.endswith(("layer.0", "layer.1", "layers.0"))]
    hooks = [
        m.register_forward_hook(lambda m, i, out: seen.append(out[0] if isinstance(out, tuple) else out))
        for m in layers
    ]
    with torch.autocast("cpu", torch.bfloat16):
        objective(*batch, NORMS)
    for hook in hooks:
        hook.remove()
    assert seen
    return {t.dtype for t in seen}


@pytest.mark.parametrize(
    "make", [_mlm, _modernbert, _electra, _distill], ids=["mlm", "modernbert", "electra", "distill"]
)
def test_residual_stream_autocast_keeps_what_each_layer_hands_the_next_in_bf16(make):
    batch, _ = _micro(0, prediction_slots(0.15, ROWS, L, whole_word=False))
    plain, low = make(), make()
    assert keep_residual_in_autocast_dtype(low) > 0
    assert _stream_dtypes(plain, batch) == {torch.float32}  # torch's autocast: the norms return fp32
    assert _stream_dtypes(low, batch) == {torch.bfloat16}
    assert plain.state_dict().keys() == low.state_dict().keys()


def test_a_bf16_residual_stream_compiles_whole_forward_and_backward():
    low = _mlm()
    keep_residual_in_autocast_dtype(low)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(low, backend=counter, fullgraph=True)  # fullgraph: a graph break is an error
    with torch.autocast("cpu", torch.bfloat16):
        for step in range(3):
            compiled(*_micro(step, prediction_slots(0.15, ROWS, L, whole_word=False))[0], NORMS)[0].backward()
    torch._dynamo.reset()
    assert counter.frame_count == 1


def test_a_bf16_residual_stream_gives_the_fp32_streams_loss_and_gradients_to_bf16_rounding():
    batch, _ = _micro(0, prediction_slots(0.15, ROWS, L, whole_word=False))
    losses, grads = [], []
    for low in (False, True):
        objective = _mlm()
        if low:
            keep_residual_in_autocast_dtype(objective)
        with torch.autocast("cpu", torch.bfloat16):
            loss, _ = objective(*batch, NORMS)
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in objective.parameters() if p.grad is not None]))
    assert losses[0] != losses[1]  # the stream's rounding did change the arithmetic
    assert abs(losses[1] - losses[0]) < 0.01 * abs(losses[0])
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.99
    assert all(g.dtype == torch.float32 for g in grads)  # the weights' gradients stay fp32


def test_residual_stream_autocast_changes_nothing_without_autocast(tmp_path):
    """fp32 training (every CPU run) with the setting trains the plain step's weights bit for bit; the model
    saves and reloads as a plain transformers model."""

    plain, low = (_three_steps(residual_stream=stream).objective for stream in ("fp32", "autocast"))
    assert any(type(m) is not torch.nn.LayerNorm for m in low.modules() if isinstance(m, torch.nn.LayerNorm))
    assert all(torch.equal(v, low.state_dict()[k]) for k, v in plain.state_dict().items())
    low.model.save_pretrained(tmp_path)
    reloaded = BertForMaskedLM.from_pretrained(tmp_path)
    assert all(torch.equal(v, reloaded.state_dict()[k]) for k, v in low.model.state_dict().items())


def test_prediction_slots_are_fixed_where_a_compiled_step_needs_them():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert fixed_slots(PretrainSettings(), cpu) and fixed_slots(PretrainSettings(), cuda)  # the default
    auto = parse(PretrainSettings, {"prediction_slots": "auto"}, "s")
    assert fixed_slots(auto, cuda) and not fixed_slots(auto, cpu)
    assert fixed_slots(parse(PretrainSettings, {"prediction_slots": "auto", "compile": True}, "s"), cpu)
    assert not fixed_slots(parse(PretrainSettings, {"prediction_slots": "exact"}, "s"), cuda)


def test_a_process_draws_exactly_its_rows_of_the_global_draw():
    stream = step_generator(5, 1, 17)
    whole = draw(stream, 8, 30, 1000)
    for rank in range(4):
        part = draw(stream, 2, 30, 1000, first_row=2 * rank)
        for name in ("select", "action", "random_ids"):
            assert torch.equal(getattr(part, name), getattr(whole, name)[2 * rank : 2 * rank + 2])
    assert int(whole.random_ids.min()) >= 0 and int(whole.random_ids.max()) < 1000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("step")
    texts = fx.documents(120)
    tokenizer = fx.make_wordpiece(root / "wordpiece", texts)
    _, dirs = read_index(fx.pack(fx.make_corpus(root / "corpus", 120, shards=2), tokenizer, root / "packed"))
    return PackedCorpus(dirs, "train"), Specials.of(fx.PreTrainedTokenizerFast.from_pretrained(tokenizer), "t")


def _builders(corpus, world: int, **kw):
    data, specials = corpus
    s = parse(PretrainSettings, {"batch_size": 8, "phases": [{"seq_len": 32, "fraction": 1.0}], "seed": 3}, "s")
    share = s.batch_size // world
    return [BatchBuilder(s, [data], specials, rank, share, 2, **kw) for rank in range(world)]


def test_two_processes_build_the_rows_one_process_builds(corpus):
    (one,) = _builders(corpus, 1, fixed_slots=False)
    two = _builders(corpus, 2, fixed_slots=False)
    for step in (0, 7):
        whole = one(step).micro
        parts = [mb for b in two for mb in b(step).micro]
        for a, b in zip(whole, parts, strict=True):
            assert all(
                torch.equal(x, y)
                for x, y in zip((a.input_ids, a.positions, a.labels), (b.input_ids, b.positions, b.labels), strict=True)
            )


def test_prefetched_batches_are_the_built_ones_and_errors_reach_the_loop(corpus):
    (build,) = _builders(corpus, 1)
    got = list(prefetched(build, 3, 9))
    assert [b.step for b in got] == list(range(3, 9))
    assert all(torch.equal(a.input_ids, b.input_ids) for a, b in zip(got[2].micro, build(5).micro, strict=True))
    assert len({len(mb.positions) for b in got for mb in b.micro}) == 1  # one shape for the whole phase

    def failing(step):
        if step == 2:
            raise OSError("shard vanished")
        return build(step)

    with pytest.raises(OSError, match="shard vanished"):
        list(prefetched(failing, 0, 5))
    early = prefetched(build, 0, 100)
    next(early)
    early.close()  # a run that stops early leaves no thread behind
    assert not [t for t in threading.enumerate() if t.name == "batches"]


# --- two processes --------------------------------------------------------------------

WORKER = '''
import json, os, sys
import torch
import torch.distributed as tdist
from torch.nn.parallel import DistributedDataParallel
sys.path.insert(0, sys.argv[1])
import test_pretrain_step as t
from workflow_scripts.pretrain import dist as distributed, pretrain as cli, step as stepmod
from workflow_scripts.pretrain.batches import MicroBatch, StepBatch
from workflow_scripts.pretrain.settings import PretrainSettings

d = distributed.setup()

def weights(default_ddp, cuda_graphs=False):
    """A tiny BERT after 3 steps of 2 micro-batches each, on this process's own data."""
    settings = PretrainSettings(precision="fp32", max_steps=3, cuda_graphs=cuda_graphs)
    trainer = stepmod.TrainStep(t._mlm(), settings, d)
    trainer.wrap()
    if default_ddp:
        trainer.runner = DistributedDataParallel(trainer.objective)
    slots = t.prediction_slots(0.15, t.ROWS, t.L, whole_word=False)
    for step in range(3):
        micro = [MicroBatch(*t._micro(10 * step + 2 * d.rank + k, slots)[0]) for k in range(2)]
        trainer(StepBatch(step, 0, t.L, micro, 0), t.NORMS)
    return trainer.objective.state_dict()

a, b, kept = weights(True), weights(False), weights(False, cuda_graphs=True)
same = all(torch.equal(a[k], b[k]) and torch.equal(a[k], kept[k]) for k in a)

calls, current = [], {"step": -1}
run_step = stepmod.TrainStep.__call__
def traced(self, batch, norms):
    current["step"] = batch.step
    return run_step(self, batch, norms)
stepmod.TrainStep.__call__ = traced
for name in ("all_reduce", "broadcast", "barrier", "all_gather", "all_gather_object", "broadcast_object_list",
             "reduce", "gather", "scatter", "reduce_scatter", "all_to_all"):
    def counted(*args, _call=getattr(tdist, name), _name=name, **kw):
        calls.append([current["step"], _name])
        return _call(*args, **kw)
    setattr(tdist, name, counted)
rank = d.rank
cli.main(sys.argv[3:])
with open(os.path.join(sys.argv[2], f"rank{rank}.json"), "w") as fh:
    json.dump({"ddp_options_same_weights": same, "calls": calls}, fh)
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # two torchrun worker processes: ~15 s on two shared cores
def test_two_processes_talk_only_at_log_steps_and_tuned_ddp_changes_no_weight(tmp_path):
    root = tmp_path / "base"
    texts = fx.documents(150)
    corpus = fx.make_corpus(root / "corpus", 150)
    tokenizer = fx.make_wordpiece(root / "wordpiece", texts)
    settings = fx.write_settings(
        tmp_path / "s.yaml", max_steps=8, log_every=4, checkpoint_every=100, heldout_fraction=0.0, dropout=0.0
    )
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    cli = fx.flags(settings=settings, corpus=corpus, tokenizer=tokenizer, out=tmp_path / "m")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            str(worker),
            str(Path(__file__).parent),
            str(tmp_path),
            *cli,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rank in (0, 1):
        seen = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert seen["ddp_options_same_weights"]  # broadcast_buffers=False, gradient_as_bucket_view=True: bit-identical
        steps = {step for step, _ in seen["calls"] if step >= 0}
        assert 3 in steps  # the log line after step 4 sums the statistics over processes
        assert steps <= {3, 7}  # log steps (and the last) only: no collective on the other six
