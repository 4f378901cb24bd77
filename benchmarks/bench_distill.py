"""Distillation throughput: student steps/s with the teacher's forward pass (Lewis et al.'s
loss: MLM + output KL + hidden-state cosine) and without it (the "train longer" control),
side by side in one run, on the same data, student and batch.

    python benchmarks/bench_distill.py [--teacher-size tiny] [--teacher-layers 4] [--seq-len 128] \
        [--batch 32] [--steps 30] [--threads 2] [--repeat 2] [--out benchmarks/results/distill_cpu.json]

On a GPU (bf16, teacher in bf16; defaults: a BERT-base teacher, 12 layers, its 6-layer student,
batch 256, vocabulary 30522, 110 steps; writes benchmarks/results/distill_gpu.json):

    python benchmarks/bench_distill.py --device cuda

The teacher is a freshly initialised model of the given shape (throughput does not depend
on its weights); the student keeps every other teacher layer. The first ``--warmup`` steps
of every run are excluded from the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from bench_pretrain import device_name, fill_defaults, release, synthetic_corpus, use_device, wordpiece
from transformers import PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

from workflow_scripts.distill import distill as distill_cli
from workflow_scripts.pretrain.model import build_model
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse


def run(work: Path, name: str, teacher: Path, corpus: Path, recipe: dict, steps: int, warmup: int) -> dict:
    release(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    settings = work / f"{name}.yaml"
    settings.write_text(
        yaml.safe_dump(
            {
                "model": {
                    "name": name,
                    "distill": {
                        **recipe,
                        "max_steps": steps,
                        "log_every": warmup,
                        "checkpoint_every": 10**9,
                        "heldout_fraction": 0.0,
                        "export_checkpoints": False,
                    },
                }
            }
        )
    )
    out = work / name
    distill_cli.main(
        ["--settings", str(settings), "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out)]
    )
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    timed = [r for r in rows if r["step"] > warmup]
    tps = sum(r["tokens_per_s"] for r in timed) / len(timed)
    return {"tokens_per_s": tps, "steps_per_s": tps / (recipe["batch_size"] * recipe["phases"][0]["seq_len"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument(
        "--teacher-size",
        default=None,
        choices=["tiny", "small", "base", "large"],
        help="default: tiny on cpu, base on cuda",
    )
    ap.add_argument("--teacher-layers", type=int, default=None, help="default: 4 on cpu, 12 on cuda")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=None, help="default: 32 on cpu, 256 on cuda")
    ap.add_argument("--steps", type=int, default=None, help="default: 30 on cpu, 110 on cuda")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--vocab", type=int, default=None, help="default: 8000 on cpu, 30522 on cuda")
    ap.add_argument("--documents", type=int, default=None, help="default: 1500 on cpu, 12000 on cuda")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=None, help="default: 2 on cpu, 1 on cuda")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/distill_{cpu,gpu}.json")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    defaults = {
        "teacher_size": "base" if cuda else "tiny",
        "teacher_layers": 12 if cuda else 4,
        "batch": 256 if cuda else 32,
        "steps": 110 if cuda else 30,
        "vocab": 30522 if cuda else 8000,
        "documents": 12000 if cuda else 1500,
        "repeat": 1 if cuda else 2,
        "out": f"benchmarks/results/distill_{'gpu' if cuda else 'cpu'}.json",
    }
    fill_defaults(args, defaults)
    device = use_device(args.device)
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    shape = {
        "architecture": "bert",
        "size": args.teacher_size,
        "num_layers": args.teacher_layers,
        "phases": [{"seq_len": args.seq_len, "fraction": 1.0}],
    }
    recipe = {
        "batch_size": args.batch,
        "phases": shape["phases"],
        "precision": "bf16" if cuda else "fp32",
        "num_threads": args.threads,
        "seed": 1,
        "student": {"init": "teacher_layers"},
    }
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
            with_teacher.append(
                run(
                    work,
                    f"lewis{r}",
                    work / "teacher",
                    work / "corpus",
                    {**recipe, "loss": {"mlm": 5.0, "kl": 2.0, "cosine": 1.0}},
                    args.steps,
                    args.warmup,
                )
            )
            without.append(
                run(
                    work,
                    f"control{r}",
                    work / "teacher",
                    work / "corpus",
                    {**recipe, "loss": {"mlm": 1.0, "kl": 0.0, "cosine": 0.0}},
                    args.steps,
                    args.warmup,
                )
            )
    med = {
        k: float(np.median([x["steps_per_s"] for x in v]))
        for k, v in (("with_teacher", with_teacher), ("without_teacher", without))
    }
    result = {
        "benchmark": "distillation student steps/s with and without the teacher forward pass",
        "device": device_name(device, args.threads),
        "torch": torch.__version__,
        "settings": vars(args),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
        "runs_with_teacher": with_teacher,
        "runs_without_teacher": without,
        "steps_per_s_with_teacher": med["with_teacher"],
        "steps_per_s_without_teacher": med["without_teacher"],
        "teacher_overhead": med["without_teacher"] / med["with_teacher"],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),  # 1, 5, 15 minutes: other jobs sharing the machine
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {
                k: result[k]
                for k in ("device", "steps_per_s_with_teacher", "steps_per_s_without_teacher", "teacher_overhead")
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
