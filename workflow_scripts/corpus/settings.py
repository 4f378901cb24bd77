"""Settings of one pretraining corpus: the ``corpus`` key of the step's settings YAML.

``clean`` holds every parsing and filtering choice; source-specific options are grouped
in nested sections (``pubmed``, ``pmc``, ``mimic``) so one class serves all corpora.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import PipelineError
from ..typed import load_settings, view


@dataclass
class PubmedOptions:
    section_labels: bool = field(
        default=True, metadata={"help": 'prefix each section of a structured abstract with its label ("METHODS: ...")'}
    )
    include_title: bool = field(
        default=True, metadata={"help": "put the article title before the abstract in the document text"}
    )


@dataclass
class PmcOptions:
    licence: Literal["all", "commercial", "noncommercial"] = field(
        default="all",
        metadata={
            "help": "licence subset: commercial = CC0/CC BY/BY-SA/BY-ND only (as BioMegatron); "
            "noncommercial = the NC licences; all = every open-access article"
        },
    )
    captions: bool = field(default=True, metadata={"help": "keep figure and table captions"})
    tables: bool = field(default=False, metadata={"help": "keep the cell text of tables and their footnotes"})
    formulas: bool = field(
        default=False, metadata={"help": "keep the text of display formulas (MathML identifiers and operators)"}
    )
    references: bool = field(
        default=False,
        metadata={
            "help": "keep the reference list and in-text citation markers (when off, a marker goes with "
            "its brackets and separators)"
        },
    )
    section_titles: bool = field(default=True, metadata={"help": "keep section titles as their own lines"})


@dataclass
class MimicOptions:
    categories: list[str] = field(
        default_factory=list,
        metadata={
            "help": "note categories to keep (CATEGORY column, compared without surrounding spaces); empty = all"
        },
    )
    placeholders: Literal["keep", "tag"] = field(
        default="keep",
        metadata={
            "help": "de-identification placeholders [**...**]: keep = one token with inner spaces "
            "removed; tag = a type tag such as [NAME], [DATE], [HOSPITAL]"
        },
    )


@dataclass
class NearDedupOptions:
    enabled: bool = field(default=True, metadata={"help": "remove near duplicates with MinHash LSH"})
    threshold: float = field(
        default=0.8,
        metadata={"help": "estimated Jaccard similarity of word shingles above which a document is a near duplicate"},
    )
    num_perm: int = field(default=128, metadata={"help": "number of MinHash permutations"})
    shingle: int = field(default=5, metadata={"help": "words per shingle"})
    seed: int = field(default=1, metadata={"help": "seed of the MinHash permutations"})

    def validate(self, where: str) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise PipelineError(f"{where}.threshold: must be in (0, 1], got {self.threshold}")
        if self.num_perm < 8 or self.shingle < 1:
            raise PipelineError(f"{where}: num_perm must be >= 8 and shingle >= 1")


@dataclass
class DecontaminationOptions:
    ngram: int = field(default=13, metadata={"help": "n-gram length (words, lower-cased) compared with the test sets"})
    threshold: float = field(
        default=0.5,
        metadata={"help": "drop a document containing at least this fraction of the n-grams of any one test example"},
    )
    min_words: int = field(
        default=8, metadata={"help": "test examples shorter than this many words are not used for matching"}
    )

    def validate(self, where: str) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise PipelineError(f"{where}.threshold: must be in (0, 1], got {self.threshold}")
        if self.ngram < 1:
            raise PipelineError(f"{where}.ngram: must be >= 1")


@dataclass
class SourceOptions:
    """The part of ``clean`` that downloading and parsing read (they run once per raw file)."""

    drop_retracted: bool = field(default=True, metadata={"help": "drop retracted articles"})
    near_dedup: NearDedupOptions = field(default_factory=NearDedupOptions, metadata={"help": "near-duplicate removal"})
    on_malformed: Literal["error", "skip"] = field(
        default="error",
        metadata={
            "help": "a malformed record or archive member: error = stop naming it; skip = count it under "
            "'malformed' in stats.json"
        },
    )
    pubmed: PubmedOptions = field(default_factory=PubmedOptions, metadata={"help": "PubMed options"})
    pmc: PmcOptions = field(default_factory=PmcOptions, metadata={"help": "PMC options"})
    mimic: MimicOptions = field(default_factory=MimicOptions, metadata={"help": "MIMIC-III options"})


@dataclass
class CleanSettings(SourceOptions):
    min_words: int = field(
        default=128, metadata={"help": "drop documents with fewer whitespace-separated words (PubMedBERT used 128)"}
    )
    languages: list[str] = field(
        default_factory=lambda: ["en"],
        metadata={
            "help": "keep documents whose detected language (ISO 639-1: en, fr, de, es, it, pt) is listed; "
            "texts too short to tell are kept; empty = no language filter"
        },
    )
    exact_dedup: bool = field(
        default=True, metadata={"help": "drop documents whose normalised text equals an earlier one"}
    )
    decontamination: DecontaminationOptions = field(
        default_factory=DecontaminationOptions,
        metadata={"help": "removal of documents overlapping benchmark test sets (given with --decontaminate)"},
    )
    sentence_split: bool = field(
        default=False, metadata={"help": "write one sentence per line (paragraphs stay separated by a blank line)"}
    )

    def validate(self, where: str) -> None:
        if self.min_words < 0:
            raise PipelineError(f"{where}.min_words: must be >= 0, got {self.min_words}")


@dataclass
class CorpusSettings:
    name: str = field(metadata={"help": "corpus name (results/corpus/<name>)"})
    type: Literal["pubmed", "pmc", "mimic"] = field(metadata={"help": "raw source format"})
    shards: int = field(default=1, metadata={"help": "number of Parquet shards written"})
    restricted: bool = field(default=False, metadata={"help": "derived from credentialed data (always true for mimic)"})
    clean: CleanSettings = field(default_factory=CleanSettings, metadata={"help": "parsing and filtering"})

    def validate(self, where: str) -> None:
        if self.shards < 1:
            raise PipelineError(f"{where}.shards: must be >= 1, got {self.shards}")


@dataclass
class ParseCorpusSettings:
    """What parsing a raw file and downloading a PMC cloud batch read: ``corpus`` in their settings file."""

    name: str = field(metadata={"help": "corpus name (results/corpus/<name>)"})
    type: Literal["pubmed", "pmc", "mimic"] = field(metadata={"help": "raw source format"})
    restricted: bool = field(default=False, metadata={"help": "derived from credentialed data (always true for mimic)"})
    clean: SourceOptions = field(default_factory=SourceOptions, metadata={"help": "parsing options"})


def parse_view(settings: CorpusSettings) -> ParseCorpusSettings:
    """The parse step's part of a corpus's settings (what the workflow writes for it)."""
    return view(ParseCorpusSettings, settings, clean=view(SourceOptions, settings.clean))


def load(path: str | Path) -> CorpusSettings:
    return load_settings(path, CorpusSettings, "corpus")


def load_parse(path: str | Path) -> ParseCorpusSettings:
    return load_settings(path, ParseCorpusSettings, "corpus")
