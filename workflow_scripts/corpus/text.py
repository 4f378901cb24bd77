"""Text measures shared by the filters: word counts, language guess, normalisation, sentences."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words that are frequent in each language and rare in the others.
STOPWORDS = {
    "en": "the of and to in is was were that for with as by on are from this be an which at or we these".split(),
    "fr": "le la les des du une est et dans pour sur au aux par nous avec été ont sont ces qui".split(),
    "de": "der die das und ist nicht mit von den dem ein eine wir zu bei auch sich wurde war".split(),
    "es": "el los las del una es y en por con para que se fue su al como más pero".split(),
    "it": "il gli della delle una è e nel per con che si sono dei alla anche stato".split(),
    "pt": "os das dos uma é e em por com para que se foi ao não mais são pelo".split(),
}
_LOOKUP: dict[str, list[str]] = {}
for _lang, _words in STOPWORDS.items():
    for _w in _words:
        _LOOKUP.setdefault(_w, []).append(_lang)

_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|et al|Fig|Figs|Dr|Mr|Mrs|Ms|vs|approx|No|Eq|ca|cf|resp|St)\.|\b[A-Z]\.)$")
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def words(text: str) -> int:
    return len(text.split())


def detect_language(text: str, min_hits: int = 3) -> str:
    """ISO 639-1 code of the language whose function words dominate, or "und" when too
    few function words occur to tell (short notes, lists, formulas)."""
    counts: dict[str, int] = {}
    for w in _WORD.findall(text.lower()):
        for lang in _LOOKUP.get(w, ()):
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return "und"
    lang, hits = max(counts.items(), key=lambda kv: (kv[1], kv[0] == "en"))
    return lang if hits >= min_hits else "und"


def normalise(text: str) -> str:
    """The form compared for exact duplicates: case and whitespace ignored."""
    return " ".join(text.lower().split())


def word_tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens, so punctuation and tokenisation do not hide overlaps."""
    return _WORD.findall(text.lower())


def split_sentences(text: str) -> str:
    """One sentence per line; existing line breaks (paragraphs, sections) are kept."""
    out = []
    for line in text.split("\n"):
        pieces = _BOUNDARY.split(line)
        merged: list[str] = []
        for p in pieces:
            if merged and _ABBREV.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {p}"
            else:
                merged.append(p)
        out.extend(merged)
    return "\n".join(out)
