"""The pretraining and distillation half of the first-GPU check (run by benchmarks/gpu_check.sh).

    python benchmarks/gpu_check_pretrain.py [--cpu-smoke] [--out-dir DIR] [--only SECTION ...] [--variants [NAME ...]]

Sections, each recorded on its own (one that fails is written down with its error, the rest still run):
  compile      BERT-base at 128, eager against torch.compile: tokens/s, MFU (model.FLOPS_FORMULA), peak memory
  micro_batch  one optimiser step of the per-GPU share (512 x 128): micro-batch 64 with accumulation against auto
  profile      5 compiled steps under torch.profiler: the time shares of GEMM, attention, normalisation and
               elementwise, embedding, loss, optimiser and memcpy kernels, and idle time (kernel_group)
  bandwidth    the compiled step's Triton kernels (normalisation, elementwise, loss...), each timed alone by
               inductor (profile_bandwidth): time, bytes and bandwidth, against the card's DRAM bandwidth
  distill      ours-distilled-align steps (RoBERTa-large teacher in bf16, RoBERTa-base student, kl all, 512)
               at the recipe's former micro-batch 64, compiled (as the pipeline runs them) and eager, and at
               auto's, eager; peak memory against the estimate; the output KL whole or chunked as
               distill/memory.kl_rows decides
  data_path    the pretraining CLI at world size 1 with prefetch off and on (the serial path alone where the
               settings have no prefetch yet)
  pipeline_graphs  the pretraining CLI at one GPU's share (512 x 128) in micro-batches of 64, compiled, with
               cuda_graphs off and on: the pipeline's own step under CUDA graphs
  variants     with --variants [NAME ...] (all when none is named): A/B of the compiled BERT-base step, each
               against "papers" (compile default, attention dropout 0.1, micro 256): attention dropout 0,
               flash and memory-efficient attention only, max-autotune, CUDA graphs (reduce-overhead),
               micro 64 with accumulation, with and without graphs, the residual stream in bf16
               (residual_stream: autocast) at micro 256, at micro 64 with graphs and under max-autotune;
               and BERT-large at 512 in micro-batches of 64 (the micro-64 goal's own case), plain, with
               graphs and with the bf16 stream, against the goal rather than "papers";
               each with its kernel time by group (as profile), the host's share (gpu_busy) and torch's
               warnings (why SDPA refused a kernel), saved as it ends

On a torch before 2.13, Dynamo answers torch.compiler.is_exporting() True and transformers then hands the
compiled step an all-true attention mask; the check makes it answer False, as the pinned torch does, and
records both answers (is_exporting_under_compile).

Models are built from configs (no download) with random weights; batches are random token ids with a fixed
number of masked positions. Writes gpu_check_pretrain.json into --out-dir ($OUT when set, else
benchmarks/results/gpu/), again after every section, so a time cap loses only the section it cut; then prints
a one-screen summary against the goals (GOALS). --cpu-smoke runs every section (the variants SMOKE_VARIANTS)
for a step or two at tiny shapes on the CPU, with the eager compile backend (Dynamo tracing only), so the
script is exercised without a GPU; its figures mean nothing.
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
import typing
import warnings
from pathlib import Path

import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package from this working tree, whatever is installed

from workflow_scripts.distill import memory as distill_memory  # noqa: E402
from workflow_scripts.distill.objective import DistillObjective  # noqa: E402
from workflow_scripts.distill.settings import DistillSettings, LossWeights  # noqa: E402
from workflow_scripts.optim import allocate_gradients  # noqa: E402
from workflow_scripts.pretrain import memory  # noqa: E402
from workflow_scripts.pretrain.loop import peak_tflops  # noqa: E402
from workflow_scripts.pretrain.model import FLOPS_FORMULA, MLMObjective, train_flops_per_token  # noqa: E402
from workflow_scripts.pretrain.residual import keep_residual_in_autocast_dtype  # noqa: E402
from workflow_scripts.pretrain.settings import Phase, PretrainSettings  # noqa: E402

MASK = 0.15
TORCH = "torch's choice"  # SDPA left to pick its kernel
FUSED = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION")  # SDPA's fused kernels, without cuDNN's per-shape plans
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
    large_seq_len: int  # BERT-large's pretraining length where only micro 64 fits a card (micro-64 goal)


GPU = Shapes(768, 12, 12, 30522, 128, 256, 512, 64, (1024, 24, 16), 50265, 512, 64, 1024, 20, 3, 5, "inductor", 512)
SMOKE = Shapes(64, 2, 4, 500, 32, 4, 8, 2, (96, 3, 4), 600, 32, 2, 4, 1, 1, 1, "eager", 64)


SAVE = [lambda part: None]  # main's: records a section's finished parts, so a time cap keeps them


def save_part(out: dict) -> None:
    """A slow section's parts so far, written to the JSON before the section ends."""
    SAVE[0](out)


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


def masked_lm(
    kind, hidden, layers, heads, vocab, seq_len, device, dropout=0.1, attention_dropout=None, intermediate=None
):
    """A freshly initialised BERT or RoBERTa masked LM of the given shape, built on ``device`` from its config;
    attention dropout as ``dropout`` unless given (the papers' 0.1 both), the feed-forward width 4 x hidden
    unless given."""
    inter = intermediate or 4 * hidden
    shape = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=inter)
    attention = dropout if attention_dropout is None else attention_dropout
    shape.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=attention)
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


def compiled(objective, sh: Shapes, mode: str | None = None):
    """``objective`` compiled into one graph, afresh; ``mode`` an inductor mode. Under CUDA graphs
    (reduce-overhead) each forward pass starts a new step, as the timed loop uses each output before the next."""
    torch._dynamo.reset()
    inductor = sh.backend == "inductor"
    fn = torch.compile(objective, fullgraph=True, backend=sh.backend, **({"mode": mode} if mode and inductor else {}))
    if mode != "reduce-overhead" or not inductor:
        return fn

    def step(*args):
        torch.compiler.cudagraph_mark_step_begin()
        return fn(*args)

    return step


def timed_steps(objective, params, micro, accum, shapes_seq_vocab, steps, warmup, device, stable_grads=False) -> dict:
    """Optimiser steps of ``accum`` micro-batches each; tokens/s over the steps after the warm-up.
    ``stable_grads``: gradients accumulate into buffers allocated here and zeroed in place, never into a
    backward pass's own output, which a CUDA graph's next replay overwrites."""
    seq_len, vocab = shapes_seq_vocab
    optimizer = torch.optim.AdamW(params, lr=1e-4, fused=device.type == "cuda")
    if stable_grads:
        allocate_gradients(optimizer)
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
        optimizer.zero_grad(set_to_none=not stable_grads)
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
    begin = time.perf_counter()
    step = compiled(objective, sh)
    out["compiled"] = with_mfu(timed_steps(step, model.parameters(), sh.micro, 1, *args), flops, device)
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


# kernel (CUDA) or operator (CPU smoke) names by group, the first match winning: optimiser before
# normalisation (lpnorm), attention before GEMM (flash and fmha kernels are cutlass templates),
# embedding and loss before the elementwise kernels inductor fuses them into
KERNEL_GROUPS = (
    ("memcpy", r"^(memcpy|memset)|cudamemcpy"),
    ("optimiser", r"adam|multi_tensor_apply|foreach|lpnorm|clip_grad"),
    ("attention", r"flash|fmha|attention|sdpa"),
    ("gemm", r"gemm|nvjet|xmma|cublas|cutlass|triton_tem_|aten::(mm|addmm|bmm|matmul|linear)$"),
    ("embedding", r"embedding|indexselect|index_select|index_put"),
    ("loss", r"nll_loss|softmax|cross_entropy"),
    ("normalisation_elementwise", r"norm|elementwise|triton_|at::native|aten::"),
)
_GROUPS = [(name, re.compile(pattern, re.I)) for name, pattern in KERNEL_GROUPS]


def kernel_group(name: str) -> str:
    """The group of a kernel or operator name; "other" where no pattern matches (NCCL, unknown libraries)."""
    return next((group for group, pattern in _GROUPS if pattern.search(name)), "other")


def group_shares(kernels: list[tuple[str, float]], wall_us: float) -> dict[str, float]:
    """Share of the wall time each group's kernels ran, and ``idle``: the rest (one stream: no overlap)."""
    shares = dict.fromkeys([g for g, _ in KERNEL_GROUPS] + ["other"], 0.0)
    for name, us in kernels:
        shares[kernel_group(name)] += us / wall_us
    shares["idle"] = max(0.0, 1 - sum(shares.values()))
    return shares


ANNOTATION = re.compile(r"Optimizer\.|## |ProfilerStep")  # ranges torch itself annotates on the device


def is_kernel(event) -> bool:
    """A device kernel or copy: not an operator, and not a user annotation's range (the optimiser's
    ``Optimizer.step#...`` spans its own kernels, which would count twice)."""
    from torch.autograd import DeviceType

    annotation = getattr(event, "is_user_annotation", False) or ANNOTATION.match(event.key)
    return event.device_type == DeviceType.CUDA and event.self_device_time_total > 0 and not annotation


def kernel_profile(step, args: tuple, steps: int, device: torch.device, stable_grads: bool = False) -> dict:
    """``steps`` steps of an already compiled and warm ``step`` under torch.profiler: kernel time by group
    (device kernels only on CUDA, so operators and their kernels are not counted twice), launches per step."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync(device)
    begin = time.perf_counter()
    with profile(activities=activities) as prof:
        timed_steps(step, *args, steps, 0, device, stable_grads)
    wall_us = (time.perf_counter() - begin) * 1e6
    kernels = [
        (e.key, e.self_device_time_total if cuda else e.self_cpu_time_total, e.count)
        for e in prof.key_averages()
        if (is_kernel(e) if cuda else "::" in e.key)
    ]
    top = sorted(kernels, key=lambda k: -k[1])[:12]
    return {
        "steps": steps,
        "wall_s": wall_us / 1e6,
        "kernel_ms_per_step": sum(us for _, us, _ in kernels) / steps / 1e3,
        "shares": group_shares([(name, us) for name, us, _ in kernels], wall_us),
        "kernel_launches_per_step": sum(n for _, _, n in kernels) / steps if cuda else None,
        "top_kernels": [{"name": k[:160], "group": kernel_group(k), "share": us / wall_us} for k, us, _ in top],
    }


def section_profile(sh: Shapes, device: torch.device) -> dict:
    """The compiled step's kernels, grouped (kernel_group), over ``sh.profiled`` steps after compilation."""
    model = masked_lm("bert", sh.hidden, sh.layers, sh.heads, sh.vocab, sh.seq_len, device)
    step = compiled(MLMObjective(model), sh)
    args = (list(model.parameters()), sh.micro, 1, (sh.seq_len, sh.vocab))
    timed_steps(step, *args, 1, 2, device)  # compilation and warm-up
    return {"compiled": True, **kernel_profile(step, args, sh.profiled, device)}


# one kernel's line in inductor's profile_bandwidth output: time, bytes, GB/s, share of its graph, kernel name
BANDWIDTH_LINE = re.compile(r"^\s*([\d.]+)ms\s+([\d.]+) GB\s+([\d.]+)GB/s\s+([\d.]+)%\s+(\S+)\s*$")


def read_bandwidth(text: str) -> list[dict]:
    """Each kernel of inductor's profile_bandwidth file (one block per compiled graph), slowest first."""
    kernels = []
    for line in text.splitlines():
        if match := BANDWIDTH_LINE.match(line):
            ms, gb, gb_s, _, name = match.groups()
            kernels.append(
                {"name": name, "group": kernel_group(name), "ms": float(ms), "gb": float(gb), "gb_s": float(gb_s)}
            )
    return sorted(kernels, key=lambda k: -k["ms"])


def dram_gb_s(device: torch.device) -> float | None:
    """The card's DRAM bandwidth (double data rate over its bus); None on the CPU or where torch does not say."""
    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(device)
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    return 2 * bus_bits / 8 * clock_khz * 1e3 / 1e9 if clock_khz and bus_bits else None


def section_bandwidth(sh: Shapes, device: torch.device) -> dict:
    """Every Triton kernel of the compiled "papers" step, each timed alone by inductor (``profile_bandwidth``):
    its time, the bytes it reads and writes, and the bandwidth that makes, against the card's. The matrix
    products (cuBLAS) are not Triton kernels and are not listed. The CPU smoke compiles no Triton kernel."""
    from torch._inductor import config as inductor_config

    model = masked_lm("bert", sh.hidden, sh.layers, sh.heads, sh.vocab, sh.seq_len, device)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bandwidth.txt"
        # not from the graph cache: a cached step comes back without its kernels' timing
        timing = {"profile_bandwidth": True, "profile_bandwidth_output": str(path), "fx_graph_cache": False}
        with inductor_config.patch(timing):
            step = compiled(MLMObjective(model), sh)
            timed_steps(step, list(model.parameters()), sh.micro, 1, (sh.seq_len, sh.vocab), 1, 0, device)
        kernels = read_bandwidth(path.read_text()) if path.exists() else []
    total_ms, total_gb, peak = sum(k["ms"] for k in kernels), sum(k["gb"] for k in kernels), dram_gb_s(device)
    by_group = {}
    for k in kernels:
        by_group[k["group"]] = by_group.get(k["group"], 0.0) + k["ms"]
    return {
        "micro": sh.micro,
        "triton_kernels": len(kernels),
        "triton_ms_per_step": total_ms,
        "triton_gb_per_step": total_gb,
        "dram_gb_s": peak,
        "of_dram_bandwidth": total_gb / (total_ms / 1e3) / peak if peak and total_ms else None,
        "ms_by_group": by_group,
        "slowest": [k | {"of_dram_bandwidth": k["gb_s"] / peak if peak else None} for k in kernels[:20]],
    }


def card_gb(device: torch.device) -> float:
    """The card's memory; 80 GB (the study's default declaration) on the CPU."""
    return torch.cuda.get_device_properties(device).total_memory / 1e9 if device.type == "cuda" else 80.0


def section_distill(sh: Shapes, device: torch.device) -> dict:
    """ours-distilled-align's step as the pipeline runs it (objective on the device, teacher in bf16, compiled)
    at the recipe's former micro-batch; eager at that micro-batch and at auto's, each against the estimate."""
    hidden, layers, heads = sh.large
    seq_len, vocab = sh.distill_seq_len, sh.distill_vocab
    teacher = masked_lm("roberta", hidden, layers, heads, vocab, seq_len, device).eval().requires_grad_(False)
    if device.type == "cuda":
        teacher.to(torch.bfloat16)
    student = masked_lm("roberta", sh.hidden, sh.layers, sh.heads, vocab, seq_len, device)
    weights = LossWeights(mlm=5.0, kl=2.0, cosine=1.0)
    layer_map = [round((i + 1) * layers / sh.layers) for i in range(sh.layers)]
    objective = DistillObjective(student, teacher, weights, 2.0, layer_map, lambda: autocast(device)).to(device)
    s = DistillSettings(phases=[Phase(seq_len=seq_len)])
    estimate = distill_memory.auto_estimate(student, teacher, s, device, card_gb(device))  # as the pipeline sizes
    auto = memory.auto_micro_batch(lambda m: estimate(m, seq_len), sh.distill_share, memory.budget(card_gb(device)))
    flops = objective.flops_per_token(seq_len, MASK)
    out = {"seq_len": seq_len, "flops_per_token": flops, "gpu_memory_gb": card_gb(device)}
    for name, micro, compile_it in (
        ("compiled", sh.distill_micro, True),
        ("paper", sh.distill_micro, False),
        ("auto", auto, False),
    ):
        at_micro = dataclasses.replace(s, batch_size=micro, micro_batch_size=micro)
        objective.kl_rows = distill_memory.kl_rows(student, teacher, at_micro, device, 1, card_gb(device))
        step = compiled(objective, sh) if compile_it else objective
        begin = time.perf_counter()
        run = timed_steps(step, objective.parameters(), micro, 1, (seq_len, vocab), max(sh.steps // 4, 1), 1, device)
        out[name] = {
            "micro": micro,
            "compiled": compile_it,
            "kl": "whole" if objective.kl_rows is None else f"chunks of {objective.kl_rows} rows",
            "estimated_peak_gb": distill_memory.distill_estimate(
                student, teacher, s, device, full_kl=objective.kl_rows is None
            )(micro, seq_len)
            / memory.GB,
            "first_steps_s": time.perf_counter() - begin,
            **with_mfu(run, flops, device),
        }
        reset_peak(device)
        save_part(out)
    return out


def cli_run(name: str, sh: Shapes, device: torch.device, work: Path, **settings) -> dict:
    """tokens/s of the pretraining CLI itself (packing excluded) training a BERT of ``sh``'s shape, eagerly at
    micro-batch ``sh.micro`` unless ``settings`` say otherwise."""
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
        "compile": False,
        **settings,
    }
    return run_ours(work, corpus, work / "vocab", recipe, sh.steps + sh.warmup, sh.warmup, name, device)


def data_path(prefetch: bool | None, sh: Shapes, device: torch.device, work: Path) -> dict:
    """The CLI with the given prefetch setting (None: unset), uncompiled: the data path is measured, not
    compilation."""
    return cli_run(f"prefetch-{prefetch}", sh, device, work, **({PREFETCH: prefetch} if prefetch is not None else {}))


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


def section_pipeline_graphs(sh: Shapes, device: torch.device) -> dict:
    """The pretraining CLI's own step (the variants time the check's) at one GPU's share in micro-batches of the
    papers' size, compiled, with ``cuda_graphs`` off and on. The CPU smoke runs it eagerly, where only the kept
    gradient buffers apply."""
    shared = {"batch_size": sh.share, "micro_batch_size": sh.paper_micro, "compile": device.type == "cuda"}
    with tempfile.TemporaryDirectory() as tmp:
        off, on = (cli_run(f"graphs-{g}", sh, device, Path(tmp), cuda_graphs=g, **shared) for g in (False, True))
    out = {"share": sh.share, "micro": sh.paper_micro, "graphs_off": off, "graphs_on": on}
    return out | {"speedup": on["tokens_per_s"] / off["tokens_per_s"]}


class Variant(typing.NamedTuple):
    """A compiled step's settings: ``mode`` an inductor mode (None: default); ``micro`` "full" (Shapes.micro) or
    "paper" (Shapes.paper_micro, accumulating to the same sequences per optimiser step); ``backends`` the SDPA
    kernels allowed (None: torch's choice); ``residual`` the pretraining setting residual_stream; ``model`` "base"
    (BERT-base at Shapes.seq_len) or "large" (Shapes.large at Shapes.large_seq_len, where an 80 GB card fits
    micro 64 only: the micro-64 goal's own case)."""

    mode: str | None = None
    attention_dropout: float = 0.1
    micro: str = "full"
    backends: tuple[str, ...] | None = None
    residual: str = "fp32"
    model: str = "base"


# "papers" is the reference of the others. fused_attention allows flash and memory-efficient attention only: the
# compiled step runs them or fails, torch's reasons for refusing each kept in the variant's warnings (how the
# materialised mask of answer_exporting_as_pinned was found). Under CUDA graphs (reduce-overhead) gradients
# accumulate into stable buffers (timed_steps).
VARIANTS = {
    "papers": Variant(),
    "attention_dropout_0": Variant(attention_dropout=0.0),
    "fused_attention": Variant(backends=FUSED),
    "max_autotune": Variant("max-autotune-no-cudagraphs"),
    "cuda_graphs": Variant("reduce-overhead"),
    "micro_64": Variant(micro="paper"),
    "micro_64_cuda_graphs": Variant("reduce-overhead", micro="paper"),
    "residual_autocast": Variant(residual="autocast"),
    "micro_64_cuda_graphs_residual_autocast": Variant("reduce-overhead", micro="paper", residual="autocast"),
    "max_autotune_residual_autocast": Variant("max-autotune-no-cudagraphs", residual="autocast"),
    "large_512_micro_64": Variant(micro="paper", model="large"),
    "large_512_micro_64_cuda_graphs": Variant("reduce-overhead", micro="paper", model="large"),
    "large_512_micro_64_residual_autocast": Variant(micro="paper", residual="autocast", model="large"),
}
CHOSEN: list[str] = []  # the variants --variants names
SMOKE_VARIANTS = [
    "papers",
    "fused_attention",
    "micro_64_cuda_graphs",
    "residual_autocast",
    "large_512_micro_64",
]  # --cpu-smoke's: the mode, the accumulation, the residual and the large model's paths


def attention_backends(names: tuple[str, ...] | None, device: torch.device):
    """SDPA restricted to ``names`` (torch.nn.attention.SDPBackend members) on a GPU; torch's own choice
    otherwise (the CPU smoke has no flash or memory-efficient kernel to restrict to)."""
    if not names or device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, n) for n in names])


def variant(name: str, sh: Shapes, device: torch.device) -> dict:
    """One variant's compiled step: tokens/s and MFU, then where its kernel time goes (kernel_profile)."""
    mode, attention_dropout, micro_kind, backends, residual, kind = VARIANTS[name]
    (hidden, layers, heads), seq_len = (sh.hidden, sh.layers, sh.heads), sh.seq_len
    if kind == "large":  # each step about 15 times base's FLOPs: fewer of them time it as well
        (hidden, layers, heads), seq_len = sh.large, sh.large_seq_len
        sh = dataclasses.replace(sh, steps=max(sh.steps // 4, 1), warmup=min(sh.warmup, 2))
    model = masked_lm("bert", hidden, layers, heads, sh.vocab, seq_len, device, 0.1, attention_dropout)
    if residual == "autocast":
        keep_residual_in_autocast_dtype(model)
    flops = train_flops_per_token(model, seq_len, MASK)
    micro = sh.micro if micro_kind == "full" else sh.paper_micro
    begin = time.perf_counter()
    step = compiled(MLMObjective(model), sh, mode)
    args = (list(model.parameters()), micro, sh.micro // micro, (seq_len, sh.vocab))
    graphs = mode == "reduce-overhead"
    with attention_backends(backends, device):
        run = with_mfu(timed_steps(step, *args, sh.steps, sh.warmup, device, graphs), flops, device)
        out = {"mode": mode or "default", "attention_dropout": attention_dropout, "micro": micro, **run}
        out |= {"model": kind, "seq_len": seq_len, "accumulated": sh.micro // micro, "residual_stream": residual}
        out["sdpa_backends"] = list(backends) if backends else TORCH
        out["first_steps_and_compile_s"] = time.perf_counter() - begin
        profiled = kernel_profile(step, args, max(sh.profiled // 2, 1), device, graphs)
    out["shares"], out["top_kernels"] = profiled["shares"], profiled["top_kernels"][:6]
    # kernel time against the unprofiled step: well under 1 means the card waits for the host
    out["gpu_busy"] = profiled["kernel_ms_per_step"] / (1e3 * run["step_s"]) if device.type == "cuda" else None
    return out


def section_variants(sh: Shapes, device: torch.device) -> dict:
    """The compiled BERT-base step under each chosen variant; tokens/s against "papers". A variant that fails
    is recorded with its error and the others still run; the section is saved after each."""
    out = {}
    for name in ["papers"] + [v for v in CHOSEN if v != "papers"]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out[name] = variant(name, sh, device)
                if "tokens_per_s" in out["papers"] and VARIANTS[name].model == "base":
                    out[name]["speedup"] = out[name]["tokens_per_s"] / out["papers"]["tokens_per_s"]
            except Exception:  # the end of the message: a CUDA graph's names the tensor's stack trace
                out[name] = {"error": traceback.format_exc(limit=4)[-6000:]}
        # torch says here why SDPA refused a kernel, and where a graph could not be captured
        out[name]["warnings"] = list(dict.fromkeys(str(w.message)[:600] for w in caught))[:12]
        reset_peak(device)
        save_part(out)
    return out


SECTIONS = {
    "compile": section_compile,
    "micro_batch": section_micro_batch,
    "profile": section_profile,
    "bandwidth": section_bandwidth,
    "distill": section_distill,
    "data_path": section_data_path,
    "pipeline_graphs": section_pipeline_graphs,
    "variants": section_variants,
}
GOALS = {"pretrain_mfu": 0.40, "pretrain_micro_64_mfu": 0.35, "distill_mfu": 0.30}


def _pct(x) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, float) else "-"


def summary(result: dict) -> list[str]:
    """One screen: each goal against its figure, where the compiled step's time goes, the variants."""
    sec, lines = result["sections"], [f"{result['mode']} on {result['device']}, {result['wall_s']:.0f} s"]
    if "compile" in sec:
        c = sec["compile"]["compiled"]
        lines.append(f"pretraining BERT-base 128, micro {sec['compile']['micro']}, compiled: MFU {_pct(c['mfu'])}")
        lines[-1] += f" (goal {_pct(GOALS['pretrain_mfu'])}), {c['tokens_per_s']:,.0f} tokens/s"
    if "micro_batch" in sec:
        m = sec["micro_batch"]
        for k in ("paper", "auto"):
            lines.append(f"  micro {m[k]['micro']} x {m['share'] // m[k]['micro']} (eager): MFU {_pct(m[k]['mfu'])}")
        lines[-2] += f" (the micro-64 goal, {_pct(GOALS['pretrain_micro_64_mfu'])}, is BERT-large 512's: large_512_*)"
    if "distill" in sec:
        for d in sec["distill"].values():
            if isinstance(d, dict):
                how = "compiled" if d["compiled"] else "eager"
                lines.append(f"distillation micro {d['micro']} {how}, KL {d['kl']}: MFU {_pct(d['mfu'])}")
                lines[-1] += f" (goal {_pct(GOALS['distill_mfu'])}), peak {d['peak_memory_gb'] or 0:.1f} GB"
                lines[-1] += f" (est. {d['estimated_peak_gb']:.1f})"
    if "pipeline_graphs" in sec:
        g = sec["pipeline_graphs"]
        rates = f"{g['graphs_off']['tokens_per_s']:,.0f} -> {g['graphs_on']['tokens_per_s']:,.0f} tokens/s"
        lines.append(f"pipeline step, micro {g['micro']} x {g['share'] // g['micro']}, compiled: CUDA graphs ")
        lines[-1] += f"{g['speedup']:.2f}x ({rates})"
    if sec.get("bandwidth", {}).get("triton_kernels"):
        b = sec["bandwidth"]
        lines.append(
            f"Triton kernels, each timed alone: {b['triton_ms_per_step']:.1f} ms, {b['triton_gb_per_step']:.1f} GB"
        )
        lines[-1] += f" a step, {_pct(b['of_dram_bandwidth'])} of the card's DRAM bandwidth"
    if "profile" in sec:
        shares = sec["profile"]["shares"]
        lines.append("compiled step: " + ", ".join(f"{k} {_pct(v)}" for k, v in shares.items() if v >= 0.005))
    for name, v in sec.get("variants", {}).items():
        if "error" in v:
            lines.append(f"variant {name}: ERROR (see the JSON)")
            continue
        lines.append(f"variant {name}: MFU {_pct(v['mfu'])}")
        if v["model"] == "large":
            lines[-1] += f" (goal {_pct(GOALS['pretrain_micro_64_mfu'])}), BERT-large {v['seq_len']}"
        lines[-1] += f", {v['speedup']:.2f}x papers" if "speedup" in v else ""
        lines[-1] += f", micro {v['micro']} x {v['accumulated']}"
        lines[-1] += f", GPU busy {_pct(v['gpu_busy'])} of the step" if v.get("gpu_busy") else ""
    lines += [f"ERROR in {name} (see the JSON)" for name in result["errors"]]
    return lines


def exporting_under_compile() -> bool:
    """What ``torch.compiler.is_exporting()`` answers inside ``torch.compile``."""
    probe = torch.compile(lambda x: x + 1 if torch.compiler.is_exporting() else x - 1, backend="eager", fullgraph=True)
    answer = bool(probe(torch.zeros(1)).item() == 1)
    torch._dynamo.reset()
    return answer


def answer_exporting_as_pinned() -> dict:
    """Before 2.13, torch answers ``is_exporting()`` True inside ``torch.compile`` too (pytorch#176347, fixed
    by #176499), so transformers cannot skip the all-true attention mask there, and SDPA, given a mask, runs
    math attention in fp32 instead of flash. The pinned torch answers False. On an older torch (a GPU image's)
    the check makes Dynamo answer False as well, so its figures show the pinned behaviour; the JSON says so."""
    before = exporting_under_compile()
    if before:
        from torch._dynamo.variables.torch import tracing_state_functions

        tracing_state_functions()[torch.compiler.is_exporting] = False  # the table Dynamo answers from
    return {"before": before, "after": exporting_under_compile() if before else before}


def write_json(result: dict, path: Path) -> None:
    """Atomically, so a check cut short by a time cap leaves the finished sections readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu-smoke", action="store_true", help="every section for a step or two, tiny shapes, CPU")
    ap.add_argument("--out-dir", default=os.environ.get("OUT") or str(ROOT / "benchmarks" / "results" / "gpu"))
    ap.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run these sections only")
    ap.add_argument(
        "--variants", nargs="*", choices=list(VARIANTS), help="add the variants section: these (none named: all)"
    )
    args = ap.parse_args(argv)
    if not args.cpu_smoke and not torch.cuda.is_available():
        sys.exit("error: no GPU visible to torch; run on a GPU machine, or pass --cpu-smoke")
    device = torch.device("cpu" if args.cpu_smoke else "cuda")
    sh = SMOKE if args.cpu_smoke else GPU
    chosen = args.variants or (
        list(VARIANTS) if args.variants is not None else SMOKE_VARIANTS if args.cpu_smoke else []
    )
    CHOSEN[:] = chosen
    names = args.only or [n for n in SECTIONS if n != "variants" or chosen]
    exporting = answer_exporting_as_pinned()
    torch.manual_seed(0)
    result = {
        "is_exporting_under_compile": exporting,
        "mode": "cpu-smoke" if args.cpu_smoke else "gpu",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "sections": {},
        "errors": {},
        "seconds": {},
    }
    out = Path(args.out_dir) / "gpu_check_pretrain.json"
    began = time.perf_counter()
    for name in names:
        start = time.perf_counter()
        SAVE[0] = lambda part, name=name: (result["sections"].__setitem__(name, dict(part)), write_json(result, out))
        try:
            result["sections"][name] = SECTIONS[name](sh, device)
        except Exception:  # one broken section must not hide the others' figures
            result["errors"][name] = traceback.format_exc(limit=8)
        result["seconds"][name] = time.perf_counter() - start
        result["wall_s"] = time.perf_counter() - began
        write_json(result, out)
        print(f"{name}: {result['seconds'][name]:.1f} s", flush=True)
        reset_peak(device)
    print("\n".join(summary(result)))
    sys.exit(1 if result["errors"] else 0)


if __name__ == "__main__":
    main()
