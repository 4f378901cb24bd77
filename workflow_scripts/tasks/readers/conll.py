"""Token-tagging formats: CoNLL-style TSV (BioBERT, MTL-Bioinformatics-2016 and BLURB NER releases)
and the EBM-NLP release (EBM-PICO)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from ...errors import PipelineError
from ...textfile import read_text
from ..spec import TaskSpec
from .common import Record, check_label, numbered_lines

_TAG = re.compile(r"^(?:O|[BIES](?:-.+)?)$")


@cache
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
    return check_label(f"{prefix}-{kind}", spec, where)


def read_conll(
    path: Path, spec: TaskSpec, *, name: str, selector: str | None = None, untyped: bool = False
) -> list[Record]:
    """CoNLL-style token/tag TSV (MTL-Bioinformatics-2016, BioBERT and BLURB NER releases):
    one ``token<TAB>tag`` per line (extra middle columns ignored), a blank line between
    sentences. ``-DOCSTART-`` lines (JNLPBA) start a document: they are no tokens, and the
    sentences of a release that has them get ids ``<file>-doc<k>:<n>``, so hold-outs take whole
    documents. Untyped tags (``B``/``I``) get the task's single entity type; IOBES tags are
    converted to BIO. ``untyped`` drops the source's entity types (JNLPBA as BLURB and Lewis
    et al. score it: one mention class)."""
    records: list[Record] = []
    tokens: list[str] = []
    tags: list[str] = []
    stem = Path(name).stem
    lines = list(numbered_lines(path, name))
    documents = -1 if any(line.startswith("-DOCSTART-") for _, line in lines) else None

    def flush() -> None:
        if tokens:
            n = len(records)
            record_id = f"{stem}-{n}" if documents is None else f"{stem}-doc{max(documents, 0)}:{n}"
            records.append({"id": record_id, "tokens": list(tokens), "tags": list(tags)})
            tokens.clear()
            tags.clear()

    for number, line in lines:
        if not line.strip():
            flush()
            continue
        if line.startswith("-DOCSTART-"):
            flush()
            documents += 1
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


def read_conll_untyped(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """CoNLL token/tag TSV whose entity types are replaced by the task's single type."""
    return read_conll(path, spec, name=name, selector=selector, untyped=True)


PICO_ELEMENTS = (("participants", "PAR"), ("interventions", "INT"), ("outcomes", "OUT"))
# A word inside two elements keeps the more specific, usually nested one.
PICO_PRIORITY = ("INT", "OUT", "PAR")


def read_ebm_nlp(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
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
        words = read_text(token_file, f"{name}/documents/{pmid}.tokens").split()
        marks: dict[str, list[bool]] = {}
        for folder, short in PICO_ELEMENTS:
            ann = spans / folder / selector / f"{pmid}.AGGREGATED.ann"
            shown = f"{name}/{ann.relative_to(path)}"
            if not ann.is_file():
                raise PipelineError(f"{shown}: missing; every abstract needs all three PIO files")
            labels = read_text(ann, shown).split()
            if len(labels) != len(words):
                raise PipelineError(f"{shown}:1: {len(labels)} labels for the {len(words)} words of {pmid}.tokens")
            if not all(x.isdigit() for x in labels):
                bad = next(x for x in labels if not x.isdigit())
                raise PipelineError(f"{shown}:1: label {bad!r} is not a number")
            marks[short] = [x != "0" for x in labels]
        tags = []
        for i in range(len(words)):
            tag = next((t for t in PICO_PRIORITY if marks[t][i]), "O")
            tags.append(check_label(tag, spec, f"{name}/documents/{pmid}.tokens"))
        records.append({"id": pmid, "tokens": words, "tags": tags})
    return records
