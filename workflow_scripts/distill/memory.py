"""Memory of a distillation step: the student's training step, the frozen teacher and the
output KL, whole or in chunks (see pretrain/memory.py for the parts both share)."""

from __future__ import annotations

import logging
import os

import torch

from ..encoder_shape import Shape
from ..pretrain.memory import (
    CHUNK_TENSORS,
    GB,
    USABLE_FRACTION,
    Precision,
    StepBytes,
    budget,
    document_mask_bytes,
    mlm_step_bytes,
)
from .losses import CHUNK_ELEMENTS, chunk_rows

log = logging.getLogger(__name__)

# fp32 [rows, V] tensors alive at once in the whole KL's forward pass (losses._soft_target_sum:
# both scaled logits, both log-softmaxes and the teacher's probabilities)
FULL_TENSORS = 5


def distill_step_bytes(
    student: Shape,
    teacher: Shape,
    micro: int,
    seq_len: int,
    predicted: float,
    kl_all: bool,
    p: Precision,
    full_kl: bool = False,
) -> float:
    """Student training step with its head on every position (kl_positions: all) or the masked ones,
    plus the frozen teacher's weights, its logits and the KL: in chunks (losses.CHUNK_ELEMENTS) or,
    with ``full_kl``, whole."""
    tokens = micro * seq_len
    rows = tokens if kl_all else predicted * tokens
    low = 2 if p.autocast else 4
    student_step = mlm_step_bytes(student, micro, seq_len, predicted, p)
    if full_kl:  # both logits and the forward pass's fp32 tensors (the gradient factor it keeps is smaller)
        output = rows * student.vocab * (2 * low + FULL_TENSORS * 4)
    else:  # student logits, teacher logits, the student logits' gradient; one chunk's fp32 tensors
        output = rows * student.vocab * low * 3 + CHUNK_TENSORS * 4 * min(CHUNK_ELEMENTS, rows * student.vocab)
    head = rows * 4 * student.hidden * 4
    teacher_weights = teacher.params * (2 if p.autocast else 4)
    teacher_last = tokens * 4 * teacher.hidden
    return student_step + output + head + teacher_weights + teacher_last


def distill_estimate(student, teacher, s, device: torch.device, full_kl: bool = False) -> StepBytes:
    """``s``: DistillSettings."""
    st, te = Shape.of(student), Shape.of(teacher)
    p = Precision.of(student, device, s.precision, s.residual_stream)
    kl_all = s.kl_positions == "all"
    # packing: documents: the student's and the teacher's attention masks
    return lambda micro, seq_len: (
        distill_step_bytes(st, te, micro, seq_len, max(s.phase_mask_probs()), kl_all, p, full_kl)
        + 2 * document_mask_bytes(s, micro, seq_len)
    )


def auto_estimate(student, teacher, s, device: torch.device, gpu_mem_gb: float) -> StepBytes:
    """The estimate ``micro_batch_size: auto`` fills: with the output KL whole wherever one sequence's step fits
    so, else chunked. Whole at a smaller micro-batch beats chunks at a larger one: on one H100 at
    ours-distilled-align's shape, micro 64 with the KL whole ran 98.8k tokens/s against 90.4k for micro 128 in
    chunks (both eager; benchmarks/README.md)."""
    whole = distill_estimate(student, teacher, s, device, full_kl=True)
    if whole(1, max(p.seq_len for p in s.phases)) <= budget(gpu_mem_gb):
        return whole
    return distill_estimate(student, teacher, s, device)


def available_bytes(device: torch.device, gpu_mem_gb: float) -> float:
    """What a step may fill: the usable share of the declared GPU memory, or of the machine's RAM on the CPU."""
    if device.type == "cuda":
        return budget(gpu_mem_gb)
    return USABLE_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def kl_rows(student, teacher, s, device: torch.device, world: int, gpu_mem_gb: float) -> int | None:
    """Rows per chunk of the output KL: None (whole, nothing recomputed in the backward pass) where the
    step's estimate with the whole KL fits at the longest phase and the resolved micro-batch; otherwise
    chunks of losses.CHUNK_ELEMENTS. ``s``: DistillSettings with the micro-batch resolved. Both give
    the same gradients bit for bit."""
    seq_len = max(p.seq_len for p in s.phases)
    share = max(s.batch_size // world, 1)
    micro = min(s.micro_batch_size or share, share)
    full = distill_estimate(student, teacher, s, device, full_kl=True)(micro, seq_len)
    room = available_bytes(device, gpu_mem_gb)
    if full <= room:
        log.info("output KL whole: step estimated at %.2f of %.1f GB", full / GB, room / GB)
        return None
    rows = chunk_rows(student.config.vocab_size)
    log.info("output KL in chunks of %d rows: whole, the step would need %.1f of %.1f GB", rows, full / GB, room / GB)
    return rows
