"""Distillation throughput: student steps/s with the teacher's forward pass (Lewis et al.'s
loss: MLM + output KL + hidden-state cosine) and without it (the "train longer" control),
side by side in one run, on the same data, student and batch.

    python benchmarks/bench_distill.py [--teacher-size tiny] [--teacher-layers 4] [--seq-len 128] \
        [--batch 32] [--steps 40] [--threads 2] [--repeat 2] [--out benchmarks/results/distill_cpu.json]

The teacher is a freshly initialised model of the given shape (throughput does not depend
on its weights); the student keeps every other teacher layer.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from transformers import PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

from bench_pretrain import synthetic_corpus, wordpiece
from workflow_scripts.config.typed import parse
from workflow_scripts.distill import train as distill_cli
from workflow_scripts.pretrain.model import build_model
from workflow_scripts.pretrain.settings import PretrainSettings


def run(work: Path, name: str, teacher: Path, corpus: Path, recipe: dict, steps: int, warmup: int) -> dict:
    settings = work / f"{name}.yaml"
    settings.write_text(yaml.safe_dump({"model": {"name": name, "distill": {
        **recipe, "max_steps": steps, "log_every": warmup, "checkpoint_every": 10**9, "heldout_fraction": 0.0}}}))
    out = work / name
    distill_cli.main(["--settings", str(settings), "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out)])
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    timed = [r for r in rows if r["step"] > warmup]
    tps = sum(r["tokens_per_s"] for r in timed) / len(timed)
    return {"tokens_per_s": tps, "steps_per_s": tps / (recipe["batch_size"] * recipe["phases"][0]["seq_len"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teacher-size", default="tiny", choices=["tiny", "small", "base", "large"])
    ap.add_argument("--teacher-layers", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--documents", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/distill_cpu.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    cuda = torch.cuda.is_available()
    shape = {"architecture": "bert", "size": args.teacher_size, "num_layers": args.teacher_layers,
             "phases": [{"seq_len": args.seq_len, "fraction": 1.0}]}
    recipe = {"batch_size": args.batch, "phases": shape["phases"], "precision": "bf16" if cuda else "fp32",
              "num_threads": args.threads, "seed": 1, "student": {"init": "teacher_layers"}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = synthetic_corpus(work / "corpus", args.documents)
        vocab = wordpiece(work / "vocab", texts, args.vocab)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(vocab)
        teacher = build_model(parse(PretrainSettings, shape, "teacher"), tokenizer, args.seq_len)
        teacher.save_pretrained(work / "teacher")
        tokenizer.save_pretrained(work / "teacher")
        with_teacher, without = [], []
        for r in range(args.repeat):  # interleaved, so drifting machine load hits both alike
            with_teacher.append(run(work, f"lewis{r}", work / "teacher", work / "corpus", {**recipe, "loss": {"mlm": 5.0, "kl": 2.0, "cosine": 1.0}}, args.steps, args.warmup))
            without.append(run(work, f"control{r}", work / "teacher", work / "corpus", {**recipe, "loss": {"mlm": 1.0, "kl": 0.0, "cosine": 0.0}}, args.steps, args.warmup))
    med = {k: float(np.median([x["steps_per_s"] for x in v])) for k, v in (("with_teacher", with_teacher), ("without_teacher", without))}
    result = {
        "benchmark": "distillation student steps/s with and without the teacher forward pass",
        "device": torch.cuda.get_device_name(0) if cuda else f"cpu ({platform.processor() or platform.machine()}), {args.threads} threads",
        "torch": torch.__version__, "settings": vars(args),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
        "runs_with_teacher": with_teacher, "runs_without_teacher": without,
        "steps_per_s_with_teacher": med["with_teacher"], "steps_per_s_without_teacher": med["without_teacher"],
        "teacher_overhead": med["without_teacher"] / med["with_teacher"],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("device", "steps_per_s_with_teacher", "steps_per_s_without_teacher", "teacher_overhead")}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
