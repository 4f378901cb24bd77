"""Memory of a training micro-step: the estimate behind ``micro_batch_size: auto`` against the
peak measured on the CPU, the chunked distillation KL against the full one, and what ``auto``
chooses for the paper's models on an 80 GB card.

    python benchmarks/bench_memory.py [--out benchmarks/results/memory.json]

Measured: the peak of tensor memory the CPU allocator hands out during one forward and backward
pass (torch.profiler's memory events, replayed in order; the CPU analogue of
``torch.cuda.max_memory_allocated``), plus the fp32 weights and AdamW moments already live.
The CPU runs fp32, or bf16 autocast as a stand-in for the GPU's layout; CPU SDPA with
attention dropout runs the math kernel, which the estimate models as such. The paper-scale
figures are estimates only (bf16 autocast, fused attention, as on a GPU): no GPU produced them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import torch
from gpu_check_pretrain import masked_lm
from transformers import (
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
)

from workflow_scripts.atomic import write_json
from workflow_scripts.distill import losses
from workflow_scripts.distill import memory as distill_memory
from workflow_scripts.distill.objective import DistillObjective
from workflow_scripts.distill.settings import LossWeights
from workflow_scripts.encoder_shape import Shape
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain.electra import ElectraObjective
from workflow_scripts.pretrain.model import MLMObjective
from workflow_scripts.pretrain.residual import keep_residual_in_autocast_dtype
from workflow_scripts.pretrain.settings import ElectraSettings

MASK = 0.15
# (name, hidden, layers, heads, vocab, micro, seq_len, dropout, bf16 autocast, residual_stream)
MLM_CASES = [
    ("mlm h64 L2", 64, 2, 4, 1000, 8, 64, 0.1, False, "fp32"),
    ("mlm h128 L2", 128, 2, 4, 1000, 8, 128, 0.1, False, "fp32"),
    ("mlm h128 L2 no dropout", 128, 2, 4, 1000, 16, 128, 0.0, False, "fp32"),
    ("mlm h256 L4", 256, 4, 4, 8000, 8, 128, 0.1, False, "fp32"),
    ("mlm h256 L4 bf16", 256, 4, 4, 8000, 8, 128, 0.0, True, "fp32"),
    ("mlm h256 L4 bf16 residual autocast", 256, 4, 4, 8000, 8, 128, 0.0, True, "autocast"),
    ("mlm h256 L4 s256 bf16", 256, 4, 4, 8000, 4, 256, 0.1, True, "fp32"),
]


def _bert(hidden, layers, heads, vocab, seq_len, dropout, seed=0):
    torch.manual_seed(seed)
    return masked_lm("bert", hidden, layers, heads, vocab, seq_len, torch.device("cpu"), dropout)


def measure(objective, vocab: int, micro: int, seq_len: int, bf16: bool, live_bytes: float) -> float:
    ids = torch.randint(5, vocab, (micro, seq_len))
    n = int(MASK * micro * seq_len)
    positions = torch.randperm(micro * seq_len)[:n]
    norms = {"masked": float(n), "tokens": float(micro * seq_len)}

    def step():
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            loss, _ = objective(ids, positions, ids.reshape(-1)[positions], norms)
        loss.backward()

    return memory.measured_peak_bytes(step) + live_bytes


def _row(name, micro, seq_len, estimated, measured) -> dict:
    return {
        "case": name,
        "micro": micro,
        "seq_len": seq_len,
        "estimated_mb": estimated / 2**20,
        "measured_mb": measured / 2**20,
        "ratio": estimated / measured,
    }


def estimate_vs_measured() -> list[dict]:
    rows = []
    for name, h, layers, heads, vocab, micro, seq_len, dropout, bf16, residual in MLM_CASES:
        model = _bert(h, layers, heads, vocab, seq_len, dropout)
        if residual == "autocast":
            keep_residual_in_autocast_dtype(model)
        e = Shape.of(model)
        p = memory.Precision(
            autocast=bf16, dropout=dropout > 0, fused_attention=dropout == 0, residual_low=residual == "autocast"
        )
        measured = measure(MLMObjective(model), vocab, micro, seq_len, bf16, 12 * e.params)
        rows.append(_row(name, micro, seq_len, memory.mlm_step_bytes(e, micro, seq_len, MASK, p), measured))
    teacher, student = _bert(256, 4, 4, 4000, 128, 0.0).eval(), _bert(256, 2, 4, 4000, 128, 0.0, seed=1)
    objective = DistillObjective(student, teacher, LossWeights(), 2.0, [2, 4])
    st, te = Shape.of(student), Shape.of(teacher)
    p = memory.Precision(autocast=False, dropout=False, fused_attention=True)
    measured = measure(objective, 4000, 8, 128, False, 12 * st.params + 4 * te.params)
    rows.append(
        _row("distill kl all", 8, 128, distill_memory.distill_step_bytes(st, te, 8, 128, MASK, True, p), measured)
    )
    common = dict(vocab_size=4000, embedding_size=128, max_position_embeddings=128, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    disc = ElectraForPreTraining(ElectraConfig(hidden_size=128, num_attention_heads=4, intermediate_size=512, **common))
    gen = ElectraForMaskedLM(ElectraConfig(hidden_size=64, num_attention_heads=2, intermediate_size=256, **common))
    gen.electra.embeddings = disc.electra.embeddings
    d, g = Shape.of(disc), Shape.of(gen)
    p = memory.Precision(autocast=False, dropout=True, fused_attention=True)
    trained = sum(x.numel() for x in {id(x): x for m in (disc, gen) for x in m.parameters()}.values())
    measured = measure(ElectraObjective(disc, gen, ElectraSettings()), 4000, 8, 128, False, 12 * trained)
    rows.append(_row("electra", 8, 128, memory.electra_step_bytes(d, g, 8, 128, MASK, p), measured))
    return rows


def _full_kl(student, teacher, temperature):
    """The unchunked form, as distillation computed it before."""
    t = torch.nn.functional.log_softmax(teacher.float() / temperature, dim=-1)
    s = torch.nn.functional.log_softmax(student.float() / temperature, dim=-1)
    return (t.exp() * (t - s)).sum() * temperature**2


def kl_memory(vocab: int, positions: list[int], chunk_elements: list[int]) -> list[dict]:
    """Peak above the bf16 logits, over forward and backward, for the full and the chunked KL."""
    rows = []
    for n in positions:
        student = torch.randn(n, vocab).to(torch.bfloat16).requires_grad_()
        teacher = torch.randn(n, vocab).to(torch.bfloat16)
        variants = {"full": lambda s, t: _full_kl(s, t, 2.0)}
        for c in chunk_elements:
            variants[f"chunk {c // vocab} rows"] = lambda s, t, c=c: losses.kl_logits(s, t, 2.0, c // vocab)
        for name, fn in variants.items():
            student.grad = None
            peak = memory.measured_peak_bytes(lambda fn=fn, s=student, t=teacher: fn(s, t).backward())
            rows.append(
                {
                    "positions": n,
                    "vocab": vocab,
                    "variant": name,
                    "peak_mb": peak / 2**20,
                    "student_grad_mb": n * vocab * 2 / 2**20,  # the bf16 gradient of the logits, unavoidable
                }
            )
    return rows


def paper_encoder(kind: str, hidden: int, layers: int, heads: int, vocab: int, positions: int = 512):
    """The exact shape of a paper model, built on the meta device (no memory, no compute)."""
    meta = torch.device("meta")
    if kind in ("roberta", "bert"):
        return Shape.of(masked_lm(kind, hidden, layers, heads, vocab, positions, meta))
    shape = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * hidden)
    config = ElectraConfig(vocab_size=vocab, embedding_size=768, max_position_embeddings=positions, **shape)
    with meta:
        model = (ElectraForPreTraining if kind == "discriminator" else ElectraForMaskedLM)(config)
    e = Shape.of(model)
    return dataclasses.replace(e, vocab=1) if kind == "discriminator" else e


GPU = memory.Precision(autocast=True, dropout=True, fused_attention=True)


def paper_choices(gpu_mem_gb: float = 80.0) -> list[dict]:
    """micro_batch_size: auto for config.yaml's models (estimates, bf16 on a GPU)."""
    base, large = paper_encoder("roberta", 768, 12, 12, 50265), paper_encoder("roberta", 1024, 24, 16, 50265)
    bert, student6 = paper_encoder("bert", 768, 12, 12, 30522), paper_encoder("bert", 768, 6, 12, 30522)
    disc, gen = paper_encoder("discriminator", 768, 12, 12, 30522), paper_encoder("generator", 256, 12, 4, 30522)
    cases = [
        (
            "Lewis RoBERTa-base (ours-base-*)",
            8192 // 16,
            512,
            lambda m, s: memory.mlm_step_bytes(base, m, s, MASK, GPU),
        ),
        (
            "Lewis RoBERTa-large (ours-large-*)",
            8192 // 16,
            512,
            lambda m, s: memory.mlm_step_bytes(large, m, s, MASK, GPU),
        ),
        ("PubMedBERT (phases 128 and 512)", 8192 // 16, 512, lambda m, s: memory.mlm_step_bytes(bert, m, s, MASK, GPU)),
        (
            "BioM-ELECTRA-base",
            1024 // 16,
            512,
            lambda m, s: memory.electra_step_bytes(disc, gen, m, s, MASK, GPU),
        ),
        (
            "ours-distilled-align (large teacher, kl all)",
            8192 // 8,
            512,
            lambda m, s: distill_memory.distill_step_bytes(base, large, m, s, MASK, True, GPU),
        ),
        (
            "distil-pubmedbert (6 layers, kl all)",
            256 // 8,
            512,
            lambda m, s: distill_memory.distill_step_bytes(student6, bert, m, s, MASK, True, GPU),
        ),
    ]
    rows = []
    for name, share, seq_len, fn in cases:
        micro = memory.auto_micro_batch(lambda m, fn=fn, s=seq_len: fn(m, s), share, memory.budget(gpu_mem_gb))
        rows.append(
            {
                "model": name,
                "per_gpu_share": share,
                "seq_len": seq_len,
                "auto_micro_batch": micro,
                "estimated_gb": fn(micro, seq_len) / memory.GB,
                "estimated_gb_at_64": fn(min(64, share), seq_len) / memory.GB,
            }
        )
    return rows


def distilled_align_at_64(kl: list[dict]) -> dict:
    """ours-distilled-align at micro-batch 64 x 512 (the recipe before auto): chunked KL against the full one."""
    base, large = paper_encoder("roberta", 768, 12, 12, 50265), paper_encoder("roberta", 1024, 24, 16, 50265)
    chunked = distill_memory.distill_step_bytes(base, large, 64, 512, MASK, True, GPU)
    elements = 64 * 512 * 50265
    # fp32 [rows, V] tensors the full form keeps at its peak besides the bf16 gradient, measured above
    full_kl = max((r for r in kl if r["variant"] == "full"), key=lambda r: r["positions"])
    live = (full_kl["peak_mb"] - full_kl["student_grad_mb"]) * 2**20 / (4 * full_kl["positions"] * full_kl["vocab"])
    full = chunked - memory.CHUNK_TENSORS * 4 * losses.CHUNK_ELEMENTS + live * 4 * elements
    return {
        "micro": 64,
        "seq_len": 512,
        "fp32_full_size_tensors_of_the_full_kl": live,
        "chunked_gb": chunked / memory.GB,
        "full_kl_gb": full / memory.GB,
    }


def table(rows: list[dict], keys: list[str]) -> str:
    fmt = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    return "\n".join(
        ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        + ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in rows]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "memory.json"))
    ap.add_argument("--kl-vocab", type=int, default=4096)
    ap.add_argument("--kl-positions", type=int, nargs="+", default=[2048, 8192, 32768])
    args = ap.parse_args()
    torch.set_num_threads(1)
    kl = kl_memory(args.kl_vocab, args.kl_positions, [1 << 20, 1 << 22])
    result = {
        "measured_how": "torch.profiler CPU memory events: peak of allocated tensor bytes during forward+backward, "
        "plus the weights and AdamW moments already live",
        "estimate_vs_measured": estimate_vs_measured(),
        "kl_memory": kl,
        "paper_auto_80gb_estimated": paper_choices(80.0),
        "ours_distilled_align_at_64_estimated": distilled_align_at_64(kl),
    }
    write_json(Path(args.out), result)
    print(table(result["estimate_vs_measured"], ["case", "micro", "seq_len", "estimated_mb", "measured_mb", "ratio"]))
    print(table(result["kl_memory"], ["positions", "vocab", "variant", "peak_mb", "student_grad_mb"]))
    print(table(result["paper_auto_80gb_estimated"], list(result["paper_auto_80gb_estimated"][0])))
    print(json.dumps(result["ours_distilled_align_at_64_estimated"]))


if __name__ == "__main__":
    main()
