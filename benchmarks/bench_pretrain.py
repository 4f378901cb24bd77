"""Pretraining throughput: our training step beside a plain ``transformers.Trainer`` with
``DataCollatorForLanguageModeling``, on the same model, the same packed blocks, the same batch,
sequence length, steps and threads, side by side in one run.

CPU (every machine; writes benchmarks/results/pretrain_cpu.json):

    python benchmarks/bench_pretrain.py [--models bert-tiny] [--seq-lens 128] [--batch 32] \
        [--steps 30] [--warmup 10] [--threads 2] [--repeat 2]

GPU (BERT-base/large at 128 and 512 in bf16; writes benchmarks/results/pretrain_gpu.json):

    python benchmarks/bench_pretrain.py --device cuda --models bert-base bert-large --seq-lens 128 512 --bf16

Compared for every model x sequence length:

- ours: ``workflow_scripts.pretrain.pretrain`` (dynamic 80/10/10 masking, the output head on masked
  positions only, fused AdamW on GPU), timed from its own train_log.jsonl;
- trainer: ``transformers.Trainer`` + ``DataCollatorForLanguageModeling(mlm_probability=0.15)``
  on the blocks with their special-tokens mask, as ``run_mlm.py`` sets it up, timed by a callback;
- loop (``--baselines ... loop``): Trainer's per-step work (collator, ``model(labels=...)`` over
  every position, clip, AdamW, schedule) in a bare loop, which separates Trainer's own overhead
  from the recipe's.

The first ``--warmup`` steps of every run are excluded from the timing. On GPU the batch is
``--tokens-per-batch`` tokens (default 32768: 256 sequences at 128, 64 at 512).

FLOPs (written into the result): ``model_flops_per_token = 6 W_enc + 12 L h s`` with W_enc
the encoder's Linear weights, L layers, h hidden size, s sequence length (forward + backward
attention scores, PaLM appendix B): the pipeline's formula (``model.FLOPS_FORMULA``) without
its head term, the same for every contender, so MFU ratios equal tokens/s ratios.
``mfu_executed`` adds the output head where it is actually run, 6 W_head per predicted
position: ``mask_prob`` of the positions for ours (the pipeline's train log ``mfu``), all of
them for Trainer and the loop. MFU divides by the device's dense bf16 peak (H100 and H200: 989
TFLOP/s), looked up from ``torch.cuda.get_device_name``; ``--peak-tflops`` overrides it (on CPU
there is none unless given). The corpus is synthetic (Zipf-distributed pseudo-words), so the
vocabulary has a long tail as on PubMed.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
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
import transformers
import yaml
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerFast, get_linear_schedule_with_warmup
from transformers.utils import logging as hf_logging

from workflow_scripts.pack.index import read_index
from workflow_scripts.pretrain import pretrain as pretrain_cli
from workflow_scripts.pretrain.data import PackedBlocks
from workflow_scripts.pretrain.loop import peak_tflops
from workflow_scripts.pretrain.model import build_model, linear_weights, mlm_parts, train_flops_per_token
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse

SYLLABLES = [
    "ab",
    "al",
    "an",
    "ar",
    "ba",
    "be",
    "ca",
    "ce",
    "co",
    "da",
    "de",
    "di",
    "el",
    "en",
    "er",
    "fa",
    "ga",
    "he",
    "hy",
    "in",
    "io",
    "ka",
    "la",
    "le",
    "li",
    "ma",
    "me",
    "mi",
    "na",
    "ne",
    "no",
    "ol",
    "on",
    "or",
    "pa",
    "pe",
    "ph",
    "ra",
    "re",
    "ri",
    "sa",
    "se",
    "ta",
    "te",
    "ti",
    "tr",
    "ul",
    "un",
    "va",
    "vi",
    "yl",
    "zo",
]
ARCHITECTURES, SIZES = ("bert", "roberta"), ("tiny", "small", "base", "large")
MODELS = [f"{a}-{s}" for a in ARCHITECTURES for s in SIZES]


def synthetic_corpus(directory: Path, documents: int, seed: int = 0) -> list[str]:
    rng, nprng = random.Random(seed), np.random.default_rng(seed)
    forms = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(60_000)})
    weights = 1.0 / np.arange(1, len(forms) + 1) ** 1.1
    weights /= weights.sum()
    lengths = nprng.integers(80, 250, size=documents)
    words = nprng.choice(len(forms), size=int(lengths.sum()), p=weights)
    texts = [" ".join(forms[i] for i in chunk) + "." for chunk in np.split(words, np.cumsum(lengths)[:-1])]
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}), directory / "shard~0.parquet")
    return texts


def wordpiece(directory: Path, texts: list[str], size: int) -> Path:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(
        texts, trainers.WordPieceTrainer(vocab_size=size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(directory)
    return directory


def use_device(name: str) -> torch.device:
    """The device every contender runs on. The pipeline picks a visible GPU by itself, so
    ``cpu`` hides the GPUs before torch first looks for them."""
    if name == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        return torch.device("cpu")
    if not torch.cuda.is_available():
        sys.exit("error: --device cuda but torch sees no GPU; run on a GPU machine or use --device cpu")
    return torch.device("cuda")


def fill_defaults(args: argparse.Namespace, defaults: dict) -> None:
    """Options left unset take their device-dependent default."""
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def device_name(device: torch.device, threads: int) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}), {threads} threads"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def release(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_mb(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


def timed_run_settings(work: Path, name: str, kind: str, recipe: dict, steps: int, warmup: int) -> Path:
    """The settings file of a timed ``kind`` run (pretrain or distill): ``steps`` steps of ``recipe``, logged
    once after the ``warmup`` steps, with no checkpoint, held-out split or export to slow it."""
    settings = work / f"{name}.yaml"
    run = {
        **recipe,
        "max_steps": steps,
        "log_every": warmup,
        "checkpoint_every": 10**9,
        "heldout_fraction": 0.0,
        "export_checkpoints": False,
    }
    settings.write_text(yaml.safe_dump({"model": {"name": name, kind: run}}))
    return settings


def run_ours(
    work: Path, corpus: Path, vocab: Path, recipe: dict, steps: int, warmup: int, name: str, device: torch.device
) -> dict:
    settings = timed_run_settings(work, name, "pretrain", recipe, steps, warmup)
    out = work / name
    pretrain_cli.main(
        ["--settings", str(settings), "--corpus", str(corpus), "--tokenizer", str(vocab), "--out", str(out)]
    )
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    tokens = seconds = 0.0
    previous = 0
    for row in rows:
        n = row["step"] - previous
        previous = row["step"]
        if row["step"] > warmup:  # the first log interval holds the warm-up steps
            tokens += n * recipe["batch_size"] * row["seq_len"]
            seconds += n * recipe["batch_size"] * row["seq_len"] / row["tokens_per_s"]
    return {
        "tokens_per_s": tokens / seconds,
        "peak_memory_mb": max(r["memory_mb"] for r in rows) if device.type == "cuda" else None,
    }


class StepClock(transformers.TrainerCallback):
    """Wall-clock time at the end of the given optimiser steps (0: the start of training),
    after the device has finished them."""

    def __init__(self, marks: tuple[int, int], device: torch.device) -> None:
        self.marks, self.device, self.times = marks, device, {}

    def on_train_begin(self, args, state, control, **kwargs):
        if 0 in self.marks:
            sync(self.device)
            self.times[0] = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in self.marks:
            sync(self.device)
            self.times[state.global_step] = time.perf_counter()


def trainer_data(blocks: np.ndarray, tokenizer):
    from datasets import Dataset

    special = np.isin(blocks, tokenizer.all_special_ids).astype(np.int8)
    return Dataset.from_dict({"input_ids": blocks.tolist(), "special_tokens_mask": special.tolist()})


def run_trainer(
    work: Path,
    blocks: np.ndarray,
    tokenizer,
    s: PretrainSettings,
    steps: int,
    warmup: int,
    device: torch.device,
    model: torch.nn.Module | None = None,
) -> dict:
    """Trainer on ``model`` (default: the settings' model, freshly built)."""
    from transformers import Trainer, TrainingArguments

    model = model if model is not None else build_model(s, tokenizer, blocks.shape[1])
    args = TrainingArguments(
        output_dir=str(work / "trainer"),
        max_steps=steps,
        per_device_train_batch_size=s.batch_size,
        learning_rate=s.peak_lr(),
        weight_decay=s.weight_decay,
        adam_beta1=s.betas[0],
        adam_beta2=s.betas[1],
        adam_epsilon=s.eps,
        max_grad_norm=s.grad_clip,
        warmup_steps=s.warmup_ratio,
        lr_scheduler_type="linear",
        bf16=device.type == "cuda" and s.precision == "bf16",
        fp16=device.type == "cuda" and s.precision == "fp16",
        use_cpu=device.type == "cpu",
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        eval_strategy="no",
        dataloader_num_workers=0,
        dataloader_drop_last=True,
        seed=s.seed,
        disable_tqdm=True,
    )
    clock = StepClock((warmup, steps), device)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=s.mask_prob)
    release(device)
    Trainer(
        model=model, args=args, data_collator=collator, train_dataset=trainer_data(blocks, tokenizer), callbacks=[clock]
    ).train()
    seconds = clock.times[steps] - clock.times[warmup]
    return {
        "tokens_per_s": (steps - warmup) * s.batch_size * blocks.shape[1] / seconds,
        "peak_memory_mb": peak_memory_mb(device),
        "torch_threads": torch.get_num_threads(),
    }


def run_loop(blocks: np.ndarray, tokenizer, s: PretrainSettings, steps: int, warmup: int, device: torch.device) -> dict:
    """Trainer's per-step work without Trainer: the collator's masking, ``model(**batch).loss``
    over every position's logits, backward, clip, AdamW, schedule."""
    model = build_model(s, tokenizer, blocks.shape[1]).to(device).train()
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=s.mask_prob)
    loader = torch.utils.data.DataLoader(
        [{"input_ids": b} for b in blocks.tolist()],
        batch_size=s.batch_size,
        shuffle=True,
        collate_fn=collator,
        drop_last=True,
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=s.peak_lr(), betas=tuple(s.betas), eps=s.eps, weight_decay=s.weight_decay
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, int(s.warmup_ratio * steps), steps)
    low = device.type == "cuda" and s.precision != "fp32"
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16 if s.precision == "bf16" else torch.float16)
        if low
        else contextlib.nullcontext()
    )
    scaler = torch.amp.GradScaler("cuda", enabled=low and s.precision == "fp16")
    release(device)
    step, start = 0, 0.0
    while step < steps:
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            with autocast:
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step == warmup:
                sync(device)
                start = time.perf_counter()
            if step == steps:
                break
    sync(device)
    return {
        "tokens_per_s": (steps - warmup) * s.batch_size * blocks.shape[1] / (time.perf_counter() - start),
        "peak_memory_mb": peak_memory_mb(device),
    }


def summarise(runs: list[dict], flops: float, head_flops: float, predicted: float, peak: float | None) -> dict:
    median = float(np.median([r["tokens_per_s"] for r in runs]))
    return {
        "tokens_per_s": [r["tokens_per_s"] for r in runs],
        "median_tokens_per_s": median,
        "mfu": median * flops / (peak * 1e12) if peak else None,
        "mfu_executed": median * (flops + head_flops * predicted) / (peak * 1e12) if peak else None,
        "peak_memory_mb": max((r["peak_memory_mb"] for r in runs if r.get("peak_memory_mb") is not None), default=None),
    }


def bench_one(
    work: Path,
    corpus: Path,
    vocab: Path,
    tokenizer,
    model_name: str,
    seq_len: int,
    args,
    device: torch.device,
    peak: float | None,
) -> dict:
    architecture, size = model_name.split("-")
    batch = args.tokens_per_batch // seq_len if args.tokens_per_batch else args.batch
    precision = "bf16" if args.bf16 and device.type == "cuda" else "fp32"
    recipe = {
        "architecture": architecture,
        "size": size,
        "batch_size": batch,
        "dropout": 0.1,
        "precision": precision,
        "phases": [{"seq_len": seq_len, "fraction": 1.0}],
        "num_threads": args.threads,
        "compile": args.compile,
        "seed": 1,
    }
    s = parse(PretrainSettings, recipe, "recipe")
    tag = f"{model_name}-{seq_len}"
    raw: dict[str, list[dict]] = {"ours": [], **{b: [] for b in args.baselines}}
    blocks = None
    for r in range(args.repeat):  # interleaved, so drifting machine load hits every contender alike
        release(device)
        raw["ours"].append(run_ours(work, corpus, vocab, recipe, args.steps, args.warmup, f"ours-{tag}-{r}", device))
        if blocks is None:
            _, shards = read_index(next((work / f"ours-{tag}-0" / "packed").glob(f"*/seq~{seq_len}/*/index.json")))
            blocks = np.concatenate([np.asarray(PackedBlocks(d, "train").tokens) for d in shards])
        if "trainer" in raw:
            raw["trainer"].append(run_trainer(work, blocks, tokenizer, s, args.steps, args.warmup, device))
        if "loop" in raw:
            raw["loop"].append(run_loop(blocks, tokenizer, s, args.steps, args.warmup, device))
        print(
            f"{tag} repeat {r}: " + ", ".join(f"{k} {v[-1]['tokens_per_s']:,.0f} tokens/s" for k, v in raw.items()),
            flush=True,
        )
    model = build_model(s, tokenizer, seq_len)
    encoder, head_module = mlm_parts(model)
    flops, head = train_flops_per_token(model, seq_len, 0.0), 6 * linear_weights(head_module)
    result = {
        "model": model_name,
        "seq_len": seq_len,
        "batch": batch,
        "tokens_per_step": batch * seq_len,
        "precision": precision,
        "parameters": sum(p.numel() for p in model.parameters()),
        "encoder_linear_weights": linear_weights(encoder),
        "vocab_size": model.config.vocab_size,
        "model_flops_per_token": flops,
        "head_flops_per_predicted_token": head,
        "ours": summarise(raw["ours"], flops, head, s.mask_prob, peak),
        **{b: summarise(raw[b], flops, head, 1.0, peak) for b in args.baselines},
    }
    for b in args.baselines:
        result[f"speedup_vs_{b}"] = result["ours"]["median_tokens_per_s"] / result[b]["median_tokens_per_s"]
    return result


FORMULAS = {
    "model_flops_per_token": "6 * encoder_linear_weights + 12 * layers * hidden * seq_len (same for every contender)",
    "mfu": "median_tokens_per_s * model_flops_per_token / peak",
    "mfu_executed": "median_tokens_per_s * (model_flops_per_token + head_flops_per_predicted_token * f) / peak, "
    "f = mask_prob for ours (head on masked positions only), 1 for trainer and loop (head on every position)",
    "head_flops_per_predicted_token": "6 * head_linear_weights (hidden * hidden + hidden * vocab_size)",
}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument(
        "--models",
        nargs="+",
        default=None,
        choices=MODELS,
        help="default: bert-tiny on cpu, bert-base bert-large on cuda",
    )
    ap.add_argument("--seq-lens", nargs="+", type=int, default=None, help="default: 128 on cpu, 128 512 on cuda")
    ap.add_argument("--batch", type=int, default=32, help="sequences per step (on cpu, unless --tokens-per-batch)")
    ap.add_argument(
        "--tokens-per-batch",
        type=int,
        default=None,
        help="tokens per step, batch = this / seq_len (default 32768 on cuda)",
    )
    ap.add_argument("--steps", type=int, default=None, help="default: 30 on cpu, 110 on cuda")
    ap.add_argument(
        "--warmup", type=int, default=10, help="untimed steps at the start of every run (also our log interval)"
    )
    ap.add_argument(
        "--vocab",
        type=int,
        default=None,
        help="WordPiece vocabulary size (default: 8000 on cpu, 30522 as BERT on cuda)",
    )
    ap.add_argument(
        "--documents", type=int, default=None, help="synthetic documents (default: 1500 on cpu, 12000 on cuda)"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--bf16", action="store_true", help="bf16 autocast for every contender (GPU only; CPU runs stay fp32)"
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile our model (the baselines stay eager, as Trainer's default)",
    )
    ap.add_argument("--baselines", nargs="*", default=["trainer", "loop"], choices=["trainer", "loop"])
    ap.add_argument(
        "--repeat", type=int, default=None, help="runs of every contender, interleaved (default: 2 on cpu, 1 on cuda)"
    )
    ap.add_argument("--peak-tflops", type=float, default=None, help="device peak for MFU (default: from the GPU name)")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/pretrain_{cpu,gpu}.json")
    args = ap.parse_args(argv)
    gpu = args.device == "cuda"
    defaults = {
        "models": ["bert-base", "bert-large"] if gpu else ["bert-tiny"],
        "seq_lens": [128, 512] if gpu else [128],
        "tokens_per_batch": 32768 if gpu else None,
        "steps": 110 if gpu else 30,
        "vocab": 30522 if gpu else 8000,
        "documents": 12000 if gpu else 1500,
        "repeat": 1 if gpu else 2,
        "out": f"benchmarks/results/pretrain_{'gpu' if gpu else 'cpu'}.json",
    }
    fill_defaults(args, defaults)
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    device = use_device(args.device)
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    logging.getLogger("workflow_scripts").setLevel(logging.WARNING)
    peak = peak_tflops(PretrainSettings(peak_tflops=args.peak_tflops), device)  # the pipeline's table of device peaks
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = synthetic_corpus(work / "corpus", args.documents)
        vocab = wordpiece(work / "vocab", texts, args.vocab)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(vocab)
        runs = [
            bench_one(work, work / "corpus", vocab, tokenizer, m, L, args, device, peak)
            for m in args.models
            for L in args.seq_lens
        ]
    result = {
        "benchmark": "pretraining step: ours vs transformers.Trainer + "
        "DataCollatorForLanguageModeling (and the same work in a bare loop)",
        "device": device_name(device, args.threads),
        "peak_tflops": peak,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "settings": vars(args),
        "flops": FORMULAS,
        "runs": runs,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),  # 1, 5, 15 minutes: other jobs sharing the machine
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for r in runs:
        print(
            json.dumps(
                {k: r[k] for k in ("model", "seq_len", "batch")}
                | {c: {k: r[c][k] for k in ("median_tokens_per_s", "mfu")} for c in ["ours", *args.baselines]}
                | {k: v for k, v in r.items() if k.startswith("speedup")}
            )
        )


if __name__ == "__main__":
    sys.exit(main())
