"""The i2b2 clinical releases: 2012/2014 XML with character offsets, 2010 concepts and relations."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ...errors import PipelineError
from ...textfile import read_text
from ..spec import TaskSpec
from .common import Record, check_label, dummify, numbered_lines


def _words_with_tags(line: str, char_tags: list[str]) -> tuple[list[str], list[str]]:
    """Whitespace words of ``line``; a word takes the tag of its first tagged character."""
    words, tags = [], []
    for m in re.finditer(r"\S+", line):
        inside = [t for t in char_tags[m.start() : m.end()] if t != "O"]
        words.append(m.group(0))
        tags.append(inside[0] if inside else "O")
    return words, tags


def _tag_line(raw: str, tag_id: str) -> int:
    at = raw.find(f'id="{tag_id}"')
    return raw.count("\n", 0, at) + 1 if at >= 0 else 1


def _xml_documents(path: Path) -> list[Path]:
    return sorted(path.rglob("*.xml")) if path.is_dir() else [path]


def read_i2b2_xml(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """i2b2 2012 (temporal events) and 2014 (de-identification) XML: ``<TEXT><![CDATA[...]]>``
    and ``<TAGS>`` whose children carry 0-based ``start``/``end`` character offsets into the
    text. ``selector`` = ``<element>:<attribute>``: which tags are entities and which attribute
    is their type (``EVENT:type`` for 2012, ``*:TYPE`` for the PHI of 2014). One record per
    line of the text (i2b2 puts one sentence per line); ids are ``<document>:<line>`` so
    dev hold-outs take whole documents."""
    import xml.etree.ElementTree as ET

    element, _, attribute = (selector or "").partition(":")
    if not element or not attribute:
        raise PipelineError(f"{name}: i2b2 XML split paths need '#<element>:<attribute>', e.g. '#EVENT:type'")
    records = []
    for doc in _xml_documents(path):
        shown = f"{name}/{doc.relative_to(path)}" if path.is_dir() else name
        raw = read_text(doc, shown)
        start = raw.find("<![CDATA[")
        end = raw.find("]]>", start)
        if start < 0 or end < 0:
            raise PipelineError(f"{shown}:1: no <TEXT><![CDATA[...]]></TEXT> section")
        text = raw[start + len("<![CDATA[") : end]
        # The text may hold characters XML forbids; parse the tags with the text cut out.
        try:
            root = ET.fromstring(raw[:start] + raw[end + 3 :])
        except ET.ParseError as exc:
            raise PipelineError(f"{shown}:{exc.position[0]}: not well-formed XML ({exc})") from exc
        char_tags = ["O"] * len(text)
        tags = root.find("TAGS")
        for tag in list(tags) if tags is not None else []:
            if element != "*" and tag.tag != element:
                continue
            kind = (tag.get(attribute) or "").strip()
            if not kind:
                continue
            tag_id = tag.get("id", tag.tag)
            where = f"{shown}:{_tag_line(raw, tag_id)}: tag {tag_id}"
            try:
                a, b = int(tag.get("start", "")), int(tag.get("end", ""))
            except ValueError:
                raise PipelineError(f"{where} has no integer start/end") from None
            if not 0 <= a < b <= len(text):
                raise PipelineError(f"{where}: offsets {a}-{b} lie outside the text")
            _check_offsets(tag.get("text"), text[a:b], where)
            label = check_label(f"B-{kind}", spec, where)
            char_tags[a] = label
            for i in range(a + 1, b):
                char_tags[i] = f"I-{kind}"
        offset = 0
        for number, line in enumerate(text.split("\n"), start=1):
            words, word_tags = _words_with_tags(line, char_tags[offset : offset + len(line)])
            offset += len(line) + 1
            if words:
                records.append({"id": f"{doc.stem}:{number}", "tokens": words, "tags": _bio(word_tags)})
    return records


def _check_offsets(expected: str | None, found: str, where: str) -> None:
    """Offsets count characters: a file edited or re-saved with other line ends or added spaces
    would shift every later tag silently, so each tag must still read its own ``text``."""
    if expected is not None and " ".join(expected.split()) != " ".join(found.split()):
        raise PipelineError(
            f"{where}: its offsets read {found!r}, not {expected!r}; the text was changed after annotation "
            "(added spaces or other line ends?): restore the release's own file"
        )


def _bio(tags: list[str]) -> list[str]:
    """Repair word tags so every entity starts with B- (a word-level cut can lose the B)."""
    out = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and (i == 0 or out[-1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
    return out


def _release_files(path: Path, name: str, roots: list[str], suffix: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for sub in roots or ["."]:
        root = path / sub
        if not root.is_dir():
            raise PipelineError(f"{name}: folder {sub} not found")
        found.update({p.stem: p for p in root.rglob(f"*{suffix}")})
    return found


def _shown(name: str, root: Path, file: Path) -> str:
    return f"{name}/{os.path.relpath(file, root)}"


def _token_spans(line: str) -> list[tuple[int, int]]:
    """Character spans of a line's i2b2 tokens. As in BLUE's reader, a line that starts with
    whitespace has an empty token 0 there, so the release's word numbers stay aligned."""
    spans = [m.span() for m in re.finditer(r"\S+", line)]
    if spans and spans[0][0] != 0:
        spans.insert(0, (0, 0))
    return spans


class _Document:
    """One i2b2 text: its lines, and concept spans checked against them."""

    def __init__(self, path: Path, shown: str) -> None:
        self.shown = shown
        # Trailing spaces hold no word; a leading one does count (see _token_spans).
        self.lines = [line.rstrip() for line in read_text(path, shown).split("\n")]
        self.tokens = [_token_spans(line) for line in self.lines]

    def span(self, m: re.Match[str], first: int, where: str) -> tuple[int, int, int]:
        """(line, start, end) in characters of the concept whose groups start at ``first``."""
        text, l1, w1, l2, w2 = m[first], int(m[first + 1]), int(m[first + 2]), int(m[first + 3]), int(m[first + 4])
        if l1 != l2 or not 1 <= l1 <= len(self.lines) or not 0 <= w1 <= w2 < len(self.tokens[l1 - 1]):
            raise PipelineError(f"{where}: span {l1}:{w1} {l2}:{w2} is not within one line of {self.shown}")
        tokens = self.tokens[l1 - 1]
        start, end = tokens[w1][0], tokens[w2][1]
        found = " ".join(self.lines[l1 - 1][start:end].split())
        if found.lower() != " ".join(text.split()).lower():
            raise PipelineError(
                f"{where}: concept {text!r} but words {w1}-{w2} of line {l1} of {self.shown} read "
                f"{found!r}; the annotation does not belong to this text"
            )
        return l1, start, end


_SPAN = r'c="(.*)" (\d+):(\d+) (\d+):(\d+)'
_CONCEPT = re.compile(rf'^{_SPAN}\|\|t="([^"]+)"$')
_RELATION = re.compile(rf'^{_SPAN}\|\|r="([^"]+)"\|\|{_SPAN}$')


def _annotations(
    path: Path, shown: str, pattern: re.Pattern[str], expected: str
) -> Iterator[tuple[str, re.Match[str]]]:
    """(file:line, match) of each non-blank line of an i2b2 annotation file."""
    for number, line in numbered_lines(path, shown):
        if not line.strip():
            continue
        m = pattern.match(line.strip())
        if not m:
            raise PipelineError(f"{shown}:{number}: expected '{expected}'")
        yield f"{shown}:{number}", m


def _concepts(doc: _Document, path: Path, shown: str) -> Iterator[tuple[str, str, tuple[int, int, int]]]:
    """(where, type, (line, start, end)) of each concept of a ``.con`` file."""
    for where, m in _annotations(path, shown, _CONCEPT, 'c="..." L:W L:W||t="type"'):
        yield where, m[6], doc.span(m, 1, where)


def read_i2b2_concepts(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """i2b2/VA 2010 concepts: ``<doc>.txt`` (one sentence per line, whitespace-tokenised) and
    ``<doc>.con`` lines ``c="text" line:word line:word||t="problem|test|treatment"`` (lines
    1-based, words 0-based, inclusive; each concept's text is checked against the words).
    Files are searched under ``path``, or under the comma-separated subfolders given as
    selector (the test release keeps texts and concepts in separate folders). Ids are
    ``<document>:<line>``."""
    roots = [s for s in (selector or "").split(",") if s]
    texts = _release_files(path, name, roots, ".txt")
    concepts = _release_files(path, name, roots, ".con")
    if not concepts:
        raise PipelineError(f"{name}: no .con concept files found")
    records = []
    for stem in sorted(concepts):
        if stem not in texts:
            raise PipelineError(f"{name}: {stem}.con has no matching {stem}.txt")
        doc = _Document(texts[stem], _shown(name, path, texts[stem]))
        words = [[(a, b) for a, b in spans if b > a] for spans in doc.tokens]
        tags = [["O"] * len(w) for w in words]
        for where, kind, (row, start, end) in _concepts(doc, concepts[stem], _shown(name, path, concepts[stem])):
            label = check_label(f"B-{kind}", spec, where)
            inside = [k for k, (a, b) in enumerate(words[row - 1]) if a >= start and b <= end]
            if not inside:
                raise PipelineError(f"{where}: the concept covers no word of line {row}")
            tags[row - 1][inside[0]] = label
            for k in inside[1:]:
                tags[row - 1][k] = f"I-{kind}"
        for number, (line, spans) in enumerate(zip(doc.lines, words, strict=True), start=1):
            if spans:
                records.append(
                    {"id": f"{stem}:{number}", "tokens": [line[a:b] for a, b in spans], "tags": tags[number - 1]}
                )
    return records


# i2b2/VA 2010 relations: which concept-type pairs can carry a relation (TrXP, TeXP, PIP).
_RELATION_PAIRS = {frozenset({"problem", "treatment"}), frozenset({"problem", "test"}), frozenset({"problem"})}


def _can_relate(a: dict, b: dict, all_pairs: bool) -> bool:
    return all_pairs or frozenset({a["type"], b["type"]}) in _RELATION_PAIRS


def _relation_labels(
    doc: _Document,
    path: Path,
    shown: str,
    cons: list[dict],
    index: dict[tuple[int, int, int], int],
    spec: TaskSpec,
    all_pairs: bool,
) -> dict[frozenset[int], list[str]]:
    """The annotated relations of a ``.rel`` file: pair of concept numbers -> its labels."""
    labels: dict[frozenset[int], list[str]] = {}
    for where, m in _annotations(path, shown, _RELATION, 'c="..." L:W L:W||r="type"||c="..." L:W L:W'):
        pair = []
        for first in (1, 7):
            key = doc.span(m, first, where)
            if key not in index:
                raise PipelineError(f"{where}: concept {m[first]!r} is not annotated in {Path(shown).stem}.con")
            pair.append(index[key])
        a, b = (cons[i] for i in pair)
        if a["line"] != b["line"] or pair[0] == pair[1] or not _can_relate(a, b, all_pairs):
            raise PipelineError(
                f"{where}: relation between a {a['type']} and a {b['type']} on lines {a['line']} and "
                f"{b['line']}; relations join two concepts of one sentence (problem with treatment, test or problem)"
            )
        labels.setdefault(frozenset(pair), []).append(check_label(m[6], spec, where))
    return labels


def read_i2b2_relations(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """i2b2/VA 2010 relations from the original release: ``<doc>.txt`` (one sentence per line,
    whitespace-tokenised), ``<doc>.con`` (``c="text" L:W L:W||t="problem"``) and ``<doc>.rel``
    (``c="text" L:W L:W||r="TrAP"||c="text" L:W L:W``), searched under ``path`` or under the
    comma-separated subfolders in the selector (the test release keeps texts apart).

    Instances are built as BLUE's create_i2b2_bert.py builds them: each pair of concepts on the
    same line, both replaced by @PROBLEM$/@TREATMENT$/@TEST$, labelled with its annotated
    relation (one instance per relation) or the task's negative label. Only pairs whose types
    can carry a relation (problem with treatment, test or problem) are kept; the selector item
    ``pairs=all`` keeps every pair, as BLUE's released TSVs do. Ids are
    ``<document>:<line>:<concept>-<concept>`` so dev hold-outs take whole documents."""
    items = [s for s in (selector or "").split(",") if s]
    options = {s for s in items if s.startswith("pairs=")}
    if options - {"pairs=all", "pairs=relation"}:
        raise PipelineError(f"{name}#{selector}: unknown option {sorted(options)[0]!r} (pairs=all or pairs=relation)")
    all_pairs = "pairs=all" in options
    roots = [s for s in items if s not in options]
    texts = _release_files(path, name, roots, ".txt")
    concepts = _release_files(path, name, roots, ".con")
    relations = _release_files(path, name, roots, ".rel")
    if not concepts:
        raise PipelineError(f"{name}: no .con concept files found")
    negative = spec.negative_label or "false"
    records = []
    for stem in sorted(concepts):
        for suffix, found in ((".txt", texts), (".rel", relations)):
            if stem not in found:
                raise PipelineError(f"{name}: {stem}.con has no matching {stem}{suffix}")
        doc = _Document(texts[stem], _shown(name, path, texts[stem]))
        cons: list[dict] = []
        index: dict[tuple[int, int, int], int] = {}
        for where, kind, key in _concepts(doc, concepts[stem], _shown(name, path, concepts[stem])):
            if kind not in ("problem", "test", "treatment"):
                raise PipelineError(f"{where}: concept type {kind!r} is not problem, test or treatment")
            index.setdefault(key, len(cons))
            cons.append({"line": key[0], "start": key[1], "end": key[2], "type": kind})
        labels = _relation_labels(
            doc, relations[stem], _shown(name, path, relations[stem]), cons, index, spec, all_pairs
        )
        for i, a in enumerate(cons):
            for j in range(i + 1, len(cons)):
                b = cons[j]
                if a["line"] != b["line"] or not _can_relate(a, b, all_pairs):
                    continue
                text, entities = dummify(doc.lines[a["line"] - 1], a, b)
                where = f"tasks.{spec.name}.negative_label"
                found = labels.get(frozenset({i, j})) or [check_label(negative, spec, where)]
                for k, label in enumerate(found, start=1):
                    suffix = f"~{k}" if k > 1 else ""
                    records.append(
                        {
                            "id": f"{stem}:{a['line']}:{i}-{j}{suffix}",
                            "text": text,
                            "label": label,
                            "entities": entities,
                        }
                    )
    return records
