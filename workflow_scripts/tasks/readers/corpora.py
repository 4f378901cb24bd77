"""The original corpora BLURB builds its own HoC and DDI splits from (its data generation's
``preprocessor.py``); which documents go to which split is chosen by BLURB's index files
(``index:`` split paths, see ``subsets.py``)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Optional

from ...errors import PipelineError
from ..spec import TaskSpec
from .common import Record, check_label, dummify, numbered_lines, read_text


def _hallmarks(segment: str, spec: TaskSpec, where: str) -> set[str]:
    """Top-level hallmarks of one sentence's label segment: ``Hallmark--sub-class`` items joined
    by ``AND``; ``NULL`` or nothing means no hallmark."""
    found = set()
    for item in segment.strip().rstrip(">").split("AND"):
        top = item.split("--", 1)[0].strip().lower()
        if top and top != "null":
            found.add(check_label(top, spec, where))
    return found


def read_hoc_corpus(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
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
        segments = read_text(label_file, shown).split("\n", 1)[0].split("<")[1:]
        if len(segments) < len(sentences):
            raise PipelineError(
                f"{shown}:1: {len(segments)} label segments for the {len(sentences)} sentences of "
                f"text/{text_file.name}"
            )
        labels: set[str] = set()
        for segment in segments[: len(sentences)]:
            labels |= _hallmarks(segment, spec, f"{shown}:1")
        records.append({
            "id": text_file.stem, "text": " ".join(s for s in sentences if s),
            "labels": sorted(labels, key=lambda x: (order.get(x, len(order)), x)),
        })
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


def read_ddi_xml(path: Path, spec: TaskSpec, *, name: str, selector: Optional[str] = None) -> list[Record]:
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
                    raise PipelineError(f"{where}: ddi=\"true\" but no type")
                a, b = sorted((spans[pair.get("e1")], spans[pair.get("e2")]))
                masked, entities = dummify(
                    text, {"start": a[0], "end": a[1], "type": "drug"}, {"start": b[0], "end": b[1], "type": "drug"}
                )
                records.append({
                    "id": f"{rel}:{pair.get('id')}", "text": masked,
                    "label": check_label(f"DDI-{kind}", spec, where), "entities": entities,
                })
    return records
