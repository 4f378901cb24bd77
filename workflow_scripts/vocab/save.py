"""Turn a trained ``tokenizers`` pipeline into a transformers tokenizer directory for its model family."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer, processors
from transformers import AutoTokenizer, BertTokenizer, RobertaTokenizer, TokenizersBackend

from .settings import SPECIAL_TOKENS, VocabSettings


def _post_processor(tok: Tokenizer, settings: VocabSettings) -> processors.PostProcessor:
    if settings.family == "bert":
        cls, sep = "[CLS]", "[SEP]"
        pair = f"{cls} $A:0 {sep}:0 $B:1 {sep}:1"
    else:
        cls, sep = "<s>", "</s>"
        pair = f"{cls} $A:0 {sep}:0 {sep}:0 $B:0 {sep}:0"
    if settings.family == "roberta" and settings.algorithm == "bpe":
        # Keeps RoBERTa's offset trimming around the byte-level space marker.
        return processors.RobertaProcessing((sep, tok.token_to_id(sep)), (cls, tok.token_to_id(cls)))
    return processors.TemplateProcessing(
        single=f"{cls} $A:0 {sep}:0",
        pair=pair,
        special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))],
    )


def wrap(tok: Tokenizer, settings: VocabSettings) -> TokenizersBackend:
    """The transformers tokenizer for ``tok``: BERT's or RoBERTa's own class where it rebuilds the very
    same pipeline on reload (cased/uncased WordPiece for bert, cased byte-level BPE for roberta), the
    generic fast tokenizer reading tokenizer.json verbatim for everything else."""
    specials = dict(SPECIAL_TOKENS[settings.family])
    common = {"model_max_length": settings.model_max_length, **specials}
    if settings.algorithm == "wordpiece" and settings.family == "bert":
        return BertTokenizer(
            vocab=tok.get_vocab(),
            do_lower_case=settings.lowercase,
            strip_accents=None if settings.lowercase else False,
            **common,
        )
    if settings.algorithm == "bpe" and settings.family == "roberta" and not settings.lowercase:
        model = json.loads(tok.to_str())["model"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        return RobertaTokenizer(vocab=model["vocab"], merges=merges, **common)
    tok.post_processor = _post_processor(tok, settings)
    return TokenizersBackend(tokenizer_object=tok, **common)


def check_reload(directory: Path, tok: Tokenizer, settings: VocabSettings, texts: Sequence[str]) -> None:
    """Reload ``directory`` with AutoTokenizer and make sure it segments ``texts`` exactly like ``tok``
    and carries the family's special tokens; a difference is a bug here, not a user error."""
    loaded = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    for attr, token in SPECIAL_TOKENS[settings.family].items():
        if getattr(loaded, attr) != token or loaded.convert_tokens_to_ids(token) != tok.token_to_id(token):
            raise AssertionError(f"{directory}: {attr} reloads as {getattr(loaded, attr)!r}, expected {token!r}")
    for text in texts:
        want = tok.encode(text, add_special_tokens=False).ids
        got = loaded(text, add_special_tokens=False)["input_ids"]
        if got != want:
            raise AssertionError(f"{directory}: reloaded tokenizer segments {text[:80]!r} differently")
