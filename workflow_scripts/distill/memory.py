"""Memory of a distillation step: the student's training step, the frozen teacher and the
chunked output KL (see pretrain/memory.py for the parts both share)."""

from __future__ import annotations

import torch

from ..pretrain.memory import CHUNK_TENSORS, Encoder, Precision, StepBytes, document_mask_bytes, mlm_step_bytes
from .losses import CHUNK_ELEMENTS


def distill_step_bytes(
    student: Encoder, teacher: Encoder, micro: int, seq_len: int, predicted: float, kl_all: bool, p: Precision
) -> float:
    """Student training step with its head on every position (kl_positions: all) or the masked ones,
    plus the frozen teacher's weights, its logits and the chunked KL (losses.CHUNK_ELEMENTS)."""
    tokens = micro * seq_len
    rows = tokens if kl_all else predicted * tokens
    low = 2 if p.autocast else 4
    student_step = mlm_step_bytes(student, micro, seq_len, predicted, p)
    logits = rows * student.vocab * low * 3  # student logits, teacher logits, the student logits' gradient
    head = rows * 4 * student.hidden * 4
    chunk = CHUNK_TENSORS * 4 * min(CHUNK_ELEMENTS, rows * student.vocab)
    teacher_weights = teacher.params * (2 if p.autocast else 4)
    teacher_last = tokens * 4 * teacher.hidden
    return student_step + logits + head + chunk + teacher_weights + teacher_last


def distill_estimate(student, teacher, s, device: torch.device) -> StepBytes:
    """``s``: DistillSettings."""
    st, te, p = Encoder.of(student), Encoder.of(teacher), Precision.of(student, device, s.precision)
    kl_all = s.kl_positions == "all"
    # packing: documents: the student's and the teacher's attention masks
    return lambda micro, seq_len: (
        distill_step_bytes(st, te, micro, seq_len, max(s.phase_mask_probs()), kl_all, p)
        + 2 * document_mask_bytes(s, micro, seq_len)
    )
