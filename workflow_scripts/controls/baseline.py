"""The no-training baseline of one task run: what a rule read off the training labels scores.

    python -m workflow_scripts.controls.baseline --settings S.yaml --task-dir results/tasks/T \
        --fold F --seed N --out results/finetune/BASELINE/T/fold~F/seed~N

Per task type: sequence labelling tags every word with the negative label (all ``O``);
single-label tasks (relations, QA, inference) predict the training set's most frequent label;
multi-label document classification predicts its most frequent label set; similarity
predicts the mean training score (a constant, so Pearson 0). Writes metrics.json and
predictions.jsonl in the fine-tuning runs' format, then provenance.json, so the tables read
it like any run. The seed changes nothing; it names the run the baseline is paired with.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import provenance
from ..atomic import write_json, write_jsonl
from ..cli import run
from ..errors import PipelineError
from ..finetune import data
from ..tasks.metrics import compute_all, metric_names, run_header, test_section
from .settings import BaselineSettings, load_baseline

RULES = {
    "ner": "every word tagged {negative}",
    "pico": "every word tagged {negative}",
    "similarity": "the mean training score",
    "doc_classification": "the most frequent training label set",
}
MAJORITY = "the most frequent training label"
log = logging.getLogger(__name__)


def rule_of(task_type: str, negative: str) -> str:
    return RULES.get(task_type, MAJORITY).format(negative=negative)


def predict(task_type: str, train_gold: list[Any], test_rows: list[dict[str, Any]], negative: str) -> list[Any]:
    """The baseline's prediction for every test row, from the training gold values only."""
    if not train_gold:
        raise PipelineError("train.jsonl: no training examples to read a baseline from")
    if task_type in ("ner", "pico"):
        return [[negative] * len(r["tokens"]) for r in test_rows]
    if task_type == "similarity":
        mean = sum(train_gold) / len(train_gold)
        return [mean] * len(test_rows)
    if task_type == "doc_classification":
        counts = Counter(tuple(sorted(labels)) for labels in train_gold)
        return [list(counts.most_common(1)[0][0]) for _ in test_rows]
    label = Counter(train_gold).most_common(1)[0][0]
    return [label] * len(test_rows)


def baseline(settings: BaselineSettings, task_dir: Path, fold: int, seed: int, out: Path) -> dict[str, Any]:
    started_at, started = provenance.now(), time.perf_counter()
    task = settings.task
    splits = data.read_splits(data.split_dir(task_dir, task, fold), task.type)
    labels = data.label_set(task, splits)
    negative = task.negative_label or "O"
    preds = predict(task.type, data.gold(splits["train"], task.type), splits["test"], negative)
    test_gold = data.gold(splits["test"], task.type)
    names = metric_names(task.metric)
    test = test_section(
        compute_all(
            names,
            test_gold,
            preds,
            labels=labels or None,
            negative_label=task.negative_label,
            ids=[r["id"] for r in splits["test"]],
        )
    )
    metrics = {
        **run_header(settings, fold, seed, names, test),
        "baseline": rule_of(task.type, negative),
        "examples": {k: len(v) for k, v in splits.items()},
        "runtime_s": round(time.perf_counter() - started, 3),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / provenance.FILENAME).unlink(missing_ok=True)
    write_jsonl(
        out / "predictions.jsonl",
        [{"id": r["id"], "gold": g, "pred": p} for r, g, p in zip(splits["test"], test_gold, preds, strict=True)],
    )
    write_json(out / "metrics.json", metrics)
    provenance.record(
        out,
        step="controls.baseline",
        inputs={"task": str(task_dir)},
        params={"baseline": metrics["baseline"], "metric": task.metric},
        seed=seed,
        restricted=metrics["restricted"],
        started=started_at,
        outputs=[out / "metrics.json", out / "predictions.jsonl"],
    )
    return metrics


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.controls.baseline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--settings", required=True, type=Path, help="YAML with the model and task keys")
    parser.add_argument("--task-dir", required=True, type=Path, help="results/tasks/{task}")
    parser.add_argument("--fold", type=int, default=0, help="cross-validation fold (0 for unfolded tasks)")
    parser.add_argument("--seed", type=int, required=True, help="seed of the runs this one is paired with")
    parser.add_argument("--out", required=True, type=Path, help="results/finetune/{model}/{task}/fold~{f}/seed~{s}")
    args = parser.parse_args(argv)
    metrics = baseline(load_baseline(args.settings), args.task_dir, args.fold, args.seed, args.out)
    log.info(
        "%s fold %d: %s scores %.4f on test", metrics["task"], args.fold, metrics["baseline"], metrics["test"]["score"]
    )


if __name__ == "__main__":
    run(main)
