"""Wiring shared by the pretraining and distillation CLIs: data, digest, run, export, provenance."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import provenance
from ..atomic import write_json
from ..errors import PipelineError
from ..pack.index import read_index
from ..pack.keys import tokenizer_digest
from ..pack.local import index_paths, pack_corpora
from ..typed import to_dict
from . import checkpoint as ckpt
from .data import PackedCorpus
from .dist import Dist
from .loop import SIGTERM_EXIT, Job, Preempted, train
from .settings import PretrainSettings

log = logging.getLogger(__name__)

KEY_FILE = "key.json"
# settings that may change between a run and its resumption
OPERATIONAL = {
    "checkpoint_every",
    "keep_checkpoints",
    "keep_steps",
    "log_every",
    "num_threads",
    "export_checkpoints",
    "compile",
    "prefetch",
    "peak_tflops",
}
# Settings added after runs had started: at these values they stay out of the key, so such a run resumes.
LATER_DEFAULTS = {"packing": "concatenate"}


@dataclass
class Data:
    phases: list[PackedCorpus]
    heldout: PackedCorpus
    dirs: list[Path]  # every packed shard directory read
    keys: dict[str, str]  # content key of each, by seq~L/corpus/shard~N


def add_data_arguments(ap: argparse.ArgumentParser) -> None:
    """A training CLI's data: ``--packed`` indexes or, run by hand, ``--corpus`` directories; see open_data."""
    data = ap.add_mutually_exclusive_group(required=True)
    data.add_argument(
        "--packed",
        nargs="+",
        action="extend",
        help="index.json of packed corpora (the pack stage), one per corpus and sequence length",
    )
    data.add_argument(
        "--corpus",
        nargs="+",
        action="extend",
        help="corpus directories (shard~N.parquet), packed under <out>/packed first (runs by hand)",
    )


def open_data(args: argparse.Namespace, settings: PretrainSettings, tokenizer, out: Path, dist: Dist) -> Data:
    """The packed blocks a training CLI's ``--packed`` (or ``--corpus``) arguments name."""
    indexes = packed_indexes(args.packed, args.corpus, settings, tokenizer, out, dist)
    return Data(*load_phases(settings, indexes, tokenizer))


def data_inputs(args: argparse.Namespace, data: Data) -> dict[str, list[str]]:
    """Provenance inputs: the packed shards (whose records lead to the corpus shards)."""
    return {"packed": [str(d) for d in data.dirs], **({"corpus": list(args.corpus)} if args.corpus else {})}


def packed_indexes(
    packed: list[str] | None, corpus: list[str] | None, settings: PretrainSettings, tokenizer, out: Path, dist: Dist
) -> list[Path]:
    """The packed-data indexes to open: given by the pack stage (``--packed``), or, for a run by
    hand on corpus directories (``--corpus``), packed under ``<out>/packed`` by process 0."""
    if packed:
        return [Path(p) for p in packed]
    seq_lens = [p.seq_len for p in settings.phases]
    if dist.main:
        pack_corpora(corpus or [], tokenizer, seq_lens, settings.heldout_fraction, out / "packed", settings.packing)
    dist.barrier()
    return index_paths(corpus or [], seq_lens, settings.heldout_fraction, out / "packed", settings.packing)


def load_phases(
    settings: PretrainSettings, indexes: list[Path], tokenizer
) -> tuple[list[PackedCorpus], PackedCorpus, list[Path], dict[str, str]]:
    """Train blocks of every phase, held-out blocks of the last, the shard directories, and
    the content key of every shard used (``seq~L/corpus/shard~N``)."""
    wanted = tokenizer_digest(tokenizer)
    opened = []
    for path in indexes:
        index, dirs = read_index(path)
        if index["tokenizer"] != wanted:
            raise PipelineError(
                f"{path}: packed with a different tokenizer than the model's; pack with the model's tokenizer"
            )
        if index["heldout_fraction"] != settings.heldout_fraction:
            raise PipelineError(
                f"{path}: packed with heldout_fraction {index['heldout_fraction']}, "
                f"the settings say {settings.heldout_fraction}"
            )
        if index.get("packing", "concatenate") != settings.packing:
            raise PipelineError(
                f"{path}: packed with packing {index.get('packing', 'concatenate')}, the settings say "
                f"{settings.packing}; pack with --packing {settings.packing}"
            )
        opened.append((index, dirs))
    phases: list[PackedCorpus] = []
    used: dict[Path, None] = {}
    keys: dict[str, str] = {}
    for i, phase in enumerate(settings.phases):
        chosen = [(ix, dirs) for ix, dirs in opened if ix["seq_len"] == phase.seq_len]
        if not chosen:
            have = sorted({ix["seq_len"] for ix, _ in opened})
            raise PipelineError(
                f"phases[{i}].seq_len {phase.seq_len}: no packed data of that length (given: {have}); pack it"
            )
        dirs = [d for _, ds in chosen for d in ds]
        for ix, ds in chosen:
            for shard, d in zip(ix["shards"], ds, strict=True):
                keys[f"seq~{phase.seq_len}/{ix['corpus']}/{d.name}"] = shard["key"]
        train = PackedCorpus(dirs, "train")
        if len(train) == 0:
            raise PipelineError(
                f"{', '.join(str(p) for p in indexes)}: no training block of {phase.seq_len} tokens; "
                "add text or lower phases[].seq_len"
            )
        phases.append(train)
        used.update(dict.fromkeys(dirs))
    return phases, PackedCorpus(dirs, "heldout"), list(used), keys


def _keyed(values: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the settings added later that keep their defaults."""
    return {k: v for k, v in values.items() if k not in later or later[k] != v}


def training_key(
    settings: PretrainSettings, data: dict[str, str], model: torch.nn.Module, extra: dict[str, Any]
) -> dict:
    """Everything a checkpoint depends on, by content: recipe, packed shards' keys, model config."""
    recipe = _keyed({k: v for k, v in to_dict(settings).items() if k not in OPERATIONAL}, LATER_DEFAULTS)
    # a phase key left unset (the model's value) stays out, so checkpoints made before it existed still resume
    recipe["phases"] = [{k: v for k, v in phase.items() if v is not None} for phase in recipe["phases"]]
    return {"recipe": recipe, "data": data, "config": model.config.to_dict(), **extra}


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


def resume_digest(state_dir: Path, key: dict, dist: Dist) -> str:
    """The digest checkpoints carry. Its parts are kept in ``training_state/key.json``, so a
    rerun from changed inputs names what changed instead of only refusing."""
    flat = _flatten(key)
    value = hashlib.sha256(json.dumps(flat, sort_keys=True).encode()).hexdigest()
    path = state_dir / KEY_FILE
    if path.is_file() and (state_dir / ckpt.LATEST).is_file():
        old = json.loads(path.read_text())
        changed = sorted(k for k in set(old) | set(flat) if old.get(k) != flat.get(k))
        if changed:
            shown = "; ".join(f"{k}: {old.get(k, 'absent')} -> {flat.get(k, 'absent')}" for k in changed[:5])
            more = f" (and {len(changed) - 5} more)" if len(changed) > 5 else ""
            raise PipelineError(
                f"{state_dir}: the checkpoint was made from different inputs: {shown}{more}; "
                f"restore them, or delete {state_dir} to start again from scratch"
            )
    elif dist.main:
        write_json(path, flat)
    return value


def training_job(settings: PretrainSettings, data: Data, key: dict, out: Path, dist: Dist, **parts: Any) -> Job:
    """A job training on ``data``, its state in ``out/training_state`` and resumable under ``key``;
    ``parts``: the objective, model, tokenizer and the rest of what differs between objectives."""
    state = out / "training_state"
    return Job(
        settings=settings,
        phases=data.phases,
        heldout=data.heldout,
        state_dir=state,
        digest=resume_digest(state, key, dist),
        dist=dist,
        **parts,
    )


def execute(job: Job, out: Path, **kwargs: Any) -> dict[str, Any] | None:
    """Train and export under the training state's lock, so no second trainer starts before the export is done."""
    with ckpt.locked(job.state_dir, job.dist.main):
        return _execute(job, out, **kwargs)


def _execute(
    job: Job,
    out: Path,
    *,
    step: str,
    inputs: dict[str, Any],
    params: dict[str, Any],
    started: str,
    extra: dict[str, Any] | None = None,
    stop_after: int | None = None,
) -> dict[str, Any] | None:
    """Train, then (process 0) export the model, log and evaluation, and write provenance last."""
    try:
        result = train(job, stop_after=stop_after)
    except Preempted as exc:
        log.warning("%s", exc)
        sys.exit(SIGTERM_EXIT)
    if result is None or not job.dist.main:
        return result
    written = ckpt.export_model(job.model, job.tokenizer, out)
    for name, companion in job.companions.items():
        written += ckpt.export_model(companion, job.tokenizer, out / name)
    log_src = job.state_dir / "train_log.jsonl"
    if log_src.is_file():
        tmp = out / ".train_log.jsonl.tmp"
        shutil.copyfile(log_src, tmp)
        tmp.replace(out / "train_log.jsonl")
    write_json(out / "eval.json", result)
    # every file a consumer loads (weights, config, tokenizer, special tokens), so the audit sees any change
    provenance.record(
        out,
        step=step,
        inputs=inputs,
        params=params,
        outputs=written + [out / "train_log.jsonl", out / "eval.json"],
        seed=job.settings.seed,
        started=started,
        extra={"result": result, **(extra or {})},
    )
    log.info("wrote %s (held-out MLM loss %s)", out, result.get("heldout_loss"))
    return result
