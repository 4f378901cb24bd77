"""Device memory of one training micro-step, estimated before launch, and ``micro_batch_size: auto``.

The estimate counts what a transformers BERT/RoBERTa/ELECTRA layer keeps for its backward
pass, tensor by tensor, per token (so it is linear in the micro-batch), plus the weights,
AdamW state and the gradients alive at the peak. Under bf16 autocast (the GPU case) the residual stream and
LayerNorms stay fp32 while each Linear saves its own bf16 copy of its input (with ``residual_stream:
autocast`` the norms return bf16, which the q, k and v Linears share); attention runs
a fused kernel (flash, memory-efficient or CPU flash) that keeps q, k, v, its output and
the log-sum-exp, or, where the fused kernel cannot run (CPU with attention dropout), the
math kernel that also keeps the [heads, L, L] probabilities and dropout mask. Blocks that keep
documents apart (``packing: documents``) add their [L, L] attention mask per sequence.
benchmarks/bench_memory.py compares it with the peak measured on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from ..encoder_shape import ADAMW_BYTES, AUTOCAST_COPY_BYTES, WEIGHT_BYTES, Shape
from .settings import PretrainSettings

log = logging.getLogger(__name__)
StepBytes = Callable[[int, int], float]  # (micro-batch, sequence length) -> peak bytes

# Share of the declared GPU memory micro-batches may fill: the rest is the CUDA context,
# cuBLAS/NCCL workspaces and the caching allocator's fragmentation.
USABLE_FRACTION = 0.85
GB = 1e9
CHUNK_TENSORS = 4  # fp32 chunks alive at once in the chunked KL's backward (benchmarks/bench_memory.py)


@dataclass(frozen=True)
class Precision:
    """Bytes per element of activations; ``autocast``: Linears save their own low-precision input copies;
    ``residual_low``: the norms return the autocast dtype (``residual_stream: autocast``), so the q, k and v
    Linears share one saved input instead of three casts (each norm still saves its fp32 input)."""

    autocast: bool
    dropout: bool
    fused_attention: bool
    residual_low: bool = False

    @classmethod
    def of(cls, model: torch.nn.Module, device: torch.device, precision: str, residual_stream: str) -> Precision:
        c = model.config
        autocast = device.type == "cuda" and precision in ("bf16", "fp16")
        attention_dropout, hidden_dropout = dropouts(c)
        # CPU SDPA falls back to the math kernel when attention dropout is on
        fused = device.type == "cuda" or attention_dropout == 0
        return cls(
            autocast, hidden_dropout > 0 or attention_dropout > 0, fused, autocast and residual_stream == "autocast"
        )


def dropouts(config) -> tuple[float, float]:
    """(attention, hidden) dropout of a BERT-style or a ModernBERT config."""
    if config.model_type == "modernbert":
        return config.attention_dropout, max(config.mlp_dropout, config.embedding_dropout)
    return config.attention_probs_dropout_prob, config.hidden_dropout_prob


def attention_bytes_per_token(e: Shape, seq_len: int, p: Precision) -> float:
    """What the attention kernel keeps: its output and log-sum-exp, or the math kernel's probabilities."""
    if p.fused_attention:
        return (2 if p.autocast else 4) * e.hidden + 4 * e.heads
    # fp32 probabilities and their safe-softmax copy, dropout mask and dropped copy
    return (8 + (5 if p.dropout else 0)) * e.heads * seq_len


def glu_layer_bytes_per_token(e: Shape, seq_len: int, p: Precision) -> float:
    """What one ModernBERT layer keeps for backward, per token: two pre-norms, the fused q/k/v
    projection (v a view of it) and the rotated q and k, attention, and the GeGLU's 2 x i wide
    input projection, activation and product."""
    h, i = e.hidden, e.intermediate
    low = 2 if p.autocast else 4
    norms = 2 * (4 * h + 8)  # fp32 LayerNorm inputs and their statistics (layer 0's attention norm is none)
    linear_inputs = 2 * (low * h if p.autocast else 4 * h)  # the norms' outputs, input of Wqkv and Wi
    qkv = 3 * low * h + 2 * low * h  # Wqkv's output and the rotated q and k
    context = low * h
    masks = (h + i + low * i) if p.dropout else 0  # attention-output and GeGLU dropout: masks and the dropped copy
    ffn = low * (2 * i + i + i)  # Wi's output, GELU of its first half, the product
    return norms + linear_inputs + qkv + attention_bytes_per_token(e, seq_len, p) + context + masks + ffn


def layer_bytes_per_token(e: Shape, seq_len: int, p: Precision) -> float:
    """What one encoder layer keeps for backward, per token."""
    if e.glu:
        return glu_layer_bytes_per_token(e, seq_len, p)
    h, i, a = e.hidden, e.intermediate, e.heads
    low = 2 if p.autocast else 4
    # q, k, v Linears: three bf16 casts of the norm's fp32 output, its bf16 output shared, or one fp32 input
    inputs = (low * h if p.residual_low else 3 * low * h) if p.autocast else 4 * h
    qkv = 3 * low * h
    if p.fused_attention:
        attention = low * h + 4 * a  # output and log-sum-exp
    else:
        # fp32 probabilities and their safe-softmax copy, dropout mask and dropped copy
        per_prob = 8 + (5 if p.dropout else 0)
        attention = per_prob * a * seq_len
    context = low * h  # the heads' output made contiguous, input of the output projection
    masks = 2 * h if p.dropout else 0  # two hidden dropouts, one byte per element
    norms = 2 * (4 * h + 8)  # fp32 LayerNorm inputs and their statistics
    ffn_in = low * h if p.autocast else 4 * h
    ffn = 2 * low * i  # GELU input and output
    return inputs + qkv + attention + context + masks + norms + ffn_in + ffn


def head_bytes_per_row(e: Shape, p: Precision) -> float:
    """Output head and cross-entropy per predicted row, at the peak of their backward pass."""
    low = 2 if p.autocast else 4
    hidden = 4 * e.hidden * (3 if p.autocast else 4)
    logits = (low + 4 + 4 + 4) * e.vocab if p.autocast else 3 * 4 * e.vocab  # logits, fp32 log-softmax, grads
    return hidden + logits


def state_bytes(params: int, p: Precision, trained: bool = True) -> float:
    """fp32 weights and AdamW moments, bf16 weight copies held from forward to backward.

    Gradients are left out: at the peak (the start of the backward pass) only the head's
    exist, since each layer's gradients appear as its saved tensors are freed; the caller
    adds the head's.
    """
    return params * (WEIGHT_BYTES + (ADAMW_BYTES if trained else 0) + (AUTOCAST_COPY_BYTES if p.autocast else 0))


def mlm_step_bytes(e: Shape, micro: int, seq_len: int, predicted: float, p: Precision) -> float:
    """Peak bytes of one masked-LM micro-step: states, every layer's saved tensors, the sparse head."""
    tokens = micro * seq_len
    embeddings = tokens * (4 * e.hidden + 8 + (e.hidden if p.dropout else 0))
    if e.glu:
        embeddings += tokens * (4 * e.hidden + 8)  # the final norm's input and statistics
    layers = e.layers * tokens * layer_bytes_per_token(e, seq_len, p)
    head = predicted * tokens * head_bytes_per_row(e, p) + 4 * e.vocab * e.hidden  # and the decoder's gradient
    return state_bytes(e.params, p) + embeddings + layers + head


def electra_step_bytes(
    discriminator: Shape, generator: Shape, micro: int, seq_len: int, predicted: float, p: Precision
) -> float:
    """Generator MLM (sparse head, Gumbel draw over its rows) plus the discriminator on every token."""
    tokens = micro * seq_len
    shared = generator.hidden * generator.vocab  # shared embeddings are counted once
    gen = mlm_step_bytes(dataclasses.replace(generator, params=generator.params - shared), micro, seq_len, predicted, p)
    sampling = predicted * tokens * 3 * 4 * generator.vocab
    disc = mlm_step_bytes(dataclasses.replace(discriminator, vocab=1), micro, seq_len, 1.0, p)
    return gen + sampling + disc


def document_mask_bytes(s: PretrainSettings, micro: int, seq_len: int) -> float:
    """The block-diagonal mask of ``packing: documents``: booleans for sdpa, fp32 additive for eager."""
    if s.packing != "documents":
        return 0.0
    return micro * seq_len**2 * (1 if s.attention == "sdpa" else 4)


def mlm_estimate(model: torch.nn.Module, s: PretrainSettings, device: torch.device) -> StepBytes:
    e, p = Shape.of(model), Precision.of(model, device, s.precision, s.residual_stream)
    return lambda micro, seq_len: (
        mlm_step_bytes(e, micro, seq_len, max(s.phase_mask_probs()), p) + document_mask_bytes(s, micro, seq_len)
    )


def electra_estimate(discriminator, generator, s: PretrainSettings, device: torch.device) -> StepBytes:
    d, g = Shape.of(discriminator), Shape.of(generator)
    p = Precision.of(discriminator, device, s.precision, s.residual_stream)
    return lambda micro, seq_len: (
        electra_step_bytes(d, g, micro, seq_len, max(s.phase_mask_probs()), p)
        + 2 * document_mask_bytes(s, micro, seq_len)
    )


def add_gpu_memory_argument(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--gpu-mem-gb",
        type=float,
        default=80.0,
        help="memory of one GPU in GB that micro_batch_size: auto fills (the rule passes resources' gpu_mem_gb)",
    )


def resolve_micro_batch(s: PretrainSettings, world: int, bytes_for: StepBytes, gpu_mem_gb: float) -> PretrainSettings:
    """``s`` with ``micro_batch_size: auto`` replaced by the micro-batch that fits ``gpu_mem_gb`` at the
    longest phase. Only the training step reads the result: the resumption key keeps ``auto``, so a run
    resumed on another card continues with the micro-batch that fits there."""
    if s.micro_batch_size != "auto":
        return s
    seq_len = max(p.seq_len for p in s.phases)
    micro = auto_micro_batch(lambda m: bytes_for(m, seq_len), max(s.batch_size // world, 1), budget(gpu_mem_gb))
    log.info(
        "micro_batch_size auto: %d sequences of %d tokens (estimated %.1f of %.0f GB)",
        micro,
        seq_len,
        bytes_for(micro, seq_len) / GB,
        gpu_mem_gb,
    )
    return dataclasses.replace(s, micro_batch_size=micro)


def auto_micro_batch(bytes_for, share: int, budget_bytes: float) -> int:
    """The largest divisor of the per-process share whose estimate fits the budget (at least 1)."""
    fitting = [m for m in range(1, share + 1) if share % m == 0 and bytes_for(m) <= budget_bytes]
    return max(fitting, default=1)


def budget(gpu_mem_gb: float) -> float:
    return USABLE_FRACTION * gpu_mem_gb * GB


def measured_peak_bytes(fn) -> int:
    """Peak of tensor memory allocated on the CPU while ``fn`` runs, above what was live before.

    Read from torch.profiler's allocator events (each allocation and free, in order): the
    CPU analogue of torch.cuda.max_memory_allocated.
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak
