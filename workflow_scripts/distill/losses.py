"""Distillation loss terms, each a sum over the items of a micro-batch (the caller normalises).

Shapes: logits [N, V] (masked positions), hidden states [B, L, H], attention maps
[B, heads, L, L] (probabilities, rows sum to 1).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# fp32 elements of one chunk of [rows, V] (64 MiB): bounds the transient memory of the output terms
CHUNK_ELEMENTS = 1 << 24


def chunk_rows(vocab: int, elements: int | None = None) -> int:
    return max(1, (elements or CHUNK_ELEMENTS) // max(vocab, 1))


def _soft_target_sum(student, teacher, temperature: float, kind: str, keep: bool):
    """(the chunk's loss sum, its fp32 gradient factor softmax(s/T) - softmax(t/T) when ``keep``).

    In-place steps reproduce the out-of-place arithmetic bit for bit (an elementwise product
    or difference rounds the same wherever it is stored), with fewer fresh [rows, V] buffers.
    """
    xs, xt = student.float() / temperature, teacher.float() / temperature
    s, t = F.log_softmax(xs, dim=-1), F.log_softmax(xt, dim=-1)
    p = t.exp()
    part = t.sub_(s).mul_(p).sum() if kind == "kl" else p.mul_(s).sum().neg()
    del s, t, p
    return part, (F.softmax(xs, dim=-1).sub_(F.softmax(xt, dim=-1)) if keep else None)


class _SoftTargets(torch.autograd.Function):
    """sum over rows of a soft-target loss between student and teacher logits.

    ``kind`` is "kl" (KL(t || s), times T^2) or "soft_ce" (-sum p_t log p_s); both have the
    gradient scale * (softmax(s/T) - softmax(t/T)) with scale T for kl and 1/T for soft_ce.
    ``rows`` None: the whole [N, V] at once, the forward pass keeping the fp32 gradient factor
    for the backward pass (nothing recomputed; the logits themselves are not kept). ``rows`` an
    int: a chunk of rows at a time, each upcast to fp32, reduced and freed, in the forward pass
    and again in the backward pass (which recomputes the softmaxes), so no [N, V] fp32 tensor
    ever exists: the logits (any dtype) and the student's gradient (the student logits' dtype)
    are the only full-size tensors. Softmax works row by row, so both give the same gradient bit
    for bit, and the same loss where one chunk holds every row.
    """

    @staticmethod
    def forward(ctx, student, teacher, temperature: float, kind: str, rows: int | None):
        ctx.temperature, ctx.kind, ctx.rows, ctx.dtype = temperature, kind, rows, student.dtype
        if rows is None:
            total, factor = _soft_target_sum(student, teacher, temperature, kind, keep=True)
            ctx.save_for_backward(factor)
        else:
            ctx.save_for_backward(student, teacher)
            total = student.new_zeros((), dtype=torch.float32)
            for start in range(0, student.shape[0], rows):
                part, _ = _soft_target_sum(
                    student[start : start + rows], teacher[start : start + rows], temperature, kind, keep=False
                )
                total = total + part
        return total * temperature**2 if kind == "kl" else total

    @staticmethod
    def backward(ctx, grad_out):
        T, rows = ctx.temperature, ctx.rows
        scale = grad_out * (T if ctx.kind == "kl" else 1 / T)
        if rows is None:
            (factor,) = ctx.saved_tensors
            return (factor * scale).to(ctx.dtype), None, None, None, None
        student, teacher = ctx.saved_tensors
        grad = torch.empty_like(student)
        for start in range(0, student.shape[0], rows):
            p_s = F.softmax(student[start : start + rows].float() / T, dim=-1)
            p_t = F.softmax(teacher[start : start + rows].float() / T, dim=-1)
            grad[start : start + rows] = p_s.sub_(p_t).mul_(scale).to(grad.dtype)
        return grad, None, None, None, None


def kl_logits(
    student: torch.Tensor, teacher: torch.Tensor, temperature: float, rows: int | None = None
) -> torch.Tensor:
    """T^2 * sum_i KL(softmax(t_i/T) || softmax(s_i/T)) (Hinton et al.; DistilBERT); ``rows``: chunked."""
    return _SoftTargets.apply(student, teacher.detach(), temperature, "kl", rows)


def soft_cross_entropy(
    student: torch.Tensor, teacher: torch.Tensor, temperature: float, rows: int | None = None
) -> torch.Tensor:
    """sum_i -sum_v softmax(t_i/T)_v log softmax(s_i/T)_v (TinyBERT's prediction-layer loss); ``rows``: chunked."""
    return _SoftTargets.apply(student, teacher.detach(), temperature, "soft_ce", rows)


def cosine_distance(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """sum over vectors of 1 - cos(s, t), the last dimension being the vector."""
    return (1 - F.cosine_similarity(student.float(), teacher.float(), dim=-1)).sum()


def squared_error(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """sum of squared differences (divided by the element count by the caller, giving MSE)."""
    return (student.float() - teacher.float()).pow(2).sum()


def attention_kl(student: torch.Tensor, teacher: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """sum over batch, heads and queries of KL(teacher row || student row) of attention maps."""
    t, s = teacher.float(), student.float()
    return (t * (torch.log(t + eps) - torch.log(s + eps))).sum()
