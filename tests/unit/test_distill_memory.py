"""Distillation within memory: chunked output terms, attention maps of mapped layers only, compiled objective."""

from __future__ import annotations

import pretrain_fixtures as fx
import pytest
import torch
import torch.nn.functional as F

from workflow_scripts.distill import losses
from workflow_scripts.distill import memory as distill_memory
from workflow_scripts.distill.objective import DistillObjective, attention_maps
from workflow_scripts.distill.settings import DistillSettings, LossWeights
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain.settings import Phase

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
    for rows in (None, 1, 5, 37, 100):  # whole, one row, uneven chunks, one chunk, a chunk larger than the input
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("term", [losses.kl_logits, losses.soft_cross_entropy])
def test_whole_and_chunked_output_terms_give_the_same_gradient_bit_for_bit(dtype, term):
    """Softmax works row by row, so chunking cannot move a gradient bit: a run's weights do not depend
    on which form the memory estimate chose; the loss is bitwise the same where one chunk holds every row."""
    g = torch.Generator().manual_seed(2)
    student = (3 * torch.randn(50, 31, generator=g)).to(dtype)
    teacher = (3 * torch.randn(50, 31, generator=g)).to(dtype)
    results = {}
    for rows in (None, 50, 7):
        x = student.clone().requires_grad_()
        loss = term(x, teacher, 2.0, rows)
        (0.3 * loss).backward()
        results[rows] = loss.detach(), x.grad
    whole_loss, whole_grad = results[None]
    assert torch.equal(results[50][0], whole_loss)
    torch.testing.assert_close(results[7][0], whole_loss, rtol=1e-6, atol=0)
    assert all(torch.equal(grad, whole_grad) for _, grad in results.values())


def test_whole_kl_peak_is_the_estimated_fp32_tensors_and_chunks_stay_below():
    student, teacher = torch.randn(64, 512).bfloat16().requires_grad_(), torch.randn(64, 512).bfloat16()
    whole = memory.measured_peak_bytes(lambda: losses.kl_logits(student, teacher, 2.0).backward())
    student.grad = None
    chunked = memory.measured_peak_bytes(lambda: losses.kl_logits(student, teacher, 2.0, 8).backward())
    elements = student.numel()
    assert whole <= distill_memory.FULL_TENSORS * 4 * elements * 1.01
    assert chunked < 2 * 4 * elements  # the bf16 gradient and a few fp32 chunks of 8 rows


def test_output_kl_is_whole_where_the_step_fits_and_chunked_where_it_does_not():
    teacher, student = _bert(2, 32, 4, "sdpa", 0), _bert(1, 32, 4, "sdpa", 1)
    s = DistillSettings(batch_size=8, micro_batch_size=8, phases=[Phase(seq_len=128)])
    assert distill_memory.kl_rows(student, teacher, s, torch.device("cpu"), 1, 80.0) is None
    cuda = torch.device("cuda")  # a device description only: the estimate needs no GPU
    whole = distill_memory.distill_estimate(student, teacher, s, cuda, full_kl=True)(8, 128)
    chunked = distill_memory.distill_estimate(student, teacher, s, cuda)(8, 128)
    assert chunked < whole
    gb = 1.01 * whole / memory.GB / memory.USABLE_FRACTION
    assert distill_memory.kl_rows(student, teacher, s, cuda, 1, gb) is None
    assert distill_memory.kl_rows(student, teacher, s, cuda, 1, 0.99 * gb) == losses.chunk_rows(60)
    assert distill_memory.kl_rows(student, teacher, s, cuda, 2, 0.99 * gb) is None  # half the share per process


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


@pytest.mark.parametrize(
    ("weights", "kl_rows"),
    [(ATTENTION, 7), (NO_ATTENTION, 7), (NO_ATTENTION, None)],
    ids=["attention-maps", "no-attention-maps", "whole-kl"],
)
def test_distillation_objective_compiles_as_one_graph(weights, kl_rows):
    """fullgraph=True fails on any graph break; the compiled loss and gradients equal the eager ones
    (7 rows: the 36 rows' KL in 6 chunks)."""
    teacher, student = _bert(4, 32, 4, "sdpa", 0).eval(), _bert(2, 32, 4, "sdpa", 1)
    objective = DistillObjective(student, teacher, weights, 2.0, [2, 4], kl_rows=kl_rows)
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


def test_auto_micro_batch_keeps_the_output_kl_whole_where_one_sequence_fits():
    """micro_batch_size auto fills the memory with the whole-KL step (faster than chunks at a larger micro-batch,
    measured on an H100); only where no micro-batch fits whole does it size the chunked step."""
    teacher, student = _bert(2, 32, 4, "sdpa", 0), _bert(1, 32, 4, "sdpa", 1)
    s = DistillSettings(batch_size=64, micro_batch_size="auto", phases=[Phase(seq_len=128)])
    cuda = torch.device("cuda")  # a device description only: the estimate needs no GPU
    whole = distill_memory.distill_estimate(student, teacher, s, cuda, full_kl=True)
    chunked = distill_memory.distill_estimate(student, teacher, s, cuda)
    gb = 1.01 * whole(16, 128) / memory.GB / memory.USABLE_FRACTION  # the whole step fits at 16, not at 32
    resolved = memory.resolve_micro_batch(s, 1, distill_memory.auto_estimate(student, teacher, s, cuda, gb), gb)
    assert resolved.micro_batch_size == 16
    assert distill_memory.kl_rows(student, teacher, resolved, cuda, 1, gb) is None
    tiny = 0.99 * whole(1, 128) / memory.GB / memory.USABLE_FRACTION  # not even one sequence fits whole
    assert distill_memory.auto_estimate(student, teacher, s, cuda, tiny)(1, 128) == chunked(1, 128)
