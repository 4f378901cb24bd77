"""The task contract shared by the task registry, task preparation and fine-tuning."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import PipelineError

TASK_TYPES = ("ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli")
SPLITS = ("train", "dev", "test")
BENCHMARKS = ("lewis", "blurb")


@dataclass
class SourceFile:
    url: str | None = field(
        default=None,
        metadata={"help": "http(s)/file URL, or a path relative to the run directory (the demo)"},
    )
    sha256: str | None = field(
        default=None,
        metadata={"help": "expected sha256 of the file; null = unknown (recorded on download)"},
    )
    directory: bool = field(
        default=False,
        metadata={"help": "the entry is a folder of the user's local copy (credentialed releases), copied whole"},
    )


@dataclass
class TaskSource:
    files: dict[str, SourceFile | None] = field(
        default_factory=dict,
        metadata={
            "help": "file name under results/raw/tasks/{task}/ -> where it comes from "
            "(null in the config drops a file of the registry entry)"
        },
    )
    access: str | None = field(
        default=None,
        metadata={"help": "credentialed data: how to obtain access (shown in errors)"},
    )
    local_dir: str | None = field(
        default=None,
        metadata={"help": "credentialed data: the user's local copy; files are taken from there"},
    )


@dataclass
class TaskSize:
    """What planning knows of a task's data without reading it: sizing runs per card and the
    Slurm time limit (resources.finetune.runs_per_gpu and runtime: auto)."""

    train: int | None = field(
        default=None, metadata={"help": "training examples (NER: sentences; per fold); null = expected_counts' train"}
    )
    dev: int | None = field(default=None, metadata={"help": "dev examples; null = expected_counts' dev"})
    mean_tokens: float | None = field(
        default=None,
        metadata={"help": "mean sub-tokens per training example, special tokens included; null = unknown"},
    )
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "sub-tokens of the longest example of any split, special tokens included; null = unknown"},
    )
    source: str = field(default="", metadata={"help": "where the figures come from"})

    def validate(self, where: str) -> None:
        for key in ("train", "dev", "mean_tokens", "max_tokens"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise PipelineError(f"{where}.{key}: must be > 0 or null, got {getattr(self, key)}")
        if self.mean_tokens is not None and self.max_tokens is not None and self.mean_tokens > self.max_tokens:
            raise PipelineError(f"{where}.mean_tokens: {self.mean_tokens} is above max_tokens {self.max_tokens}")


@dataclass
class TaskSpec:
    name: str = field(metadata={"help": "task name (lowercase-with-hyphens)"})
    display: str = field(metadata={"help": "column/row label of the task in our tables"})
    type: Literal["ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli"] = field(
        metadata={"help": "task type; decides the normalised schema and the model head"}
    )
    domain: Literal["pubmed", "clinical"] = field(
        metadata={"help": "text domain, used for the PubMed/Clinical group means"}
    )
    format: str = field(metadata={"help": "reader name in workflow_scripts/tasks/readers.py (canonical format)"})
    source: TaskSource = field(metadata={"help": "where the raw files come from"})
    splits: dict[str, str] = field(
        metadata={"help": 'train/dev/test -> file in the raw dir (may contain "{fold}" or point into an archive)'}
    )
    metric: str | dict[str, str] = field(
        metadata={
            "help": "metric name known to workflow_scripts.tasks.metrics.compute, or one per "
            "benchmark ({lewis: example_f1, blurb: label_micro_f1}); dev selection maximises the "
            "first benchmark's (lewis, then blurb)"
        }
    )
    benchmarks: list[str] = field(
        default_factory=list, metadata={"help": 'benchmarks using the task: "lewis", "blurb"'}
    )
    reference: dict[str, str] = field(
        default_factory=dict,
        metadata={"help": "task name in the published reference CSVs, per benchmark"},
    )
    folds: int = field(
        default=0,
        metadata={"help": "0 = fixed train/dev/test; k = k cross-validation folds (GAD, EU-ADR: 10)"},
    )
    selection_fold: int | None = field(
        default=None,
        metadata={"help": "fold used to choose early-stopping settings; excluded from reported results"},
    )
    labels: list[str] = field(
        default_factory=list,
        metadata={"help": "label set (tags for ner/pico, classes otherwise); empty for similarity"},
    )
    negative_label: str | None = field(
        default=None, metadata={"help": "the 'no relation' class excluded from micro-F1"}
    )
    max_length: int = field(default=128, metadata={"help": "maximum sequence length in tokens"})
    expected_counts: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "split -> number of examples (NER also <split>_mentions -> entity mentions); "
            "see expected_counts_checked for what a mismatch does"
        },
    )
    expected_counts_checked: bool = field(
        default=False,
        metadata={
            "help": "true: expected_counts were counted in the real release files, so a mismatch "
            "stops the run; false: they come from a paper's table, so a mismatch warns, the real "
            "counts go into the data card and provenance, and the run goes on"
        },
    )
    finetune: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "help": "built-in fine-tuning settings of this task (keys of the top-level finetune); every "
            "finetune level config.yaml writes overrides them (docs/settings-precedence.md)"
        },
    )
    restricted: bool = field(default=False, metadata={"help": "credentialed data (i2b2, MedNLI)"})
    size: TaskSize | None = field(
        default=None,
        metadata={
            "help": "examples and sub-tokens per example, as counted in the release (README, runs per "
            "card); null = unknown: a run is sized at max_length and gets the fallback time limit"
        },
    )

    def validate(self, where: str) -> None:
        dropped = sorted(name for name, f in self.source.files.items() if f is None)
        if dropped:
            raise PipelineError(
                f"{where}.source.files.{dropped[0]}: null drops a file of the task registry's entry, "
                "but the entry has no such file; remove the key"
            )
        missing = [s for s in SPLITS if s not in self.splits]
        if missing:
            raise PipelineError(f"{where}.splits: missing split {missing[0]!r} (need train, dev, test)")
        unknown = sorted(set(self.splits) - set(SPLITS))
        if unknown:
            raise PipelineError(f"{where}.splits: unknown split {unknown[0]!r} (allowed: train, dev, test)")
        if self.folds < 0:
            raise PipelineError(f"{where}.folds: must be 0 or a positive number of folds")
        if self.folds and not any("{fold" in p for p in self.splits.values()):
            raise PipelineError(
                f'{where}.splits: a task with folds needs "{{fold}}" (0-based) or "{{fold1}}" '
                "(1-based) in its split paths"
            )
        if self.selection_fold is not None and not 0 <= self.selection_fold < self.folds:
            raise PipelineError(
                f"{where}.selection_fold: {self.selection_fold} is not one of the task's {self.folds} folds"
            )
        if self.negative_label is not None and self.labels and self.negative_label not in self.labels:
            raise PipelineError(f"{where}.negative_label: {self.negative_label!r} is not in labels")
        allowed = set(SPLITS) | {f"{s}_mentions" for s in SPLITS}
        bad = sorted(set(self.expected_counts) - allowed)
        if bad:
            raise PipelineError(
                f"{where}.expected_counts: unknown key {bad[0]!r} (a split, or <split>_mentions for "
                "entity mentions of an NER task)"
            )
        if self.expected_counts_checked and not self.expected_counts:
            raise PipelineError(f"{where}.expected_counts_checked: true, but the task has no expected_counts")
        if any(k.endswith("_mentions") for k in self.expected_counts) and self.type != "ner":
            raise PipelineError(f"{where}.expected_counts: <split>_mentions applies to NER tasks only")
        bad = sorted(set(self.benchmarks) - set(BENCHMARKS))
        if bad:
            raise PipelineError(f"{where}.benchmarks: unknown benchmark {bad[0]!r} ({', '.join(BENCHMARKS)})")
        if self.max_length < 8:
            raise PipelineError(f"{where}.max_length: {self.max_length} is too short (at least 8)")


@dataclass
class PrepareTaskSettings:
    """What task preparation reads: the source, the splits and the label set (``task`` key of the settings file)."""

    name: str = field(metadata={"help": "task name (results/tasks/<name>)"})
    type: Literal["ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli"] = field(
        metadata={"help": "task type; decides the normalised schema"}
    )
    format: str = field(metadata={"help": "reader name (canonical format)"})
    source: TaskSource = field(metadata={"help": "where the raw files come from"})
    splits: dict[str, str] = field(metadata={"help": "train/dev/test -> file in the raw dir"})
    folds: int = field(default=0, metadata={"help": "0 = fixed train/dev/test; k = k cross-validation folds"})
    labels: list[str] = field(default_factory=list, metadata={"help": "label set"})
    negative_label: str | None = field(default=None, metadata={"help": "the 'no relation' class"})
    expected_counts: dict[str, int] = field(default_factory=dict, metadata={"help": "split -> number of examples"})
    expected_counts_checked: bool = field(default=False, metadata={"help": "a count mismatch stops the run"})
    restricted: bool = field(default=False, metadata={"help": "credentialed data (i2b2, MedNLI)"})
