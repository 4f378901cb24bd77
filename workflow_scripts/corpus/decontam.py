"""Decontamination: find pretraining documents that contain benchmark test examples.

Several benchmark test sets are drawn from PubMed abstracts, so a pretraining corpus may
hold them verbatim. Each text of each test example (the task's prepared ``test_texts.jsonl``)
is indexed by its word n-grams;
a document is contaminated when it contains at least ``threshold`` of the n-grams of any
one test text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PipelineError
from ..jsonl import read_jsonl
from .text import word_tokens


def _grams(tokens: list[str], n: int) -> set[int]:
    return {hash(" ".join(tokens[i : i + n])) for i in range(len(tokens) - n + 1)}


@dataclass
class NgramIndex:
    ngram: int
    threshold: float
    min_words: int = 8
    sizes: list[int] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    index: dict[int, list[int]] = field(default_factory=dict)
    skipped_short: int = 0

    def add(self, text: str, owner: str) -> None:
        toks = word_tokens(text)
        if len(toks) < max(self.min_words, self.ngram):
            self.skipped_short += 1
            return
        grams = _grams(toks, self.ngram)
        unit = len(self.sizes)
        self.sizes.append(len(grams))
        self.owners.append(owner)
        for g in grams:
            self.index.setdefault(g, []).append(unit)

    def add_task(self, path: str | Path) -> int:
        """Index one task's test texts (its prepared test_texts.jsonl); return the number of examples."""
        path = Path(path)
        if not path.is_file():
            raise PipelineError(
                f"{path}: no test texts to decontaminate against; prepare the task first "
                "or remove it from the corpus's decontamination list"
            )
        task = path.parent.name
        n = 0
        for line, ex in read_jsonl(path):
            texts = ex.get("texts") if isinstance(ex, dict) else None
            if not isinstance(texts, list):
                raise PipelineError(f"{path}:{line}: expected a record with a list 'texts'; prepare the task again")
            n += 1
            for text in texts:
                self.add(text, task)
        return n

    def match(self, text: str) -> str | None:
        """The task whose test text ``text`` contains, or None."""
        hits: dict[int, int] = {}
        for g in _grams(word_tokens(text), self.ngram):
            for unit in self.index.get(g, ()):
                hits[unit] = hits.get(unit, 0) + 1
        for unit, count in hits.items():
            if count >= self.threshold * self.sizes[unit]:
                return self.owners[unit]
        return None
