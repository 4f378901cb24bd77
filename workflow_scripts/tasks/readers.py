"""Readers of the benchmark tasks' canonical distribution formats.

Each reader turns one split file (or directory) into normalised records of the task's type
(see ``spec.py``). ``name`` is how the file is shown in errors (an archive member is shown
inside its archive), so a malformed line is reported as ``name:line``. ``selector`` is the
part after ``#`` in a split path, for formats where one directory holds several splits.
"""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Optional

from ..errors import PipelineError
from ..jsonl import parse_lines
from .spec import TaskSpec

Record = dict
Reader = Callable[..., list[Record]]

_TAG = re.compile(r"^(?:O|[BIES](?:-.+)?)$")
_PLACEHOLDER = re.compile(r"@[A-Za-z][A-Za-z_-]*\$")


def _text(path: Path, name: str) -> str:
    """The file's text exactly as stored (no newline translation: i2b2 offsets count every
    character); undecodable bytes are reported with their line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PipelineError(f"{name}:{line}: not valid UTF-8 text") from exc


def _lines(path: Path, name: str) -> Iterator[tuple[int, str]]:
    lines = _text(path, name).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # Only newlines end a line: str.splitlines would also split on form feeds or U+2028
    # inside a sentence and shift every later line number.
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip("\r")


def _check_label(label: str, spec: TaskSpec, where: str) -> str:
    if spec.labels and label not in spec.labels:
        raise PipelineError(
            f"{where}: label {label!r} is not one of the task's labels "
            f"({', '.join(spec.labels)}); fix the file or the registry's labels"
        )
    return label


# --------------------------------------------------------------------------- token tagging

@lru_cache(maxsize=None)
def _types(labels: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({t[2:] for t in labels if t[:2] in ("B-", "I-")}))


def _entity_type(spec: TaskSpec, where: str) -> str:
    types = _types(tuple(spec.labels))
    if len(types) != 1:
        raise PipelineError(
            f"{where}: untyped tag, but the task's labels name {len(types)} entity types; "
            "list exactly one type in labels (e.g. O, B-Disease, I-Disease)"
        )
    return types[0]


def _normalise_tag(tag: str, spec: TaskSpec, where: str) -> str:
    if not _TAG.match(tag):
        raise PipelineError(f"{where}: {tag!r} is not a BIO/IOBES tag (O, B-Type, I-Type, B, I)")
    if tag == "O":
        return tag
    prefix, _, kind = tag.partition("-")
    kind = kind or _entity_type(spec, where)
    # IOBES sources: a single-token entity starts an entity, an end token continues one.
    prefix = {"S": "B", "E": "I"}.get(prefix, prefix)
    return _check_label(f"{prefix}-{kind}", spec, where)


def read_conll(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None,
               untyped: bool = False) -> list[Record]:
    """CoNLL-style token/tag TSV (MTL-Bioinformatics-2016, BioBERT and BLURB NER releases):
    one ``token<TAB>tag`` per line (extra middle columns ignored), a blank line between
    sentences, ``-DOCSTART-`` lines skipped. Untyped tags (``B``/``I``) get the task's single
    entity type; IOBES tags are converted to BIO. ``untyped`` drops the source's entity types
    (JNLPBA as BLURB and Lewis et al. score it: one mention class)."""
    records: list[Record] = []
    tokens: list[str] = []
    tags: list[str] = []
    stem = Path(name).stem

    def flush() -> None:
        if tokens:
            records.append({"id": f"{stem}-{len(records)}", "tokens": list(tokens), "tags": list(tags)})
            tokens.clear()
            tags.clear()

    for number, line in _lines(path, name):
        if not line.strip():
            flush()
            continue
        if line.startswith("-DOCSTART-"):
            flush()
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        where = f"{name}:{number}"
        if len(parts) < 2 or not parts[0].strip() or not parts[-1].strip():
            raise PipelineError(f"{where}: expected 'token<TAB>tag', got {line!r}")
        tag = parts[-1].strip()
        if untyped and tag[:2] in ("B-", "I-", "E-", "S-"):
            tag = tag[0]
        tokens.append(parts[0].strip())
        tags.append(_normalise_tag(tag, spec, where))
    flush()
    return records


def read_conll_untyped(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """CoNLL token/tag TSV whose entity types are replaced by the task's single type."""
    return read_conll(path, spec, name=name, selector=selector, untyped=True)


PICO_ELEMENTS = (("participants", "PAR"), ("interventions", "INT"), ("outcomes", "OUT"))
# A word inside two elements keeps the more specific, usually nested one.
PICO_PRIORITY = ("INT", "OUT", "PAR")


def read_ebm_nlp(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """EBM-NLP 2.0 release (EBM-PICO): ``documents/<PMID>.tokens`` holds the words of an
    abstract; ``annotations/aggregated/starting_spans/<element>/<selector>/<PMID>.AGGREGATED.ann``
    one label per word (0 = outside) for each of participants, interventions, outcomes.
    ``selector`` is the annotation subset: ``train`` or ``test/gold``. One record per abstract
    with word-level tags PAR, INT, OUT or O."""
    if not selector:
        raise PipelineError(f"{name}: EBM-NLP split paths need a subset, e.g. '{name}#train'")
    spans = path / "annotations" / "aggregated" / "starting_spans"
    first = spans / PICO_ELEMENTS[0][0] / selector
    if not first.is_dir():
        raise PipelineError(f"{name}#{selector}: no annotation folder {first.relative_to(path)}")
    pmids = sorted((p.name.split(".")[0] for p in first.glob("*.ann")), key=lambda s: (len(s), s))
    records = []
    for pmid in pmids:
        token_file = path / "documents" / f"{pmid}.tokens"
        if not token_file.is_file():
            raise PipelineError(f"{name}/documents/{pmid}.tokens: missing (annotated in {selector})")
        words = _text(token_file, f"{name}/documents/{pmid}.tokens").split()
        marks: dict[str, list[bool]] = {}
        for folder, short in PICO_ELEMENTS:
            ann = spans / folder / selector / f"{pmid}.AGGREGATED.ann"
            shown = f"{name}/{ann.relative_to(path)}"
            if not ann.is_file():
                raise PipelineError(f"{shown}: missing; every abstract needs all three PIO files")
            labels = _text(ann, shown).split()
            if len(labels) != len(words):
                raise PipelineError(
                    f"{shown}:1: {len(labels)} labels for the {len(words)} words of {pmid}.tokens"
                )
            if not all(x.isdigit() for x in labels):
                bad = next(x for x in labels if not x.isdigit())
                raise PipelineError(f"{shown}:1: label {bad!r} is not a number")
            marks[short] = [x != "0" for x in labels]
        tags = []
        for i in range(len(words)):
            tag = next((t for t in PICO_PRIORITY if marks[t][i]), "O")
            tags.append(_check_label(tag, spec, f"{name}/documents/{pmid}.tokens"))
        records.append({"id": pmid, "tokens": words, "tags": tags})
    return records


# --------------------------------------------------------------------------- TSV classification

def _header(line: str, required: tuple[str, ...]) -> Optional[dict[str, int]]:
    cols = [c.strip().lower() for c in line.split("\t")]
    if all(r in cols for r in required):
        return {c: i for i, c in enumerate(cols)}
    return None


def read_blue_tsv(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """BLUE-style relation TSV with dummified entities (ChemProt, DDI, i2b2-2010 relations;
    GAD and EU-ADR folds as BioBERT ships them): an optional ``index<TAB>sentence<TAB>label``
    header, rows ``index<TAB>sentence<TAB>label`` or ``sentence<TAB>label``. Entity
    placeholders (``@CHEMICAL$``, ``@GENE$``, ``@DRUG$``...) are kept and located. A pair
    listed again (one pair, two relations) keeps every row; repeats get ids ``<index>~2``, ...."""
    records: list[Record] = []
    columns: Optional[dict[str, int]] = None
    stem = Path(name).stem
    seen: dict[str, int] = {}
    for number, line in _lines(path, name):
        where = f"{name}:{number}"
        if not line.strip():
            continue
        if number == 1:
            columns = _header(line, ("sentence", "label"))
            if columns is not None:
                continue
        parts = line.split("\t")
        if columns is not None:
            if len(parts) != len(columns):
                raise PipelineError(f"{where}: expected {len(columns)} tab-separated columns, got {len(parts)}")
            index = parts[columns["index"]] if "index" in columns else f"{stem}-{number}"
            text, label = parts[columns["sentence"]], parts[columns["label"]]
        elif len(parts) == 3:
            index, text, label = parts
        elif len(parts) == 2:
            (text, label), index = parts, f"{stem}-{number}"
        else:
            raise PipelineError(f"{where}: expected 'sentence<TAB>label' or 'index<TAB>sentence<TAB>label'")
        label = label.strip()
        if not text.strip() or not label:
            raise PipelineError(f"{where}: empty sentence or label")
        entities = [
            {"start": m.start(), "end": m.end(), "type": m.group(0)[1:-1]}
            for m in _PLACEHOLDER.finditer(text)
        ]
        index = index.strip()
        seen[index] = seen.get(index, 0) + 1
        records.append({
            "id": index if seen[index] == 1 else f"{index}~{seen[index]}", "text": text,
            "label": _check_label(label, spec, where), "entities": entities,
        })
    return records


def read_hoc(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """Hallmarks of Cancer TSV as BLUE and BLURB ship it: ``labels<TAB>sentence<TAB>index``
    with ``index`` = ``<PMID>_<sentence>`` and ``labels`` either hallmark names or
    ``<k>_<0|1>`` flags for the k-th label, comma-separated. Sentences are joined into one
    record per abstract whose labels are the union of its sentences' labels."""
    docs: "OrderedDict[str, dict]" = OrderedDict()
    columns = {"labels": 0, "sentence": 1, "index": 2}
    for number, line in _lines(path, name):
        where = f"{name}:{number}"
        if not line.strip():
            continue
        if number == 1:
            header = _header(line, ("labels", "sentence", "index"))
            if header is not None:
                columns = header
                continue
        parts = line.split("\t")
        if len(parts) != max(columns.values()) + 1:
            raise PipelineError(f"{where}: expected 'labels<TAB>sentence<TAB>index', got {len(parts)} columns")
        raw, sentence, index = (parts[columns[k]].strip() for k in ("labels", "sentence", "index"))
        if "_" not in index:
            raise PipelineError(f"{where}: index {index!r} is not '<document>_<sentence>'")
        labels = set()
        for item in filter(None, (x.strip() for x in raw.split(","))):
            flag = re.fullmatch(r"(\d+)_([01])", item)
            if flag:
                k = int(flag.group(1))
                if k >= len(spec.labels):
                    raise PipelineError(f"{where}: label flag {item!r} but the task lists {len(spec.labels)} labels")
                if flag.group(2) == "1":
                    labels.add(spec.labels[k])
            else:
                labels.add(_check_label(item, spec, where))
        doc = docs.setdefault(index.split("_", 1)[0], {"sentences": [], "labels": set()})
        doc["sentences"].append(sentence)
        doc["labels"] |= labels
    order = {label: i for i, label in enumerate(spec.labels)}
    return [
        {"id": doc_id, "text": " ".join(d["sentences"]),
         "labels": sorted(d["labels"], key=lambda x: (order.get(x, len(order)), x))}
        for doc_id, d in docs.items()
    ]


def read_biosses(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """BIOSSES as BLUE ships it (the STS-B TSV layout): a header naming at least
    ``sentence1``, ``sentence2`` and ``score`` (others such as ``index``, ``genre`` ignored);
    the score is the mean of five annotators on 0-4."""
    records: list[Record] = []
    columns: Optional[dict[str, int]] = None
    stem = Path(name).stem
    for number, line in _lines(path, name):
        where = f"{name}:{number}"
        if columns is None:
            columns = _header(line, ("sentence1", "sentence2", "score"))
            if columns is None:
                raise PipelineError(f"{where}: expected a header with sentence1, sentence2 and score")
            continue
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != len(columns):
            raise PipelineError(f"{where}: expected {len(columns)} tab-separated columns, got {len(parts)}")
        try:
            score = float(parts[columns["score"]])
        except ValueError:
            raise PipelineError(f"{where}: score {parts[columns['score']]!r} is not a number") from None
        index = parts[columns["index"]].strip() if "index" in columns else f"{stem}-{number}"
        records.append({
            "id": index, "text_a": parts[columns["sentence1"]].strip(),
            "text_b": parts[columns["sentence2"]].strip(), "score": score,
        })
    if columns is None:
        raise PipelineError(f"{name}:1: empty file; expected a header with sentence1, sentence2 and score")
    return records


# --------------------------------------------------------------------------- JSON formats

def _load_json(path: Path, name: str):
    try:
        return json.loads(_text(path, name))
    except json.JSONDecodeError as exc:
        raise PipelineError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg})") from exc


def _json_where(path: Path, name: str, key: str) -> str:
    """``name:line`` of the line naming ``key``; searched only when there is an error to report."""
    needle = json.dumps(key)
    for number, line in enumerate(_text(path, name).split("\n"), start=1):
        if needle in line:
            return f"{name}:{number}"
    return f"{name}:1"


def _json_label(label: str, spec: TaskSpec, path: Path, name: str, key: str) -> str:
    if spec.labels and label not in spec.labels:
        _check_label(label, spec, _json_where(path, name, key))
    return label


def read_pubmedqa(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """PubMedQA JSON (ori_pqal.json and the split files): an object mapping PMID to
    ``{"QUESTION", "CONTEXTS": [...], "final_decision": yes|no|maybe, ...}``. The selector
    ``in:<file>`` or ``notin:<file>`` keeps the PMIDs that are (not) keys of another JSON
    object in the same folder (``test_ground_truth.json`` names the 500 test questions)."""
    data = _load_json(path, name)
    if not isinstance(data, dict):
        raise PipelineError(f"{name}:1: expected a JSON object mapping PMID to a question")
    if selector:
        mode, _, other = selector.partition(":")
        if mode not in ("in", "notin") or not other:
            raise PipelineError(f"{name}#{selector}: selector must be 'in:<file>' or 'notin:<file>'")
        ids = _load_json(path.parent / other, str(Path(name).parent / other))
        if not isinstance(ids, dict):
            raise PipelineError(f"{Path(name).parent / other}:1: expected a JSON object keyed by PMID")
        data = {k: v for k, v in data.items() if (k in ids) == (mode == "in")}
    records = []
    for pmid, item in data.items():
        if not isinstance(item, dict):
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid} is not an object")
        missing = [k for k in ("QUESTION", "CONTEXTS", "final_decision") if k not in item]
        if missing:
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid} lacks {missing[0]!r}")
        if not isinstance(item["CONTEXTS"], list):
            raise PipelineError(f"{_json_where(path, name, pmid)}: entry {pmid}: CONTEXTS must be a list of passages")
        label = str(item["final_decision"]).strip().lower()
        records.append({
            "id": str(pmid), "question": str(item["QUESTION"]).strip(),
            "context": " ".join(str(c).strip() for c in item["CONTEXTS"]),
            "label": _json_label(label, spec, path, name, pmid),
        })
    return records


def read_bioasq(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """BioASQ Task B JSON: ``{"questions": [{"id", "body", "type", "exact_answer",
    "snippets": [{"text"}, ...]}, ...]}``; the yes/no questions, each with its snippets
    joined as the context."""
    data = _load_json(path, name)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise PipelineError(f"{name}:1: expected a JSON object with a 'questions' list")
    records = []
    for i, q in enumerate(data["questions"]):
        if not isinstance(q, dict) or q.get("type") != "yesno":
            continue
        qid = str(q.get("id", i))
        missing = [k for k in ("body", "exact_answer", "snippets") if k not in q]
        if missing:
            raise PipelineError(f"{_json_where(path, name, qid)}: question {qid} lacks {missing[0]!r}")
        answer = q["exact_answer"]
        answer = answer[0] if isinstance(answer, list) and answer else answer
        label = str(answer).strip().lower()
        context = " ".join(str(s.get("text", "")).strip() for s in q["snippets"] if isinstance(s, dict))
        records.append({
            "id": qid, "question": str(q["body"]).strip(), "context": context,
            "label": _json_label(label, spec, path, name, qid),
        })
    return records


def read_mednli(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
    """MedNLI JSONL (the SNLI layout): one object per line with ``sentence1``, ``sentence2``,
    ``gold_label`` and ``pairID``."""
    records = []
    for number, item in parse_lines(_lines(path, name), name):
        where = f"{name}:{number}"
        missing = [k for k in ("sentence1", "sentence2", "gold_label") if k not in item]
        if missing:
            raise PipelineError(f"{where}: missing {missing[0]!r}")
        records.append({
            "id": str(item.get("pairID", f"{Path(name).stem}-{number}")),
            "text_a": item["sentence1"], "text_b": item["sentence2"],
            "label": _check_label(str(item["gold_label"]), spec, where),
        })
    return records


# --------------------------------------------------------------------------- i2b2 clinical NER

def _words_with_tags(line: str, char_tags: list[str]) -> tuple[list[str], list[str]]:
    """Whitespace words of ``line``; a word takes the tag of its first tagged character."""
    words, tags = [], []
    for m in re.finditer(r"\S+", line):
        inside = [t for t in char_tags[m.start():m.end()] if t != "O"]
        words.append(m.group(0))
        tags.append(inside[0] if inside else "O")
    return words, tags


def _tag_line(raw: str, tag_id: str) -> int:
    at = raw.find(f'id="{tag_id}"')
    return raw.count("\n", 0, at) + 1 if at >= 0 else 1


def _xml_documents(path: Path) -> list[Path]:
    return sorted(path.rglob("*.xml")) if path.is_dir() else [path]


def read_i2b2_xml(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
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
        raw = _text(doc, shown)
        start = raw.find("<![CDATA[")
        end = raw.find("]]>", start)
        if start < 0 or end < 0:
            raise PipelineError(f"{shown}:1: no <TEXT><![CDATA[...]]></TEXT> section")
        text = raw[start + len("<![CDATA["):end]
        # The text may hold characters XML forbids; parse the tags with the text cut out.
        try:
            root = ET.fromstring(raw[:start] + raw[end + 3:])
        except ET.ParseError as exc:
            raise PipelineError(f"{shown}:{exc.position[0]}: not well-formed XML ({exc})") from exc
        char_tags = ["O"] * len(text)
        tags = root.find("TAGS")
        for tag in (list(tags) if tags is not None else []):
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
            label = _check_label(f"B-{kind}", spec, where)
            char_tags[a] = label
            for i in range(a + 1, b):
                char_tags[i] = f"I-{kind}"
        offset = 0
        for number, line in enumerate(text.split("\n"), start=1):
            words, word_tags = _words_with_tags(line, char_tags[offset:offset + len(line)])
            offset += len(line) + 1
            if words:
                records.append({"id": f"{doc.stem}:{number}", "tokens": words, "tags": _bio(word_tags)})
    return records


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
        self.lines = _text(path, shown).split("\n")
        self.tokens = [_token_spans(line) for line in self.lines]

    def span(self, m: "re.Match[str]", first: int, where: str) -> tuple[int, int, int]:
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


def _annotations(path: Path, shown: str, pattern: "re.Pattern[str]", expected: str) -> Iterator[tuple[str, "re.Match[str]"]]:
    """(file:line, match) of each non-blank line of an i2b2 annotation file."""
    for number, line in _lines(path, shown):
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


def read_i2b2_concepts(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
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
            label = _check_label(f"B-{kind}", spec, where)
            inside = [k for k, (a, b) in enumerate(words[row - 1]) if a >= start and b <= end]
            if not inside:
                raise PipelineError(f"{where}: the concept covers no word of line {row}")
            tags[row - 1][inside[0]] = label
            for k in inside[1:]:
                tags[row - 1][k] = f"I-{kind}"
        for number, (line, spans) in enumerate(zip(doc.lines, words), start=1):
            if spans:
                records.append({"id": f"{stem}:{number}", "tokens": [line[a:b] for a, b in spans],
                                "tags": tags[number - 1]})
    return records


# i2b2/VA 2010 relations: which concept-type pairs can carry a relation (TrXP, TeXP, PIP).
_RELATION_PAIRS = {frozenset({"problem", "treatment"}), frozenset({"problem", "test"}), frozenset({"problem"})}


def _dummify(line: str, a: dict, b: dict) -> tuple[str, list[dict]]:
    """Replace two concepts by @TYPE$ placeholders (overlapping ones by one @TYPE1-TYPE2$, as
    BLUE does); return the text and the placeholders' spans in it."""
    first, second = sorted((a, b), key=lambda c: (c["start"], c["end"]))
    if second["start"] < first["end"]:
        kind = f"{a['type'].upper()}-{b['type'].upper()}"
        start, end = first["start"], max(first["end"], second["end"])
        text = f"{line[:start]}@{kind}$"
        return text + line[end:], [{"start": start, "end": len(text), "type": kind}]
    pieces, entities, last = [], [], 0
    for c in (first, second):
        pieces.append(line[last:c["start"]])
        at = sum(len(p) for p in pieces)
        placeholder = f"@{c['type'].upper()}$"
        pieces.append(placeholder)
        entities.append({"start": at, "end": at + len(placeholder), "type": c["type"].upper()})
        last = c["end"]
    pieces.append(line[last:])
    return "".join(pieces), entities


def _can_relate(a: dict, b: dict, all_pairs: bool) -> bool:
    return all_pairs or frozenset({a["type"], b["type"]}) in _RELATION_PAIRS


def _relation_labels(doc: _Document, path: Path, shown: str, cons: list[dict],
                     index: dict[tuple[int, int, int], int], spec: TaskSpec,
                     all_pairs: bool) -> dict[frozenset[int], list[str]]:
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
        labels.setdefault(frozenset(pair), []).append(_check_label(m[6], spec, where))
    return labels


def read_i2b2_relations(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
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
        labels = _relation_labels(doc, relations[stem], _shown(name, path, relations[stem]), cons, index,
                                  spec, all_pairs)
        for i, a in enumerate(cons):
            for j in range(i + 1, len(cons)):
                b = cons[j]
                if a["line"] != b["line"] or not _can_relate(a, b, all_pairs):
                    continue
                text, entities = _dummify(doc.lines[a["line"] - 1], a, b)
                found = labels.get(frozenset({i, j})) or [_check_label(negative, spec, f"tasks.{spec.name}.negative_label")]
                for k, label in enumerate(found, start=1):
                    suffix = f"~{k}" if k > 1 else ""
                    records.append({
                        "id": f"{stem}:{a['line']}:{i}-{j}{suffix}", "text": text,
                        "label": label, "entities": entities,
                    })
    return records


READERS: dict[str, Reader] = {
    "conll": read_conll,
    "conll_untyped": read_conll_untyped,
    "i2b2_xml": read_i2b2_xml,
    "i2b2_concepts": read_i2b2_concepts,
    "i2b2_relations": read_i2b2_relations,
    "ebm_nlp": read_ebm_nlp,
    "blue_tsv": read_blue_tsv,
    "hoc": read_hoc,
    "biosses": read_biosses,
    "pubmedqa": read_pubmedqa,
    "bioasq": read_bioasq,
    "mednli": read_mednli,
}


def get_reader(format: str, where: str = "format") -> Reader:
    try:
        return READERS[format]
    except KeyError:
        raise PipelineError(
            f"{where}: unknown task format {format!r}; known formats: {', '.join(sorted(READERS))}"
        ) from None
