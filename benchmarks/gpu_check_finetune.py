"""Fine-tuning on one GPU, through the pipeline's own device set-up and step: precision, SDPA
backends, CUDA graphs, BERT-large and 512-token inputs, and 1, 2, 4, 8 runs sharing the card.

    python benchmarks/gpu_check_finetune.py [--steps 30] [--runs 1 2 4 8] [--budget-s 120] [--parts NAME ...]
                                            [--cpu-smoke]

Models are built from their configs (no hub, no network). Every case sets up the device with
``finetune/device.py``'s ``prepare`` (TF32 matmuls, the precision resolved as a run resolves it),
pads and runs as a run does with ``finetune/execution.py``'s ``execution_for`` (the SDPA
backends, the length buckets, CUDA graphs) and trains with ``finetune/loop.py``'s
``train_step`` (collate, autocast, AdamW, clipping): the pipeline's step, not a copy of it.

Parts, in this order; the JSON is rewritten after each, so a cap that stops the check keeps
what it measured:
1. ``variants``: BERT-base, NER-shaped (batch 32, 12-90 sub-tokens, length grouped), in fp32 and
   bf16 with the default backends (flash, efficient, math), bf16 with torch's own choice (cuDNN
   attention allowed: what the measured 107-151 examples/s came from) and bf16 with math only.
   Each: ``--steps`` timed steps after 5 untimed ones, host-device synchronisations counted
   with ``torch.cuda.set_sync_debug_mode("warn")``, the distinct padded widths seen.
2. ``large_and_long``: BERT-large on the NER shape, and BERT-base on a PubMedQA-shaped
   sequence classification of 200-512 tokens (batch 16), both bf16: where memory binds.
3. ``runs_per_card``: N processes of the bf16 NER run, N = 1, 2, 4, 8, stopped once doubling N
   gains under 10% (saturation). They warm up, wait for a common start; the card's figure is
   every run's timed examples over the span from that start to the last run's end.
4. ``cuda_graphs``: the bf16 NER run without and with ``cuda_graphs: true`` (buckets 32, 64, 96,
   128), on one card; the warm-up that compiles and captures each bucket is timed apart as
   ``warmup_s`` (81 s on one H200).

A part that would start after ``--budget-s`` seconds is skipped and says so. On one H100 the first
three parts took 110 s. Writes gpu_check_finetune.json into
--out-dir ($OUT when set, else benchmarks/results/gpu/). ``--cpu-smoke`` runs the same code with
tiny shapes for a few steps on the CPU (no figure of it describes a GPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workflow_scripts import optim  # noqa: E402
from workflow_scripts.finetune.batching import ahead, train_batches  # noqa: E402
from workflow_scripts.finetune.device import prepare  # noqa: E402
from workflow_scripts.finetune.execution import execution_for  # noqa: E402
from workflow_scripts.finetune.loop import train_step  # noqa: E402
from workflow_scripts.finetune.settings import FinetuneSettings  # noqa: E402

BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
TAGS, CLASSES, WARMUP, GRAPH_WARMUP = 5, 3, 5, 20
DEFAULT = ["flash", "efficient", "math"]


@dataclasses.dataclass(frozen=True)
class Case:
    """One measured configuration: a model shape, a task shape and the run's settings."""

    shape: dict
    task: str = "ner"  # ner: token classification; qa: sequence classification
    lengths: tuple[int, int] = (12, 90)
    batch: int = 32
    limit: int = 128
    precision: str = "bf16"
    backends: tuple[str, ...] = tuple(DEFAULT)
    graphs: bool = False


def features(case: Case, n: int, seed: int, vocab: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(case.lengths[0], case.lengths[1] + 1))
        label = (
            {"labels": rng.integers(0, TAGS, k).tolist()}
            if case.task == "ner"
            else {"label": int(rng.integers(CLASSES))}
        )
        out.append({"input_ids": rng.integers(5, vocab, k).tolist(), **label})
    return out


def build(case: Case, device: torch.device):
    from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

    torch.manual_seed(0)
    head = BertForTokenClassification if case.task == "ner" else BertForSequenceClassification
    config = BertConfig(vocab_size=30522, num_labels=TAGS if case.task == "ner" else CLASSES, **case.shape)
    return head(config).to(device)


def run(case: Case, steps: int, device_name: str, count_syncs: bool, start_after=None) -> dict:
    """``steps`` timed steps of the pipeline's training step after the untimed warm-up."""
    cfg = FinetuneSettings(
        batch_size=case.batch,
        precision=case.precision,
        device=device_name,
        sdpa_backends=list(case.backends),
        cuda_graphs=case.graphs,
    )
    device, cfg = prepare(cfg, case.task)
    execution = execution_for(cfg, device, case.limit)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    model = build(case, device)
    model.train()
    warmup = GRAPH_WARMUP if execution.graphs else WARMUP
    update = optim.updater(
        model,
        lr=3e-5,
        weight_decay=0.01,
        eps=1e-8,
        total_steps=steps + warmup,
        warmup_ratio=0.1,
        precision=cfg.precision,
        device=device,
    )
    data = features(case, case.batch * (steps + warmup), seed=1, vocab=30000)
    lengths = [len(f["input_ids"]) for f in data]
    order = train_batches(lengths, case.batch, np.random.default_rng(0), True)
    batches = ahead(order, data, 0, case.task, device, padding=execution.padding)
    tick = time.time()
    widths = set()
    for _, batch in (next(batches) for _ in range(warmup)):
        widths.add(batch["input_ids"].shape[1])
        train_step(model, batch, update, cfg, case.task, device, execution)
    synchronize(device)
    warmup_s = time.time() - tick
    if start_after is not None:
        start_after()
    losses = []
    start = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if count_syncs:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            for _, batch in batches:
                widths.add(batch["input_ids"].shape[1])
                losses.append(train_step(model, batch, update, cfg, case.task, device, execution))
        finally:
            if count_syncs:
                torch.cuda.set_sync_debug_mode(0)
        sites = [f"{Path(w.filename).name}:{w.lineno}" for w in caught if "synchroniz" in str(w.message)]
    synchronize(device)
    end = time.time()
    return {
        **execution.record(),
        "precision": cfg.precision,
        "batch": case.batch,
        "lengths": list(case.lengths),
        "steps": len(losses),
        "examples": len(losses) * case.batch,
        "warmup_s": round(warmup_s, 3),
        "seconds": round(end - start, 4),
        "start": start,
        "end": end,
        "examples_per_s": round(len(losses) * case.batch / (end - start), 2),
        "distinct_widths": sorted(widths),
        "syncs_in_steps": len(sites) if count_syncs else None,
        "sync_sites": sorted(set(sites))[:20] if count_syncs else None,
        "final_loss": round(float(losses[-1]), 4),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None,
    }


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def worker(args) -> None:
    """One of N concurrent runs: warm up, say so, wait for the common start, report."""

    def wait_for_start() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    result = run(Case(args.shape), args.steps, args.device, False, start_after=wait_for_start)
    print(json.dumps(result), flush=True)


def concurrent(n: int, args) -> dict:
    command = [sys.executable, __file__, "--worker", "--steps", str(args.steps), "--device", args.device]
    if args.cpu_smoke:
        command.append("--cpu-smoke")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env) for _ in range(n)
    ]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(f"a concurrent run failed before its first timed step (exit {p.wait()})")
    go = time.time()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    for p in procs:
        p.wait()
    span = max(r["end"] for r in results) - go
    total = sum(r["examples"] for r in results)
    return {
        "runs": n,
        "examples_per_s_per_card": round(total / span, 2),
        "examples_per_s_per_run": [r["examples_per_s"] for r in results],
        "peak_memory_gib_per_run": [r["peak_memory_gib"] for r in results],
    }


def sweep(args) -> list[dict]:
    """Runs per card, each count after the last, until doubling gains under 10% of the card's throughput."""
    out: list[dict] = []
    for n in args.runs:
        out.append(concurrent(n, args))
        if len(out) > 1 and out[-1]["examples_per_s_per_card"] < 1.1 * out[-2]["examples_per_s_per_card"]:
            out[-1]["saturated"] = True
            break
    return out


def parts(args, device_name: str) -> dict:
    """The check's parts, in order, each a thunk giving its JSON section."""
    shape, syncs, steps = args.shape, device_name == "cuda", args.steps
    base = Case(shape)
    return {
        "variants": lambda: {
            "fp32": run(dataclasses.replace(base, precision="fp32"), steps, device_name, syncs),
            "bf16": run(base, steps, device_name, syncs),
            "bf16_cudnn_allowed": run(dataclasses.replace(base, backends=()), steps, device_name, syncs),
            "bf16_math_only": run(dataclasses.replace(base, backends=("math",)), steps, device_name, syncs),
        },
        "large_and_long": lambda: {
            "bert_large_ner": run(Case(args.large), steps, device_name, syncs),
            "pubmedqa_512": run(
                Case(shape, task="qa", lengths=(200, 512), batch=16, limit=512), steps, device_name, syncs
            ),
        },
        "runs_per_card": lambda: sweep(args),
        "cuda_graphs": lambda: {  # one card measures both: graphs against the same step without them
            "bf16": run(base, steps, device_name, syncs),
            "bf16_cuda_graphs": run(dataclasses.replace(base, graphs=True), steps, device_name, syncs),
        },
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="timed steps per run (default 30; smoke 3)")
    parser.add_argument("--runs", type=int, nargs="+", default=None, help="runs per card (default 1 2 4 8; smoke 1 2)")
    parser.add_argument(
        "--budget-s", type=float, default=None, help="start no part after this many seconds (default 120; smoke none)"
    )
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes, a few steps, on the CPU")
    parser.add_argument("--parts", nargs="+", default=None, help="run these parts only (default all, in order)")
    parser.add_argument(
        "--out-dir", default=os.environ.get("OUT") or str(ROOT / "benchmarks/results/gpu"), help="where the JSON goes"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--device", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.shape = TINY if args.cpu_smoke else BASE
    args.large = TINY if args.cpu_smoke else LARGE
    args.steps = args.steps or (3 if args.cpu_smoke else 30)
    args.runs = args.runs or ((1, 2) if args.cpu_smoke else (1, 2, 4, 8))
    args.device = args.device or ("cpu" if args.cpu_smoke else "cuda")
    args.budget_s = args.budget_s or (float("inf") if args.cpu_smoke else 120.0)
    if args.worker:
        return worker(args)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no GPU visible: run on a GPU machine, or pass --cpu-smoke")
    torch.set_num_threads(1 if args.cpu_smoke else torch.get_num_threads())
    import transformers

    device = torch.device(args.device)
    record = {
        "check": "fine-tuning through the pipeline's step: "
        + ("tiny BERT (smoke)" if args.cpu_smoke else "BERT-base NER-shaped, BERT-large, 512-token classification"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({platform.machine()})",
        "cpu_smoke": args.cpu_smoke,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "steps": args.steps,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "skipped": [],
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("gpu_check_finetune_smoke.json" if args.cpu_smoke else "gpu_check_finetune.json")
    began = time.time()
    chosen = parts(args, args.device)
    unknown = set(args.parts or ()) - set(chosen)
    if unknown:
        raise SystemExit(f"--parts: no part named {', '.join(sorted(unknown))}; the parts are {', '.join(chosen)}")
    for name, part in chosen.items():
        if args.parts and name not in args.parts:
            continue
        if time.time() - began > args.budget_s:
            record["skipped"].append(name)
            path.write_text(json.dumps(record, indent=2) + "\n")
            continue
        record[name] = part()
        if name == "variants":
            speed = {k: v["examples_per_s"] for k, v in record[name].items()}
            record["bf16_speedup"] = round(speed["bf16"] / speed["fp32"], 3)
        record["elapsed_s"] = round(time.time() - began, 1)
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"{name} done at {record['elapsed_s']} s", flush=True)
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
