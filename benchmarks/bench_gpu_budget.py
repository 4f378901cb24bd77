"""The study's GPU budget on paper: predicted step time of each training model before and after the GPU
path's changes, from components measured on the CPU, and the GPU-hours they imply.

    python benchmarks/bench_gpu_budget.py [--out benchmarks/results/gpu_budget.json] [--components-from JSON]

Measured here, on the CPU: the FLOPs per token (model.FLOPS_FORMULA, equal to FlopCounterMode); the bytes
that the non-matmul operators of one eager bf16-autocast step read and write (a dispatch-mode count on
BERT-base, scaled per layer and width); the bytes of the full and the chunked KL; the host time and
operator count of one micro-step on the meta device (Python and dispatcher, no compute); the CPU time
of one step's mask draws at the paper's shapes, the whole global batch against the rank's own rows; and
the memory estimate behind micro_batch_size: auto. Everything that turns these into GPU seconds is an
assumption written into the JSON (ASSUMED); every time, MFU and GPU-hour figure is a PREDICTION, except
the columns at measured rates: there a phase whose encoder shape and length ran on one H100, or on one H200
(MFU read from benchmarks/results/gpu/), takes that measured MFU, and each model says what share of its hours
is measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import torch
import yaml
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from workflow_scripts.atomic import write_json
from workflow_scripts.config.study import load_study
from workflow_scripts.distill import losses
from workflow_scripts.distill import memory as distill_memory
from workflow_scripts.encoder_shape import Shape
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain.masking import MaskDraws, apply_mask, draw, step_generator
from workflow_scripts.pretrain.model import FLOPS_FORMULA, MLMObjective, train_flops_per_token

ROOT = Path(__file__).resolve().parents[1]
ASSUMED = {
    "matmul_tflops": 600.0,  # BERT-shaped bf16 GEMMs on an H100; KINDS.md records 798 for an 8192^3 product
    "hbm_tb_per_s": 2.8,  # effective; KINDS.md records about 3.0 TB/s for a device-to-device copy
    "peak_tflops": 989.0,  # the MFU denominator (dense bf16, H100 SXM)
    "host_us_per_kernel": 10.0,  # Python, dispatcher and launch of one eager kernel on a GPU host
    "compiled_host_fraction": 1 / 3,  # inductor launches about a third of eager's kernels
    "network_gb_per_s": 25.0,  # inter-node all-reduce bandwidth per GPU (200 Gb/s)
    "exposed_allreduce": 0.5,  # share of the gradient all-reduce not hidden behind the last backward
    "compiled_traffic": "twice the tensors saved for backward (written once, read once): a lower bound",
}
MATMULS = {"mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "_scaled_dot_product_flash_attention_for_cpu"}


class _Traffic(TorchDispatchMode):
    """Bytes that operators other than matrix multiplies read and write, and the operators that launch a
    kernel (views and aliases move nothing)."""

    def __init__(self):
        super().__init__()
        self.bytes = self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if getattr(func, "is_view", False) or func.overloadpacket.__name__ in ("detach", "alias", "_unsafe_view"):
            return out
        self.ops += 1
        if func.overloadpacket.__name__ not in MATMULS:
            tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
            self.bytes += sum(t.numel() * t.element_size() for t in tensors)
        return out


def _bert_base(device: str | torch.device, layers: int = 12):
    """BERT-base with hidden dropout; attention dropout 0 keeps CPU SDPA on its fused kernel, as a GPU's
    flash kernel stays with dropout (the CPU's math fallback would add [heads, L, L] traffic no GPU has)."""
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(num_hidden_layers=layers, max_position_embeddings=512, attention_probs_dropout_prob=0.0)
    config._attn_implementation = "sdpa"
    with torch.device(device):
        return BertForMaskedLM(config)


def _step_inputs(micro: int, seq_len: int, device):
    n = round(0.15 * micro * seq_len)
    ids = torch.randint(5, 30522, (micro, seq_len), device=device)
    positions = torch.arange(n, device=device) * 6
    return ids, positions, ids.reshape(-1)[positions], {"masked": float(n)}


def eager_traffic(seq_len: int = 128) -> dict:
    """Non-matmul bytes of a bf16-autocast step of BERT-base (CPU), from micro-batches of 1 and 3: per token,
    layer and unit of width (the slope), and per micro-step (the intercept: weight casts, gradients)."""
    torch.manual_seed(0)
    model, counted = _bert_base("cpu"), []
    for micro in (1, 3):
        with _Traffic() as counter, torch.autocast("cpu", torch.bfloat16):
            loss, _ = MLMObjective(model)(*_step_inputs(micro, seq_len, "cpu"))
            loss.backward()
        counted.append(counter.bytes)
        model.zero_grad(set_to_none=True)
    per_token = (counted[1] - counted[0]) / (2 * seq_len)
    params = sum(p.numel() for p in model.parameters())
    return {
        "per_token_layer_width": per_token / (12 * 768),
        "per_micro_step_per_parameter": (counted[0] - per_token * seq_len) / params,
    }


def meta_dispatch(layers: int, repeats: int = 5) -> dict:
    """Host seconds and operators of one forward and backward micro-step on the meta device."""
    model, batch = _bert_base("meta", layers), _step_inputs(64, 128, "meta")
    objective, times = MLMObjective(model), []
    for _ in range(repeats):
        begin = time.perf_counter()
        loss, _ = objective(*batch)
        loss.backward()
        times.append(time.perf_counter() - begin)
    with _Traffic() as counter:
        loss, _ = objective(*batch)
        loss.backward()
    return {"layers": layers, "host_s": statistics.median(times[1:]), "operators": counter.ops}


def kl_traffic_per_element() -> dict:
    """Bytes per [row, V] element that the full and the chunked KL move, forward and backward (CPU)."""
    out = {}
    student, teacher = torch.randn(256, 4096).bfloat16().requires_grad_(), torch.randn(256, 4096).bfloat16()
    full = lambda: _full_kl(student, teacher)  # noqa: E731
    for name, fn in (("full", full), ("chunked", lambda: losses.kl_logits(student, teacher, 2.0, 64))):
        with _Traffic() as counter:
            fn().backward()
        out[name] = counter.bytes / student.numel()
    out["chunked_compiled"] = 5 * 2  # read both bf16 logits in forward and backward, write the gradient
    return out


def _full_kl(student, teacher, temperature=2.0):
    t = torch.log_softmax(teacher.float() / temperature, -1)
    s = torch.log_softmax(student.float() / temperature, -1)
    return (t.exp() * (t - s)).sum() * temperature**2


def data_path_seconds(seq_len: int, world: int = 16, batch: int = 8192) -> dict:
    """CPU time of one rank's mask draws and masking: the whole global batch (today) against its own rows."""
    torch.set_num_threads(1)
    share = batch // world
    ids, flags = torch.randint(5, 50000, (share, seq_len)), torch.ones(share, seq_len, dtype=torch.int8)
    out = {}
    for name, rows in (("global_draw", batch), ("rank_local_draw", share)):
        begin = time.perf_counter()
        whole = draw(step_generator(1, 0, 0), rows, seq_len, 50000)
        draws = MaskDraws(whole.select[:share], whole.action[:share], whole.random_ids[:share])
        apply_mask(ids, flags, draws, mask_prob=0.15, mask_id=4)
        out[name] = time.perf_counter() - begin
    return out


# micro-batches config.yaml gave before micro_batch_size: auto (the distillation recipes inherit Lewis et al.'s)
PAPER_MICRO = {"base": 64, "large": 32}
BEFORE = {"compile": False, "static": False, "data": False, "micro": False, "chunked_kl": False, "ddp": False}
AFTER = dict.fromkeys(BEFORE, True)


@dataclasses.dataclass
class Run:
    """What the time model needs of one trained model of the study."""

    name: str
    gpus: int
    nodes: int
    batch: int
    phases: list[tuple[int, int]]  # (seq_len, steps)
    paper_micro: int | None
    trained_params: int
    widths: list[tuple[int, int, float]]  # (layers, hidden, passes: 1 trained, 1/3 forward only) per encoder
    flops: object  # seq_len -> FLOPs per token
    memory_for: object  # (micro, seq_len, full_kl) -> bytes
    kl_vocab: int = 0  # vocabulary of the output KL over every position (0: none)


def _layers(run: Run) -> float:
    return sum(n * p for n, _, p in run.widths)


def step_seconds(run: Run, seq_len: int, on: dict, c: dict) -> tuple[float, int]:
    """Predicted seconds of one optimiser step on one GPU, and the micro-batch, with the points ``on``."""
    share, longest = run.batch // run.gpus, max(n for n, _ in run.phases)  # auto sizes for the longest phase
    budget = memory.budget(80.0)
    if on["micro"] or run.paper_micro is None:
        micro = memory.auto_micro_batch(lambda m: run.memory_for(m, longest, not on["chunked_kl"]), share, budget)
    else:
        micro = min(run.paper_micro, share)
        while micro > 1 and run.memory_for(micro, longest, not on["chunked_kl"]) > budget:
            micro //= 2  # the recipe's micro-batch would not fit: the run needs a smaller one
    tokens = micro * seq_len
    if on["compile"]:
        traffic = sum(n * p * 2 * memory.layer_bytes_per_token(_enc(h), seq_len, GPU) for n, h, p in run.widths)
    else:
        traffic = c["eager_traffic"]["per_token_layer_width"] * sum(n * h * p for n, h, p in run.widths)
    kl = run.kl_vocab * c["kl_bytes"]["chunked_compiled" if on["compile"] and on["chunked_kl"] else "full"]
    fixed = c["eager_traffic"]["per_micro_step_per_parameter"] * run.trained_params  # weight casts, gradients
    gpu = tokens * run.flops(seq_len) / (ASSUMED["matmul_tflops"] * 1e12)
    gpu += (tokens * (traffic + kl) + fixed) / (ASSUMED["hbm_tb_per_s"] * 1e12)
    host = c["kernels_per_layer"] * _layers(run) * ASSUMED["host_us_per_kernel"] * 1e-6
    host *= 0 if on["compile"] and on["static"] else ASSUMED["compiled_host_fraction"] if on["compile"] else 1
    data = data_seconds(c["data_path"], seq_len, "rank_local_draw" if on["data"] else "global_draw")
    exposed_data = max(0.0, data - gpu * share / micro) if on["data"] else data
    net = ASSUMED["network_gb_per_s"] * 1e9 * (1 if run.nodes > 1 else 6)  # NVLink within a node
    grad_bytes = run.trained_params * (2 if on["ddp"] else 4)
    allreduce = ASSUMED["exposed_allreduce"] * 2 * grad_bytes * (run.gpus - 1) / run.gpus / net if run.gpus > 1 else 0
    optimiser = 16 * run.trained_params * 2 / (ASSUMED["hbm_tb_per_s"] * 1e12)
    return share // micro * max(gpu, host) + exposed_data + allreduce + optimiser, micro


def data_seconds(measured: dict, seq_len: int, key: str) -> float:
    """The measured draw time at ``seq_len``; at a length not measured, 512's scaled by the tokens
    (drawing and masking are linear in them)."""
    if seq_len in measured:
        return measured[seq_len][key]
    return measured[512][key] * seq_len / 512


def _enc(hidden: int) -> Shape:
    return Shape(layers=1, hidden=hidden, intermediate=4 * hidden, vocab=1, heads=max(hidden // 64, 1), params=0)


GPU = memory.Precision(autocast=True, dropout=True, fused_attention=True)


def gpu_hours(run: Run, on: dict, c: dict) -> dict:
    hours, tokens, flops, micro = 0.0, 0, 0.0, {}
    for seq_len, steps in run.phases:
        seconds, micro[seq_len] = step_seconds(run, seq_len, on, c)
        hours += steps * seconds * run.gpus / 3600
        tokens += steps * run.batch * seq_len
        flops += steps * run.batch * seq_len * run.flops(seq_len)
    seconds = hours * 3600 / run.gpus
    return {
        "gpu_hours": hours,
        "tokens_per_s_per_gpu": tokens / seconds / run.gpus,
        "mfu": flops / seconds / run.gpus / (ASSUMED["peak_tflops"] * 1e12),
        "micro_batch": micro,
    }


HUB_VOCAB = {
    "FacebookAI/roberta-base": 50265,
    "FacebookAI/roberta-large": 50265,
    "google-bert/bert-base-uncased": 30522,
}


def _vocab(study, name: str) -> int:
    m = study.models[name]
    if m.kind == "external":
        return HUB_VOCAB[getattr(m.checkpoint, "hub", m.checkpoint)]
    return study.vocabularies[m.vocab].train.size if m.vocab else _vocab(study, m.init)


def _recipe(study, name: str):
    m = study.models[name]
    return m.pretrain if m.kind == "pretrain" else m.distill


def _meta_mlm(arch: str, shape: tuple[int, int, int, int], vocab: int, seq_len: int = 512):
    from gpu_check_pretrain import masked_lm

    hidden, layers, heads, inter = shape
    return masked_lm(arch, hidden, layers, heads, vocab, seq_len, torch.device("meta"), intermediate=inter)


def _teacher_model(study, name: str):
    s = _recipe(study, name)
    return _meta_mlm(s.architecture, s.shape(), _vocab(study, name))


def _mlm_run(study, name: str, common: dict) -> Run:
    s = _recipe(study, name)
    if s.objective == "electra":
        return _electra_run(study, name, common)
    model = _meta_mlm(s.architecture, s.shape(), _vocab(study, name))
    e = Shape.of(model)
    return Run(
        **common,
        trained_params=e.params,
        widths=[(e.layers, e.hidden, 1.0)],
        flops=lambda n: train_flops_per_token(model, n, s.mask_prob),
        memory_for=lambda m, n, full: memory.mlm_step_bytes(e, m, n, s.mask_prob, GPU),
    )


def _electra_run(study, name: str, common: dict) -> Run:
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    from workflow_scripts.pretrain import electra

    s, vocab = _recipe(study, name), _vocab(study, name)
    hidden, layers, heads, inter = s.shape()
    g_heads = max(1, round(heads * s.electra.generator_size))
    g_hidden = hidden // heads * g_heads
    base = dict(vocab_size=vocab, embedding_size=hidden, num_hidden_layers=layers, max_position_embeddings=512)
    with torch.device("meta"):
        d = ElectraForPreTraining(
            ElectraConfig(hidden_size=hidden, num_attention_heads=heads, intermediate_size=inter, **base)
        )
        g = ElectraForMaskedLM(
            ElectraConfig(hidden_size=g_hidden, num_attention_heads=g_heads, intermediate_size=4 * g_hidden, **base)
        )
    de, ge = dataclasses.replace(Shape.of(d), vocab=1), Shape.of(g)
    return Run(
        **common,
        trained_params=de.params + ge.params - hidden * vocab,
        widths=[(layers, hidden, 1.0), (layers, g_hidden, 1.0)],
        flops=lambda n: electra.flops_fn(d, g)(n, s.mask_prob),
        memory_for=lambda m, n, full: memory.electra_step_bytes(de, ge, m, n, s.mask_prob, GPU),
    )


def _distill_run(study, name: str, common: dict, full_kl_tensors: float) -> Run:
    from workflow_scripts.distill.objective import DistillObjective

    m, s = study.models[name], study.models[name].distill
    teacher = _teacher_model(study, m.teacher)
    t = _recipe(study, m.teacher)
    if s.student.init == "model":
        student = _teacher_model(study, m.init)
    elif s.student.init == "teacher_layers":
        hidden, _, heads, inter = t.shape()
        student = _meta_mlm(t.architecture, (hidden, s.student.num_layers, heads, inter), _vocab(study, m.teacher))
    else:
        student = _meta_mlm(t.architecture, s.shape(), _vocab(study, m.teacher))
    st, te = Shape.of(student), Shape.of(teacher)
    layer_map = s.layer_map or [round((i + 1) * te.layers / st.layers) for i in range(st.layers)]
    with torch.device("meta"):
        objective = DistillObjective(student, teacher, s.loss, s.temperature, layer_map, kl_positions=s.kl_positions)
    kl_all = s.kl_positions == "all" and objective.needs_logits

    def memory_for(micro: int, seq_len: int, full: bool) -> float:
        chunked = distill_memory.distill_step_bytes(st, te, micro, seq_len, s.mask_prob, kl_all, GPU)
        rows = micro * seq_len if kl_all else 0
        chunk = memory.CHUNK_TENSORS * 4 * min(losses.CHUNK_ELEMENTS, rows * st.vocab)
        return chunked + (full_kl_tensors * 4 * rows * st.vocab - chunk if full and rows else 0)

    return Run(
        **common,
        trained_params=st.params,
        widths=[(st.layers, st.hidden, 1.0), (te.layers, te.hidden, 1 / 3)],
        flops=lambda n: objective.flops_per_token(n, s.mask_prob),
        memory_for=memory_for,
        kl_vocab=st.vocab if kl_all else 0,
    )


def study_runs(full_kl_tensors: float) -> list[Run]:
    study = load_study(yaml.safe_load((ROOT / "config.yaml").read_text()))
    runs = []
    for name, m in study.models.items():
        if m.kind not in ("pretrain", "distill"):
            continue
        s, res = _recipe(study, name), study.job_resources(m.kind, name)
        size = "large" if s.shape()[0] >= 1024 else "base"
        paper = PAPER_MICRO[size] if s.batch_size // res.gpu > 32 else None
        common = dict(
            name=name,
            gpus=res.gpu,
            nodes=res.nodes,
            batch=s.batch_size,
            phases=[(p.seq_len, n) for p, n in zip(s.phases, s.phase_steps(), strict=True)],
            paper_micro=paper,
        )
        runs.append(
            _distill_run(study, name, common, full_kl_tensors) if m.kind == "distill" else _mlm_run(study, name, common)
        )
    return runs


def components() -> dict:
    from bench_memory import kl_memory

    per_layer = [meta_dispatch(n) for n in (2, 12)]
    kernels_per_layer = (per_layer[1]["operators"] - per_layer[0]["operators"]) / 10
    full = next(r for r in kl_memory(4096, [8192], [1 << 20]) if r["variant"] == "full")
    return {
        "eager_traffic": eager_traffic(),
        "meta_dispatch": per_layer,
        "kernels_per_layer": kernels_per_layer,
        "meta_host_s_per_layer": (per_layer[1]["host_s"] - per_layer[0]["host_s"]) / 10,
        "kl_bytes": kl_traffic_per_element(),
        "full_kl_fp32_tensors": (full["peak_mb"] - full["student_grad_mb"]) * 2**20 / (4 * 8192 * 4096),
        "data_path": {n: data_path_seconds(n) for n in (128, 512)},
    }


POINTS = [
    ("compile", "torch.compile: fused elementwise traffic, a third of the launches", {"compile": True}, {}),
    ("data path", "rank-local draws, prefetched", {"data": True}, {}),
    ("micro-batch", "micro_batch_size: auto on 80 GB", {"micro": True}, {}),
    (
        "static shapes",
        "fixed prediction count: CUDA graphs, no host dispatch (on top of compile)",
        {"static": True},
        {"compile": True},
    ),
    (
        "distillation memory",
        "chunked KL: larger micro-batches fit, fused KL traffic (on top of compile and auto)",
        {"chunked_kl": True},
        {"compile": True, "micro": True},
    ),
    ("DDP", "bf16 gradient all-reduce, bucket views, no buffer broadcast", {"ddp": True}, {}),
]


def measured_component(point: str, c: dict) -> str:
    """The CPU-measured figure each point's prediction rests on."""
    d, m, t = c["data_path"], c["meta_dispatch"][1], c["eager_traffic"]
    ms = lambda k: f"{d[128][k] * 1e3:.0f}/{d[512][k] * 1e3:.0f} ms"  # noqa: E731
    return {
        "compile": f"eager non-matmul traffic {t['per_token_layer_width'] * 768 * 12 / 1e6:.1f} MB/token (BERT-base)",
        "data path": f"draws per rank-step at 128/512: {ms('global_draw')} global, {ms('rank_local_draw')} rank-local",
        "micro-batch": f"{t['per_micro_step_per_parameter']:.1f} bytes per parameter per micro-step (casts, gradients);"
        " memory estimate (bench_memory)",
        "static shapes": f"{m['operators']} kernels per BERT-base micro-step; "
        f"{m['host_s'] * 1e3:.0f} ms on the meta device",
        "distillation memory": f"full KL holds {c['full_kl_fp32_tensors']:.1f} fp32 [N, V] tensors and moves"
        f" {c['kl_bytes']['full']:.0f} B per element",
        "DDP": "gradient bytes 4 -> 2 per parameter",
    }[point]


GPU_RESULTS = ROOT / "benchmarks" / "results" / "gpu"


# card -> the files benchmarks/gpu_check_pretrain.py wrote there (pretraining variants, distillation). The H100's
# torch 2.11 handed its compiled steps an all-true attention mask (math attention); the H200's check answered
# is_exporting() as the pinned torch does (flash attention), on a card with 1.4x the H100's memory bandwidth.
MEASURED_ON = {
    "h100": ("h100_pretrain_variants.json", "h100_distill.json"),
    "h200": ("h200_pretrain_distill.json", "h200_pretrain_distill.json"),
}


def measured_mfu(card: str) -> dict:
    """MFU measured on one GPU of ``card`` (torch 2.11, transformers 5.23), by (encoder widths, seq_len), with the
    record it came from."""
    pretrain, distill = MEASURED_ON[card]
    variants = json.loads((GPU_RESULTS / pretrain).read_text())["sections"]["variants"]
    compiled = json.loads((GPU_RESULTS / distill).read_text())["sections"]["distill"]["compiled"]
    return {
        (((12, 768, 1.0),), 128): (variants["papers"]["mfu"], f"{pretrain}: papers (compiled)"),
        (((12, 768, 1.0), (24, 1024, 1 / 3)), 512): (compiled["mfu"], f"{distill}: compiled"),
    }


def at_measured_rates(run: Run, c: dict, measured: dict) -> dict:
    """GPU-hours with each phase whose encoder shape and length were measured on a GPU at that MFU (one GPU:
    no all-reduce), the others at the AFTER prediction; the share of GPU-hours that is measured."""
    hours = {"measured": 0.0, "predicted": 0.0}
    sources = []
    for seq_len, steps in run.phases:
        found = measured.get((tuple(run.widths), seq_len))
        if found:
            flops = steps * run.batch * seq_len * run.flops(seq_len)
            hours["measured"] += flops / (found[0] * ASSUMED["peak_tflops"] * 1e12) / 3600
            sources.append(found[1])
        else:
            hours["predicted"] += steps * step_seconds(run, seq_len, AFTER, c)[0] * run.gpus / 3600
    total = hours["measured"] + hours["predicted"]
    share = hours["measured"] / total
    label = "measured" if share == 1 else "prediction" if share == 0 else f"measured {share:.0%}, rest prediction"
    return {"gpu_hours": total, "measured_share": share, "label": label, "sources": sources}


def totals(runs: list[Run], on: dict, c: dict) -> dict[str, dict]:
    return {r.name: gpu_hours(r, on, c) for r in runs}


def point_rows(runs: list[Run], c: dict) -> list[dict]:
    rows = []
    for point, what, change, base in POINTS:
        before = totals(runs, {**BEFORE, **base}, c)
        after = totals(runs, {**BEFORE, **base, **change}, c)
        b, a = sum(v["gpu_hours"] for v in before.values()), sum(v["gpu_hours"] for v in after.values())
        rows.append(
            {
                "point": point,
                "change": what,
                "measured_component": measured_component(point, c),
                "predicted_gpu_hours_saved": b - a,
                "predicted_saving": 1 - a / b,
            }
        )
    before, after = totals(runs, BEFORE, c), totals(runs, AFTER, c)
    mfu = lambda t: sum(v["mfu"] * v["gpu_hours"] for v in t.values()) / sum(v["gpu_hours"] for v in t.values())  # noqa: E731
    rows.append(
        {
            "point": "MFU",
            "change": "GPU-hour-weighted MFU of the study, by FLOPS_FORMULA",
            "mfu_before": mfu(before),
            "mfu_after": mfu(after),
        }
    )
    return rows


def markdown(result: dict) -> str:
    lines = [
        "| point | change | CPU-measured component | predicted saving (study GPU-hours) | measured on a GPU |",
        "|---|---|---|---|---|",
    ]
    for r in result["points"]:
        if r["point"] == "MFU":
            mfu = f"{r['mfu_before']:.0%} -> {r['mfu_after']:.0%} (prediction)"
            lines.append(f"| MFU | {r['change']} | FLOPs per token (= FlopCounterMode) | {mfu} | |")
        else:
            lines.append(
                f"| {r['point']} | {r['change']} | {r['measured_component']} | "
                f"{r['predicted_gpu_hours_saved']:,.0f} h, {r['predicted_saving']:.0%} (prediction) | |"
            )
    lines += [
        "",
        "| model | GPUs | micro before -> after | GPU-hours before | after | MFU before -> after "
        "| GPU-hours at measured H100 MFU where measured | at measured H200 MFU (flash attention) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in result["models"].items():
        b, a = r["before"], r["after"]
        micro = f"{'/'.join(map(str, b['micro_batch'].values()))} -> {'/'.join(map(str, a['micro_batch'].values()))}"
        hours = f"{b['gpu_hours']:,.0f} | {a['gpu_hours']:,.0f}"
        measured = " | ".join(f"{m['gpu_hours']:,.0f} ({m['label']})" for m in r["at_measured_rates"].values())
        lines.append(f"| {name} | {r['gpus']} | {micro} | {hours} | {b['mfu']:.0%} -> {a['mfu']:.0%} | {measured} |")
    b = sum(r["before"]["gpu_hours"] for r in result["models"].values())
    a = sum(r["after"]["gpu_hours"] for r in result["models"].values())
    m = [sum(r["at_measured_rates"][card]["gpu_hours"] for r in result["models"].values()) for card in MEASURED_ON]
    lines.append(f"| all | | | {b:,.0f} | {a:,.0f} | | {' | '.join(f'{x:,.0f}' for x in m)} |")
    return "\n".join(lines)


def stored_components(path: Path) -> dict:
    """The components an earlier run recorded, with the sequence lengths JSON wrote as strings as ints again."""

    def keys(value):
        if not isinstance(value, dict):
            return value
        return {int(k) if k.isdigit() else k: keys(v) for k, v in value.items()}

    return keys(json.loads(path.read_text())["components"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "gpu_budget.json"))
    ap.add_argument(
        "--components-from",
        help="an earlier run's JSON: its CPU-measured components (host times move with the CPU), so that only "
        "the columns at GPU-measured rates change",
    )
    args = ap.parse_args()
    c = stored_components(Path(args.components_from)) if args.components_from else components()
    runs, measured = study_runs(c["full_kl_fp32_tensors"]), {card: measured_mfu(card) for card in MEASURED_ON}
    result = {
        "label": "PREDICTIONS from CPU-measured components and the ASSUMED rates, except at_measured_rates: "
        "phases of a shape measured on one H100 or one H200 at its measured MFU, labelled per model",
        "flops_formula": FLOPS_FORMULA,
        "assumed": ASSUMED,
        "components": c,
        "points": point_rows(runs, c),
        "models": {
            r.name: {
                "gpus": r.gpus,
                "before": gpu_hours(r, BEFORE, c),
                "after": gpu_hours(r, AFTER, c),
                "at_measured_rates": {card: at_measured_rates(r, c, on) for card, on in measured.items()},
            }
            for r in runs
        },
    }
    write_json(Path(args.out), result)
    print(markdown(result))


if __name__ == "__main__":
    main()
