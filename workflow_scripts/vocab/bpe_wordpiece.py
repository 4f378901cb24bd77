"""Byte-level BPE and WordPiece learned with the ``tokenizers`` library.

The WordPiece trainer numbers the ``##x`` continuation characters in hash-map order,
and ties between equally frequent merges are broken by those numbers, so two runs on
the same text can learn different vocabularies. We therefore choose the alphabet
ourselves (most frequent characters, ties by character) and hand its ``##`` forms to
the trainer up front, which fixes every number and makes the result repeatable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from .settings import VocabSettings, special_tokens

PREFIX = "##"


def build_bpe(settings: VocabSettings) -> tuple[Tokenizer, trainers.Trainer]:
    """RoBERTa's byte-level BPE: every byte is in the alphabet, so nothing is ever unknown."""
    tok = Tokenizer(models.BPE())
    if settings.lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=settings.size,
        min_frequency=settings.min_frequency,
        special_tokens=special_tokens(settings.family),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return tok, trainer


def _unk(settings: VocabSettings) -> str:
    return special_tokens(settings.family)[1 if settings.family == "bert" else 3]


def wordpiece_pipeline(settings: VocabSettings, vocab: dict[str, int] | None = None) -> Tokenizer:
    """BERT's WordPiece pipeline: BERT normalisation (uncased also strips accents), ``##`` continuations."""
    model = models.WordPiece(vocab, unk_token=_unk(settings)) if vocab else models.WordPiece(unk_token=_unk(settings))
    tok = Tokenizer(model)
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=None if settings.lowercase else False,
        lowercase=settings.lowercase,
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix=PREFIX)
    return tok


def alphabet(tok: Tokenizer, texts: Iterable[str], limit: int) -> list[str]:
    """The ``limit`` most frequent characters of the normalised texts (ties broken by character)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tok.normalizer.normalize_str(text))
    chars = [c for c in counts if not c.isspace()]
    chars.sort(key=lambda c: (-counts[c], c))
    return sorted(chars[:limit])


def train_wordpiece(settings: VocabSettings, texts: Callable[[], Iterable[str]]) -> Tokenizer:
    tok = wordpiece_pipeline(settings)
    chars = alphabet(tok, texts(), settings.limit_alphabet)
    specials = special_tokens(settings.family)
    trainer = trainers.WordPieceTrainer(
        vocab_size=settings.size,
        min_frequency=settings.min_frequency,
        special_tokens=specials + [PREFIX + c for c in chars],
        initial_alphabet=chars,
        limit_alphabet=len(chars),
        continuing_subword_prefix=PREFIX,
        show_progress=False,
    )
    tok.train_from_iterator(texts(), trainer=trainer)
    # Rebuilt so the ## characters are ordinary vocabulary entries, not special tokens.
    clean = wordpiece_pipeline(settings, tok.get_vocab())
    clean.add_special_tokens(specials)
    return clean


def train(settings: VocabSettings, texts: Callable[[], Iterable[str]]) -> Tokenizer:
    """Learn a BPE or WordPiece tokenizer (without post-processor); ``texts()`` streams the sample."""
    if settings.algorithm == "wordpiece":
        return train_wordpiece(settings, texts)
    tok, trainer = build_bpe(settings)
    tok.train_from_iterator(texts(), trainer=trainer)
    return tok
