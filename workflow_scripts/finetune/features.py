"""Turn normalised examples into model inputs: windows of sub-tokens for tagging, (pair)
sequences for classification and regression, with entity markers and positions for relations.

A feature is a plain dict: ``input_ids`` (and ``token_type_ids`` for pairs), ``example``
(index of its example) and the target: ``labels`` (one per position, -100 = not trained)
and ``words`` ([word index, position] pairs scored from this window) for tagging,
``label`` (class index, list of 0/1, or float) otherwise, ``entities`` (two
[first, last + 1) token spans) when a relation is pooled at its entities, and ``chunk`` (its
place among its example's chunks) when inputs are read in chunks (``chunks``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import PipelineError
from . import chunks, tagging
from .settings import ENTITY_POOLING

log = logging.getLogger(__name__)

MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")
DUMMY = re.compile(r"@[A-Za-z0-9_-]+\$")
IGNORE = -100


@dataclass
class Encoding:
    """How examples become features for one task and one tokenizer."""

    task_type: str
    labels: list[str]  # labels as trained (tags in the training scheme for NER)
    max_length: int
    scheme: str = "plain"  # ner: bio | io | bioul; pico: plain
    label_all_subtokens: bool = False
    window_context: int = 16
    re_input: str = "dummify"
    pooling: str = "cls"
    chunks: chunks.ChunkPlan | None = None  # None: inputs read whole, cut at max_length
    stats: dict[str, int] = field(default_factory=dict)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n


def needs_markers(enc: Encoding) -> bool:
    return enc.task_type == "relation" and enc.re_input == "markers"


def encode(tokenizer, rows: list[dict[str, Any]], enc: Encoding) -> list[dict[str, Any]]:
    if enc.task_type in ("ner", "pico"):
        return _encode_tagging(tokenizer, rows, enc)
    if enc.task_type == "relation":
        return _encode_relation(tokenizer, rows, enc)
    return _encode_sequences(tokenizer, rows, enc)


# --- tagging -------------------------------------------------------------------------


def _word_prefix(tokenizer) -> str:
    """Byte-level BPE tokenizers encode a word differently after a space; words inside a
    sentence must be encoded in that form."""
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    spaced = tokenizer(" a", add_special_tokens=False)["input_ids"]
    return " " if bare != spaced else ""


def _special_ids(tokenizer) -> tuple[int, int]:
    start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    if start is None or end is None:
        raise PipelineError("--model: the tokenizer defines no [CLS]/[SEP] (or <s>/</s>) tokens")
    return start, end


def _word_pieces(tokenizer, rows) -> dict[str, list[int]]:
    words = sorted({w for r in rows for w in r["tokens"]})
    prefix = _word_prefix(tokenizer)
    ids = tokenizer([prefix + w for w in words], add_special_tokens=False)["input_ids"] if words else []
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else 0
    return {w: (p or [unk]) for w, p in zip(words, ids, strict=True)}


def windows(lengths: list[int], budget: int, context: int) -> list[tuple[int, int, int, int]]:
    """Split words (given their sub-token counts) into windows of at most ``budget`` sub-tokens.

    Returns (start, core_start, core_end, end) word ranges: every word lies in exactly one
    core, which is scored; the words around it (up to ``context`` sub-tokens either side)
    are context only. A sentence that fits is one window with no context.
    """
    if sum(min(n, budget) for n in lengths) <= budget:
        return [(0, 0, len(lengths), len(lengths))]
    core_budget = max(budget - 2 * context, 1)
    out = []
    i = 0
    while i < len(lengths):
        j, used = i, 0
        while j < len(lengths) and (j == i or used + lengths[j] <= core_budget):
            used += min(lengths[j], budget)
            j += 1
        start, end = i, j
        while start > 0 and used + lengths[start - 1] <= budget and sum(lengths[start - 1 : i]) <= context:
            start -= 1
            used += lengths[start]
        while end < len(lengths) and used + lengths[end] <= budget and sum(lengths[j : end + 1]) <= context:
            used += lengths[end]
            end += 1
        out.append((start, i, j, end))
        i = j
    return out


def _encode_tagging(tokenizer, rows, enc: Encoding) -> list[dict[str, Any]]:
    pieces = _word_pieces(tokenizer, rows)
    start_id, end_id = _special_ids(tokenizer)
    budget, context = enc.max_length - 2, enc.window_context
    if enc.chunks is not None:
        # windows of the chunk length; neighbours share the stride, half each side of a core boundary
        budget, context = enc.chunks.length - 2, enc.chunks.stride // 2
    index = {label: i for i, label in enumerate(enc.labels)}
    features = []
    for ex, row in enumerate(rows):
        tags = tagging.from_bio(row["tags"], enc.scheme) if enc.scheme != "plain" else row["tags"]
        word_ids = [pieces[w] for w in row["tokens"]]
        lengths = [len(p) for p in word_ids]
        for w, n in enumerate(lengths):
            if n > budget:
                enc.count("words_cut_to_max_length")
                word_ids[w] = word_ids[w][:budget]
                lengths[w] = budget
        spans = windows(lengths, budget, context)
        if len(spans) > 1:
            enc.count("sentences_split_into_windows")
        for start, core_start, core_end, end in spans:
            ids, labels, words = [start_id], [IGNORE], []
            for w in range(start, end):
                in_core = core_start <= w <= core_end - 1
                if in_core:
                    words.append([w, len(ids)])
                for k, piece in enumerate(word_ids[w]):
                    if in_core and (k == 0 or enc.label_all_subtokens):
                        labels.append(index[_subtoken_tag(tags[w], k, enc.scheme)])
                    else:
                        labels.append(IGNORE)
                    ids.append(piece)
            ids.append(end_id)
            labels.append(IGNORE)
            features.append({"input_ids": ids, "labels": labels, "words": words, "example": ex})
    return features


def _subtoken_tag(tag: str, k: int, scheme: str) -> str:
    """A word's later sub-tokens continue its entity (B-X -> I-X; L-/U- keep the word's tag
    only on its first sub-token under BIOUL, its inside pieces are I-X)."""
    if k == 0 or scheme == "plain" or tag == "O":
        return tag
    return f"I-{tag[2:]}"


# --- (pair) sequences ------------------------------------------------------------------


def _texts(row: dict[str, Any], task_type: str) -> tuple[str, str | None]:
    if task_type == "qa":
        return row["question"], row["context"]
    if task_type in ("nli", "similarity"):
        return row["text_a"], row["text_b"]
    return row["text"], None


def _target(row: dict[str, Any], enc: Encoding) -> Any:
    if enc.task_type == "similarity":
        return float(row["score"])
    if enc.task_type == "doc_classification":
        present = set(row["labels"])
        return [1.0 if label in present else 0.0 for label in enc.labels]
    return enc.labels.index(row["label"])


def _tokenize(tokenizer, firsts, seconds, enc: Encoding, offsets: bool):
    kwargs = dict(truncation=True, max_length=enc.max_length, return_offsets_mapping=offsets)
    if seconds is not None:
        out = tokenizer(firsts, seconds, **kwargs)
        full = tokenizer(firsts, seconds, add_special_tokens=True)["input_ids"]
    else:
        out = tokenizer(firsts, **kwargs)
        full = tokenizer(firsts, add_special_tokens=True)["input_ids"]
    cut = sum(len(f) > enc.max_length for f in full)
    if cut:
        enc.count("examples_truncated_to_max_length", cut)
    return out


def _encode_sequences(tokenizer, rows, enc: Encoding) -> list[dict[str, Any]]:
    pairs = [_texts(r, enc.task_type) for r in rows]
    firsts = [a for a, _ in pairs]
    seconds = [b for _, b in pairs] if pairs[0][1] is not None else None
    if enc.chunks is not None:
        return _in_chunks(tokenizer, firsts, seconds, rows, enc)
    out = _tokenize(tokenizer, firsts, seconds, enc, offsets=False)
    features = []
    for ex, row in enumerate(rows):
        feat = {"input_ids": out["input_ids"][ex], "label": _target(row, enc), "example": ex}
        if seconds is not None and "token_type_ids" in out:
            feat["token_type_ids"] = out["token_type_ids"][ex]
        features.append(feat)
    return features


def _in_chunks(tokenizer, firsts, seconds, rows, enc: Encoding) -> list[dict[str, Any]]:
    features = chunks.encode(tokenizer, firsts, seconds, enc.chunks, enc.max_length, enc.count)
    return [{**f, "label": _target(rows[f["example"]], enc)} for f in features]


# --- relations -----------------------------------------------------------------------


def entity_spans(row: dict[str, Any]) -> list[tuple[int, int]]:
    """The two entities of a relation example: the given character spans, else the
    dummified placeholders (@CHEMICAL$, @GENE$, ...) in order of appearance."""
    if row.get("entities"):
        spans = [(int(e["start"]), int(e["end"])) for e in row["entities"]]
    else:
        spans = [m.span() for m in DUMMY.finditer(row["text"])]
    return spans[:2]


def insert_markers(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    """Wrap entity i in [Ei] ... [/Ei]; return the new text, the spans of the opening markers
    and the entities' spans in the new text."""
    edits = []
    for i, (s, e) in enumerate(spans, 1):
        edits.append((s, 1, f"[E{i}] ", i))
        edits.append((e, 0, f" [/E{i}]", i))
    out, last, length = [], 0, 0
    markers: dict[int, tuple[int, int]] = {}
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for pos, _, mark, i in sorted(edits):
        out.append(text[last:pos])
        length += pos - last
        if mark.startswith("["):
            markers[i] = (length, length + len(mark) - 1)
            starts[i] = length + len(mark)
        else:
            ends[i] = length
        out.append(mark)
        length += len(mark)
        last = pos
    out.append(text[last:])
    numbers = range(1, len(spans) + 1)
    return "".join(out), [markers[i] for i in numbers], [(starts[i], ends[i]) for i in numbers]


def token_span(offsets: list[tuple[int, int]], span: tuple[int, int]) -> tuple[int, int] | None:
    """The [first, last + 1) token positions overlapping a character span (None if cut off)."""
    hits = [pos for pos, (s, e) in enumerate(offsets) if e > s and s < span[1] and e > span[0]]
    return (hits[0], hits[-1] + 1) if hits else None


def _encode_relation(tokenizer, rows, enc: Encoding) -> list[dict[str, Any]]:
    texts, spans = [], []
    for row in rows:
        sp = entity_spans(row)
        text = row["text"]
        if enc.re_input == "markers":
            text, marker_spans, mention_spans = insert_markers(text, sp)
            sp = marker_spans if enc.pooling == "entity_start" else mention_spans
        texts.append(text)
        spans.append(sp)
    if enc.chunks is not None:  # never with entity pooling (chunks.plan)
        return _in_chunks(tokenizer, texts, None, rows, enc)
    pooled = enc.pooling in ENTITY_POOLING
    if pooled and not getattr(tokenizer, "is_fast", False):
        raise PipelineError(f"finetune.pooling: {enc.pooling} needs a fast tokenizer (character offsets)")
    out = _tokenize(tokenizer, texts, None, enc, offsets=pooled)
    features = []
    for ex, row in enumerate(rows):
        feat = {"input_ids": out["input_ids"][ex], "label": _target(row, enc), "example": ex}
        if pooled:
            found = [token_span(out["offset_mapping"][ex], s) for s in spans[ex]]
            if len(found) < 2 or None in found:
                enc.count("entities_not_found_pooled_at_cls")
            found = [f if f is not None else (0, 1) for f in found]
            found = (found + found[-1:] * 2 if found else [(0, 1), (0, 1)])[:2]
            feat["entities"] = [list(f) for f in found]
        features.append(feat)
    return features
