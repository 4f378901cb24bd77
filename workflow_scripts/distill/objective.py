"""The distillation objective: student MLM plus weighted teacher terms, for the shared training loop."""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from ..pretrain.documents import block_diagonal, document_inputs
from ..pretrain.model import linear_weights, masked_hidden, matmul_flops_per_token, mlm_parts
from . import losses
from .settings import LossWeights

LAYERWISE = ("hidden_mse", "hidden_cosine", "attention_mse", "attention_kl")


def attention_maps(
    model: nn.Module,
    hidden_states: tuple[torch.Tensor, ...],
    layers: list[int],
    position_ids: torch.Tensor | None = None,
) -> dict[int, torch.Tensor]:
    """Attention probabilities [B, heads, L, L] of the given layers (1-based), from their input hidden states.

    The model itself runs its fast attention kernel (SDPA) in every layer; only the mapped layers'
    maps are formed here, as the eager kernel forms them before dropout, softmax(QK^T / sqrt(d)).
    Pretraining blocks carry no padding; blocks packed with ``packing: documents`` (``position_ids``
    given) attend within each document only.
    """
    allowed = None if position_ids is None else block_diagonal(position_ids)
    encoder = mlm_parts(model)[0].encoder
    maps = {}
    for layer in sorted(set(layers)):
        attn, h = encoder.layer[layer - 1].attention.self, hidden_states[layer - 1]
        shape = (*h.shape[:-1], -1, attn.attention_head_size)
        q = attn.query(h).view(shape).transpose(1, 2)
        k = attn.key(h).view(shape).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * attn.attention_head_size**-0.5
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        maps[layer] = torch.softmax(scores, dim=-1, dtype=torch.float32)
    return maps


class DistillObjective(nn.Module):
    """Registered parameters: the student and the projections; the frozen teacher is held aside."""

    def __init__(
        self,
        student: nn.Module,
        teacher: nn.Module,
        weights: LossWeights,
        temperature: float,
        layer_map: list[int],
        teacher_autocast=contextlib.nullcontext,
        kl_positions: str = "all",
        kl_rows: int | None = None,
    ) -> None:
        super().__init__()
        self.model = student
        object.__setattr__(self, "teacher", teacher)  # not a submodule: not trained, saved or synchronised
        self.weights = {k: v for k, v in vars(weights).items() if v > 0}
        self.temperature, self.layer_map, self.kl_all = temperature, layer_map, kl_positions == "all"
        self.kl_rows = kl_rows  # rows per chunk of the output terms; None: whole (distill/memory.kl_rows decides)
        self.teacher_autocast = teacher_autocast
        hs, ht = student.config.hidden_size, teacher.config.hidden_size
        self.proj = nn.Linear(hs, ht, bias=False) if hs != ht else nn.Identity()
        self.embedding_proj = (
            nn.Linear(hs, ht, bias=False) if hs != ht and "embedding_mse" in self.weights else nn.Identity()
        )
        self.needs_hidden = any(k in self.weights for k in ("hidden_mse", "hidden_cosine", "embedding_mse"))
        self.needs_attention = any(k in self.weights for k in ("attention_mse", "attention_kl"))
        self.needs_logits = any(k in self.weights for k in ("kl", "soft_ce"))

    @property
    def fixed_predictions(self) -> bool:
        """Padded prediction slots suit every term but kl and soft_ce on masked positions, which would compare them."""
        return not (self.needs_logits and not self.kl_all)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        labels: torch.Tensor,
        norms: dict[str, float],
        position_ids: torch.Tensor | None = None,
    ):
        flags = {"output_hidden_states": self.needs_hidden or self.needs_attention}
        s_enc, s_head = mlm_parts(self.model)
        s_out = s_enc(input_ids=input_ids, **flags, **document_inputs(self.model, position_ids))
        if self.needs_logits and self.kl_all:  # the head runs once on every position
            s_all = s_head(s_out.last_hidden_state).flatten(0, 1)
            s_logits = s_all.index_select(0, positions)
        else:
            s_all = s_logits = s_head(masked_hidden(s_out.last_hidden_state, positions))
        terms = {"mlm": F.cross_entropy(s_logits.float(), labels, reduction="sum") / norms["masked"]}
        if len(self.weights) > ("mlm" in self.weights):
            t_enc, t_head = mlm_parts(self.teacher)
            with torch.no_grad(), self.teacher_autocast():
                t_out = t_enc(input_ids=input_ids, **flags, **document_inputs(self.teacher, position_ids))
                t_logits = None
                if self.needs_logits:
                    t_hidden = (
                        t_out.last_hidden_state if self.kl_all else masked_hidden(t_out.last_hidden_state, positions)
                    )
                    t_logits = t_head(t_hidden).flatten(0, -2)
            terms.update(self._teacher_terms(s_out, t_out, s_all, t_logits, norms, position_ids))
        loss = sum(self.weights.get(k, 0.0) * v for k, v in terms.items())
        stats = {k: v.detach() for k, v in terms.items()}
        stats["loss"] = loss.detach()
        return loss, stats

    def flops_per_token(self, seq_len: int, mask_prob: float) -> float:
        """FLOPS_FORMULA for the student's training, the teacher's forward pass and the terms' matmuls."""
        student, teacher = self.model, self.teacher
        head_fraction = 1.0 if self.kl_all else mask_prob
        flops = matmul_flops_per_token(
            student.config, *mlm_parts(student), seq_len, head_fraction if self.needs_logits else mask_prob
        )
        t_enc, t_head = mlm_parts(teacher)
        flops += matmul_flops_per_token(
            teacher.config, t_enc, t_head if self.needs_logits else None, seq_len, head_fraction, passes=1
        )
        w = self.weights
        projected = ("cosine" in w) + len(self.layer_map) * sum(k in w for k in ("hidden_mse", "hidden_cosine"))
        flops += 6 * (
            projected * linear_weights(self.proj) + ("embedding_mse" in w) * linear_weights(self.embedding_proj)
        )
        if self.needs_attention:  # the mapped layers' query and key projections and scores, formed again
            for model, layers, passes in ((student, len(self.layer_map), 3), (teacher, len(set(self.layer_map)), 1)):
                h = model.config.hidden_size
                flops += passes * layers * (2 * 2 * h * h + 2 * h * seq_len)
        return flops

    def _teacher_terms(self, s_out, t_out, s_logits, t_logits, norms, position_ids=None) -> dict[str, torch.Tensor]:
        w, T, out = self.weights, self.temperature, {}
        tokens, width = norms["tokens"], self.teacher.config.hidden_size
        count = norms["tokens"] if self.kl_all else norms["masked"]
        if "kl" in w:
            out["kl"] = losses.kl_logits(s_logits, t_logits, T, self.kl_rows) / count
        if "soft_ce" in w:
            out["soft_ce"] = losses.soft_cross_entropy(s_logits, t_logits, T, self.kl_rows) / count
        if "cosine" in w:
            out["cosine"] = losses.cosine_distance(self.proj(s_out.last_hidden_state), t_out.last_hidden_state) / tokens
        if "embedding_mse" in w:
            out["embedding_mse"] = losses.squared_error(
                self.embedding_proj(s_out.hidden_states[0]), t_out.hidden_states[0]
            ) / (tokens * width)
        pairs = list(enumerate(self.layer_map, start=1))
        if self.needs_attention:
            with torch.no_grad(), self.teacher_autocast():
                t_maps = attention_maps(self.teacher, t_out.hidden_states, self.layer_map, position_ids)
            s_maps = attention_maps(self.model, s_out.hidden_states, [i for i, _ in pairs], position_ids)
        if "hidden_mse" in w:
            out["hidden_mse"] = sum(
                losses.squared_error(self.proj(s_out.hidden_states[i]), t_out.hidden_states[t]) for i, t in pairs
            ) / (tokens * width)
        if "hidden_cosine" in w:
            out["hidden_cosine"] = (
                sum(losses.cosine_distance(self.proj(s_out.hidden_states[i]), t_out.hidden_states[t]) for i, t in pairs)
                / tokens
            )
        if self.needs_attention:
            heads, seq = s_maps[1].shape[1], s_maps[1].shape[-1]
            if "attention_mse" in w:
                out["attention_mse"] = sum(losses.squared_error(s_maps[i], t_maps[t]) for i, t in pairs) / (
                    tokens * heads * seq
                )
            if "attention_kl" in w:
                out["attention_kl"] = sum(losses.attention_kl(s_maps[i], t_maps[t]) for i, t in pairs) / (
                    tokens * heads
                )
        return out
