"""Settings of the report steps (``results/configs/report.yaml``, written by the workflow).

The file's top-level keys are the fields of :class:`ReportSettings`; the tables, the plots
and the provenance audit all read the same file.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import PipelineError
from ..paths import PRETRAIN_SEED
from ..tasks.metrics import check_task_metric, metric_for, metric_names
from ..tasks.spec import BENCHMARKS
from ..typed import load_settings

Correction = Literal["holm", "bonferroni", "none"]
TaskType = Literal["ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli"]
Statistic = Literal["median", "mean"]
# The view of a task in neither benchmark (a study's own task).
OTHER = "other"


@dataclass
class Published:
    lewis: str | None = field(
        default=None,
        metadata={
            "help": "Column name of the published counterpart in the Lewis et al. reference CSV "
            "(e.g. 'ours-base+PM'), or null."
        },
    )
    blurb: str | None = field(
        default=None,
        metadata={
            "help": "Column name of the published counterpart in the Gu et al. BLURB reference CSV "
            "(e.g. 'PubMedBERT-uncased'), or null."
        },
    )


@dataclass
class ReportModel:
    display: str = field(metadata={"help": "Name shown in table headers and plot legends."})
    kind: Literal["pretrain", "distill", "external", "control", "baseline"] = field(
        default="pretrain",
        metadata={
            "help": "How the model was obtained: pretrained here, distilled here, an external checkpoint, "
            "a no-pretraining control or the no-training baseline."
        },
    )
    published: Published = field(
        default_factory=Published, metadata={"help": "Published counterparts whose numbers are shown beside ours."}
    )
    restricted: bool = field(
        default=False,
        metadata={"help": "The model was trained on credentialed data (MIMIC-III...): its results are marked."},
    )
    pretrain_seeds: list[int] = field(
        default_factory=list,
        metadata={"help": "Its pretraining seeds, where it was trained once per seed (empty: trained once)."},
    )

    @property
    def is_control(self) -> bool:
        """Controls are shown beside the real models, marked, and never averaged with them."""
        return self.kind in ("control", "baseline")


@dataclass
class TaskReference:
    lewis: str | None = field(
        default=None, metadata={"help": "Row name of this task in the Lewis et al. reference CSV (e.g. 'BC5CDR-C.')."}
    )
    blurb: str | None = field(
        default=None, metadata={"help": "Row name of this task in the Gu et al. BLURB reference CSV (e.g. 'BC5-chem')."}
    )


@dataclass
class TaskEntry:
    display: str = field(metadata={"help": "Name shown in table rows and plot titles."})
    type: TaskType = field(
        metadata={"help": "Task type; decides the Lewis group (Seq. Lab./Classif.) and the BLURB type."}
    )
    metric: str | dict[str, str] = field(
        metadata={"help": "The task's metric name, or one per benchmark; its metrics.json files must name the same."}
    )
    domain: Literal["pubmed", "clinical"] = field(
        default="pubmed", metadata={"help": "Text domain; decides the PubMed/Clinical group."}
    )
    benchmarks: list[str] = field(
        default_factory=list,
        metadata={"help": "Benchmarks the task counts towards: lewis (group means) and/or blurb (BLURB score)."},
    )
    reference: TaskReference = field(
        default_factory=TaskReference, metadata={"help": "Names of this task in the published reference tables."}
    )
    folds: int = field(
        default=0,
        metadata={
            "help": "Cross-validation folds: 0 for a fixed train/dev/test split (run as fold 0), 10 for GAD and EU-ADR."
        },
    )
    selection_fold: int | None = field(
        default=None,
        metadata={"help": "Fold used only to choose hyper-parameters; excluded from the statistic (Lewis et al.)."},
    )
    restricted: bool = field(
        default=False,
        metadata={"help": "Credentialed data (i2b2, MedNLI, MIMIC-III): results are marked in the tables."},
    )
    seeds: list[int] = field(
        default_factory=list,
        metadata={"help": "Fine-tuning seeds configured for the task; fewer runs than seeds x folds are flagged."},
    )

    def validate(self, where: str) -> None:
        unknown = [b for b in self.benchmarks if b not in BENCHMARKS]
        if unknown:
            raise PipelineError(
                f"{where}.benchmarks: unknown benchmark {unknown[0]!r} (allowed: {', '.join(BENCHMARKS)})"
            )
        if self.folds < 0:
            raise PipelineError(f"{where}.folds: must be 0 (fixed split) or a number of folds, got {self.folds}")
        if self.selection_fold is not None and self.folds < 2:
            raise PipelineError(
                f"{where}.selection_fold: a task without cross-validation folds has none to spare; set it to null"
            )
        if self.selection_fold is not None and not 0 <= self.selection_fold < self.folds:
            raise PipelineError(f"{where}.selection_fold: {self.selection_fold} is not a fold in 0..{self.folds - 1}")
        if len(set(self.seeds)) != len(self.seeds):
            raise PipelineError(f"{where}.seeds: seeds repeat ({self.seeds})")
        check_task_metric(self.metric, self.benchmarks, f"{where}.metric")

    def views(self) -> list[str]:
        """The benchmarks whose tables show the task, each with its own metric and statistic
        (``other`` for a task in neither)."""
        return list(self.benchmarks) or [OTHER]

    def metric_of(self, view: str) -> str:
        return metric_for(self.metric, view)

    def metric_names(self) -> list[str]:
        return metric_names(self.metric)

    def run_folds(self) -> list[int]:
        """Fold numbers of the runs: 0..folds-1, or just 0 for a fixed split."""
        return list(range(max(self.folds, 1)))

    def evaluation_folds(self) -> list[int]:
        """The folds whose test scores enter the statistic."""
        return [f for f in self.run_folds() if f != self.selection_fold]

    def expected_runs(self) -> int:
        return len(self.seeds) * len(self.evaluation_folds())


@dataclass
class RunEntry:
    model: str = field(metadata={"help": "Model name (a key of models)."})
    task: str = field(metadata={"help": "Task name (a key of tasks)."})
    seed: int = field(metadata={"help": "Fine-tuning seed."})
    metrics: str = field(metadata={"help": "Path of the run's metrics.json, relative to the run directory."})
    fold: int = field(default=0, metadata={"help": "Cross-validation fold (0 for tasks without folds)."})
    pretrain_seed: int | None = field(
        default=None, metadata={"help": "Pretraining seed of the model's run, where it has several."}
    )

    @property
    def trained_model(self) -> str:
        """The name the run's model was trained and fine-tuned under (one seed's, where seeded)."""
        if self.pretrain_seed is None:
            return self.model
        return PRETRAIN_SEED.format(model=self.model, seed=self.pretrain_seed)


@dataclass
class Statistics:
    """Statistic over seeds of each benchmark's tables (folded tasks: per fold, then over folds)."""

    lewis: Statistic = field(default="median", metadata={"help": "Lewis et al. tables and group means (medians)."})
    blurb: Statistic = field(default="mean", metadata={"help": "BLURB table and score (Gu et al. report means)."})
    other: Statistic = field(default="median", metadata={"help": "Tasks in neither benchmark."})


@dataclass
class Aggregation:
    statistic: Statistic | Statistics = field(
        default_factory=Statistics,
        metadata={"help": "Statistic over seeds per benchmark ({lewis: median, blurb: mean}), or one for all."},
    )
    bootstrap_samples: int = field(
        default=1000, metadata={"help": "Bootstrap resamples for the confidence interval of each cell."}
    )
    confidence: float = field(
        default=0.95,
        metadata={"help": "Confidence level of each cell's bootstrap interval and of each paired test's interval."},
    )
    bootstrap_seed: int = field(
        default=0, metadata={"help": "Seed of the bootstrap resampling, so tables are reproducible."}
    )
    compare: list[list[str]] = field(
        default_factory=list,
        metadata={"help": "Pairs [MODEL_A, MODEL_B] compared per task on runs with the same seed and fold."},
    )

    def statistic_of(self, view: str) -> Statistic:
        return self.statistic if isinstance(self.statistic, str) else getattr(self.statistic, view)

    def validate(self, where: str) -> None:
        if self.bootstrap_samples < 1:
            raise PipelineError(f"{where}.bootstrap_samples: must be at least 1, got {self.bootstrap_samples}")
        if not 0.0 < self.confidence < 1.0:
            raise PipelineError(f"{where}.confidence: must be between 0 and 1, got {self.confidence}")
        for i, pair in enumerate(self.compare):
            if len(pair) != 2 or pair[0] == pair[1]:
                raise PipelineError(f"{where}.compare[{i}]: expected two different model names, got {pair}")


@dataclass
class Significance:
    alpha: float = field(
        default=0.05,
        metadata={"help": "Level below which a corrected p calls a paired difference beyond seed noise."},
    )
    correction: Correction = field(
        default="holm",
        metadata={
            "help": "Correction for many comparisons over each family of claims (the model pairs on the "
            "stated group means; the models above the no-training baseline): holm (step-down), "
            "bonferroni or none."
        },
    )

    def validate(self, where: str) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise PipelineError(f"{where}.alpha: must be between 0 and 1, got {self.alpha}")


@dataclass
class ReferencePaths:
    lewis: str | None = field(
        default=None, metadata={"help": "CSV of Lewis et al. (2020) Table 7 test medians (tasks x models)."}
    )
    blurb: str | None = field(
        default=None, metadata={"help": "CSV of Gu et al. (2021) Table 6 BLURB test results (tasks x models)."}
    )


@dataclass
class ReportSettings:
    models: dict[str, ReportModel] = field(
        default_factory=dict, metadata={"help": "Models shown in the tables, by name."}
    )
    tasks: dict[str, TaskEntry] = field(
        default_factory=dict, metadata={"help": "Tasks shown in the tables, by name, in display order."}
    )
    runs: list[RunEntry] = field(
        default_factory=list, metadata={"help": "Every fine-tuning run expected behind the tables."}
    )
    aggregation: Aggregation = field(
        default_factory=Aggregation, metadata={"help": "How runs are summarised and compared."}
    )
    significance: Significance = field(
        default_factory=Significance, metadata={"help": "Level and correction of the paired tests."}
    )
    reference: ReferencePaths = field(default_factory=ReferencePaths, metadata={"help": "Published reference tables."})
    pretrain_logs: dict[str, str] = field(
        default_factory=dict,
        metadata={"help": "Pretraining train_log.jsonl per model, for the loss, schedule, speed and memory plots."},
    )
    vocab_diagnostics: dict[str, str] = field(
        default_factory=dict, metadata={"help": "diagnostics.json per vocabulary, for the fragmentation plot."}
    )
    restricted_models: list[str] = field(
        default_factory=list, metadata={"help": "Models derived from credentialed data (marked in plot legends)."}
    )
    restricted_vocabularies: list[str] = field(
        default_factory=list, metadata={"help": "Vocabularies learned from credentialed data (marked in plot legends)."}
    )

    def validate(self, where: str) -> None:
        prefix = f"{where}." if where else ""
        for i, run in enumerate(self.runs):
            key = f"{prefix}runs[{i}]"
            if run.model not in self.models:
                raise PipelineError(f"{key}.model: {run.model!r} is not in models ({', '.join(self.models)})")
            if run.task not in self.tasks:
                raise PipelineError(f"{key}.task: {run.task!r} is not in tasks ({', '.join(self.tasks)})")
            task = self.tasks[run.task]
            if run.fold not in task.run_folds():
                raise PipelineError(f"{key}.fold: {run.fold} is not a fold of {run.task} (0..{task.run_folds()[-1]})")
        seen: dict[tuple, int] = {}
        for i, run in enumerate(self.runs):
            ident = (run.model, run.pretrain_seed, run.task, run.fold, run.seed)
            if ident in seen:
                raise PipelineError(
                    f"{prefix}runs[{i}]: same model, pretraining seed, task, fold and seed as runs[{seen[ident]}]"
                )
            seen[ident] = i
        for i, (a, b) in enumerate(self.aggregation.compare):
            for name in (a, b):
                if name not in self.models:
                    raise PipelineError(f"{prefix}aggregation.compare[{i}]: {name!r} is not in models")


def load(path: str | Path) -> ReportSettings:
    return load_settings(path, ReportSettings)


def parse_args(step: str, description: str, argv) -> argparse.Namespace:
    """The command line shared by the tables and plots steps."""
    parser = argparse.ArgumentParser(prog=f"python -m workflow_scripts.report.{step}", description=description)
    parser.add_argument("--settings", required=True, help="report settings YAML (results/configs/report.yaml)")
    parser.add_argument("--out", required=True, help="output directory (results/tables)")
    parser.add_argument("--root", default=".", help="run directory the paths in the settings are relative to")
    return parser.parse_args(argv)
