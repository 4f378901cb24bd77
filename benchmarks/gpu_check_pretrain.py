"""The pretraining and distillation half of the first-GPU check (run by benchmarks/gpu_check.sh).

    python benchmarks/gpu_check_pretrain.py [--cpu-smoke] [--out-dir DIR]

Sections, each recorded on its own (one that fails is written down with its error, the rest still run):
  compile      BERT-base at 128, eager against torch.compile: tokens/s, MFU (model.FLOPS_FORMULA), peak memory
  micro_batch  one optimiser step of the per-GPU share (512 x 128): micro-batch 64 with accumulation against auto
  profile      5 steps under torch.profiler: time shares of matrix multiplies, attention, other kernels, idle
  distill      ours-distilled-align steps (RoBERTa-large teacher, RoBERTa-base student, kl all, 512) at the
               recipe's former micro-batch 64 and at auto's, peak memory against the estimate
  data_path    the pretraining CLI at world size 1 with prefetch off and on (the serial path alone where the
               settings have no prefetch yet)

Models are built from configs (no download) with random weights; batches are random token ids with a fixed
number of masked positions. Writes gpu_check_pretrain.json into --out-dir ($OUT when set, else
benchmarks/results/gpu/). --cpu-smoke runs every section for a step or two at tiny shapes on the CPU, with
the eager compile backend (Dynamo tracing only), so the script is exercised without a GPU; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package from this working tree, whatever is installed

from workflow_scripts.distill import memory as distill_memory  # noqa: E402
from workflow_scripts.distill.objective import DistillObjective  # noqa: E402
from workflow_scripts.distill.settings import DistillSettings, LossWeights  # noqa: E402
from workflow_scripts.pretrain import memory  # noqa: E402
from workflow_scripts.pretrain.loop import peak_tflops  # noqa: E402
from workflow_scripts.pretrain.model import FLOPS_FORMULA, MLMObjective, train_flops_per_token  # noqa: E402
from workflow_scripts.pretrain.settings import PretrainSettings  # noqa: E402

MASK = 0.15
PREFETCH = "prefetch"  # the pretraining setting that builds the next batch in the background


@dataclasses.dataclass
class Shapes:
    hidden: int
    layers: int
    heads: int
    vocab: int
    seq_len: int
    micro: int
    share: int  # sequences per GPU per optimiser step (PubMedBERT's 8,192 over 16 GPUs)
    paper_micro: int
    large: tuple[int, int, int]  # the distillation teacher: hidden, layers, heads
    distill_vocab: int
    distill_seq_len: int
    distill_micro: int
    distill_share: int  # sequences per GPU per step (8,192 over 8 GPUs)
    steps: int
    warmup: int
    profiled: int
    backend: str


GPU = Shapes(768, 12, 12, 30522, 128, 256, 512, 64, (1024, 24, 16), 50265, 512, 64, 1024, 20, 3, 5, "inductor")
SMOKE = Shapes(64, 2, 4, 500, 32, 4, 8, 2, (96, 3, 4), 600, 32, 2, 4, 1, 1, 1, "eager")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_gb(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 1e9 if device.type == "cuda" else None


def autocast(device: torch.device):
    return torch.autocast("cuda", torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()


def masked_lm(kind, hidden, layers, heads, vocab, seq_len, device, dropout=0.1, intermediate=None):
    """A freshly initialised BERT or RoBERTa masked LM of the given shape, built on ``device`` from its config."""
    inter = intermediate or 4 * hidden
    shape = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=inter)
    shape.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    if kind == "roberta":
        config = RobertaConfig(vocab_size=vocab, max_position_embeddings=seq_len + 2, **shape)
    else:
        config = BertConfig(vocab_size=vocab, max_position_embeddings=seq_len, **shape)
    config._attn_implementation = "sdpa"
    with torch.device(device):
        return (RobertaForMaskedLM if kind == "roberta" else BertForMaskedLM)(config)


def batch(micro: int, seq_len: int, vocab: int, device: torch.device):
    """Random ids and a fixed count of masked positions (a static shape)."""
    n = max(1, round(MASK * micro * seq_len))
    ids = torch.randint(5, vocab, (micro, seq_len), device=device)
    positions = torch.randperm(micro * seq_len, device=device)[:n].sort().values
    return ids, positions, ids.reshape(-1)[positions], {"masked": float(n), "tokens": float(micro * seq_len)}


def timed_steps(objective, params, micro, accum, shapes_seq_vocab, steps, warmup, device) -> dict:
    """Optimiser steps of ``accum`` micro-batches each; tokens/s over the steps after the warm-up."""
    seq_len, vocab = shapes_seq_vocab
    optimizer = torch.optim.AdamW(params, lr=1e-4, fused=device.type == "cuda")
    batches = [batch(micro, seq_len, vocab, device) for _ in range(accum)]
    reset_peak(device)
    start = None
    for step in range(warmup + steps):
        if step == warmup:
            sync(device)
            start = time.perf_counter()
        for b in batches:
            with autocast(device):
                loss, _ = objective(*b)
            (loss / accum).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    seconds = time.perf_counter() - start
    tokens = steps * accum * micro * seq_len
    return {"tokens_per_s": tokens / seconds, "step_s": seconds / steps, "peak_memory_gb": peak_gb(device)}


def with_mfu(result: dict, flops_per_token: float, device: torch.device) -> dict:
    peak = peak_tflops(PretrainSettings(), device)
    result["mfu"] = result["tokens_per_s"] * flops_per_token / (peak * 1e12) if peak else None
    return result


def section_compile(sh: Shapes, device: torch.device) -> dict:
    model = masked_lm("bert", sh.hidden, sh.layers, sh.heads, sh.vocab, sh.seq_len, device)
    flops = train_flops_per_token(model, sh.seq_len, MASK)
    out = {"micro": sh.micro, "seq_len": sh.seq_len, "flops_per_token": flops, "formula": FLOPS_FORMULA}
    objective = MLMObjective(model)
    args = ((sh.seq_len, sh.vocab), sh.steps, sh.warmup, device)
    out["eager"] = with_mfu(timed_steps(objective, model.parameters(), sh.micro, 1, *args), flops, device)
    compiled = torch.compile(objective, fullgraph=True, backend=sh.backend)
    begin = time.perf_counter()
    out["compiled"] = with_mfu(timed_steps(compiled, model.parameters(), sh.micro, 1, *args), flops, device)
    out["compiled"]["first_steps_and_compile_s"] = time.perf_counter() - begin
    out["speedup"] = out["compiled"]["tokens_per_s"] / out["eager"]["tokens_per_s"]
    return out


def section_micro_batch(sh: Shapes, device: torch.device) -> dict:
    model = masked_lm("bert", sh.hidden, sh.layers, sh.heads, sh.vocab, sh.seq_len, device)
    objective, flops = MLMObjective(model), train_flops_per_token(model, sh.seq_len, MASK)
    total = card_gb(device)
    estimate = memory.mlm_estimate(model, PretrainSettings(), device)
    auto = memory.auto_micro_batch(lambda m: estimate(m, sh.seq_len), sh.share, memory.budget(total))
    out = {"share": sh.share, "seq_len": sh.seq_len, "gpu_memory_gb": total}
    for name, micro in (("paper", sh.paper_micro), ("auto", auto)):
        args = ((sh.seq_len, sh.vocab), max(sh.steps // 4, 1), 1, device)
        run = with_mfu(timed_steps(objective, model.parameters(), micro, sh.share // micro, *args), flops, device)
        out[name] = {"micro": micro, "estimated_peak_gb": estimate(micro, sh.seq_len) / memory.GB, **run}
    out["speedup"] = out["auto"]["tokens_per_s"] / out["paper"]["tokens_per_s"]
    return out


MATMUL = re.compile(r"gemm|matmul|cutlass|xmma|nvjet|cublas|aten::(mm|addmm|bmm|linear)$", re.I)
ATTENTION = re.compile(r"flash|fmha|attention|sdpa", re.I)


def section_profile(sh: Shapes, device: torch.device) -> dict:
    from torch.profiler import ProfilerActivity, profile

    model = masked_lm("bert", sh.hidden, sh.layers, sh.heads, sh.vocab, sh.seq_len, device)
    objective = MLMObjective(model)
    timed_steps(objective, model.parameters(), sh.micro, 1, (sh.seq_len, sh.vocab), 1, 1, device)  # warm-up
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    begin = time.perf_counter()
    with profile(activities=activities) as prof:
        timed_steps(objective, model.parameters(), sh.micro, 1, (sh.seq_len, sh.vocab), sh.profiled, 0, device)
    wall_us = (time.perf_counter() - begin) * 1e6
    shares = {"matmul": 0.0, "attention": 0.0, "other_kernels": 0.0}
    for e in prof.key_averages():
        us = e.self_device_time_total if device.type == "cuda" else (e.self_cpu_time_total if "::" in e.key else 0)
        kind = "matmul" if MATMUL.search(e.key) else "attention" if ATTENTION.search(e.key) else "other_kernels"
        shares[kind] += us
    busy = sum(shares.values())
    out = {k: v / wall_us for k, v in shares.items()}
    out["idle"] = max(0.0, 1 - busy / wall_us)
    out["wall_s"] = wall_us / 1e6
    out["steps"] = sh.profiled
    out["kernel_launches_per_step"] = sum(e.count for e in prof.key_averages() if e.device_time_total > 0) / sh.profiled
    return out


def card_gb(device: torch.device) -> float:
    """The card's memory; 80 GB (the study's default declaration) on the CPU."""
    return torch.cuda.get_device_properties(device).total_memory / 1e9 if device.type == "cuda" else 80.0


def section_distill(sh: Shapes, device: torch.device) -> dict:
    """ours-distilled-align's step at the recipe's former micro-batch and at auto's, each against the estimate."""
    hidden, layers, heads = sh.large
    teacher = masked_lm("roberta", hidden, layers, heads, sh.distill_vocab, sh.distill_seq_len, device).eval()
    if device.type == "cuda":
        teacher.to(torch.bfloat16)
    student = masked_lm("roberta", sh.hidden, sh.layers, sh.heads, sh.distill_vocab, sh.distill_seq_len, device)
    weights = LossWeights(mlm=5.0, kl=2.0, cosine=1.0)
    layer_map = [round((i + 1) * layers / sh.layers) for i in range(sh.layers)]
    objective = DistillObjective(student, teacher, weights, 2.0, layer_map, lambda: autocast(device))
    estimate = distill_memory.distill_estimate(student, teacher, DistillSettings(), device)
    seq_len = sh.distill_seq_len
    auto = memory.auto_micro_batch(lambda m: estimate(m, seq_len), sh.distill_share, memory.budget(card_gb(device)))
    flops = objective.flops_per_token(seq_len, MASK)
    out = {"seq_len": seq_len, "flops_per_token": flops, "gpu_memory_gb": card_gb(device)}
    for name, micro in (("paper", sh.distill_micro), ("auto", auto)):
        args = ((seq_len, sh.distill_vocab), max(sh.steps // 4, 1), 1, device)
        run = timed_steps(objective, objective.parameters(), micro, 1, *args)
        out[name] = {
            "micro": micro,
            "estimated_peak_gb": estimate(micro, seq_len) / memory.GB,
            **with_mfu(run, flops, device),
        }
        reset_peak(device)
    return out


def data_path(prefetch: bool | None, sh: Shapes, device: torch.device, work: Path) -> dict:
    """tokens/s of the pretraining CLI itself (packing excluded), with the given prefetch setting (None: unset)."""
    from bench_pretrain import run_ours, synthetic_corpus, wordpiece

    corpus = work / "corpus"
    if not corpus.exists():
        texts = synthetic_corpus(corpus, 200 if sh is SMOKE else 3000)
        wordpiece(work / "vocab", texts, sh.vocab)
    recipe = {
        "architecture": "bert",
        "hidden_size": sh.hidden,
        "num_layers": sh.layers,
        "num_heads": sh.heads,
        "batch_size": sh.micro,
        "phases": [{"seq_len": sh.seq_len, "fraction": 1.0}],
        "compile": False,  # the data path is measured, not compilation
        **({PREFETCH: prefetch} if prefetch is not None else {}),
    }
    return run_ours(
        work, corpus, work / "vocab", recipe, sh.steps + sh.warmup, sh.warmup, f"prefetch-{prefetch}", device
    )


def section_data_path(sh: Shapes, device: torch.device) -> dict:
    """The CLI with prefetch off and on; where the settings have no prefetch yet, the serial path alone."""
    with tempfile.TemporaryDirectory() as tmp:
        if PREFETCH not in {f.name for f in dataclasses.fields(PretrainSettings)}:
            return {
                "serial": data_path(None, sh, device, Path(tmp)),
                "prefetch": "no prefetch setting in this checkout",
            }
        off, on = (data_path(p, sh, device, Path(tmp)) for p in (False, True))
    return {"prefetch_off": off, "prefetch_on": on, "speedup": on["tokens_per_s"] / off["tokens_per_s"]}


SECTIONS = {
    "compile": section_compile,
    "micro_batch": section_micro_batch,
    "profile": section_profile,
    "distill": section_distill,
    "data_path": section_data_path,
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu-smoke", action="store_true", help="every section for a step or two, tiny shapes, CPU")
    ap.add_argument("--out-dir", default=os.environ.get("OUT") or str(ROOT / "benchmarks" / "results" / "gpu"))
    ap.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run these sections only")
    args = ap.parse_args(argv)
    if not args.cpu_smoke and not torch.cuda.is_available():
        sys.exit("error: no GPU visible to torch; run on a GPU machine, or pass --cpu-smoke")
    device = torch.device("cpu" if args.cpu_smoke else "cuda")
    sh = SMOKE if args.cpu_smoke else GPU
    torch.manual_seed(0)
    result = {
        "mode": "cpu-smoke" if args.cpu_smoke else "gpu",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "sections": {},
        "errors": {},
    }
    began = time.perf_counter()
    for name in args.only or SECTIONS:
        start = time.perf_counter()
        try:
            result["sections"][name] = SECTIONS[name](sh, device)
        except Exception:  # one broken section must not hide the others' figures
            result["errors"][name] = traceback.format_exc(limit=8)
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
        reset_peak(device)
    result["wall_s"] = time.perf_counter() - began
    out = Path(args.out_dir) / "gpu_check_pretrain.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "sections"}, indent=1))
    print(json.dumps(result["sections"], indent=1)[:6000])
    sys.exit(1 if result["errors"] else 0)


if __name__ == "__main__":
    main()
