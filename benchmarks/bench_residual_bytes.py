"""Bytes a compiled BERT-base step moves outside its matrix products, with the residual stream in fp32 (torch's
autocast) and in bf16 (``residual_stream: autocast``), and the GPU step time that predicts.

    python benchmarks/bench_residual_bytes.py [--layers 2 4] [--micro 4 8] [--out FILE.json]

Inductor counts the bytes of the buffers each kernel it generates reads and writes (``torch._inductor.metrics``,
the forward and the backward graph); the matrix products, extern kernels, are counted apart. The step is compiled
on the CPU under bf16 autocast, which gives the stream the dtypes CUDA's autocast gives it: Linears in bf16, the
fp32 LayerNorm inputs and outputs of torch's rule, or bf16 ones with the setting. Two depths at two micro-batches
are compiled: what one layer adds per sequence, free of the embeddings, the output head and each step's bf16
copies of the weights, is extrapolated to the GPU check's micro-batch of 256. Attention dropout is 0, so
the CPU runs a fused attention kernel as a GPU does; with dropout the CPU's math attention would add [heads, L, L]
elementwise tensors that flash attention never writes.

Each generated kernel is also put in a group by the operators it was generated from (inductor's ``original_aten``
of the nodes it fuses): GELU, LayerNorm, dropout and residual, bias gradients, attention, the rest. The groups
show which kernels move the bytes, so which fusion could take them out.

Inductor fuses differently for a GPU than for the CPU, so the bytes are a proxy and the step time derived from them
a prediction: the normalisation and elementwise kernels' share of the H200's kernel time (the GPU check's
"papers" variant) scaled by the ratio of bytes, the rest unchanged.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import torch
from torch._inductor import config as inductor_config
from torch._inductor import metrics
from torch._inductor.scheduler import ExternKernelSchedulerNode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package from this working tree, whatever is installed
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dag import cpu_name  # noqa: E402
from gpu_check_pretrain import GPU, batch, masked_lm  # noqa: E402

from workflow_scripts.pretrain.model import MLMObjective  # noqa: E402
from workflow_scripts.pretrain.residual import keep_residual_in_autocast_dtype  # noqa: E402

H200_SHARES = ROOT / "benchmarks" / "results" / "gpu" / "h200_pretrain_variants.json"
STREAMS = ("fp32", "autocast")
# a kernel's group: the first whose operators it was generated from (with the forward's, their backward's)
KERNEL_GROUPS = (
    ("gelu", {"gelu"}),  # the bias gradient behind it reduces the GELU's backward: fused or not, its bytes
    ("layer_norm", {"native_layer_norm"}),  # with the dropout and residual sums inductor fuses into it
    ("attention", {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention"}),
    ("dropout_residual", {"native_dropout", "add"}),
    ("bias_gradients", {"sum"}),
)
GROUPS = [name for name, _ in KERNEL_GROUPS] + ["rest"]


def count_bytes_quietly() -> None:
    """Inductor counts the bytes only where its metrics log is enabled at INFO; each graph's line is long."""
    from torch._inductor.compile_fx import inductor_metrics_log

    inductor_metrics_log.setLevel(logging.INFO)
    inductor_metrics_log.disabled = False
    inductor_metrics_log.propagate = False
    inductor_metrics_log.handlers = [logging.NullHandler()]


def operators(node) -> set[str]:
    """The aten operators a scheduled kernel was generated from, backward ones named as their forward."""
    names = set()
    for part in node.get_nodes():
        for origin in part.node.origins if part.node is not None else ():
            if (aten := origin.meta.get("original_aten")) is not None:
                names.add(aten.overloadpacket.__name__.removesuffix("_backward"))
    return names


def kernel_group(ops: set[str]) -> str:
    return next((name for name, members in KERNEL_GROUPS if ops & members), "rest")


def step_bytes(layers: int, micro: int, stream: str) -> dict[str, int]:
    """Bytes one compiled forward and backward pass of BERT-base (``layers`` deep) moves: matrix products and the
    rest, as inductor counts them while it generates the kernels, the rest also by kernel group."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    cpu = torch.device("cpu")
    model = masked_lm("bert", GPU.hidden, layers, GPU.heads, GPU.vocab, GPU.seq_len, cpu, 0.1, 0.0)
    if stream == "autocast":
        keep_residual_in_autocast_dtype(model)
    step = torch.compile(MLMObjective(model), fullgraph=True)
    metrics.reset()
    with torch.autocast("cpu", torch.bfloat16):
        loss, _ = step(*batch(micro, GPU.seq_len, GPU.vocab, cpu))
    loss.backward()
    out = {"total": metrics.num_bytes_accessed, "gemm": 0} | dict.fromkeys(GROUPS, 0)
    for node, elements in metrics.nodes_num_elem:  # inductor's count: bytes over 4
        extern = isinstance(node, ExternKernelSchedulerNode)
        out["gemm" if extern else kernel_group(operators(node))] += 4 * elements
    return out | {"other": metrics.num_bytes_accessed - out["gemm"]}


def per_layer(counts: dict, layers: list[int], micros: list[int], micro: int) -> dict[str, float]:
    """A layer's bytes at ``micro`` sequences: the fixed part (weights) and the part per sequence, from the
    differences between the two depths at each of the two micro-batches."""
    (d0, d1), (m0, m1) = sorted(layers), sorted(micros)
    kinds = ("gemm", "other", *GROUPS)
    layer = {m: {k: (counts[f"{d1}x{m}"][k] - counts[f"{d0}x{m}"][k]) / (d1 - d0) for k in kinds} for m in (m0, m1)}
    out = {}
    for k in kinds:
        per_sequence = (layer[m1][k] - layer[m0][k]) / (m1 - m0)
        out[k] = layer[m0][k] + (micro - m0) * per_sequence
        out[f"{k}_per_sequence"] = per_sequence
    return out


def predicted_step(ratio: float, shares: dict[str, float]) -> dict[str, float]:
    """The step's kernel time with its normalisation and elementwise kernels scaled by ``ratio``, from the H200's
    kernel-time shares (idle left out: the card was busy 93% of the step)."""
    busy = {k: v for k, v in shares.items() if k != "idle"}
    total = sum(busy.values())
    elementwise = busy["normalisation_elementwise"] / total
    return {"elementwise_share": elementwise, "step_ratio": 1 - elementwise * (1 - ratio)}


def table(out: dict) -> str:
    rows = [
        f"| residual stream | a layer's other bytes per sequence | a layer at micro {out['extrapolated_to']}: "
        "matrix products | other |",
        "|---|---|---|---|",
    ]
    for stream in STREAMS:
        layer = out["per_layer"][stream]
        rows.append(
            f"| {stream} | {layer['other_per_sequence'] / 1e3:,.0f} kB | {layer['gemm'] / 1e9:,.2f} GB "
            f"| {layer['other'] / 1e9:,.2f} GB |"
        )
    p, bound = out["prediction"], out["without_gelu_kernels"]
    rows.append(
        f"\nother bytes, autocast / fp32: {out['other_ratio']:.3f}; predicted step (a prediction): "
        f"{p['step_ratio']:.3f}x the time, {1 / p['step_ratio']:.3f}x the speed "
        f"(elementwise share of the H200's kernel time {p['elementwise_share']:.1%})"
    )
    rows += ["", "| kernel group | " + " | ".join(STREAMS) + " |", "|---|" + "---|" * len(STREAMS)]
    for group in GROUPS:
        layers = [out["per_layer"][stream] for stream in STREAMS]
        kb = [(layer[f"{group}_per_sequence"], layer["other_per_sequence"]) for layer in layers]
        rows.append(f"| {group} | " + " | ".join(f"{n / 1e3:,.0f} kB ({n / other:.0%})" for n, other in kb) + " |")
    rows.append(
        f"\nat most, the bf16 stream with no GELU kernel bytes (a bound, a prediction): {bound['step_ratio']:.3f}x "
        f"the time, {1 / bound['step_ratio']:.3f}x the speed"
    )
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, nargs=2, default=[2, 4], help="two depths; their difference is a layer")
    ap.add_argument("--micro", type=int, nargs=2, default=[4, 8], help="two micro-batches of 128-token sequences")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "residual_bytes.json"))
    args = ap.parse_args(argv)
    inductor_config.fx_graph_cache = False  # a cached graph is not generated again, so its bytes would not count
    torch._functorch.config.enable_autograd_cache = False
    count_bytes_quietly()
    torch.set_num_threads(2)
    began = time.perf_counter()
    counts = {s: {f"{n}x{m}": step_bytes(n, m, s) for n in args.layers for m in args.micro} for s in STREAMS}
    layers = {s: per_layer(counts[s], args.layers, args.micro, GPU.micro) for s in STREAMS}
    ratio = layers["autocast"]["other"] / layers["fp32"]["other"]
    shares = json.loads(H200_SHARES.read_text())["sections"]["variants"]["papers"]["shares"]
    out = {
        "cpu": cpu_name(),
        "torch": torch.__version__,
        "micro": args.micro,
        "extrapolated_to": GPU.micro,
        "seq_len": GPU.seq_len,
        "layers": args.layers,
        "counts": counts,
        "per_layer": layers,
        "other_ratio": ratio,
        "prediction": predicted_step(ratio, shares),
        # what GEMM epilogues that took in every GELU kernel's bytes could give at most, the stream in bf16
        "without_gelu_kernels": predicted_step(
            (layers["autocast"]["other"] - layers["autocast"]["gelu"]) / layers["fp32"]["other"], shares
        ),
        "h200_shares_from": str(H200_SHARES.relative_to(ROOT)),
        "wall_s": time.perf_counter() - began,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(table(out))


if __name__ == "__main__":
    main()
