"""Distillation loss terms, each a sum over the items of a micro-batch (the caller normalises).

Shapes: logits [N, V] (masked positions), hidden states [B, L, H], attention maps
[B, heads, L, L] (probabilities, rows sum to 1).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def kl_logits(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """T^2 * sum_i KL(softmax(t_i/T) || softmax(s_i/T)) (Hinton et al.; DistilBERT)."""
    t = F.log_softmax(teacher.float() / temperature, dim=-1)
    s = F.log_softmax(student.float() / temperature, dim=-1)
    return (t.exp() * (t - s)).sum() * temperature**2


def soft_cross_entropy(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """sum_i -sum_v softmax(t_i/T)_v log softmax(s_i/T)_v (TinyBERT's prediction-layer loss)."""
    p = F.softmax(teacher.float() / temperature, dim=-1)
    return -(p * F.log_softmax(student.float() / temperature, dim=-1)).sum()


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
