"""From a Study to the workflow's jobs: file names, paths, command arguments and the
resolved settings each step receives (built in config/step_settings.py). Pure functions; rules/common.smk wraps them.

Everything here runs while Snakemake builds the DAG, for thousands of jobs, so it only
computes names and never touches the file system.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths
from ..download.hub import HubFile, wanted
from ..pack.keys import packing_prefix
from .restricted import restricted as restricted_marks
from .study import Study


@dataclass(frozen=True)
class RawFile:
    name: str
    url: str
    checksum_args: str


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts])


def _checksum_args(src: Any, url: str) -> str:
    if src.checksums == "md5":
        return f"--md5-url {shlex.quote(url + '.md5')}"
    if src.checksums == "sha256sums":
        return f"--sha256-url {shlex.quote(_join(src.url, 'SHA256SUMS.txt'))}"
    return ""


def corpus_files(study: Study, corpus: str) -> list[RawFile]:
    """The raw inputs of a corpus's parse jobs, in the order they must be applied (PubMed:
    baseline, then updates). PMC in the cloud layout: one batch directory per parse job,
    filled by its own download job (url empty)."""
    entry = study.corpora[corpus]
    src = entry.source
    if src.layout == "cloud":
        return [RawFile(name=f"batch~{k}", url="", checksum_args="") for k in range(src.batches)]
    located: list[tuple[str, str]] = []
    if entry.type == "pubmed":
        ranges = [("baseline", src.baseline), ("updatefiles", src.updates)]
        for folder, span in ranges:
            if span is None:
                continue
            for n in range(span[0], span[1] + 1):
                name = f"pubmed{src.release:02d}n{n:04d}.xml.gz"
                located.append((name, _join(src.url, folder, name)))
    else:
        located = [(name, _join(src.url, name)) for name in src.files]
    return [RawFile(name=name, url=url, checksum_args=_checksum_args(src, url)) for name, url in located]


def filelist_name(study: Study, corpus: str, name: str) -> str | None:
    """The PMC file list of one parse input (a package's published list, or the list the cloud
    batch download writes), None where there is none."""
    src = study.corpora[corpus].source
    if src.layout == "cloud":
        return f"{name}.filelist.csv"
    if src.filelist is None:
        return None
    package = name[: -len(".tar.gz")] if name.endswith(".tar.gz") else name.rsplit(".", 1)[0]
    return src.filelist.replace("{package}", package)


def corpus_downloads(study: Study, corpus: str) -> list[RawFile]:
    """Files fetched one by one from the source: the parse inputs and their file lists, or
    (cloud layout) the article inventory."""
    src = study.corpora[corpus].source
    if src.layout == "cloud":
        inventory = src.inventory or ""
        return [RawFile(name=inventory.rsplit("/", 1)[-1], url=inventory, checksum_args="")]
    out = []
    for f in corpus_files(study, corpus):
        out.append(f)
        listed = filelist_name(study, corpus, f.name)
        if listed is not None:
            url = _join(src.url, listed)
            out.append(RawFile(name=listed, url=url, checksum_args=_checksum_args(src, url)))
    return out


def raw_path(corpus: str, name: str) -> str:
    return paths.RAW.format(corpus=corpus, file=name)


def parsed_path(corpus: str, name: str) -> str:
    return paths.PARSED.format(corpus=corpus, file=name)


def parse_extra_inputs(study: Study, corpus: str, name: str) -> dict[str, str]:
    """Inputs of a parse job besides its raw file: the PMC file list, where there is one."""
    listed = filelist_name(study, corpus, name)
    return {} if listed is None else {"filelist": raw_path(corpus, listed)}


def fetch_table(study: Study, corpus: str) -> dict[str, str]:
    """Download arguments of every file fetched one by one, by file name."""
    restricted = " --restricted" if corpus in restricted_marks(study).corpora else ""
    return {
        f.name: f"--url {shlex.quote(f.url)} {f.checksum_args}{restricted}".strip()
        for f in corpus_downloads(study, corpus)
    }


def cloud_batch_args(study: Study, corpus: str, batch: int) -> str:
    """Arguments of one PMC cloud batch download (the inventory comes as an input)."""
    src = study.corpora[corpus].source
    return f"--url {shlex.quote(src.url)} --batch {batch} --batches {src.batches}"


def cloud_corpora(study: Study) -> list[str]:
    return [c for c, e in study.corpora.items() if e.source.layout == "cloud"]


def corpus_dir(corpus: str) -> str:
    return paths.CORPUS.format(corpus=corpus)


def vocab_dir(vocab: str) -> str:
    return paths.VOCAB.format(vocab=vocab)


def task_dir(task: str) -> str:
    return paths.TASK.format(task=task)


def model_dir(study: Study, name: str) -> str:
    """Where a model's checkpoint is: built here, or the external directory / hub id."""
    m = study.models.get(name)
    if m is None:
        return name  # a local directory or hub id given directly as init
    if m.kind == "external":
        if isinstance(m.checkpoint, str):
            return m.checkpoint
        return paths.HUB_MODEL.format(model=name)
    return paths.MODEL.format(kind=m.kind, model=name)


MODEL_FILES = ("model.safetensors", "config.json", "provenance.json")


def hub_args(study: Study, name: str) -> str:
    """The download job's arguments for a hub checkpoint (no --revision while unpinned)."""
    c = study.models[name].checkpoint
    revision = f" --revision {c.revision}" if c.revision else ""
    return f"--hub {shlex.quote(c.hub)}{revision} --key models.{name}.checkpoint"


def model_marker(study: Study, name: str) -> list[str]:
    """The declared outputs of a model built here: a consumer depending on all of them makes a
    plain rerun rebuild the model when any is deleted (Snakemake reruns a job only for a missing
    output some job needs)."""
    m = study.models.get(name)
    if m is None or m.kind == "baseline":
        return []
    if m.kind == "external" and isinstance(m.checkpoint, str):
        return local_checkpoint_files(m.checkpoint)
    if m.kind == "external":  # a hub snapshot: its download job writes the record last
        return [f"{model_dir(study, name)}/provenance.json"]
    return [f"{model_dir(study, name)}/{f}" for f in MODEL_FILES]


def local_checkpoint_files(folder: str) -> list[str]:
    """What transformers loads from a local checkpoint folder (configuration, tokenizer, weights):
    as inputs of its consumers, an edited file reruns them; the folder is read in place."""
    root = Path(folder)
    if not root.is_dir():
        return []
    files = [HubFile(p.name, 0, None, None) for p in sorted(root.iterdir()) if p.is_file()]
    return [str(root / f.path) for f in wanted(files)]


def tokenizer_marker(study: Study, model: str) -> list[str]:
    m = study.models[model]
    if m.kind == "pretrain" and m.vocab is not None:
        return [f"{vocab_dir(m.vocab)}/tokenizer_config.json"]
    return []


def model_source_args(study: Study, model: str) -> str:
    """`--tokenizer VOCAB` (from scratch) or `--init CHECKPOINT` (continual / student init)."""
    m = study.models[model]
    if m.kind == "pretrain" and m.vocab is not None:
        return f"--tokenizer {vocab_dir(m.vocab)}"
    if m.init is not None:
        return f"--init {shlex.quote(model_dir(study, m.init))}"
    return ""


def model_tokenizer(study: Study, model: str) -> tuple[str, str]:
    """(key, location) of the tokenizer a model trains with: its vocabulary (``vocab~NAME``), else
    its init's (continual pretraining) or its teacher's (distillation), down to a vocabulary or an
    external checkpoint (``model~NAME``)."""
    m = study.models.get(model)
    if m is None or m.kind == "external":
        return "model~" + re.sub(r"[^\w.-]", "_", model), model_dir(study, model)
    if m.kind == "pretrain" and m.vocab is not None:
        return f"vocab~{m.vocab}", vocab_dir(m.vocab)
    parent = m.teacher if m.kind == "distill" else m.init
    return model_tokenizer(study, parent)


def pack_tokenizers(study: Study) -> dict[str, str]:
    """Every tokenizer some model packs its corpora with: key -> location."""
    return dict(model_tokenizer(study, name) for name, m in study.models.items() if m.kind in ("pretrain", "distill"))


def pack_tokenizer_marker(study: Study, key: str) -> list[str]:
    if key.startswith("vocab~"):
        return [f"{vocab_dir(key[len('vocab~') :])}/tokenizer_config.json"]
    external = [name for name, m in study.models.items() if m.kind == "external"]
    return [f for name in external if model_tokenizer(study, name)[0] == key for f in model_marker(study, name)]


def corpus_shards(study: Study, corpus: str) -> int:
    entry = study.corpora[corpus]
    return 1 if entry.type == "text" else entry.shards


def packed_dir(tokenizer: str, corpus: str, seq_len: int, heldout_fraction: float, packing: str = "concatenate") -> str:
    """One corpus packed at one length: ``shard~N/`` per corpus shard, and their ``index.json``."""
    # the fraction as Python writes a float back, so that the path reads back the same value
    heldout = repr(float(heldout_fraction))
    return paths.PACKED.format(
        tokenizer=tokenizer, corpus=corpus, packing=packing_prefix(packing), seq_len=seq_len, heldout=heldout
    )


def packing_args(prefix: str) -> str:
    """The pack command's ``--packing`` for a packed path's ``{packing}`` segment (none for concatenate)."""
    return f" --packing {prefix.removeprefix('packing~').rstrip('/')}" if prefix else ""


def model_packed(study: Study, model: str) -> list[str]:
    """The packed-data indexes a pretraining or distillation job opens: its corpora at each phase's length."""
    m = study.models[model]
    if m.kind not in ("pretrain", "distill"):
        return []
    settings = getattr(m, m.kind)
    tokenizer = model_tokenizer(study, model)[0]
    lengths = dict.fromkeys(p.seq_len for p in settings.phases)
    return [
        f"{packed_dir(tokenizer, c, n, settings.heldout_fraction, settings.packing)}/index.json"
        for n in lengths
        for c in m.corpora
    ]


def corpus_args(corpora: list[str]) -> str:
    return " ".join(f"--corpus {corpus_dir(c)}" for c in corpora)


def baseline_models(study: Study) -> list[str]:
    """Models whose runs are computed without training (one per task x fold x seed all the same)."""
    return [name for name, m in study.models.items() if m.kind == "baseline" and m.evaluate]


def evaluated_models(study: Study) -> list[str]:
    return [name for name, m in study.models.items() if m.evaluate]


def finetune_runs(study: Study) -> Iterator[tuple[str, str, int, int]]:
    """Every (model, task, fold, seed) fine-tuning job."""
    for model in evaluated_models(study):
        for task, rt in study.resolved_tasks.items():
            for fold in rt.folds:
                for seed in rt.seeds:
                    yield model, task, fold, seed


def run_dir(model: str, task: str, fold: int | str, seed: int | str) -> str:
    return paths.RUN.format(model=model, task=task, fold=fold, seed=seed)


def run_metrics(study: Study, *, task: str | None = None, model: str | None = None) -> list[str]:
    """Metrics files of the fine-tuning runs, optionally of one task or one model only."""
    return [
        f"{run_dir(m, t, f, s)}/metrics.json"
        for m, t, f, s in finetune_runs(study)
        if task in (None, t) and model in (None, m)
    ]


def target_rule(kind: str, name: str) -> str:
    """Name of a named target rule: `task_ncbi_disease`, `model_pubmedbert_ours`."""
    return kind + "_" + re.sub(r"\W", "_", name)


def task_report_settings(settings: dict[str, Any], task: str) -> dict[str, Any]:
    """Report settings (see report_settings) narrowed to one task's table and runs."""
    return {
        **settings,
        "tasks": {task: settings["tasks"][task]},
        "runs": [r for r in settings["runs"] if r["task"] == task],
    }


def task_files(study: Study, task: str) -> dict[str, Any]:
    return study.resolved_tasks[task].spec.source.files


def task_source_url(study: Study, task: str, name: str) -> str | None:
    """Where a task's source file comes from: its URL or local path."""
    spec = study.resolved_tasks[task].spec
    src = spec.source.files[name]
    # local_dir holds what cannot be downloaded; a file with a URL (BLURB's index tarball beside
    # registration-only BioASQ files) still comes from it.
    if src.url:
        return src.url
    return _join(spec.source.local_dir, name) if spec.source.local_dir else None


def corpus_source_urls(study: Study, corpus: str) -> dict[str, str]:
    """URL or local path of each file of a corpus fetched one by one, by file name."""
    return {f.name: f.url for f in corpus_downloads(study, corpus)}


def task_fetch_args(study: Study, task: str, name: str) -> str:
    spec = study.resolved_tasks[task].spec
    src = spec.source.files[name]
    key = f"tasks.{task}.source"
    args = []
    url = task_source_url(study, task, name)
    if url:
        args.append(f"--url {shlex.quote(url)}")
    if src.directory:
        args.append("--directory")
    elif src.sha256:
        args.append(f"--sha256 {src.sha256}")
    else:
        args.append(f"--sha256-key {shlex.quote(f'{key}.files.{name}.sha256')}")
    if spec.source.access:
        args.append(f"--access {shlex.quote(spec.source.access)}")
        args.append(f"--local-dir-key {key}.local_dir")
    if task in restricted_marks(study).tasks:
        args.append("--restricted")
    return " ".join(args)


def task_directories(study: Study) -> list[str]:
    """``<task>/<name>`` of every task source entry that is a folder (their own download rule)."""
    return sorted(
        f"{task}/{name}"
        for task, rt in study.resolved_tasks.items()
        for name, f in rt.spec.source.files.items()
        if f.directory
    )
