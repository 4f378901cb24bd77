"""Pretraining throughput: our training step beside the plain transformers recipe (the step
``Trainer`` runs: ``DataCollatorForLanguageModeling`` + ``BertForMaskedLM(labels=...)``), on
the same model shape, the same packed blocks and the same batch, side by side in one run.
(``Trainer`` itself needs the ``accelerate`` package, which the pipeline does not install.)

    python benchmarks/bench_pretrain.py [--size tiny] [--seq-len 128] [--batch 32] [--steps 60] \
        [--vocab 8000] [--threads 2] [--repeat 2] [--out benchmarks/results/pretrain_cpu.json]

On a GPU both run in bf16 (``--precision``) and MFU is reported against the device's dense
peak. The corpus is synthetic (Zipf-distributed pseudo-words), so the vocabulary has a long
tail as on PubMed; the first ``--warmup`` steps of every run are excluded from the timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
import yaml
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerFast, get_linear_schedule_with_warmup
from transformers.utils import logging as hf_logging

from workflow_scripts.config.typed import parse
from workflow_scripts.pretrain import train as pretrain_cli
from workflow_scripts.pretrain.data import PackedBlocks
from workflow_scripts.pretrain.loop import PEAK_TFLOPS
from workflow_scripts.pretrain.model import build_model, train_flops_per_token
from workflow_scripts.pretrain.settings import PretrainSettings

SYLLABLES = ["ab", "al", "an", "ar", "ba", "be", "ca", "ce", "co", "da", "de", "di", "el", "en", "er", "fa", "ga", "he",
             "hy", "in", "io", "ka", "la", "le", "li", "ma", "me", "mi", "na", "ne", "no", "ol", "on", "or", "pa", "pe",
             "ph", "ra", "re", "ri", "sa", "se", "ta", "te", "ti", "tr", "ul", "un", "va", "vi", "yl", "zo"]


def synthetic_corpus(directory: Path, documents: int, seed: int = 0) -> list[str]:
    rng, nprng = random.Random(seed), np.random.default_rng(seed)
    forms = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(60_000)})
    weights = 1.0 / np.arange(1, len(forms) + 1) ** 1.1
    weights /= weights.sum()
    texts = []
    for _ in range(documents):
        words = [forms[i] for i in nprng.choice(len(forms), size=int(nprng.integers(80, 250)), p=weights)]
        texts.append(" ".join(words) + ".")
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}), directory / "shard~0.parquet")
    return texts


def wordpiece(directory: Path, texts: list[str], size: int) -> Path:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
                            mask_token="[MASK]").save_pretrained(directory)
    return directory


def peak(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_TFLOPS.items() if k in name), None)


def run_ours(work: Path, corpus: Path, vocab: Path, recipe: dict, steps: int, warmup: int, name: str) -> float:
    settings = work / f"{name}.yaml"
    settings.write_text(yaml.safe_dump({"model": {"name": name, "pretrain": {**recipe, "max_steps": steps, "log_every": warmup,
                                                                               "checkpoint_every": 10**9, "heldout_fraction": 0.0}}}))
    out = work / name
    pretrain_cli.main(["--settings", str(settings), "--corpus", str(corpus), "--tokenizer", str(vocab), "--out", str(out)])
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    timed = [r for r in rows if r["step"] > warmup]
    return sum(r["tokens_per_s"] * warmup for r in timed) / (warmup * len(timed))


def run_baseline(blocks: np.ndarray, tokenizer, recipe: dict, steps: int, warmup: int) -> float:
    """What ``Trainer`` runs per step (without accelerate, which it requires): the collator's
    masking, ``model(**batch).loss`` over every position's logits, backward, clip, AdamW, schedule."""
    s = parse(PretrainSettings, recipe, "recipe")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(s, tokenizer, blocks.shape[1]).to(device).train()
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=s.mask_prob)
    loader = torch.utils.data.DataLoader([{"input_ids": b} for b in blocks.tolist()], batch_size=s.batch_size, shuffle=True,
                                         collate_fn=collator, drop_last=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.peak_lr(), betas=tuple(s.betas), eps=s.eps, weight_decay=s.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(s.warmup_ratio * steps), steps)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" and s.precision == "bf16" else contextlib.nullcontext()
    step, start = 0, None
    while step < steps:
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            with autocast:
                loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step == warmup:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
            if step == steps:
                break
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (steps - warmup) * s.batch_size * blocks.shape[1] / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="tiny", choices=["tiny", "small", "base", "large"])
    ap.add_argument("--architecture", default="bert", choices=["bert", "roberta"])
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--documents", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    ap.add_argument("--compile", action="store_true", help="torch.compile our model (the baseline stays eager)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/pretrain_cpu.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    recipe = {"architecture": args.architecture, "size": args.size, "batch_size": args.batch, "dropout": 0.1,
              "phases": [{"seq_len": args.seq_len, "fraction": 1.0}], "precision": args.precision if device.type == "cuda" else "fp32",
              "num_threads": args.threads, "compile": args.compile, "seed": 1}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = synthetic_corpus(work / "corpus", args.documents)
        vocab = wordpiece(work / "vocab", texts, args.vocab)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(vocab)
        ours, base = [], []
        for r in range(args.repeat):  # interleaved, so drifting machine load hits both alike
            ours.append(run_ours(work, work / "corpus", vocab, recipe, args.steps, args.warmup, f"ours{r}"))
            cache = next((work / "ours0" / "data").glob(f"seq~{args.seq_len}-*"))
            base.append(run_baseline(np.asarray(PackedBlocks(cache, "train").tokens), tokenizer, recipe, args.steps, args.warmup))
        s = parse(PretrainSettings, recipe, "recipe")
        model = build_model(s, tokenizer, args.seq_len)
        flops = train_flops_per_token(model, args.seq_len)
    p = peak(device)
    result = {
        "benchmark": "pretrain step vs the plain transformers MLM step (DataCollatorForLanguageModeling + model(labels=...))",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({platform.processor() or platform.machine()}), {args.threads} threads",
        "torch": torch.__version__, "precision": recipe["precision"], "settings": vars(args),
        "model_parameters": sum(x.numel() for x in model.parameters()), "vocab_size": len(tokenizer),
        "ours_tokens_per_s": ours, "baseline_tokens_per_s": base,
        "ours_median": float(np.median(ours)), "baseline_median": float(np.median(base)),
        "speedup": float(np.median(ours) / np.median(base)),
        "ours_mfu": float(np.median(ours)) * flops / (p * 1e12) if p else None,
        "baseline_mfu": float(np.median(base)) * flops / (p * 1e12) if p else None,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("device", "ours_median", "baseline_median", "speedup", "ours_mfu", "baseline_mfu")}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
