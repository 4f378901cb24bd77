"""Distillation within memory: chunked output terms, attention maps of mapped layers only, compiled objective."""

from __future__ import annotations

import pretrain_fixtures as fx
import pytest
import torch
import torch.nn.functional as F

from workflow_scripts.distill import losses
from workflow_scripts.distill.objective import DistillObjective, attention_maps
from workflow_scripts.distill.settings import LossWeights

torch.set_num_threads(1)


def _reference_kl(student, teacher, temperature):
    """The unchunked form: every [N, V] tensor in fp32 at once."""
    t = F.log_softmax(teacher.float() / temperature, dim=-1)
    s = F.log_softmax(student.float() / temperature, dim=-1)
    return (t.exp() * (t - s)).sum() * temperature**2


def _reference_soft_ce(student, teacher, temperature):
    p = F.softmax(teacher.float() / temperature, dim=-1)
    return -(p * F.log_softmax(student.float() / temperature, dim=-1)).sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    ("chunked", "reference"),
    [(losses.kl_logits, _reference_kl), (losses.soft_cross_entropy, _reference_soft_ce)],
)
def test_chunked_output_terms_equal_the_full_computation(dtype, chunked, reference):
    g = torch.Generator().manual_seed(0)
    student = (3 * torch.randn(37, 23, generator=g)).to(dtype)
    teacher = (3 * torch.randn(37, 23, generator=g)).to(dtype)
    for rows in (1, 5, 37, 100):  # one row, uneven chunks, one chunk, a chunk larger than the input
        a, b = student.clone().requires_grad_(), student.clone().requires_grad_()
        loss, ref = chunked(a, teacher, 2.0, rows), reference(b, teacher, 2.0)
        weight = torch.tensor(0.7)  # a non-unit upstream gradient
        (weight * loss).backward()
        (weight * ref).backward()
        assert loss.dtype == torch.float32
        torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-5)
        assert a.grad.dtype == dtype
        tol = 1e-6 if dtype == torch.float32 else 1e-2
        torch.testing.assert_close(a.grad.float(), b.grad.float(), rtol=tol, atol=tol)


def test_default_chunk_holds_a_bounded_number_of_elements():
    assert losses.chunk_rows(50265) * 50265 <= losses.CHUNK_ELEMENTS
    assert losses.chunk_rows(10**9) == 1


def _bert(layers, hidden, heads, attention, seed):
    return fx.tiny_bert(hidden, layers, heads, 60, intermediate=2 * hidden, attention=attention, seed=seed)


ATTENTION = LossWeights(mlm=1.0, kl=1.0, cosine=1.0, attention_mse=1.0, attention_kl=1.0)
NO_ATTENTION = LossWeights(mlm=1.0, kl=1.0, cosine=1.0, hidden_mse=1.0)


def _batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (3, 12), generator=g)
    positions = torch.tensor([0, 4, 13, 25, 35])
    return ids, positions, ids.reshape(-1)[positions], {"masked": 5.0, "tokens": 36.0}


def test_attention_maps_of_mapped_layers_equal_the_eager_kernel_under_sdpa():
    model = _bert(3, 32, 4, "eager", 0).eval()
    ids = _batch()[0]
    eager = model.bert(input_ids=ids, output_attentions=True, output_hidden_states=True)
    model.set_attn_implementation("sdpa")
    out = model.bert(input_ids=ids, output_hidden_states=True)
    maps = attention_maps(model, out.hidden_states, [1, 3])
    assert sorted(maps) == [1, 3]
    for layer, m in maps.items():
        torch.testing.assert_close(m, eager.attentions[layer - 1], rtol=1e-5, atol=1e-6)


def test_attention_terms_under_sdpa_equal_those_of_eager_maps():
    """At dropout 0, the losses and gradients are those of HF's eager attention maps of every layer."""
    teacher, student = _bert(4, 32, 4, "eager", 0).eval(), _bert(2, 16, 4, "eager", 1)
    ids, positions, labels, norms = _batch()
    mapping = [2, 4]
    s_out = student.bert(input_ids=ids, output_attentions=True)
    with torch.no_grad():
        t_out = teacher.bert(input_ids=ids, output_attentions=True)
    pairs = list(enumerate(mapping, start=1))
    expected_mse = sum(losses.squared_error(s_out.attentions[i - 1], t_out.attentions[t - 1]) for i, t in pairs)
    expected_kl = sum(losses.attention_kl(s_out.attentions[i - 1], t_out.attentions[t - 1]) for i, t in pairs)
    (expected_mse + expected_kl).backward()
    expected_grad = student.bert.encoder.layer[0].attention.self.query.weight.grad.clone()
    student.zero_grad()

    for model in (teacher, student):
        model.set_attn_implementation("sdpa")
    heads, seq = 4, 12  # weights that undo the normalisation, so the loss is the sum above
    weights = LossWeights(
        mlm=0.0, kl=0.0, cosine=0.0, attention_mse=norms["tokens"] * heads * seq, attention_kl=norms["tokens"] * heads
    )
    loss, _ = DistillObjective(student, teacher, weights, 2.0, mapping)(ids, positions, labels, norms)
    torch.testing.assert_close(loss, (expected_mse + expected_kl).detach())
    loss.backward()
    torch.testing.assert_close(student.bert.encoder.layer[0].attention.self.query.weight.grad, expected_grad)


@pytest.mark.parametrize("weights", [ATTENTION, NO_ATTENTION], ids=["attention-maps", "no-attention-maps"])
def test_distillation_objective_compiles_as_one_graph(weights, monkeypatch):
    """fullgraph=True fails on any graph break; the compiled loss and gradients equal the eager ones."""
    monkeypatch.setattr(losses, "CHUNK_ELEMENTS", 7 * 60)  # the 36 rows' KL in 6 chunks
    teacher, student = _bert(4, 32, 4, "sdpa", 0).eval(), _bert(2, 32, 4, "sdpa", 1)
    objective = DistillObjective(student, teacher, weights, 2.0, [2, 4])
    batch = _batch()
    eager_loss, _ = objective(*batch)
    eager_loss.backward()
    eager_grads = [p.grad.clone() for p in objective.parameters()]
    objective.zero_grad()
    compiled = torch.compile(objective, fullgraph=True, backend="aot_eager")
    loss, stats = compiled(*batch)
    loss.backward()
    torch.testing.assert_close(loss, eager_loss)
    for p, g in zip(objective.parameters(), eager_grads, strict=True):
        torch.testing.assert_close(p.grad, g)
