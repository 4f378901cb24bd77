"""The per-document filters a corpus build applies while streaming, in ``REASONS`` order, and the
tally of what was read, what each reason dropped and what each shard received."""

from __future__ import annotations

from .dedup import ExactDedup
from .settings import CorpusSettings
from .text import words

REASONS = (
    "iserror",
    "category",
    "licence",
    "retracted",
    "empty",
    "too_short",
    "language",
    "exact_duplicate",
    "near_duplicate",
    "contaminated",
)
LANGS = ("und", "en", "fr", "de", "es", "it", "pt")


class Filters:
    """Per-document filters applied while streaming, in ``REASONS`` order up to exact duplicates."""

    def __init__(self, settings: CorpusSettings) -> None:
        self.s = settings
        self.exact = ExactDedup() if settings.clean.exact_dedup else None
        self.categories = {x.strip() for x in settings.clean.mimic.categories}

    def reason(self, row: dict, language: str) -> str | None:
        c = self.s.clean
        text = row["text"]
        if row["iserror"]:
            return "iserror"
        if self.categories and row["category"] not in self.categories:
            return "category"
        if self.s.type == "pmc" and c.pmc.licence != "all" and row["licence"] != c.pmc.licence:
            return "licence"
        if c.drop_retracted and row["retracted"]:
            return "retracted"
        if not text.strip():
            return "empty"
        if words(text) < c.min_words:
            return "too_short"
        if c.languages and language not in c.languages and language != "und":
            return "language"
        if self.exact is not None and self.exact.is_duplicate(text):
            return "exact_duplicate"
        return None


ZERO = {"documents": 0, "words": 0, "bytes": 0}


class Tally:
    """Documents, words and bytes: read, dropped by each reason, and written to each shard."""

    def __init__(self, shards: int) -> None:
        self.total = dict(ZERO)
        self.dropped = {r: dict(ZERO) for r in REASONS}
        self.shards = [dict(ZERO) for _ in range(shards)]

    def read(self, size: dict) -> None:
        for key in self.total:
            self.total[key] += size[key]

    def drop(self, reason: str, size: dict) -> None:
        for key in size:
            self.dropped[reason][key] += size[key]

    def keep(self, shard: int, size: dict) -> None:
        for key in size:
            self.shards[shard][key] += size[key]


def stage_table(total: dict, dropped: dict) -> list[dict]:
    stages = [{"stage": "input", **total}]
    cur = dict(total)
    for r in REASONS:
        for k in cur:
            cur[k] -= dropped[r][k]
        stages.append({"stage": f"after_{r}", **cur})
    return stages
