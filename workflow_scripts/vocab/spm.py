"""SentencePiece unigram and BPE models, learned with ``sentencepiece`` and converted to ``tokenizers``.

transformers' own converter needs protobuf, which the pipeline does not install, so the
conversion reads pieces and scores through ``SentencePieceProcessor``. To keep the two
segmenters identical, SentencePiece is trained on text we normalise ourselves (NFKC,
optional lowercasing, collapsed whitespace) with its own normalisation switched off, and
the converted tokenizer applies the same normaliser.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Iterable, Iterator

import sentencepiece
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers.tokenization_utils_base import generate_merges

from ..errors import PipelineError
from .settings import VocabSettings, special_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_SPACE = re.compile(r"\s+")
# SentencePiece silently skips sentences over max_sentence_length bytes (default 4192).
MAX_SENTENCE_CHARS = 1000


def normalize(text: str, lowercase: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.lower()
    return _SPACE.sub(" ", text).strip()


def sentences(texts: Iterable[str], lowercase: bool) -> Iterator[str]:
    """Split documents into normalised sentences short enough for SentencePiece."""
    for text in texts:
        for line in text.splitlines():
            for sent in _SENTENCE_END.split(line):
                sent = normalize(sent, lowercase)
                while len(sent) > MAX_SENTENCE_CHARS:
                    cut = sent.rfind(" ", 0, MAX_SENTENCE_CHARS)
                    cut = cut if cut > 0 else MAX_SENTENCE_CHARS
                    yield sent[:cut]
                    sent = sent[cut:].strip()
                if sent:
                    yield sent


def train_model(settings: VocabSettings, texts: Iterable[str], where: str) -> bytes:
    """Train a SentencePiece model and return its serialised proto."""
    specials = special_tokens(settings.family)
    if settings.family == "bert":
        pad, unk, bos, eos, mask = specials
    else:
        bos, pad, eos, unk, mask = specials
    ids = {tok: i for i, tok in enumerate(specials)}
    sentencepiece.set_random_generator_seed(settings.seed)
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=sentences(texts, settings.lowercase),
            model_writer=model,
            model_type=settings.algorithm.removeprefix("sentencepiece_"),
            vocab_size=settings.size,
            character_coverage=settings.character_coverage,
            input_sentence_size=settings.max_sentences,
            shuffle_input_sentence=True,
            num_threads=settings.threads,
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            add_dummy_prefix=True,
            pad_id=ids[pad],
            unk_id=ids[unk],
            bos_id=ids[bos],
            eos_id=ids[eos],
            pad_piece=pad,
            unk_piece=unk,
            bos_piece=bos,
            eos_piece=eos,
            control_symbols=[mask],
            minloglevel=2,
        )
    except RuntimeError as exc:
        if "Vocabulary size" in str(exc) or "vocab_size" in str(exc):
            raise PipelineError(
                f"{where}: the corpus is too small for a {settings.size}-piece SentencePiece vocabulary ({exc}); "
                "lower vocab size or add documents"
            ) from exc
        raise
    return model.getvalue()


def to_tokenizer(proto: bytes, settings: VocabSettings) -> Tokenizer:
    """The SentencePiece model as a ``tokenizers`` pipeline that segments text the same way."""
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    unk_id = sp.unk_id()
    if settings.algorithm == "sentencepiece_unigram":
        model = models.Unigram([(p, sp.get_score(i)) for i, p in enumerate(pieces)], unk_id=unk_id, byte_fallback=False)
    else:
        vocab = {p: i for i, p in enumerate(pieces)}
        skip = [p for i, p in enumerate(pieces) if sp.is_control(i) or sp.is_unknown(i)]
        model = models.BPE(vocab, generate_merges(vocab, None, skip), unk_token=pieces[unk_id], fuse_unk=True)
    tok = Tokenizer(model)
    steps = [normalizers.NFKC()]
    if settings.lowercase:
        steps.append(normalizers.Lowercase())
    steps += [normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return tok


def agreement(proto: bytes, tok: Tokenizer, sample: list[str]) -> float:
    """Fraction of ``sample`` sentences that SentencePiece and the converted tokenizer segment identically."""
    if not sample:
        return 1.0
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto)
    same = sum(sp.encode(s) == tok.encode(s, add_special_tokens=False).ids for s in sample)
    return same / len(sample)
