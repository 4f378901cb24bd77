"""Loading a tokenizer directory, and the special-token ids masked-language modelling needs.

Shared by the pack stage (which wraps blocks in ``[CLS] ... [SEP]``) and the training
stages (which mask, pad and size embeddings by the same ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .checkpoint_integrity import verify_checkpoint
from .errors import PipelineError


def load_tokenizer(path: str, where: str):
    from transformers import AutoTokenizer

    p = Path(path)
    if not p.is_dir():
        raise PipelineError(f"{path}: tokenizer directory not found; build the vocabulary first (results/vocab/<name>)")
    verify_checkpoint(p, where, weights=False)
    try:
        return AutoTokenizer.from_pretrained(str(p))
    except Exception as exc:  # transformers raises many types for unreadable tokenizer dirs
        raise PipelineError(f"{path}: not a tokenizer directory AutoTokenizer can load ({exc})") from exc


def looks_local(ref: str) -> bool:
    return Path(ref).exists() or ref.startswith((".", "/", "~")) or ref.startswith("results/") or ref.count("/") > 1


@dataclass(frozen=True)
class Specials:
    cls: int
    sep: int
    mask: int
    pad: int
    vocab_size: int
    # every special token but the unknown one, which stands for text: never selected for masking
    never_masked: tuple[int, ...] = ()

    @classmethod
    def of(cls, tokenizer, where: str) -> Specials:
        ids = {
            "cls": tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id,
            "sep": tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id,
            "mask": tokenizer.mask_token_id,
            "pad": tokenizer.pad_token_id,
        }
        missing = [k for k, v in ids.items() if v is None]
        if missing:
            raise PipelineError(
                f"{where}: the tokenizer has no {'/'.join(missing)} token; masked-language modelling needs "
                "[CLS]/[SEP]/[MASK]/[PAD] (or <s>/</s>/<mask>/<pad>)"
            )
        return cls(vocab_size=len(tokenizer), never_masked=special_ids(tokenizer), **ids)


def special_ids(tokenizer) -> tuple[int, ...]:
    """Ids of the tokenizer's special tokens (named ones and added ones marked special), but the unknown token's."""
    ids = set(tokenizer.all_special_ids)
    ids.update(i for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items() if token.special)
    ids.discard(tokenizer.unk_token_id)
    return tuple(sorted(ids))
