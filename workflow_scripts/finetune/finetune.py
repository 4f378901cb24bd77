"""Fine-tune one model on one task (fold) with one seed; score test once, with the best dev state.

    python -m workflow_scripts.finetune.finetune --settings S.yaml --model PATH_OR_ID \\
        --task-dir results/tasks/T --fold F --seed N --out results/finetune/M/T/fold~F/seed~N \\
        [--cache-dir results/cache/finetune] [--steps-from SELECTION_FOLD/metrics.json]

S.yaml holds ``model`` ({name, restricted}), ``task`` (the labels, metric and folds) and ``finetune``
(FinetuneSettings, resolved by the workflow). Writes metrics.json (dev and
test scores, chosen step and hyper-parameters, the dev history), predictions.jsonl (test:
id, gold, pred), config.yaml (resolved settings) and, last, provenance.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from .. import allocator, optim, provenance
from ..atomic import write_json, write_jsonl, write_yaml
from ..checkpoint_integrity import verify_checkpoint
from ..cli import run
from ..errors import PipelineError
from ..tasks.metrics import compute, compute_all, metric_names, run_header, test_section
from ..typed import to_dict
from . import cache, chunks, data, heads, stability, tagging
from .decode import decode, label_scores
from .device import prepare
from .execution import Execution, execution_for
from .features import MARKERS, Encoding, encode, needs_markers
from .loop import Fit, Schedule, fit, predict, selection_value
from .settings import FinetuneRunSettings, FinetuneSettings, GridSettings, load

log = logging.getLogger(__name__)


# Files one of which holds a tokenizer's vocabulary; without them AutoTokenizer may build an empty one.
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def load_tokenizer(model: str):
    from transformers import AutoTokenizer

    local = Path(model)
    if local.is_dir() and not any((local / f).is_file() for f in TOKENIZER_FILES):
        raise PipelineError(
            f"--model {model}: the checkpoint directory has no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
            "save the tokenizer beside the model (tokenizer.save_pretrained) or rebuild the checkpoint"
        )
    try:
        return AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise PipelineError(
            f"--model {model}: cannot load a tokenizer ({exc}); give a transformers checkpoint "
            "directory (save_pretrained) or a hub id reachable from this machine"
        ) from exc


def encoding_for(settings: FinetuneRunSettings, labels: list[str], tokenizer, model_path: str) -> Encoding:
    task, cfg = settings.task, settings.finetune
    max_length = cfg.max_length
    limits = [getattr(tokenizer, "model_max_length", None), heads.position_limit(model_path)]
    context = min((n for n in limits if isinstance(n, int)), default=max_length)
    chunk_plan = chunks.plan(cfg, max_length, context, task.type)
    scheme = "plain"
    if task.type == "ner":
        bad = [t for t in labels if t != "O" and t[:2] not in ("B-", "I-")]
        if bad:
            raise PipelineError(f"task.labels: NER tag {bad[0]!r} is not O, B-<type> or I-<type>")
        scheme = cfg.tagging
        labels = tagging.scheme_labels(labels, scheme)
    return Encoding(
        task_type=task.type,
        labels=labels,
        max_length=max_length,
        scheme=scheme,
        label_all_subtokens=cfg.label_all_subtokens,
        window_context=cfg.window_context,
        re_input=cfg.re_input,
        pooling=cfg.pooling,
        chunks=chunk_plan,
    )


def candidates(cfg: FinetuneSettings) -> list[FinetuneSettings]:
    """The hyper-parameter settings to try: the grid (lr x batch size), else the run's own."""
    if not cfg.grid.lr and not cfg.grid.batch_size:
        return [cfg]
    lrs = cfg.grid.lr or [cfg.lr]
    sizes = cfg.grid.batch_size or [cfg.batch_size]
    return [dataclasses.replace(cfg, lr=lr, batch_size=bs, grid=GridSettings()) for lr in lrs for bs in sizes]


def fixed_steps(cfg: FinetuneSettings, path: Path) -> tuple[FinetuneSettings, Schedule]:
    """Train with the hyper-parameters chosen on the selection fold, on its learning-rate
    schedule (its planned steps, warm-up and decay), stopped at its chosen step: this fold's
    dev data then selects nothing (Lewis et al. on GAD and EU-ADR)."""
    try:
        chosen = json.loads(path.read_text(encoding="utf-8"))
        steps, total, hyper = int(chosen["best_step"]), int(chosen["schedule_steps"]), chosen["hyper"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PipelineError(
            f"--steps-from {path}: not a fine-tuning metrics.json with best_step, schedule_steps and hyper ({exc}); "
            "rerun the selection fold"
        ) from exc
    cfg = dataclasses.replace(
        cfg,
        lr=float(hyper["lr"]),
        batch_size=int(hyper["batch_size"]),
        grid=GridSettings(),
        eval_every=steps,
        patience=0,
    )
    return cfg, Schedule(total=total, stop=steps)


def choose(
    trials: list[FinetuneSettings],
    evaluate,
    train: list[dict[str, Any]],
    enc: Encoding,
    model_path: str,
    task_type: str,
    seed: int,
    pad_id: int,
    vocab_size: int,
    device,
    schedule: Schedule | None = None,
    execution: Execution | None = None,
):
    """Train each hyper-parameter setting from the same seed; keep the one best on dev (the
    earliest on ties) with its best dev state loaded."""
    best: tuple[FinetuneSettings, Fit, Any] | None = None
    grid = []
    for trial in trials:
        optim.seed_everything(seed, deterministic=True)
        model = heads.build(model_path, task_type, enc.labels, trial.dropout, trial.pooling, vocab_size)
        stability.apply(model, trial, model_path)
        model.to(device)
        label = f"finetune lr={trial.lr:g} batch={trial.batch_size}"
        result = fit(
            model, train, task_type, evaluate, trial, seed, pad_id, device, label, schedule, execution=execution
        )
        grid.append(
            {
                "lr": trial.lr,
                "batch_size": trial.batch_size,
                "best_step": result.best_step,
                "dev_score": result.dev.get("score"),
            }
        )
        if best is None or selection_value(result.dev) > selection_value(best[1].dev):
            best = (trial, result, model)
    assert best is not None
    trial, result, model = best
    model.load_state_dict(result.state)
    return trial, result, model, grid


def finetune(
    settings: FinetuneRunSettings,
    model_path: str,
    task_dir: Path,
    fold: int,
    seed: int,
    out: Path,
    cache_dir: Path | None = None,
    steps_from: Path | None = None,
) -> dict[str, Any]:
    started_at, started = provenance.now(), time.perf_counter()
    task, cfg = settings.task, settings.finetune
    schedule = None
    if steps_from is not None:
        cfg, schedule = fixed_steps(cfg, steps_from)
    torch.set_num_threads(cfg.num_threads)
    source = data.split_dir(task_dir, task, fold)
    splits = data.read_splits(source, task.type)
    labels = data.label_set(task, splits)
    verify_checkpoint(model_path, "--model")
    tokenizer = load_tokenizer(model_path)
    enc = encoding_for(settings, labels, tokenizer, model_path)
    if needs_markers(enc):
        tokenizer.add_tokens(list(MARKERS), special_tokens=True)

    def build_features() -> dict[str, Any]:
        feats = {name: encode(tokenizer, rows, enc) for name, rows in splits.items()}
        return {"features": feats, "stats": dict(enc.stats)}

    files = {name: source / f"{name}.jsonl" for name in splits}
    built = cache.cached(cache_dir, cache.key(files, tokenizer, enc), build_features)
    features, enc.stats = built["features"], built["stats"]
    for key, n in enc.stats.items():
        log.info("%s: %d", key.replace("_", " "), n)
    if enc.chunks is not None:
        c = enc.chunks
        log.info("inputs up to %d tokens, read in chunks of %d (stride %d)", enc.max_length, c.length, c.stride)
    device, cfg = prepare(cfg, task.type)
    execution = execution_for(cfg, device, enc.chunks.length if enc.chunks else enc.max_length)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    log.info(
        "%s on %s fold %d seed %d: %s examples, %s features, device %s",
        model_path,
        task.name,
        fold,
        seed,
        {k: len(v) for k, v in splits.items()},
        {k: len(v) for k, v in features.items()},
        device,
    )

    names = metric_names(task.metric)

    def scoring(split: str) -> dict[str, Any]:
        return {
            "labels": labels or None,
            "negative_label": task.negative_label,
            "ids": [r["id"] for r in splits[split]],
        }

    def score(model, split: str) -> dict[str, float]:
        outputs = predict(model, features[split], task.type, pad_id, cfg, device, execution)
        preds = decode(outputs, chunks.leads(features[split]), splits[split], enc, cfg.threshold)
        return compute(names[0], data.gold(splits[split], task.type), preds, **scoring(split))

    trial, result, chosen_model, grid = choose(
        candidates(cfg),
        lambda m: score(m, "dev"),
        features["train"],
        enc,
        model_path,
        task.type,
        seed,
        pad_id,
        len(tokenizer),
        device,
        schedule,
        execution,
    )
    # The test split is read by nothing above: it is scored here once, with the chosen state.
    outputs = predict(chosen_model, features["test"], task.type, pad_id, trial, device, execution)
    leads = chunks.leads(features["test"])
    test_preds = decode(outputs, leads, splits["test"], enc, trial.threshold)
    test_gold = data.gold(splits["test"], task.type)
    scores = label_scores(outputs, leads, len(test_gold)) if task.type == "doc_classification" else None
    test = test_section(compute_all(names, test_gold, test_preds, scores=scores, **scoring("test")))
    log.info(
        "%s fold %d seed %d: dev %.4f at step %d, test %.4f",
        task.name,
        fold,
        seed,
        result.dev.get("score", float("nan")),
        result.best_step,
        test["score"],
    )

    metrics = {
        **run_header(settings, fold, seed, names, test),
        "dev": result.dev,
        "best_step": result.best_step,
        "steps": result.steps,
        "schedule_steps": result.schedule_steps,
        "runtime_s": round(time.perf_counter() - started, 3),
        "hyper": {"lr": trial.lr, "batch_size": trial.batch_size},
        "selection": "steps fixed by " + str(steps_from) if steps_from else "best dev score",
        "grid": grid,
        "history": result.history,
        "examples": {k: len(v) for k, v in splits.items()},
        "features": {k: len(v) for k, v in features.items()},
        "encoding": {"max_length": enc.max_length, "scheme": enc.scheme, **enc.stats, **chunks.record(cfg, enc.chunks)},
        "train_examples_per_s": round(result.train_examples / max(result.train_seconds, 1e-9), 2),
        "device": str(device),
        "precision": trial.precision,
        "execution": execution.record(),
        "stability": {k: getattr(trial, k) for k in stability.KEYS},
    }
    out.mkdir(parents=True, exist_ok=True)
    # provenance.json marks a finished run: an old one must not vouch for half-replaced files
    (out / provenance.FILENAME).unlink(missing_ok=True)
    predictions = [
        {"id": r["id"], "gold": g, "pred": p} for r, g, p in zip(splits["test"], test_gold, test_preds, strict=True)
    ]
    write_jsonl(out / "predictions.jsonl", predictions)
    resolved = to_dict(dataclasses.replace(settings, finetune=cfg))
    write_yaml(out / "config.yaml", resolved)
    write_json(out / "metrics.json", metrics)
    inputs: dict[str, Any] = {"model": model_path, "task": str(task_dir)}
    if steps_from is not None:
        inputs["selection"] = str(steps_from)
    provenance.record(
        out,
        step="finetune",
        inputs=inputs,
        params=resolved,
        seed=seed,
        restricted=metrics["restricted"],
        started=started_at,
        outputs=[out / "metrics.json", out / "predictions.jsonl", out / "config.yaml"],
    )
    return metrics


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.finetune.finetune", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--settings", required=True, type=Path, help="YAML with model, task and finetune keys")
    parser.add_argument("--model", required=True, help="transformers checkpoint directory or hub id")
    parser.add_argument("--task-dir", required=True, type=Path, help="results/tasks/{task}")
    parser.add_argument("--fold", type=int, default=0, help="cross-validation fold (0 for unfolded tasks)")
    parser.add_argument("--seed", type=int, required=True, help="random seed of this run")
    parser.add_argument("--out", required=True, type=Path, help="results/finetune/{model}/{task}/fold~{f}/seed~{s}")
    parser.add_argument("--cache-dir", type=Path, default=None, help="cache of tokenised features")
    parser.add_argument(
        "--steps-from",
        type=Path,
        default=None,
        help="metrics.json of the selection fold: train exactly its chosen steps",
    )
    args = parser.parse_args(argv)
    allocator.keep_freed_memory()
    settings = load(args.settings)
    finetune(settings, args.model, args.task_dir, args.fold, args.seed, args.out, args.cache_dir, args.steps_from)


if __name__ == "__main__":
    run(main)
