"""Vocabulary figures: fragmentation of words into sub-tokens, whole-token coverage of terms, overlap.

Words are segmented as they occur inside running text, i.e. after a space, so a
byte-level BPE vocabulary is measured on its ``Ġword`` forms and WordPiece and
SentencePiece on their word-initial pieces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

_MARKERS = ("##", "Ġ", "▁")


def pieces(tokenizer, words: Sequence[str]) -> list[list[str]]:
    """The sub-tokens of each word, segmented as a mid-sentence word."""
    texts = [" " + w for w in words]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return [e.tokens for e in backend.encode_batch(texts, add_special_tokens=False)]
    return [tokenizer.tokenize(t) for t in texts]


def fragmentation(tokenizer, words: Iterable[str]) -> dict:
    """Sub-tokens per word over ``words`` (each occurrence counts) and the share kept whole."""
    counts = Counter(w for w in words if w.strip())
    if not counts:
        return {"tokens_per_word": None, "whole_words": None, "words": 0}
    unique = list(counts)
    lengths = [len(p) for p in pieces(tokenizer, unique)]
    total = sum(counts.values())
    sub = sum(counts[w] * n for w, n in zip(unique, lengths, strict=True))
    whole = sum(counts[w] for w, n in zip(unique, lengths, strict=True) if n == 1)
    return {"tokens_per_word": sub / total, "whole_words": whole / total, "words": total}


def ner_words(rows: Iterable[Mapping]) -> tuple[list[str], list[str]]:
    """All words and the words inside entities (tag other than ``O``) of NER examples."""
    all_words: list[str] = []
    entity_words: list[str] = []
    for row in rows:
        all_words.extend(row["tokens"])
        entity_words.extend(w for w, t in zip(row["tokens"], row["tags"], strict=True) if t != "O")
    return all_words, entity_words


def term_coverage(tokenizer, terms: Sequence[str]) -> tuple[float, dict[str, int]]:
    """Fraction of ``terms`` that are one known token (an unknown token covers nothing), and each
    term's number of sub-tokens."""
    split = pieces(tokenizer, terms)
    n = {t: len(p) for t, p in zip(terms, split, strict=True)}
    whole = sum(len(p) == 1 and p[0] != tokenizer.unk_token for p in split)
    return (whole / len(terms) if terms else 0.0), n


def surface_vocab(tokenizer) -> set[str]:
    """The vocabulary's strings without special tokens and without word-boundary markers, so
    WordPiece, byte-level BPE and SentencePiece pieces compare as plain strings."""
    special = set(tokenizer.all_special_tokens)
    out = set()
    for token in tokenizer.get_vocab():
        if token in special:
            continue
        for marker in _MARKERS:
            if token.startswith(marker) and len(token) > len(marker):
                token = token[len(marker) :]
                break
        out.add(token)
    return out


def overlap(vocabs: Mapping[str, set[str]]) -> list[dict]:
    """Shared strings and Jaccard index for every pair of vocabularies."""
    names = list(vocabs)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = len(vocabs[a] & vocabs[b])
            union = len(vocabs[a] | vocabs[b])
            rows.append({"a": a, "b": b, "shared": shared, "jaccard": shared / union if union else 0.0})
    return rows
