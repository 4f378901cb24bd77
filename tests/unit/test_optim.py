"""The optimisation recipe shared by pretraining, distillation and fine-tuning."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM, get_linear_schedule_with_warmup

from workflow_scripts import optim

torch.set_num_threads(1)
CPU = torch.device("cpu")
SHAPE = {"vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16}


RECIPE = {
    "lr": 1e-2,
    "weight_decay": 0.1,
    "eps": 1e-6,
    "betas": (0.9, 0.98),
    "total_steps": 10,
    "warmup_ratio": 0.3,
    "precision": "fp16",
    "device": CPU,
}


def _updater(model: torch.nn.Module, **changes) -> optim.Updater:
    return optim.updater(model, **{**RECIPE, **changes})


def tiny_bert() -> BertForMaskedLM:
    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(max_position_embeddings=16, **SHAPE))


def tiny_roberta() -> RobertaForMaskedLM:
    torch.manual_seed(0)
    return RobertaForMaskedLM(RobertaConfig(max_position_embeddings=18, pad_token_id=1, **SHAPE))


# --- the curve ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "factor"),
    [(0, 0.0), (1, 0.1), (5, 0.5), (10, 1.0), (55, 0.5), (91, 0.1), (99, 1 / 90), (100, 0.0), (120, 0.0)],
)
def test_linear_curve_starts_at_zero_peaks_after_warmup_and_ends_at_zero(step, factor):
    assert optim.linear_factor(step, total=100, warmup=optim.warmup_steps(0.1, 100)) == pytest.approx(factor)


def test_warmup_ratio_is_a_fraction_of_the_planned_updates_rounded_down():
    assert optim.warmup_steps(0.06, 1000) == 60
    assert optim.warmup_steps(0.1, 37) == 3
    assert optim.warmup_steps(0.0, 50) == 0
    assert optim.linear_factor(0, total=50, warmup=0) == 1.0  # no warm-up: the first update runs at the peak


@pytest.mark.parametrize(("total", "ratio"), [(100, 0.1), (37, 0.06), (12, 0.0), (5, 0.5)])
def test_the_curve_is_transformers_linear_schedule_with_warmup(total, ratio):
    ours = optim.schedule(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0), total, ratio)
    reference_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    reference = get_linear_schedule_with_warmup(reference_opt, int(ratio * total), total)
    for _ in range(total + 2):
        assert ours.get_last_lr()[0] == pytest.approx(reference.get_last_lr()[0], abs=1e-12)
        ours.optimizer.step()
        reference_opt.step()
        ours.step()
        reference.step()


def test_updates_report_the_learning_rate_they_ran_at():
    model = torch.nn.Linear(3, 1)
    update = _updater(model, weight_decay=0.01, eps=1e-8, total_steps=8, warmup_ratio=0.25, precision="bf16")
    lrs = []
    for _ in range(8):
        update.backward(model(torch.ones(2, 3)).sum())
        norm, lr = update.step(model.parameters(), grad_clip=1.0)
        assert norm is not None and norm > 0
        lrs.append(lr)
    assert lrs == pytest.approx([0.0, 5e-3, 1e-2, 5e-3 * 5 / 3, 5e-3 * 4 / 3, 5e-3, 5e-3 * 2 / 3, 5e-3 / 3])
    assert update.step(model.parameters(), grad_clip=0.0)[0] is None


# --- parameter groups and AdamW -------------------------------------------------------


def test_bert_gets_no_decay_on_biases_and_layernorm_only():
    model = tiny_bert()
    exempt = optim.no_decay_names(model)
    assert exempt == {n for n, _ in model.named_parameters() if n.endswith(".bias") or ".LayerNorm." in n}
    assert {
        "bert.embeddings.LayerNorm.weight",
        "bert.encoder.layer.0.attention.self.query.bias",
        "bert.encoder.layer.0.output.LayerNorm.weight",
        "cls.predictions.bias",
        "cls.predictions.transform.LayerNorm.weight",
    } <= exempt
    assert not exempt & {
        "bert.embeddings.word_embeddings.weight",
        "bert.embeddings.position_embeddings.weight",
        "bert.encoder.layer.0.attention.self.query.weight",
        "cls.predictions.transform.dense.weight",
    }


def test_roberta_groups_count_tied_and_frozen_parameters_right():
    model = tiny_roberta()
    model.roberta.embeddings.token_type_embeddings.weight.requires_grad_(False)
    update = _updater(model, lr=1e-3, weight_decay=0.01, warmup_ratio=0.1, precision="fp32")
    groups = update.optimizer.param_groups
    decay, no_decay = groups
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.01, 0.0)
    assert (decay["betas"], decay["eps"], decay["initial_lr"], decay["lr"]) == ((0.9, 0.98), 1e-6, 1e-3, 0.0)
    names = {id(p): n for n, p in model.named_parameters()}
    exempt = optim.no_decay_names(model)
    assert {names[id(p)] for p in no_decay["params"]} == exempt
    assert {"lm_head.bias", "lm_head.layer_norm.weight", "roberta.embeddings.LayerNorm.bias"} <= exempt
    # the output layer is the tied input embedding: one parameter, decayed once
    trained = decay["params"] + no_decay["params"]
    assert len(trained) == len({id(p) for p in trained}) == sum(p.requires_grad for p in model.parameters())
    assert "roberta.embeddings.word_embeddings.weight" in {names[id(p)] for p in decay["params"]}
    assert id(model.roberta.embeddings.token_type_embeddings.weight) not in {id(p) for p in trained}


# --- resuming -------------------------------------------------------------------------


def _run(update: optim.Updater, model: torch.nn.Module, steps: range) -> None:
    for step in steps:
        x = torch.randn(4, 3, generator=torch.Generator().manual_seed(step))
        update.backward((model(x) ** 2).mean())
        update.step(model.parameters(), grad_clip=1.0)


def _setup() -> tuple[torch.nn.Module, optim.Updater]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 1))
    update = _updater(model)
    return model, update


def test_a_restored_updater_continues_exactly():
    full_model, full = _setup()
    _run(full, full_model, range(10))
    part_model, part = _setup()
    _run(part, part_model, range(4))
    saved = {k: v for k, v in part.state_dict().items()}
    model, resumed = _setup()
    model.load_state_dict(part_model.state_dict())
    resumed.load_state_dict(saved)
    _run(resumed, model, range(4, 10))
    assert all(
        torch.equal(a, b) for a, b in zip(full_model.state_dict().values(), model.state_dict().values(), strict=True)
    )


def _trained(foreach: bool | None) -> tuple[torch.nn.Module, optim.Updater]:
    """tiny_roberta after 12 clipped updates (dropout on: the global generator is seeded first);
    ``foreach`` False: AdamW's per-tensor loop, None: the updater's own choice."""
    model = tiny_roberta()
    update = _updater(model, precision="fp32", total_steps=12)
    if foreach is not None:
        for group in update.optimizer.param_groups:
            group["foreach"] = foreach
    for step in range(12):
        ids = torch.randint(2, 50, (3, 10), generator=torch.Generator().manual_seed(step))
        update.backward(model(input_ids=ids, labels=ids).loss)
        update.step(list(model.parameters()), grad_clip=0.5)
    return model, update


def test_the_cpu_optimizer_runs_foreach_and_trains_the_same_bits_as_the_per_tensor_loop():
    """The multi-tensor AdamW on the CPU (fewer Python steps per update) applies the same
    elementwise arithmetic as the per-tensor loop: the same weights bit for bit, so the demo's
    numbers hold."""
    model, update = _trained(None)
    assert update.optimizer.defaults["foreach"] and not update.optimizer.defaults["fused"]
    loop_model, _ = _trained(False)
    pairs = zip(model.state_dict().values(), loop_model.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    start = tiny_roberta().roberta.embeddings.word_embeddings.weight
    assert not torch.equal(model.roberta.embeddings.word_embeddings.weight, start)


def test_scheduler_state_of_a_closure_curve_still_loads():
    """Checkpoints written while pretraining built its curve from a closure hold no curve state."""
    _, update = _setup()

    def closure(step: int) -> float:
        return 1.0

    groups = [{"params": [torch.zeros(1, requires_grad=True)]}, {"params": [torch.zeros(1, requires_grad=True)]}]
    old = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD(groups, lr=1e-2), closure)
    for _ in range(4):
        old.optimizer.step()
        old.step()
    state = old.state_dict()
    assert state["lr_lambdas"] == [None, None]
    update.scheduler.load_state_dict(state)
    assert update.scheduler.last_epoch == 4
    assert update.scheduler.get_last_lr()[0] == pytest.approx(1e-2)  # the saved lr until the next step
    update.scheduler.optimizer.step()
    update.scheduler.step()
    assert update.scheduler.get_last_lr()[0] == pytest.approx(1e-2 * 5 / 7)  # the curve itself is ours


# --- precision and seeding ------------------------------------------------------------


def test_autocast_only_on_cuda_and_a_scaler_only_for_fp16():
    cuda = torch.device("cuda")
    assert optim.amp_dtype(cuda, "bf16") is torch.bfloat16 and optim.amp_dtype(cuda, "fp16") is torch.float16
    assert optim.amp_dtype(cuda, "fp32") is None
    assert all(optim.amp_dtype(CPU, p) is None for p in ("fp32", "bf16", "fp16"))
    with optim.autocast(CPU, "bf16"):
        assert torch.ones(2, 2).matmul(torch.ones(2, 2)).dtype is torch.float32
    _, update = _setup()  # fp16 asked for, on CPU: the scaler passes losses through
    assert not update.scaler.is_enabled()


def test_seeding_covers_python_numpy_and_torch():
    def draws():
        return (
            random.random(),
            float(np.random.rand()),
            float(torch.rand(1)),
            float(torch.nn.Linear(2, 1).weight.detach()[0, 0]),
        )

    optim.seed_everything(3)
    first = draws()
    optim.seed_everything(3)
    assert draws() == first
    optim.seed_everything(4)
    assert all(a != b for a, b in zip(draws(), first, strict=True))


# 100 updates, 10 of warm-up; wsd decays over the last 20 (from update 80 to 0 at update 100)
@pytest.mark.parametrize(
    "shape, middle",
    [("linear", 0.5), ("1-sqrt", 1 - 0.5**0.5), ("cosine", 0.5)],
)
def test_wsd_warms_up_holds_the_peak_then_decays_to_zero_in_its_shape(shape, middle):
    curve = optim.Curve("wsd", decay_ratio=0.2, decay_shape=shape)
    factor = [optim.curve_factor(step, 100, 10, curve) for step in range(101)]
    assert factor[0] == 0.0 and factor[5] == pytest.approx(0.5)  # warm-up as on the linear curve
    assert factor[10] == factor[50] == factor[79] == factor[80] == 1.0  # stable up to the decay's start
    assert factor[90] == pytest.approx(middle)  # half-way through the decay
    assert factor[100] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in zip(factor[80:], factor[81:], strict=False))


def test_constant_with_warmup_holds_the_peak_to_the_end():
    curve = optim.Curve("constant")
    assert [optim.curve_factor(s, 100, 10, curve) for s in (0, 5, 10, 99)] == [0.0, 0.5, 1.0, 1.0]


def test_a_wsd_updater_runs_its_updates_at_the_curves_rates():
    model = torch.nn.Linear(2, 2)
    curve = optim.Curve("wsd", decay_ratio=0.5, decay_shape="1-sqrt")
    update = optim.updater(
        model,
        lr=1.0,
        weight_decay=0.0,
        eps=1e-8,
        total_steps=8,
        warmup_ratio=0.25,
        precision="fp32",
        device=torch.device("cpu"),
        curve=curve,
    )
    rates = []
    for _ in range(8):
        model(torch.ones(1, 2)).sum().backward()
        rates.append(update.step(model.parameters(), 0.0)[1])
    assert rates[:6] == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0, 1 - 0.25**0.5])
    assert rates[6:] == pytest.approx([1 - 0.5**0.5, 1 - 0.75**0.5])


def test_a_wsd_recipe_whose_warmup_and_decay_overlap_is_refused():
    from workflow_scripts.errors import PipelineError
    from workflow_scripts.pretrain.settings import PretrainSettings
    from workflow_scripts.typed import parse

    with pytest.raises(PipelineError, match=r"decay_ratio: warm-up and decay together must fit"):
        parse(PretrainSettings, {"schedule": "wsd", "warmup_ratio": 0.5, "decay_ratio": 0.6}, "models.m.pretrain")


@pytest.mark.parametrize("shape", ["linear", "1-sqrt", "cosine"])
def test_wsd_first_and_last_decay_updates_follow_the_shape(shape):
    curve = optim.Curve("wsd", decay_ratio=0.2, decay_shape=shape)
    f = optim.DECAY_SHAPES[shape]
    first, last = optim.curve_factor(81, 100, 10, curve), optim.curve_factor(99, 100, 10, curve)
    assert (first, last) == pytest.approx((f(1 / 20), f(19 / 20)))
    assert 1.0 > first > last > 0.0


@pytest.mark.parametrize("total, start", [(7, 4), (100000, 90000), (24, 15), (1000, 999), (3, 0)])
def test_a_decay_branch_curve_decays_over_exactly_its_own_steps(total, start):
    """A branch's curve: no warm-up, decay_ratio (total - start) / total, so its decay starts at ``start``."""
    curve = optim.Curve("wsd", decay_ratio=(total - start) / total, decay_shape="1-sqrt")
    assert optim.decay_start(total, curve.decay_ratio) == start
    assert optim.curve_factor(start, total, 0, curve) == 1.0
    assert optim.curve_factor(total, total, 0, curve) == pytest.approx(0.0, abs=1e-12)
