"""The study configuration (config.yaml) as typed dataclasses, with cross-reference checks.

Each stage owns the dataclass of its own settings block (corpus cleaning, vocabulary
training, pretraining, distillation, fine-tuning, task specs); this module composes them
into one study, resolves tasks against the registry and checks that every name a model
refers to (vocabulary, corpus, teacher, initial checkpoint) exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..corpus.settings import CleanSettings
from ..distill.settings import DistillSettings
from ..download.hub import HubCheckpoint
from ..errors import PipelineError
from ..finetune.settings import FinetuneSettings
from ..numerics import Numerics
from ..pretrain.settings import PretrainSettings
from ..report.cost_settings import SpeedSettings
from ..report.settings import Aggregation, Published, Significance
from ..tasks import registry
from ..tasks.spec import TaskSpec
from ..typed import help_field as _help
from ..typed import parse
from ..vocab.settings import VocabSettings
from . import finetune_levels
from .branches import Branch, check_branches, inherit_recipes
from .model_checks import check_cycles, check_model, check_names
from .pretrain_seeds import expand_pretrain_seeds
from .resources import JobResources, check_rules
from .secrets import refuse_url_credentials
from .seeds import check_seeds, parse_seeds
from .shell_words import check_plain_names


@dataclass
class CorpusSource:
    url: str = _help(
        "Base URL (http, https or file) of the published files, or a directory relative to the run directory."
    )
    release: int | None = _help("PubMed: two-digit release year as in pubmed{YY}n{NNNN}.xml.gz.", default=None)
    baseline: list[int] | None = _help(
        "PubMed: first and last baseline file number, e.g. [1, 1274] (files under baseline/).",
        default=None,
    )
    updates: list[int] | None = _help(
        "PubMed: first and last update file number (files under updatefiles/), applied in order.",
        default=None,
    )
    files: list[str] = _help(
        "PMC and MIMIC-III: file names under url (tarballs of JATS .nxml, NOTEEVENTS.csv.gz).",
        default_factory=list,
    )
    checksums: Literal["md5", "sha256sums", "none"] = _help(
        "md5: an OpenSSL-format <file>.md5 beside each file (NLM); sha256sums: a SHA256SUMS.txt at url "
        "(PhysioNet); none: unverified (recorded in provenance).",
        default="md5",
    )
    access: str | None = _help(
        "For credentialed data: how to obtain access; shown when the download is refused.", default=None
    )
    layout: Literal["files", "cloud"] = _help(
        "PMC: files = the tarballs or .nxml listed in files (a local directory or the legacy bulk "
        "packages); cloud = the per-article PMC Article Datasets layout (inventory, then metadata JSON "
        "and JATS XML per article version).",
        default="files",
    )
    filelist: str | None = _help(
        "PMC files layout: name of each package's file list (licence and retraction per article) under "
        "url, {package} standing for the package name without .tar.gz, e.g. '{package}.filelist.csv'.",
        default=None,
    )
    inventory: str | None = _help(
        "PMC cloud layout: URL or path (relative to the run directory) of the listing of the bucket's "
        "metadata/PMC<id>.<version>.json objects: an S3 inventory CSV (optionally gzipped) or the output "
        "of `aws s3 ls --no-sign-request --recursive s3://pmc-oa-opendata/metadata/`.",
        default=None,
    )
    batches: int = _help(
        "PMC cloud layout: download-and-parse jobs the articles are spread over (by a stable hash of the "
        "PMCID, so an article stays in its batch when the inventory grows).",
        default=1,
    )

    def validate(self, where: str) -> None:
        if self.batches < 1:
            raise PipelineError(f"{where}.batches: must be at least 1, got {self.batches}")
        if self.filelist is not None and "{package}" not in self.filelist:
            raise PipelineError(f"{where}.filelist: must contain {{package}}, e.g. '{{package}}.filelist.csv'")
        for key in ("baseline", "updates"):
            value = getattr(self, key)
            if value is not None and (len(value) != 2 or value[0] > value[1] or value[0] < 1):
                raise PipelineError(f"{where}.{key}: expected [first, last] file numbers, got {value}")


@dataclass
class CorpusEntry:
    type: Literal["pubmed", "pmc", "mimic", "text"] = _help(
        "Which parser reads the raw files; text: one plain-text file, a document per paragraph "
        "(a general-domain reference sample)."
    )
    source: CorpusSource = _help("Where the raw files are published.")
    shards: int = _help("Number of Parquet shards the clean corpus is written as.", default=8)
    restricted: bool = _help(
        "Credentialed data (MIMIC-III): everything derived from it is marked restricted.", default=False
    )
    clean: CleanSettings = _help(
        "Parsing, filtering, deduplication and decontamination.", default_factory=CleanSettings
    )
    decontaminate: list[str] = _help(
        "Tasks whose test sets are removed from this corpus by n-gram overlap (names in tasks).",
        default_factory=list,
    )

    def validate(self, where: str) -> None:
        if self.shards < 1:
            raise PipelineError(f"{where}.shards: must be at least 1, got {self.shards}")
        if self.type == "pubmed" and (self.source.release is None or self.source.baseline is None):
            raise PipelineError(f"{where}.source: a pubmed corpus needs release and baseline")
        if self.source.layout == "cloud" or self.source.filelist is not None:
            if self.type != "pmc":
                raise PipelineError(f"{where}.source: layout cloud and filelist apply to pmc corpora only")
        if self.source.layout == "cloud":
            if not self.source.inventory:
                raise PipelineError(f"{where}.source.inventory: the cloud layout needs the article inventory")
        elif self.type != "pubmed" and not self.source.files:
            raise PipelineError(f"{where}.source.files: list the files to download")
        if self.type == "text" and len(self.source.files) != 1:
            raise PipelineError(f"{where}.source.files: a text corpus is one file")


@dataclass
class VocabEntry:
    corpora: list[str] = _help("Corpora (names in corpora) the vocabulary is learned from.")
    train: VocabSettings = _help("Algorithm, size and sample.", default_factory=VocabSettings)
    compare: list[str] = _help(
        "Other tokenizers shown beside this one in the diagnostics: vocabulary names or model names.",
        default_factory=list,
    )


@dataclass
class ModelEntry:
    kind: Literal["pretrain", "distill", "external", "control", "baseline"] = _help(
        "pretrain: masked-LM pretraining here; distill: a student distilled here; external: an existing checkpoint; "
        "control: init's architecture and vocabulary with random weights (fine-tuning without pretraining); "
        "baseline: no model, each task's no-training prediction (majority class, all-O tags, mean score)."
    )
    display: str | None = _help("Label in tables (defaults to the model name).", default=None)
    published: Published = _help(
        "Published counterpart per reference table, e.g. {lewis: ours-base+PM+Voc, blurb: PubMedBERT-uncased}.",
        default_factory=Published,
    )
    vocab: str | None = _help("pretrain from scratch: the vocabulary (name in vocabularies).", default=None)
    init: str | None = _help(
        "pretrain: continue from this checkpoint (a model name here, or a local directory; a public checkpoint is "
        "an external model pinned to its commit), "
        "keeping its vocabulary. distill: initialise the student from it. control: the model whose "
        "architecture and vocabulary it copies.",
        default=None,
    )
    corpora: list[str] = _help("pretrain and distill: training corpora (names in corpora).", default_factory=list)
    teacher: str | None = _help("distill: the teacher (a model name here).", default=None)
    checkpoint: str | HubCheckpoint | None = _help(
        "external: a local directory, or a hub checkpoint pinned to a commit, {hub: owner/name, revision: <commit>}, "
        "fetched once into results/raw/models/<name>.",
        default=None,
    )
    pretrain: PretrainSettings = _help("pretrain: architecture and recipe.", default_factory=PretrainSettings)
    branch: Branch | None = _help(
        "pretrain: a decay branch of init, resuming its training at this step; its pretrain keys override init's.",
        default=None,
    )
    distill: DistillSettings = _help("distill: student shape, losses and recipe.", default_factory=DistillSettings)
    pretrain_seeds: list[int] | None = _help(
        "pretrain and distill: train the model once per seed (its recipe's seed), each its own cached model "
        "<name>/pseed~<seed> with its own fine-tuning runs; the tables aggregate over pretraining x fine-tuning "
        "seeds and the findings test pairs with the multi-bootstrap (Sellam et al. 2022). A model trained from "
        "one (init, teacher) gets the same seeds.",
        default=None,
    )
    restricted: bool = _help("external: trained on credentialed data (marks its results restricted).", default=False)
    evaluate: bool = _help("Fine-tune this model on the tasks.", default=True)
    finetune: dict[str, Any] = _help(
        "Fine-tuning keys of this model on every task (e.g. a large model's lr or layer-wise lr decay): "
        "above the top-level finetune and the task registry's, below tasks.<name>.finetune.",
        default_factory=dict,
    )
    finetune_per_task: dict[str, dict[str, Any]] = _help(
        "Fine-tuning keys of this model on one task, by task name (a per-model, per-task grid as the "
        "papers tuned, e.g. {chemprot: {lr: 1.0e-5}}): the most specific level, above every other.",
        default_factory=dict,
    )
    resources: JobResources | None = _help(
        "pretrain and distill: this model's job size, replacing resources.pretrain or resources.distill.",
        default=None,
    )


FINETUNE_PRECEDENCE = (
    "Which value a fine-tuning run uses, key by key, the first level that sets it: "
    "models.<model>.finetune_per_task.<task>, tasks.<task>.finetune, models.<model>.finetune, the top-level "
    "finetune, the task registry's finetune, the built-in default (docs/settings-precedence.md); lr replaces "
    "the grid.lr of the levels after it (batch_size likewise); a written key that no run uses is refused; "
    "max_length null is the task's max_length. Resolved once when the workflow plans the runs: "
    "results/configs/finetune/<model>/<task>.yaml holds each value once."
)


@dataclass
class Reference:
    lewis: str = _help(
        "CSV of Lewis et al. test medians (task x model).", default="resources/reference/lewis2020_test_medians.csv"
    )
    blurb: str = _help(
        "CSV of Gu et al. BLURB test results (task x model).",
        default="resources/reference/gu2021_blurb_table6_test.csv",
    )


@dataclass
class Study:
    corpora: dict[str, CorpusEntry] = _help("Pretraining corpora by name.", default_factory=dict)
    vocabularies: dict[str, VocabEntry] = _help("Vocabularies learned here, by name.", default_factory=dict)
    models: dict[str, ModelEntry] = _help("Every model of the study, by name.", default_factory=dict)
    tasks: dict[str, dict[str, Any]] = _help(
        "Benchmark tasks by name: a registry task with overrides, or a complete task spec; "
        "plus seeds (list, replacing the top-level seeds) and finetune (see its description).",
        default_factory=dict,
    )
    seeds: list[int] = _help(
        "Fine-tuning seeds of every task that lists none.", default_factory=lambda: [1, 2, 3, 4, 5]
    )
    finetune: FinetuneSettings = _help(
        "Fine-tuning settings of every model on every task. " + FINETUNE_PRECEDENCE,
        default_factory=FinetuneSettings,
    )
    aggregation: Aggregation = _help("How runs become table cells.", default_factory=Aggregation)
    report: Significance = _help(
        "How the findings test paired differences: the level (alpha) and the correction for many comparisons.",
        default_factory=Significance,
    )
    reference: Reference = _help("Published results shown beside ours.", default_factory=Reference)
    inference_speed: SpeedSettings = _help(
        "How each model's inference throughput is measured for the cost table (bf16 on a GPU, fp32 on the CPU).",
        default_factory=SpeedSettings,
    )
    numerics: Numerics = _help(
        "Which kernels every job's arithmetic runs on: reproducible across CPUs or GPUs where asked.",
        default_factory=Numerics,
    )
    resources: dict[str, JobResources] = _help(
        "What one job of each rule needs (threads, mem_mb, runtime, gpu, nodes), by rule name; "
        "a rule not listed gets one thread, 4 GB, 60 minutes and no GPU.",
        default_factory=dict,
    )

    # Filled by load_study: tasks resolved against the registry; each model with several
    # pretraining seeds -> the models of its seeds, and each of those -> (model, seed).
    resolved_tasks: dict[str, ResolvedTask] = field(default_factory=dict, init=False, repr=False)
    # The top-level finetune keys the config writes (``finetune`` holds them with the defaults filled in).
    finetune_written: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    seeded: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)
    seed_of: dict[str, tuple[str, int]] = field(default_factory=dict, init=False, repr=False)

    def model_and_seed(self, name: str) -> tuple[str, int | None]:
        """The model a trained model belongs to, and its pretraining seed (None: a model trained once)."""
        return self.seed_of.get(name, (name, None))

    def job_resources(self, rule: str, model: str | None = None) -> JobResources:
        """A job's size: the model's own resources, else the rule's, else the defaults."""
        own = self.models[model].resources if model is not None else None
        return own or self.resources.get(rule) or JobResources()

    def run_finetune(self, model: str, task: str) -> FinetuneSettings:
        """The fine-tuning settings of ``model`` on ``task`` (finetune_levels: the most specific level wins)."""
        rt, m = self.resolved_tasks[task], self.models[model]
        if not m.finetune and not m.finetune_per_task.get(task):
            return rt.finetune
        levels = finetune_levels.run_levels(self, model, task)
        return finetune_levels.resolve(levels, rt.spec.max_length, f"finetune of {model} on {task}")


@dataclass
class ResolvedTask:
    spec: TaskSpec
    seeds: list[int]
    finetune: FinetuneSettings
    overrides: dict[str, Any] = field(default_factory=dict)  # tasks.<name>.finetune as written

    @property
    def folds(self) -> list[int]:
        return list(range(self.spec.folds)) if self.spec.folds else [0]


_TASK_KEYS = ("seeds", "finetune")


def resolve_task(name: str, entry: dict[str, Any], study: Study) -> ResolvedTask:
    where = f"tasks.{name}"
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise PipelineError(f"{where}: expected a mapping, got {entry!r}")
    overrides = {k: v for k, v in entry.items() if k not in _TASK_KEYS}
    spec = registry.resolve(name, overrides)
    check_plain_names(f"{where}.source.files", spec.source.files)
    seeds = parse_seeds(entry.get("seeds", study.seeds), where)
    check_seeds(f"{where}.seeds", seeds)
    if spec.selection_fold is not None and not 0 <= spec.selection_fold < max(spec.folds, 1):
        raise PipelineError(f"{where}.selection_fold: {spec.selection_fold} is outside 0..{spec.folds - 1}")
    overrides = entry.get("finetune") or {}
    if not isinstance(overrides, dict):
        raise PipelineError(f"{where}.finetune: expected a mapping of finetune keys, got {overrides!r}")
    levels = finetune_levels.task_levels(study.finetune_written, name, spec, overrides)
    finetune = finetune_levels.resolve(levels, spec.max_length, f"{where}.finetune")
    return ResolvedTask(spec=spec, seeds=seeds, finetune=finetune, overrides=overrides)


def load_study(config: dict[str, Any]) -> Study:
    """Parse and cross-check a config mapping; raise PipelineError naming the first bad key."""
    refuse_url_credentials(config)
    study = parse(Study, inherit_recipes(config), "")
    check_path_names(study)
    study.finetune_written = dict(config.get("finetune") or {})
    check_seeds("seeds", study.seeds)
    check_branches(study)
    for name, m in study.models.items():
        check_model(name, m, study)
    check_cycles(study)
    expand_pretrain_seeds(study)
    check_rules("resources", study.resources)
    for name, v in study.vocabularies.items():
        check_names(f"vocabularies.{name}.corpora", v.corpora, study.corpora, "corpus")
        if not v.corpora:
            raise PipelineError(f"vocabularies.{name}.corpora: list the corpora it is learned from")
        for i, other in enumerate(v.compare):
            if other not in study.vocabularies and other not in study.models:
                raise PipelineError(
                    f"vocabularies.{name}.compare[{i}]: {other!r} is neither a vocabulary nor a model of this config"
                )
    for name, entry in study.tasks.items():
        study.resolved_tasks[name] = resolve_task(name, entry, study)
    finetune_levels.check_written(study)
    for model in study.models:
        for task in study.resolved_tasks:
            study.run_finetune(model, task)  # a combination of levels no run can take fails here, not in a job
    for name, c in study.corpora.items():
        check_names(f"corpora.{name}.decontaminate", c.decontaminate, study.tasks, "task")
    for i, pair in enumerate(study.aggregation.compare):
        check_names(f"aggregation.compare[{i}]", pair, {**study.models, **study.seeded}, "model")
    return study


def check_path_names(study: Study) -> None:
    """The names that become folders and files under results/ (see shell_words.py)."""
    for section in ("corpora", "vocabularies", "models", "tasks"):
        check_plain_names(section, getattr(study, section))
    for name, c in study.corpora.items():
        check_plain_names(f"corpora.{name}.source.files", c.source.files)
