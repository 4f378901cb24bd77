"""Inference throughput of one model: sequences per second of its encoder's forward pass at each
configured length, bf16 on a GPU and fp32 on the CPU.

    python -m workflow_scripts.report.inference_speed --settings results/configs/inference_speed.yaml \\
        --model results/pretrain/M --out results/speed/M.json

Writes the JSON (the model's parameters, total and without embeddings, its architecture's
fingerprint, the device, the precision, and per length the batch size, the timed passes, their
seconds (in all; the median, fastest and slowest pass), the sequences/s of the median pass and the
peak memory) and its provenance sidecar. Inputs are full-length batches of token ids drawn with a
fixed seed, every position attended, so models compare on the same work. A length beyond the
model's position table is reported as such, never extrapolated.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import logging
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import AutoConfig, AutoModel

from .. import provenance
from ..atomic import write_json
from ..cli import run
from ..pretrain import positions
from ..typed import load_settings, to_dict
from .cost_settings import SpeedSettings

log = logging.getLogger(__name__)
SPECIAL_IDS = 5  # ids below this are special tokens in every vocabulary built here
# configuration keys that do not change what an inference forward pass computes
NOT_ARCHITECTURE = {
    "_name_or_path",
    "transformers_version",
    "architectures",
    "dtype",
    "torch_dtype",
    "id2label",
    "label2id",
}


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Total parameters (shared ones once) and those outside the embedding tables (Kaplan et al.'s
    non-embedding count: what the compute per token grows with)."""
    total = sum(p.numel() for p in model.parameters())
    embedding = sum(p.numel() for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters())
    return {"total": total, "non_embedding": total - embedding}


def position_limit(config) -> int | None:
    """The longest input the model numbers positions for (None: rotary, no table)."""
    if getattr(config, "model_type", "") == "modernbert" or getattr(config, "position_embedding_type", "") == "rotary":
        return None
    return positions.position_limit(config)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_mb(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


@torch.inference_mode()
def measure(model: nn.Module, settings: SpeedSettings, seq_len: int, device: torch.device) -> dict[str, Any]:
    """Sequences/s at ``seq_len`` from the median of ``settings.batches`` forward passes timed one by one
    after the warm-up ones: a pass slowed by another process on the machine moves the median little, where
    it moved a mean over a few passes by a quarter."""
    gen = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    ids = torch.randint(min(SPECIAL_IDS, vocab - 1), vocab, (settings.batch_size, seq_len), generator=gen).to(device)
    mask = torch.ones_like(ids)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(settings.warmup):
        model(input_ids=ids, attention_mask=mask)
    _sync(device)
    passes = []
    for _ in range(settings.batches):
        start = time.perf_counter()
        model(input_ids=ids, attention_mask=mask)
        _sync(device)
        passes.append(time.perf_counter() - start)
    median = statistics.median(passes)
    return {
        "seq_len": seq_len,
        "batch_size": settings.batch_size,
        "batches": settings.batches,
        "warmup": settings.warmup,
        "seconds": sum(passes),
        "pass_seconds": {"median": median, "min": min(passes), "max": max(passes)},
        "sequences_per_s": settings.batch_size / median,
        "peak_memory_mb": _peak_mb(device),
    }


def architecture(config) -> str:
    """A fingerprint of what the forward pass computes: the configuration and its attention kernel, but for
    names, versions, labels and dropout rates (dropout is off at inference). Models that share it differ in
    their weights only, which do not change the work."""
    kept = {k: v for k, v in config.to_dict().items() if k not in NOT_ARCHITECTURE and "dropout" not in k}
    kept["attention_kernel"] = getattr(config, "_attn_implementation", None)
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def speed_record(model: nn.Module, settings: SpeedSettings, device: torch.device) -> dict[str, Any]:
    """The model's parameters and its throughput at every length it can read."""
    limit = position_limit(model.config)
    per_length = []
    for seq_len in settings.lengths:
        if limit is not None and seq_len > limit:
            log.info("%d tokens: beyond the model's %d positions, not measured", seq_len, limit)
            per_length.append({"seq_len": seq_len, "skipped": f"beyond the model's {limit} positions"})
            continue
        row = measure(model, settings, seq_len, device)
        log.info("%d tokens, batch %d: %.1f sequences/s", seq_len, settings.batch_size, row["sequences_per_s"])
        per_length.append(row)
    return {
        "parameters": parameter_counts(model),
        "architecture": architecture(model.config),
        "device": provenance.accelerator() if device.type == "cuda" else "cpu",
        "precision": "bf16" if device.type == "cuda" else "fp32",
        "threads": torch.get_num_threads(),
        "batch_size": settings.batch_size,
        "lengths": per_length,
    }


def load_model(path: str, device: torch.device) -> nn.Module:
    """The checkpoint's encoder in evaluation mode, bf16 on a GPU; without the pooler a BERT-family class
    adds (fine-tuning reads the hidden states, and a masked-LM checkpoint has no pooler weights)."""
    config = AutoConfig.from_pretrained(path)
    cls = AutoModel._model_mapping[type(config)]
    pooler = {"add_pooling_layer": False} if "add_pooling_layer" in inspect.signature(cls.__init__).parameters else {}
    model = cls.from_pretrained(path, config=config, **pooler)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype).eval()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m workflow_scripts.report.inference_speed", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--settings", required=True, help="inference speed settings YAML")
    ap.add_argument("--model", required=True, help="checkpoint directory")
    ap.add_argument("--out", required=True, help="output JSON (its provenance is written beside it)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    started = provenance.now()
    args = parse_args(argv)
    settings = load_settings(args.settings, SpeedSettings)
    if settings.num_threads:
        torch.set_num_threads(settings.num_threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    record = {"model": args.model, **speed_record(load_model(args.model, device), settings, device)}
    out = Path(args.out)
    write_json(out, record)
    provenance.record(
        out,
        step="inference_speed",
        inputs={"model": args.model, "settings": args.settings},
        params=to_dict(settings),
        outputs=[out],
        started=started,
    )
    log.info("wrote %s", out)


if __name__ == "__main__":
    run(main)
