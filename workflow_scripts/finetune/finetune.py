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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import allocator, optim, provenance
from ..atomic import write_json, write_jsonl, write_yaml
from ..cli import run
from ..errors import PipelineError
from ..tasks.metrics import compute, compute_all, metric_names, run_header, test_section
from ..typed import to_dict
from . import chunks, data, heads, stability
from .decode import decode, label_scores
from .device import prepare
from .execution import Execution, execution_for
from .features import Encoding
from .loop import Fit, Schedule, fit, predict, selection_value
from .run_data import RunData, read_data
from .settings import FinetuneRunSettings, FinetuneSettings, FinetuneTask, GridSettings, load

log = logging.getLogger(__name__)


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


@dataclass
class Scorer:
    """Scores a model on one split of the run's data, as the task's metric defines it."""

    run: RunData
    task: FinetuneTask
    device: Any
    execution: Execution

    @property
    def names(self) -> list[str]:
        return metric_names(self.task.metric)

    @property
    def pad_id(self) -> int:
        pad = self.run.tokenizer.pad_token_id
        return pad if pad is not None else 0

    def outputs(self, model, split: str, cfg: FinetuneSettings) -> list[torch.Tensor]:
        return predict(model, self.run.features[split], self.task.type, self.pad_id, cfg, self.device, self.execution)

    def scoring(self, split: str) -> dict[str, Any]:
        return {
            "labels": self.run.labels or None,
            "negative_label": self.task.negative_label,
            "ids": [r["id"] for r in self.run.splits[split]],
        }

    def dev(self, model, cfg: FinetuneSettings) -> dict[str, float]:
        """The selection metric on dev, the figure checkpoint and grid selection maximise."""
        rows = self.run.splits["dev"]
        preds = decode(
            self.outputs(model, "dev", cfg), chunks.leads(self.run.features["dev"]), rows, self.run.enc, cfg.threshold
        )
        return compute(self.names[0], data.gold(rows, self.task.type), preds, **self.scoring("dev"))

    def test(self, model, trial: FinetuneSettings) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Every metric of the task on test, and the predictions (id, gold, pred) they were computed from."""
        rows = self.run.splits["test"]
        outputs = self.outputs(model, "test", trial)
        leads = chunks.leads(self.run.features["test"])
        preds = decode(outputs, leads, rows, self.run.enc, trial.threshold)
        gold = data.gold(rows, self.task.type)
        scores = label_scores(outputs, leads, len(gold)) if self.task.type == "doc_classification" else None
        test = test_section(compute_all(self.names, gold, preds, scores=scores, **self.scoring("test")))
        predictions = [{"id": r["id"], "gold": g, "pred": p} for r, g, p in zip(rows, gold, preds, strict=True)]
        return test, predictions


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
    run_data = read_data(settings, model_path, task_dir, fold, cache_dir)
    device, cfg = prepare(cfg, task.type)
    enc = run_data.enc
    scorer = Scorer(
        run_data, task, device, execution_for(cfg, device, enc.chunks.length if enc.chunks else enc.max_length)
    )
    log.info(
        "%s on %s fold %d seed %d: %s examples, %s features, device %s",
        model_path,
        task.name,
        fold,
        seed,
        {k: len(v) for k, v in run_data.splits.items()},
        {k: len(v) for k, v in run_data.features.items()},
        device,
    )
    trial, result, chosen_model, grid = choose(
        candidates(cfg),
        lambda m: scorer.dev(m, cfg),
        run_data.features["train"],
        enc,
        model_path,
        task.type,
        seed,
        scorer.pad_id,
        len(run_data.tokenizer),
        device,
        schedule,
        scorer.execution,
    )
    # The test split is read by nothing above: it is scored here once, with the chosen state.
    test, predictions = scorer.test(chosen_model, trial)
    log.info(
        "%s fold %d seed %d: dev %.4f at step %d, test %.4f",
        task.name,
        fold,
        seed,
        result.dev.get("score", float("nan")),
        result.best_step,
        test["score"],
    )
    selection = "steps fixed by " + str(steps_from) if steps_from else "best dev score"
    runtime_s = round(time.perf_counter() - started, 3)
    metrics = run_record(settings, fold, seed, scorer, cfg, (trial, result, grid), test, runtime_s, selection)
    inputs: dict[str, Any] = {"model": model_path, "task": str(task_dir)}
    if steps_from is not None:
        inputs["selection"] = str(steps_from)
    write_run(out, to_dict(dataclasses.replace(settings, finetune=cfg)), metrics, predictions, inputs, seed, started_at)
    return metrics


def run_record(
    settings: FinetuneRunSettings,
    fold: int,
    seed: int,
    scorer: Scorer,
    cfg: FinetuneSettings,
    chosen: tuple[FinetuneSettings, Fit, list[dict[str, Any]]],
    test: dict[str, Any],
    runtime_s: float,
    selection: str,
) -> dict[str, Any]:
    """metrics.json: the test scores, what training chose (``choose``'s trial, fit and grid) and
    how it went, what the run read and how it ran."""
    trial, result, grid = chosen
    enc, run_data = scorer.run.enc, scorer.run
    return {
        **run_header(settings, fold, seed, scorer.names, test),
        "dev": result.dev,
        "best_step": result.best_step,
        "steps": result.steps,
        "schedule_steps": result.schedule_steps,
        "runtime_s": runtime_s,
        "hyper": {"lr": trial.lr, "batch_size": trial.batch_size},
        "selection": selection,
        "grid": grid,
        "history": result.history,
        "examples": {k: len(v) for k, v in run_data.splits.items()},
        "features": {k: len(v) for k, v in run_data.features.items()},
        "encoding": {"max_length": enc.max_length, "scheme": enc.scheme, **enc.stats, **chunks.record(cfg, enc.chunks)},
        "train_examples_per_s": round(result.train_examples / max(result.train_seconds, 1e-9), 2),
        "device": str(scorer.device),
        "precision": trial.precision,
        "execution": scorer.execution.record(),
        "stability": {k: getattr(trial, k) for k in stability.KEYS},
    }


def write_run(
    out: Path,
    resolved: dict[str, Any],
    metrics: dict[str, Any],
    predictions: list[dict[str, Any]],
    inputs: dict[str, Any],
    seed: int,
    started_at: str,
) -> None:
    """predictions.jsonl, config.yaml and metrics.json, then provenance.json, which marks the run finished."""
    out.mkdir(parents=True, exist_ok=True)
    # provenance.json marks a finished run: an old one must not vouch for half-replaced files
    (out / provenance.FILENAME).unlink(missing_ok=True)
    write_jsonl(out / "predictions.jsonl", predictions)
    write_yaml(out / "config.yaml", resolved)
    write_json(out / "metrics.json", metrics)
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
