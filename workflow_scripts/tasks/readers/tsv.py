"""Classification TSVs: BLUE's relation, HoC and BIOSSES files and BioBERT's GAD/EU-ADR folds."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

from ...errors import PipelineError
from ..spec import TaskSpec
from .common import Record, check_label, header_columns, tsv_rows

_PLACEHOLDER = re.compile(r"@[A-Za-z][A-Za-z_-]*\$")


def _relation_rows(path: Path, spec: TaskSpec, name: str, quoted: bool) -> list[Record]:
    """Relation TSV with dummified entities: an optional ``index<TAB>sentence<TAB>label``
    header, rows ``index<TAB>sentence<TAB>label`` or ``sentence<TAB>label``. Entity
    placeholders (``@CHEMICAL$``, ``@GENE$``, ``@DRUG$``...) are kept and located. A pair
    listed again (one pair, two relations) keeps every row; repeats get ids ``<index>~2``, ...."""
    records: list[Record] = []
    columns: dict[str, int] | None = None
    stem = Path(name).stem
    seen: dict[str, int] = {}
    for number, parts in tsv_rows(path, name, quoted=quoted):
        where = f"{name}:{number}"
        if number == 1:
            columns = header_columns(parts, ("sentence", "label"))
            if columns is not None:
                continue
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
        entities = [{"start": m.start(), "end": m.end(), "type": m.group(0)[1:-1]} for m in _PLACEHOLDER.finditer(text)]
        index = index.strip()
        seen[index] = seen.get(index, 0) + 1
        records.append(
            {
                "id": index if seen[index] == 1 else f"{index}~{seen[index]}",
                "text": text,
                "label": check_label(label, spec, where),
                "entities": entities,
            }
        )
    return records


def read_blue_tsv(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """BLUE's relation TSVs (ChemProt, DDI, i2b2-2010 relations), written with csv.writer:
    a sentence holding a quote char or tab is quoted, its quotes doubled."""
    return _relation_rows(path, spec, name, quoted=True)


def read_biobert_tsv(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """BioBERT's relation folds (GAD, EU-ADR): one row per line, never quoted (quotes are text)."""
    return _relation_rows(path, spec, name, quoted=False)


def read_hoc(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """Hallmarks of Cancer TSV as BLUE and BLURB ship it (csv.writer, quoted where needed):
    ``labels<TAB>sentence<TAB>index`` with ``index`` = ``<PMID>_<sentence>`` and ``labels``
    either hallmark names or ``<k>_<0|1>`` flags for the k-th label, comma-separated.
    Sentences are joined into one record per abstract whose labels are the union of its
    sentences' labels."""
    docs: OrderedDict[str, dict] = OrderedDict()
    columns = {"labels": 0, "sentence": 1, "index": 2}
    for number, parts in tsv_rows(path, name, quoted=True):
        where = f"{name}:{number}"
        if number == 1:
            header = header_columns(parts, ("labels", "sentence", "index"))
            if header is not None:
                columns = header
                continue
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
                labels.add(check_label(item, spec, where))
        doc = docs.setdefault(index.split("_", 1)[0], {"sentences": [], "labels": set()})
        doc["sentences"].append(sentence)
        doc["labels"] |= labels
    order = {label: i for i, label in enumerate(spec.labels)}
    return [
        {
            "id": doc_id,
            "text": " ".join(d["sentences"]),
            "labels": sorted(d["labels"], key=lambda x: (order.get(x, len(order)), x)),
        }
        for doc_id, d in docs.items()
    ]


def read_biosses(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """BIOSSES as BLUE ships it (the STS-B TSV layout, written by pandas ``to_csv``: a
    sentence holding a tab or quote char is quoted): a header naming at least ``sentence1``,
    ``sentence2`` and ``score`` (others such as ``index``, ``genre`` ignored); the score is
    the mean of five annotators on 0-4."""
    records: list[Record] = []
    columns: dict[str, int] | None = None
    stem = Path(name).stem
    for number, parts in tsv_rows(path, name, quoted=True):
        where = f"{name}:{number}"
        if columns is None:
            columns = header_columns(parts, ("sentence1", "sentence2", "score"))
            if columns is None:
                raise PipelineError(f"{where}: expected a header with sentence1, sentence2 and score")
            continue
        if len(parts) != len(columns):
            raise PipelineError(f"{where}: expected {len(columns)} tab-separated columns, got {len(parts)}")
        try:
            score = float(parts[columns["score"]])
        except ValueError:
            raise PipelineError(f"{where}: score {parts[columns['score']]!r} is not a number") from None
        index = parts[columns["index"]].strip() if "index" in columns else f"{stem}-{number}"
        records.append(
            {
                "id": index,
                "text_a": parts[columns["sentence1"]].strip(),
                "text_b": parts[columns["sentence2"]].strip(),
                "score": score,
            }
        )
    if columns is None:
        raise PipelineError(f"{name}:1: empty file; expected a header with sentence1, sentence2 and score")
    return records
