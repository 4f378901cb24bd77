"""ModernBERT-class pretraining on the CPU, side by side in one run:

1. ModernBERT against BERT at equal parameter count, both through our engine: tokens/s at
   sequence lengths 128 and 1,024 (the same tokens per step), and the peak tensor memory of
   one training step (forward and backward, measured with torch.profiler's allocator events,
   plus the fp32 weights and AdamW moments), beside the engine's own estimate (pretrain/memory.py);
2. our engine against ``transformers.Trainer`` on the same ModernBERT model and packed blocks:
   Trainer + ``DataCollatorForLanguageModeling`` as ``run_mlm.py`` sets it up, and again with
   ModernBERT's own ``sparse_prediction`` (its head on the masked positions only), which a user
   who knows the model would switch on. Ours runs with ``prediction_slots: auto`` (eager on the
   CPU, so the head sees exactly the masked positions) and with the default fixed slots, whose
   padding (six standard deviations above the expected masked count) only a compiled step needs.

    python benchmarks/bench_modernbert.py [--threads 1] [--steps 10] [--warmup 3] [--repeat 2]

Writes benchmarks/results/modernbert_cpu.json. The shapes are small (hidden 128, 4 layers) so
that the whole run takes a few minutes on one thread; ModernBERT's GeGLU width is chosen so
that its parameter count equals BERT's (BERT's learned positions, token types and biases
included). On the CPU, SDPA computes a sliding-window layer as a dense masked attention: the
window saves nothing here; the FLOPs columns count what a windowed kernel computes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from bench_pretrain import device_name, release, run_ours, run_trainer, synthetic_corpus, wordpiece
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerFast, get_linear_schedule_with_warmup
from transformers.utils import logging as hf_logging

from workflow_scripts.pack.index import read_index
from workflow_scripts.pretrain import memory
from workflow_scripts.pretrain.batches import BatchBuilder
from workflow_scripts.pretrain.data import PackedBlocks, PackedCorpus
from workflow_scripts.pretrain.dist import Dist
from workflow_scripts.pretrain.loop import norms_of
from workflow_scripts.pretrain.model import MLMObjective, build_model, train_flops_per_token
from workflow_scripts.pretrain.settings import PretrainSettings
from workflow_scripts.pretrain.step import TrainStep, fixed_slots
from workflow_scripts.tokenizer import Specials
from workflow_scripts.typed import parse

HIDDEN, LAYERS, HEADS = 128, 4, 4
CPU = torch.device("cpu")


def recipe(architecture: str, seq_len: int, batch: int, threads: int, intermediate: int | None) -> dict:
    """Both families with ModernBERT's recipe where it differs from BERT's (no dropout, 30% masking)."""
    return {
        "architecture": architecture,
        "hidden_size": HIDDEN,
        "num_layers": LAYERS,
        "num_heads": HEADS,
        "intermediate_size": intermediate,
        "batch_size": batch,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "mask_prob": 0.3,
        "precision": "fp32",
        "phases": [{"seq_len": seq_len, "fraction": 1.0}],
        "num_threads": threads,
        "seed": 1,
        **({"modernbert": {"local_attention": 128}} if architecture == "modernbert" else {}),
    }


def parameters(s: PretrainSettings, tokenizer, seq_len: int) -> int:
    return sum(p.numel() for p in build_model(s, tokenizer, seq_len).parameters())


def equal_geglu_width(tokenizer, seq_len: int, threads: int) -> int:
    """The GeGLU width that gives ModernBERT BERT's parameter count (each unit of width is 3 x hidden
    weights per layer: two in Wi, one in Wo)."""
    bert = parameters(parse(PretrainSettings, recipe("bert", seq_len, 1, threads, None), "b"), tokenizer, seq_len)
    probe = parse(PretrainSettings, recipe("modernbert", seq_len, 1, threads, 1), "m")
    rest = parameters(probe, tokenizer, seq_len) - 3 * HIDDEN * LAYERS
    return round((bert - rest) / (3 * HIDDEN * LAYERS))


def step_peak_mb(s: PretrainSettings, tokenizer, micro: int, seq_len: int) -> tuple[float, float]:
    """(measured, estimated) peak MB of one training micro-step of ``micro`` sequences."""
    model = build_model(s, tokenizer, seq_len)
    objective, vocab = MLMObjective(model), model.config.vocab_size
    ids = torch.randint(5, vocab, (micro, seq_len))
    n = int(s.mask_prob * micro * seq_len)
    positions = torch.randperm(micro * seq_len)[:n]

    def step() -> None:
        loss, _ = objective(ids, positions, ids.reshape(-1)[positions], {"masked": float(n)})
        loss.backward()

    states = 12 * sum(p.numel() for p in model.parameters())
    measured = memory.measured_peak_bytes(step) + states
    return measured / 2**20, memory.mlm_estimate(model, s, CPU)(micro, seq_len) / 2**20


def latest(runs: dict[str, list[dict]]) -> str:
    return ", ".join(f"{k} {v[-1]['tokens_per_s']:,.0f} tok/s" for k, v in runs.items())


def median(runs: list[dict]) -> float:
    return float(np.median([r["tokens_per_s"] for r in runs]))


def compare_families(work: Path, corpus: Path, vocab: Path, tokenizer, args) -> list[dict]:
    """ModernBERT vs BERT at each length, interleaved repeats, the same tokens per step."""
    rows = []
    for seq_len in args.seq_lens:
        batch = args.tokens_per_step // seq_len
        width = equal_geglu_width(tokenizer, seq_len, args.threads)
        recipes = {
            "bert": recipe("bert", seq_len, batch, args.threads, None),
            "modernbert": recipe("modernbert", seq_len, batch, args.threads, width),
        }
        runs: dict[str, list[dict]] = {k: [] for k in recipes}
        for r in range(args.repeat):
            for family, body in recipes.items():
                release(CPU)
                runs[family].append(
                    run_ours(work, corpus, vocab, body, args.steps, args.warmup, f"{family}-{seq_len}-{r}", CPU)
                )
            print(f"seq {seq_len} repeat {r}: {latest(runs)}", flush=True)
        row = {"seq_len": seq_len, "batch": batch, "modernbert_geglu_width": width}
        for family, body in recipes.items():
            s = parse(PretrainSettings, body, family)
            measured, estimated = step_peak_mb(s, tokenizer, batch, seq_len)
            model = build_model(s, tokenizer, seq_len)
            row[family] = {
                "parameters": sum(p.numel() for p in model.parameters()),
                "tokens_per_s": [x["tokens_per_s"] for x in runs[family]],
                "median_tokens_per_s": median(runs[family]),
                "flops_per_token": train_flops_per_token(model, seq_len, s.mask_prob),
                "step_peak_mb_measured": measured,
                "step_peak_mb_estimated": estimated,
            }
        ratio = row["modernbert"]["median_tokens_per_s"] / row["bert"]["median_tokens_per_s"]
        row["modernbert_over_bert_tokens_per_s"] = ratio
        _, shards = read_index(next((work / f"bert-{seq_len}-0" / "packed").glob(f"*/seq~{seq_len}/*/index.json")))
        data = PackedCorpus(shards, "train")
        cpu = step_cpu({family: engine_stepper(data, tokenizer, body) for family, body in recipes.items()}, args)
        for family in recipes:
            row[family]["step_cpu_s"] = cpu[family]
            row[family]["tokens_per_cpu_s"] = batch * seq_len / cpu[family]["median"]
        row["modernbert_over_bert_tokens_per_cpu_s"] = cpu["bert"]["median"] / cpu["modernbert"]["median"]
        rows.append(row)
    return rows


def sparse_trainer(work: Path, blocks: np.ndarray, tokenizer, s: PretrainSettings, args) -> dict:
    """Trainer on the same model with ``sparse_prediction``: the head on the masked positions only."""
    model = build_model(s, tokenizer, blocks.shape[1])
    model.config.sparse_prediction = model.sparse_prediction = True
    return run_trainer(work, blocks, tokenizer, s, args.steps, args.warmup, CPU, model=model)


def compare_trainer(work: Path, corpus: Path, vocab: Path, tokenizer, args) -> dict:
    """Our engine against Trainer (dense head, and sparse_prediction) on one ModernBERT at 128."""
    seq_len = 128
    batch = args.tokens_per_step // seq_len
    width = equal_geglu_width(tokenizer, seq_len, args.threads)
    body = recipe("modernbert", seq_len, batch, args.threads, width)
    s = parse(PretrainSettings, body, "modernbert")
    exact = {**body, "prediction_slots": "auto"}  # eager on the CPU: exact slots
    runs: dict[str, list[dict]] = {"ours": [], "ours_fixed_slots": [], "trainer": [], "trainer_sparse_prediction": []}
    blocks, shards = None, []
    for r in range(args.repeat):
        release(CPU)
        runs["ours"].append(run_ours(work, corpus, vocab, exact, args.steps, args.warmup, f"engine-{r}", CPU))
        runs["ours_fixed_slots"].append(
            run_ours(work, corpus, vocab, body, args.steps, args.warmup, f"engine-fixed-{r}", CPU)
        )
        if blocks is None:
            _, shards = read_index(next((work / "engine-0" / "packed").glob(f"*/seq~{seq_len}/*/index.json")))
            blocks = np.concatenate([np.asarray(PackedBlocks(d, "train").tokens) for d in shards])
        runs["trainer"].append(run_trainer(work, blocks, tokenizer, s, args.steps, args.warmup, CPU))
        runs["trainer_sparse_prediction"].append(sparse_trainer(work, blocks, tokenizer, s, args))
        print(f"engine vs Trainer repeat {r}: {latest(runs)}", flush=True)
    result = {"seq_len": seq_len, "batch": batch, "mask_prob": s.mask_prob}
    for name, values in runs.items():
        result[name] = {"tokens_per_s": [v["tokens_per_s"] for v in values], "median_tokens_per_s": median(values)}
    for name in ("ours_fixed_slots", "trainer", "trainer_sparse_prediction"):
        result[f"speedup_vs_{name}"] = result["ours"]["median_tokens_per_s"] / result[name]["median_tokens_per_s"]
    data = PackedCorpus(shards, "train")
    cpu = step_cpu(
        {
            "ours": engine_stepper(data, tokenizer, exact),
            "trainer_step_sparse_prediction": trainer_stepper(data, tokenizer, exact),
        },
        args,
    )
    cpu["speedup"] = cpu["trainer_step_sparse_prediction"]["median"] / cpu["ours"]["median"]
    result["step_cpu"] = cpu
    return result


def engine_stepper(data: PackedCorpus, tokenizer, body: dict):
    """One optimiser step of the engine (BatchBuilder, TrainStep) on ``data``, as a function of the step."""
    s = parse(PretrainSettings, {**body, "max_steps": 10**6}, "recipe")
    batch = s.batch_size
    builder = BatchBuilder(s, [data], Specials.of(tokenizer, "t"), 0, batch, batch, fixed_slots(s, CPU))
    trainer = TrainStep(MLMObjective(build_model(s, tokenizer, data.seq_len)), s, Dist())
    trainer.wrap()
    return lambda step: trainer(builder(step), norms_of(s, data.seq_len, 1))


def trainer_stepper(data: PackedCorpus, tokenizer, body: dict):
    """Trainer's per-step work on the same model with ``sparse_prediction``: collator, forward with
    labels, backward, clip, AdamW, schedule."""
    s = parse(PretrainSettings, {**body, "max_steps": 10**6}, "recipe")
    blocks, batch = data.take(np.arange(len(data)))[0], s.batch_size
    model = build_model(s, tokenizer, data.seq_len).train()
    model.config.sparse_prediction = model.sparse_prediction = True
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=s.mask_prob)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.peak_lr(), betas=tuple(s.betas), eps=s.eps)
    schedule = get_linear_schedule_with_warmup(optimizer, 10, 10**6)

    def step(k: int) -> None:
        rows = blocks[(k * batch) % (len(blocks) - batch) :][:batch]
        model(**collator([{"input_ids": r} for r in rows.tolist()])).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def step_cpu(steppers: dict, args) -> dict:
    """CPU seconds per optimiser step, the contenders alternating in one process in stretches of
    ``--cpu-steps``. The process's CPU time counts every thread's work and is far less disturbed by
    other jobs than wall time on a shared machine."""
    seconds: dict[str, list[float]] = {name: [] for name in steppers}
    step = 0
    for _ in range(args.cpu_repeat):
        for name, run in steppers.items():
            run(step)  # untimed: a first step allocates
            start = time.process_time()
            for k in range(1, args.cpu_steps + 1):
                run(step + k)
            seconds[name].append((time.process_time() - start) / args.cpu_steps)
        step += args.cpu_steps + 1
    out = {k: {"cpu_s_per_step": v, "median": float(np.median(v))} for k, v in seconds.items()}
    print(f"step CPU seconds: {json.dumps({k: v['median'] for k, v in out.items()})}", flush=True)
    return out


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq-lens", nargs="+", type=int, default=[128, 1024])
    ap.add_argument("--tokens-per-step", type=int, default=4096, help="batch = this / seq_len")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps at the start of every run")
    ap.add_argument("--repeat", type=int, default=2, help="runs of every contender, interleaved")
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--documents", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu-steps", type=int, default=4, help="steps per timed stretch of the CPU-time comparison")
    ap.add_argument("--cpu-repeat", type=int, default=4, help="alternating stretches per contender")
    ap.add_argument("--out", default="benchmarks/results/modernbert_cpu.json")
    args = ap.parse_args(argv)
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    logging.getLogger("workflow_scripts").setLevel(logging.WARNING)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = synthetic_corpus(work / "corpus", args.documents)
        vocab = wordpiece(work / "vocab", texts, args.vocab)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(vocab)
        families = compare_families(work, work / "corpus", vocab, tokenizer, args)
        trainer = compare_trainer(work, work / "corpus", vocab, tokenizer, args)
    result = {
        "benchmark": "ModernBERT vs BERT pretraining at equal parameter count (our engine); "
        "our engine vs transformers.Trainer on the same ModernBERT",
        "device": device_name(CPU, args.threads),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "shape": {"hidden": HIDDEN, "layers": LAYERS, "heads": HEADS},
        "settings": vars(args),
        "families": families,
        "engine_vs_trainer": trainer,
        "seconds": time.perf_counter() - started,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"families": families, "engine_vs_trainer": trainer}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
