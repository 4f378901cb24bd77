"""Fine-tuning on one GPU: BERT-base on an NER-shaped task, fp32 against bf16, the host-device
synchronisations inside the steps counted, and 1, 4 and 8 runs sharing the card.

    python benchmarks/gpu_check_finetune.py [--steps 50] [--runs 1 4 8] [--cpu-smoke]

The model is built from a BertConfig (BERT-base: 12 layers, hidden 768; no hub, no network)
with a token-classification head of 5 tags; sentences of 12-90 sub-tokens, batch 32, length
grouped and dynamically padded, trained with the pipeline's own step
(``workflow_scripts.finetune.loop.train_step``: its collate, autocast, AdamW and clipping).

- precision: ``--steps`` timed steps after 5 untimed ones, in fp32 (TF32 matmuls allowed, as
  the pipeline sets on CUDA) and bf16 autocast, under ``torch.cuda.set_sync_debug_mode("warn")``:
  every call that makes the host wait for the device warns, and the warnings are counted.
- runs per card: N processes, each the same bf16 run; they warm up, wait for a common start,
  and the card's examples/s is every run's timed examples over the span from that start to
  the last run's end.

Writes JSON into --out-dir ($OUT when set, else benchmarks/results/gpu/), gpu_check_finetune.json.
``--cpu-smoke`` runs the same code with tiny shapes for a few steps on the CPU (no figure of
it describes a GPU).
"""

from __future__ import annotations

import argparse
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
from workflow_scripts.finetune.device import precision_for  # noqa: E402
from workflow_scripts.finetune.loop import train_step  # noqa: E402
from workflow_scripts.finetune.settings import FinetuneSettings  # noqa: E402

BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
TAGS, BATCH, WARMUP = 5, 32, 5


def features(n: int, seed: int, vocab: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(12, 91))
        out.append({"input_ids": rng.integers(5, vocab, k).tolist(), "labels": rng.integers(0, TAGS, k).tolist()})
    return out


def build(shape: dict, device: torch.device):
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, num_labels=TAGS, **shape)
    return BertForTokenClassification(config).to(device)


def run(shape: dict, precision: str, steps: int, device: torch.device, count_syncs: bool, start_after=None) -> dict:
    """``steps`` timed steps of the pipeline's training step after WARMUP untimed ones."""
    cfg = FinetuneSettings(batch_size=BATCH, precision=precision)
    cfg.precision = precision_for(cfg.precision, device, "ner")
    model = build(shape, device)
    model.train()
    update = optim.updater(
        model,
        lr=3e-5,
        weight_decay=0.01,
        eps=1e-8,
        total_steps=steps + WARMUP,
        warmup_ratio=0.1,
        precision=cfg.precision,
        device=device,
    )
    data = features(BATCH * (steps + WARMUP), seed=1, vocab=30000)
    lengths = [len(f["input_ids"]) for f in data]
    batches = ahead(train_batches(lengths, BATCH, np.random.default_rng(0), True), data, 0, "ner", device)
    for _, batch in (next(batches) for _ in range(WARMUP)):
        train_step(model, batch, update, cfg, "ner", device)
    synchronize(device)
    if start_after is not None:
        start_after()
    syncs, losses = 0, []
    start = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if count_syncs:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            for _, batch in batches:
                losses.append(train_step(model, batch, update, cfg, "ner", device))
        finally:
            if count_syncs:
                torch.cuda.set_sync_debug_mode(0)
        syncs = sum("synchroniz" in str(w.message) for w in caught)
        where = sorted({f"{Path(w.filename).name}:{w.lineno}" for w in caught if "synchroniz" in str(w.message)})
    synchronize(device)
    end = time.time()
    return {
        "precision": cfg.precision,
        "steps": len(losses),
        "examples": len(losses) * BATCH,
        "seconds": round(end - start, 4),
        "start": start,
        "end": end,
        "examples_per_s": round(len(losses) * BATCH / (end - start), 2),
        "syncs_in_steps": syncs if count_syncs else None,
        "sync_sites": where[:20] if count_syncs else None,
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

    device = torch.device(args.device)
    result = run(args.shape, "bf16", args.steps, device, False, start_after=wait_for_start)
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="timed steps per run (default 50; smoke 3)")
    parser.add_argument("--runs", type=int, nargs="+", default=None, help="runs per card (default 1 4 8; smoke 1 2)")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes, a few steps, on the CPU")
    parser.add_argument(
        "--out-dir", default=os.environ.get("OUT") or str(ROOT / "benchmarks/results/gpu"), help="where the JSON goes"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--device", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.shape = TINY if args.cpu_smoke else BASE
    args.steps = args.steps or (3 if args.cpu_smoke else 50)
    args.device = args.device or ("cpu" if args.cpu_smoke else "cuda")
    if args.worker:
        return worker(args)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no GPU visible: run on a GPU machine, or pass --cpu-smoke")
    torch.set_num_threads(1 if args.cpu_smoke else torch.get_num_threads())
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    precision = {p: run(args.shape, p, args.steps, device, device.type == "cuda") for p in ("fp32", "bf16")}
    per_card = [concurrent(n, args) for n in (args.runs or ((1, 2) if args.cpu_smoke else (1, 4, 8)))]
    import transformers

    record = {
        "check": "fine-tuning, NER-shaped, batch 32, 12-90 sub-tokens, "
        + ("tiny BERT (smoke)" if args.cpu_smoke else "BERT-base"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({platform.machine()})",
        "cpu_smoke": args.cpu_smoke,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "steps": args.steps,
        "precision": precision,
        "bf16_speedup": round(precision["bf16"]["examples_per_s"] / precision["fp32"]["examples_per_s"], 3),
        "runs_per_card": per_card,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = "gpu_check_finetune_smoke.json" if args.cpu_smoke else "gpu_check_finetune.json"
    (out / name).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
