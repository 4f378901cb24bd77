"""Host time per fine-tuning step, before and after the no-wait loop, and the GPU duty cycle
it predicts for BERT-base on an H100 (a prediction: no GPU is used).

The host's share of a step is what it costs to build the batch and to queue the step's
kernels. The collate is timed at the task's shape. The queueing is timed on a
BERT-base-shaped model (12 layers, the same operators in the same order) with its widths
shrunk (hidden 8, one head: the number of heads changes no operator count), fed the first
2 rows and 16 columns of each batch, so that the arithmetic is small and the time left is
mostly Python and the dispatcher, which do not grow with the shape. (The meta device is no
proxy here: its kernels for attention and fused AdamW are Python decompositions, and the same
step took about 700 ms there.) The GPU's share is estimated from the step's tokens.

- before (the loop at commit 2ef3ef7): a blocking copy per tensor and transformers' check of
  the padding mask (``mask.all()``) make the host wait for the device every step, so the batch
  is built while the GPU idles: step = collate + max(dispatch, GPU).
- after: nothing waits inside a step, the next batch is collated while the device runs:
  step = max(collate + dispatch, GPU).

Duty cycle = GPU time / step time. GPU time per token (BERT-base, H100 SXM, eager): bf16
1.7-2.2 µs (the cost model of the project's GPU review: GEMMs plus memory-bound traffic);
fp32 without TF32, 6 x 85M FLOP per token at 50 TFLOP/s (75% of the 67 dense peak) plus
twice bf16's memory-bound time, about 12 µs.

    python benchmarks/bench_finetune_dispatch.py [--steps 30] [--batch 32] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertForTokenClassification

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workflow_scripts import optim  # noqa: E402
from workflow_scripts.finetune import heads  # noqa: E402
from workflow_scripts.finetune.batching import IGNORE, ahead, train_batches  # noqa: E402
from workflow_scripts.finetune.loop import train_step  # noqa: E402
from workflow_scripts.finetune.settings import FinetuneSettings  # noqa: E402

# GPU seconds per token of a BERT-base training step on an H100 SXM (estimates, see above)
GPU_PER_TOKEN = {"bf16": (1.7e-6, 2.2e-6), "fp32": (11e-6, 13e-6)}


def ner_features(n: int, seed: int) -> list[dict]:
    """NER-shaped sentences: 12-90 sub-tokens (BC5CDR-like), 3 tags."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(12, 91))
        out.append({"input_ids": rng.integers(5, 900, k).tolist(), "labels": rng.integers(0, 3, k).tolist()})
    return out


def collate_before(features, pad_id, task_type, device):
    """The collate of commit 2ef3ef7: a mask on every batch, a blocking copy per tensor."""
    width = max(len(f["input_ids"]) for f in features)
    n = len(features)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    labels = torch.full((n, width), IGNORE, dtype=torch.long)
    for i, f in enumerate(features):
        k = len(f["input_ids"])
        ids[i, :k] = torch.tensor(f["input_ids"])
        mask[i, :k] = 1
        labels[i, :k] = torch.tensor(f["labels"])
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    return {k: v.to(device) for k, v in batch.items()}


def shrink(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch's first rows and columns: the queueing cost without the arithmetic."""
    return {k: v[:2, :16] for k, v in batch.items()}


def build():
    config = BertConfig(
        vocab_size=1000,
        hidden_size=8,
        num_hidden_layers=12,
        num_attention_heads=1,
        intermediate_size=32,
        num_labels=3,
        max_position_embeddings=128,
    )
    model = BertForTokenClassification(config)
    # fused, as on CUDA: a handful of launches rather than a loop over the parameters
    optimizer = torch.optim.AdamW(optim.decay_groups(model, 0.01), lr=3e-5, fused=True)
    update = optim.Updater(
        optimizer, optim.schedule(optimizer, 10_000, 0.1), torch.amp.GradScaler("cuda", enabled=False)
    )
    return model, update


def time_before(features, batches, cfg) -> tuple[list[float], list[float]]:
    model, update = build()
    collate_s, dispatch_s = [], []
    for idx in batches:
        t0 = time.perf_counter()
        batch = collate_before([features[i] for i in idx], 0, "ner", "cpu")
        t1 = time.perf_counter()
        batch = shrink(batch)
        model.train()
        with optim.autocast(torch.device("cpu"), "fp32"):
            value = heads.loss(model(**{k: batch[k] for k in ("input_ids", "attention_mask")}).logits, batch, "ner")
        update.backward(value)
        update.step(model.parameters(), cfg.grad_clip)
        value.detach()
        t2 = time.perf_counter()
        collate_s.append(t1 - t0)
        dispatch_s.append(t2 - t1)
    return collate_s, dispatch_s


def time_after(features, batches, cfg) -> tuple[list[float], list[float]]:
    """Collate (one ahead) and queue each step."""
    model, update = build()
    model.train()
    collate_s, dispatch_s = [], []
    source = ahead(batches, features, 0, "ner", "cpu")
    while True:
        t0 = time.perf_counter()
        item = next(source, None)
        if item is None:
            break
        t1 = time.perf_counter()
        train_step(model, shrink(item[1]), update, cfg, "ner", torch.device("cpu"))
        collate_s.append(t1 - t0)
        dispatch_s.append(time.perf_counter() - t1)
    return collate_s, dispatch_s


def predict(collate_ms, dispatch_ms, tokens, precision, waits) -> dict:
    low, high = (tokens * s * 1e3 for s in GPU_PER_TOKEN[precision])
    rows = {}
    for name, gpu in (("low", low), ("high", high)):
        step = collate_ms + max(dispatch_ms, gpu) if waits else max(collate_ms + dispatch_ms, gpu)
        rows[name] = {"gpu_ms": round(gpu, 2), "step_ms": round(step, 2), "duty": round(gpu / step, 3)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps (after 3 untimed)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bench_finetune_dispatch.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = FinetuneSettings(batch_size=args.batch)
    features = ner_features(args.batch * (args.steps + 3), seed=0)
    lengths = [len(f["input_ids"]) for f in features]
    batches = train_batches(lengths, args.batch, np.random.default_rng(0), True)[: args.steps + 3]
    tokens = statistics.mean(len(b) * max(lengths[i] for i in b) for b in batches)
    measured = {}
    for name, run in (
        ("before", lambda: time_before(features, batches, cfg)),
        ("after", lambda: time_after(features, batches, cfg)),
    ):
        collate_s, dispatch_s = run()
        measured[name] = {
            "collate_ms": round(statistics.median(collate_s[3:]) * 1e3, 3),
            "dispatch_ms": round(statistics.median(dispatch_s[3:]) * 1e3, 3),
        }
        print(name, measured[name], flush=True)
    prediction = {
        f"{loop}_{precision}": predict(
            measured[loop]["collate_ms"], measured[loop]["dispatch_ms"], tokens, precision, loop == "before"
        )
        for loop in ("before", "after")
        for precision in ("fp32", "bf16")
    }
    result = {
        "host": f"cpu, {args.threads} thread(s), shared development machine",
        "shape": {"batch": args.batch, "padded_tokens_per_step": round(tokens), "layers": 12},
        "measured_host_ms": measured,
        "predicted_h100": prediction,
        "note": "GPU times and duty cycles are predictions from a cost model, not measurements",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(prediction, indent=2))


if __name__ == "__main__":
    main()
