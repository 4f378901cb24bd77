"""Settings of the vocabulary stage: ``vocab: {name, train: VocabSettings}`` in the step's YAML."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import PipelineError
from ..typed import help_field as _help

Algorithm = Literal["bpe", "wordpiece", "sentencepiece_unigram", "sentencepiece_bpe"]
Family = Literal["bert", "roberta"]

# Each family's special tokens, in the order they take ids 0..4.
SPECIAL_TOKENS: dict[str, dict[str, str]] = {
    "bert": {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
    },
    "roberta": {
        "bos_token": "<s>",
        "pad_token": "<pad>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
    },
}


def special_tokens(family: str) -> list[str]:
    """The family's special tokens in id order."""
    return list(SPECIAL_TOKENS[family].values())


@dataclass
class VocabSettings:
    algorithm: Algorithm = _help(
        "bpe: byte-level BPE (RoBERTa); wordpiece: BERT WordPiece; sentencepiece_unigram / sentencepiece_bpe: "
        "SentencePiece models converted to a fast tokenizer.",
        default="wordpiece",
    )
    size: int = _help(
        "Vocabulary size, special tokens included (BERT 30000 / 28996 cased, RoBERTa 50265).", default=30000
    )
    lowercase: bool = _help(
        "Lowercase text before tokenizing (uncased vocabulary); uncased WordPiece also strips accents.", default=True
    )
    family: Family = _help(
        "Model family the vocabulary serves: decides the special tokens (bert: [PAD] [UNK] [CLS] [SEP] [MASK]; "
        "roberta: <s> <pad> </s> <unk> <mask>) and the tokenizer class saved.",
        default="bert",
    )
    sample_documents: int | None = _help(
        "Learn from at most this many documents, drawn without replacement from all shards of the corpora with "
        "`seed`; null uses every document.",
        default=None,
    )
    min_frequency: int = _help(
        "BPE/WordPiece: a merge must occur at least this often to enter the vocabulary.", default=2
    )
    limit_alphabet: int = _help(
        "WordPiece: at most this many initial characters are kept (BERT used 1000).", default=1000
    )
    character_coverage: float = _help(
        "SentencePiece: fraction of characters covered by the model; the rarest characters map to the unknown token.",
        default=0.9999,
    )
    max_sentences: int = _help(
        "SentencePiece: at most this many sentences are held in memory for training (a uniform sample when there "
        "are more).",
        default=10_000_000,
    )
    model_max_length: int = _help(
        "Longest input (tokens) the tokenizer declares for the models that use it.", default=512
    )
    threads: int = _help("CPU threads for training.", default=1)
    seed: int = _help("Seed of the document sample and of SentencePiece's sentence sampling.", default=0)

    def validate(self, where: str) -> None:
        if self.size < 100:
            raise PipelineError(f"{where}.size: {self.size} is too small for a vocabulary; use at least 100")
        if self.min_frequency < 1:
            raise PipelineError(f"{where}.min_frequency: must be at least 1, got {self.min_frequency}")
        if self.sample_documents is not None and self.sample_documents < 1:
            raise PipelineError(f"{where}.sample_documents: must be positive or null (all documents)")
        if not 0.9 <= self.character_coverage <= 1.0:
            raise PipelineError(f"{where}.character_coverage: must lie in [0.9, 1.0], got {self.character_coverage}")
        if self.threads < 1 or self.max_sentences < 1 or self.model_max_length < 1 or self.limit_alphabet < 1:
            raise PipelineError(
                f"{where}: threads, max_sentences, model_max_length and limit_alphabet must be positive"
            )


@dataclass
class TrainVocabSettings:
    name: str = _help("Name of the vocabulary (its directory under results/vocab).")
    train: VocabSettings = _help("How the vocabulary is learned.", default_factory=VocabSettings)
