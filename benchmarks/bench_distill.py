"""Distillation throughput: student steps/s with the teacher's forward pass (Lewis et al.'s
loss: MLM + output KL + hidden-state cosine) and without it (the "train longer" control),
side by side in one run, on the same data, student and batch.

    python benchmarks/bench_distill.py [--teacher-size tiny] [--teacher-layers 4] [--seq-len 128] \
        [--batch 32] [--steps 30] [--threads 2] [--repeat 2] [--out benchmarks/results/distill_cpu.json]

``--kl-forms`` also runs the teacher recipe with the output KL forced into chunks (recomputed
in the backward pass) beside the whole KL the pipeline chooses where memory allows, and checks
that both runs end with the same weights bit for bit. The demo's student:

    python benchmarks/bench_distill.py --kl-forms --teacher-layers 2 --seq-len 64 --vocab 1200 \
        --steps 60 --threads 1 --repeat 3 --out benchmarks/results/distill_kl_forms_cpu.json

On a GPU (bf16, teacher in bf16; defaults: a BERT-base teacher, 12 layers, its 6-layer student,
batch 256, vocabulary 30522, 110 steps; writes benchmarks/results/distill_gpu.json):

    python benchmarks/bench_distill.py --device cuda

The teacher is a freshly initialised model of the given shape (throughput does not depend
on its weights); the student keeps every other teacher layer. The first ``--warmup`` steps
of every run are excluded from the timing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from bench_pretrain import (
    device_name,
    fill_defaults,
    release,
    synthetic_corpus,
    timed_run_settings,
    use_device,
    wordpiece,
)
from transformers import PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

from workflow_scripts.distill import distill as distill_cli
from workflow_scripts.distill import losses
from workflow_scripts.pretrain.model import build_model
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.typed import parse


def chunked_kl(student, *_args, **_kwargs) -> int:
    """The chunked output KL whatever the memory (distill/memory.kl_rows's other answer)."""
    return losses.chunk_rows(student.config.vocab_size)


def run(
    work: Path, name: str, teacher: Path, corpus: Path, recipe: dict, steps: int, warmup: int, force_chunks=False
) -> dict:
    release(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    settings = timed_run_settings(work, name, "distill", recipe, steps, warmup)
    out = work / name
    chosen = distill_cli.kl_rows
    distill_cli.kl_rows = chunked_kl if force_chunks else chosen
    cpu = time.process_time()
    try:
        distill_cli.main(
            ["--settings", str(settings), "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out)]
        )
    finally:
        distill_cli.kl_rows = chosen
    cpu = time.process_time() - cpu
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    timed = [r for r in rows if r["step"] > warmup]
    tps = sum(r["tokens_per_s"] for r in timed) / len(timed)
    weights = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    steps_per_s = tps / (recipe["batch_size"] * recipe["phases"][0]["seq_len"])
    return {"tokens_per_s": tps, "steps_per_s": steps_per_s, "cpu_s": cpu, "weights_sha256": weights}


def step_cpu_seconds(teacher_dir: Path, batch: int, seq_len: int, steps: int) -> dict:
    """CPU-seconds of one forward and backward pass of the objective (the student keeping every other teacher
    layer), the whole KL and the chunked one alternating step by step: this thread's CPU time, which other
    jobs on a shared machine disturb far less than wall time."""
    from transformers import AutoModelForMaskedLM

    from workflow_scripts.distill.objective import DistillObjective
    from workflow_scripts.distill.settings import LossWeights
    from workflow_scripts.distill.student import from_teacher_layers

    teacher = AutoModelForMaskedLM.from_pretrained(teacher_dir).eval().requires_grad_(False)
    student = from_teacher_layers(teacher, list(range(0, teacher.config.num_hidden_layers, 2)))
    objective = DistillObjective(
        student, teacher, LossWeights(), 2.0, [2 * (i + 1) for i in range(len(student.bert.encoder.layer))]
    )
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, teacher.config.vocab_size, (batch, seq_len), generator=g)
    positions = torch.randperm(batch * seq_len, generator=g)[: round(0.15 * batch * seq_len)].sort().values
    norms = {"masked": float(len(positions)), "tokens": float(batch * seq_len)}
    forms = {"whole": None, "chunked": losses.chunk_rows(teacher.config.vocab_size)}
    seconds, grads = {k: [] for k in forms}, {}
    for step in range(steps + 2):
        for name, rows in forms.items():
            objective.kl_rows = rows
            objective.zero_grad(set_to_none=True)
            torch.manual_seed(step)  # the same dropout masks for both forms
            begin = time.thread_time()
            loss, _ = objective(ids, positions, ids.reshape(-1)[positions], norms)
            loss.backward()
            if step >= 2:  # the first two are warm-up
                seconds[name].append(time.thread_time() - begin)
            grads[name] = [p.grad.clone() for p in objective.parameters() if p.grad is not None]
    same = all(torch.equal(a, b) for a, b in zip(grads["whole"], grads["chunked"], strict=True))
    med = {k: float(np.median(v)) for k, v in seconds.items()}
    return {
        "steps": steps,
        "cpu_s_per_step": med,
        "whole_over_chunked_speed": med["chunked"] / med["whole"],
        "same_gradients_bit_for_bit": same,
    }


def kl_forms(runs: dict[str, list[dict]]) -> dict:
    """The whole KL against the forced chunks: median speed-up, CPU-seconds, identical weights."""
    whole, chunked = runs["with_teacher"], runs["chunked_kl"]
    return {
        "whole_over_chunked_steps_per_s": float(
            np.median([w["steps_per_s"] / c["steps_per_s"] for w, c in zip(whole, chunked, strict=True)])
        ),
        "cpu_s_whole": float(np.median([w["cpu_s"] for w in whole])),
        "cpu_s_chunked": float(np.median([c["cpu_s"] for c in chunked])),
        "same_weights_bit_for_bit": len({r["weights_sha256"] for r in whole + chunked}) == 1,
    }


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
    ap.add_argument("--kl-forms", action="store_true", help="also the teacher recipe with the KL forced into chunks")
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
        contenders = {
            "with_teacher": ({"mlm": 5.0, "kl": 2.0, "cosine": 1.0}, False),
            "without_teacher": ({"mlm": 1.0, "kl": 0.0, "cosine": 0.0}, False),
            **({"chunked_kl": ({"mlm": 5.0, "kl": 2.0, "cosine": 1.0}, True)} if args.kl_forms else {}),
        }
        runs = {name: [] for name in contenders}
        for r in range(args.repeat):  # interleaved, so drifting machine load hits every contender alike
            for name, (loss, force_chunks) in contenders.items():
                runs[name].append(
                    run(
                        work,
                        f"{name}{r}",
                        work / "teacher",
                        work / "corpus",
                        {**recipe, "loss": loss},
                        args.steps,
                        args.warmup,
                        force_chunks,
                    )
                )
        if args.kl_forms:
            per_step = step_cpu_seconds(work / "teacher", args.batch, args.seq_len, 3 * args.steps)
    med = {k: float(np.median([x["steps_per_s"] for x in v])) for k, v in runs.items()}
    result = {
        "benchmark": "distillation student steps/s with and without the teacher forward pass",
        "device": device_name(device, args.threads),
        "torch": torch.__version__,
        "settings": vars(args),
        "teacher_parameters": sum(p.numel() for p in teacher.parameters()),
        **{f"runs_{k}": v for k, v in runs.items()},
        **{f"steps_per_s_{k}": v for k, v in med.items()},
        "teacher_overhead": med["without_teacher"] / med["with_teacher"],
        **({"kl_forms": kl_forms(runs), "kl_forms_per_step": per_step} if args.kl_forms else {}),
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
            }
            | ({k: result[k] for k in ("kl_forms", "kl_forms_per_step")} if args.kl_forms else {}),
            indent=2,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
