"""The original corpora BLURB builds its own HoC, DDI and ChemProt splits from (its data
generation's ``preprocessor.py``). BLURB's index files choose the HoC and DDI documents of each
split (``index:`` split paths, see ``subsets.py``); ChemProt keeps the corpus's own folders."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ...errors import PipelineError
from ...textfile import read_text
from ..spec import TaskSpec
from .common import Record, check_label, dummify, numbered_lines


def _hallmarks(segment: str, spec: TaskSpec, where: str) -> set[str]:
    """Top-level hallmarks of one sentence's label segment: ``Hallmark--sub-class`` items joined
    by ``AND``; ``NULL`` or nothing means no hallmark."""
    found = set()
    for item in segment.strip().rstrip(">").split("AND"):
        top = item.split("--", 1)[0].strip().lower()
        if top and top != "null":
            found.add(check_label(top, spec, where))
    return found


def read_hoc_corpus(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """The Hallmarks of Cancer corpus (Baker et al. 2016; github.com/sb895/Hallmarks-of-Cancer):
    ``text/<PMID>.txt`` holds an abstract's tokenised sentences, one per line; the single line of
    ``labels/<PMID>.txt`` one ``<...>`` segment per sentence. One record per abstract, abstracts
    without a hallmark included, with the union of its sentences' top-level hallmarks."""
    texts = path / "text"
    if not texts.is_dir() or not (path / "labels").is_dir():
        raise PipelineError(f"{name}: expected the corpus folders text/ and labels/")
    order = {label: i for i, label in enumerate(spec.labels)}
    records = []
    for text_file in sorted(texts.glob("*.txt"), key=lambda p: (len(p.stem), p.stem)):
        shown = f"{name}/labels/{text_file.name}"
        label_file = path / "labels" / text_file.name
        if not label_file.is_file():
            raise PipelineError(f"{shown}: missing; every abstract in text/ needs its labels")
        sentences = [line.strip() for _, line in numbered_lines(text_file, f"{name}/text/{text_file.name}")]
        if not any(sentences):
            raise PipelineError(f"{name}/text/{text_file.name}:1: empty; it should hold the abstract's sentences")
        segments = read_text(label_file, shown).split("\n", 1)[0].split("<")[1:]
        if len(segments) < len(sentences):
            raise PipelineError(
                f"{shown}:1: {len(segments)} label segments for the {len(sentences)} sentences of text/{text_file.name}"
            )
        labels: set[str] = set()
        for segment in segments[: len(sentences)]:
            labels |= _hallmarks(segment, spec, f"{shown}:1")
        records.append(
            {
                "id": text_file.stem,
                "text": " ".join(s for s in sentences if s),
                "labels": sorted(labels, key=lambda x: (order.get(x, len(order)), x)),
            }
        )
    if not records:
        raise PipelineError(f"{name}/text: no <PMID>.txt abstracts found")
    return records


def _span(offset: str, where: str) -> tuple[int, int]:
    """Character span of a DDI ``charOffset`` (``a-b`` or ``a-b;c-d``, ends inclusive): a
    discontinuous mention spans from its first start to its last end, as BLURB takes it."""
    numbers = re.findall(r"\d+", offset or "")
    if len(numbers) < 2:
        raise PipelineError(f"{where}: charOffset {offset!r} is not 'start-end'")
    return int(numbers[0]), int(numbers[-1]) + 1


def read_ddi_xml(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """The DDI 2013 corpus (Herrero-Zazo et al.): XML documents whose ``<sentence text>`` holds
    ``<entity id charOffset>`` drugs and ``<pair e1 e2 ddi type>`` candidate pairs. One record
    per pair, both drugs replaced by @DRUG$, labelled ``DDI-<type>`` or ``DDI-false``. Ids are
    ``<file path without .xml>:<pair id>`` so BLURB's index of files selects whole documents."""
    files = sorted(path.rglob("*.xml")) if path.is_dir() else [path]
    if not files:
        raise PipelineError(f"{name}: no DDI .xml documents found")
    records = []
    for file in files:
        rel = file.relative_to(path).with_suffix("").as_posix() if path.is_dir() else file.stem
        shown = f"{name}/{file.relative_to(path).as_posix()}" if path.is_dir() else name
        try:
            root = ET.fromstring(read_text(file, shown))
        except ET.ParseError as exc:
            raise PipelineError(f"{shown}:{exc.position[0]}: not well-formed XML ({exc})") from exc
        for sentence in root.iter("sentence"):
            text = re.sub(r"[\n\t\r]", " ", sentence.get("text", ""))
            spans = {
                e.get("id"): _span(e.get("charOffset", ""), f"{shown}: entity {e.get('id')}")
                for e in sentence.findall("entity")
            }
            for pair in sentence.findall("pair"):
                where = f"{shown}: pair {pair.get('id')}"
                if pair.get("e1") not in spans or pair.get("e2") not in spans:
                    raise PipelineError(f"{where} names an entity the sentence does not have")
                kind = pair.get("type") if pair.get("ddi") == "true" else "false"
                if not kind:
                    raise PipelineError(f'{where}: ddi="true" but no type')
                a, b = sorted((spans[pair.get("e1")], spans[pair.get("e2")]))
                masked, entities = dummify(
                    text, {"start": a[0], "end": a[1], "type": "drug"}, {"start": b[0], "end": b[1], "type": "drug"}
                )
                records.append(
                    {
                        "id": f"{rel}:{pair.get('id')}",
                        "text": masked,
                        "label": check_label(f"DDI-{kind}", spec, where),
                        "entities": entities,
                    }
                )
    return records


# Words after which a full stop does not end a sentence. BLURB's builder splits with NLTK's
# Punkt model, which learned its abbreviations from text; ours are fixed (see README).
_ABBREVIATIONS = {"al", "approx", "ca", "cf", "dr", "e.g", "eq", "etc", "fig", "figs", "i.e", "no", "ref", "resp", "vs"}
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s+[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a title and abstract: the tab between them ends one, and so does . ! or ?
    before white space and a capital or digit, unless it ends an abbreviation or an initial."""
    sentences = []
    for part in text.split("\t"):
        start = 0
        for m in _SENTENCE_END.finditer(part):
            before = part[start : m.start()].split()
            word = before[-1].lower() if before else ""
            if part[m.start()] == "." and (word in _ABBREVIATIONS or len(word) == 1):
                continue
            sentences.append(part[start : m.end()].strip())
            start = m.end()
        sentences.append(part[start:].strip())
    return [s for s in sentences if s]


def _chemprot_file(path: Path, name: str, kind: str) -> tuple[Path, str]:
    found = sorted(path.glob(f"*_{kind}*.tsv"))
    if len(found) != 1:
        raise PipelineError(f"{name}: expected one *_{kind}*.tsv file, found {len(found)}")
    return found[0], f"{name}/{found[0].name}"


def _chemprot_rows(path: Path, name: str, kind: str, columns: int) -> list[tuple[str, list[str]]]:
    file, shown = _chemprot_file(path, name, kind)
    rows = []
    for number, line in numbered_lines(file, shown):
        fields = line.split("\t")
        if not line.strip():
            continue
        if len(fields) < columns:
            raise PipelineError(f"{shown}:{number}: expected {columns} tab-separated columns, got {len(fields)}")
        rows.append((f"{shown}:{number}", fields))
    return rows


def read_chemprot_corpus(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """One folder of the BioCreative VI ChemProt corpus (``chemprot_training``, ...):
    ``*_abstracts*.tsv`` (PMID, title, abstract), ``*_entities*.tsv`` (PMID, T<n>, CHEMICAL or
    GENE-Y/GENE-N, start, end, text; offsets into title<TAB>abstract) and ``*_relations*.tsv``
    (PMID, CPR:<k>, Y/N, type, Arg1:T<n>, Arg2:T<m>). As BLURB builds it: every chemical-gene
    pair inside one sentence is an example, labelled with its CPR group when that is one of
    the task's labels, else the negative label; both mentions are masked (@CHEMICAL$, @GENE$)."""
    negative = spec.negative_label or "false"
    relations: dict[tuple[str, str, str], str] = {}
    for _where, f in _chemprot_rows(path, name, "relations", 6):
        label = f[1].strip() if f[1].strip() in spec.labels else negative
        relations[(f[0], f[4].split(":", 1)[-1], f[5].split(":", 1)[-1])] = label
    entities: dict[str, list[dict]] = {}
    for where, f in _chemprot_rows(path, name, "entities", 6):
        try:
            start, end = int(f[3]), int(f[4])
        except ValueError:
            raise PipelineError(f"{where}: offsets {f[3]!r}-{f[4]!r} are not numbers") from None
        kind = "chemical" if "CHEM" in f[2] else "gene"
        entities.setdefault(f[0], []).append({"id": f[1], "type": kind, "start": start, "end": end})
    records = []
    for where, f in _chemprot_rows(path, name, "abstracts", 2):
        pmid, text = f[0], "\t".join(f[1:])
        offset = 0
        for sentence in split_sentences(text):
            begin = text.find(sentence, offset)
            offset = begin + len(sentence)
            inside = [e for e in entities.get(pmid, []) if e["start"] >= begin and e["end"] <= offset]
            for chem in (e for e in inside if e["type"] == "chemical"):
                for gene in (e for e in inside if e["type"] == "gene"):
                    first, second = sorted((chem, gene), key=lambda e: e["start"])
                    label = relations.get((pmid, first["id"], second["id"])) or relations.get(
                        (pmid, second["id"], first["id"]), negative
                    )
                    local = [{**e, "start": e["start"] - begin, "end": e["end"] - begin} for e in (first, second)]
                    masked, spans = dummify(sentence, *local)
                    records.append(
                        {
                            "id": f"{pmid}.{first['id']}.{second['id']}",
                            "text": masked,
                            "label": check_label(label, spec, where),
                            "entities": spans,
                        }
                    )
    return records
