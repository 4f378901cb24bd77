"""A fine-tuning run's data: the fold's splits read, the checkpoint's tokenizer loaded (the
checkpoint verified first), and the features encoded, or read from the cache where an identical
encoding was built before."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checkpoint_integrity import verify_checkpoint
from ..errors import PipelineError
from . import cache, chunks, data, heads, tagging
from .features import MARKERS, Encoding, encode, needs_markers
from .settings import FinetuneRunSettings

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


@dataclass
class RunData:
    """A run's splits, read once and encoded once: the model reads the features, the metrics
    read the splits."""

    splits: dict[str, list[dict[str, Any]]]
    labels: list[str]
    tokenizer: Any
    enc: Encoding
    features: dict[str, Any]


def read_data(
    settings: FinetuneRunSettings, model_path: str, task_dir: Path, fold: int, cache_dir: Path | None
) -> RunData:
    """The fold's splits, the checkpoint's tokenizer (verified first) and the features, from the
    cache where an identical encoding was built before."""
    task = settings.task
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
    return RunData(splits, labels, tokenizer, enc, features)
