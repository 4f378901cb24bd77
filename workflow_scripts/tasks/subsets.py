"""Split paths that take part of a source's records: ``holdout:``, ``index:`` and ``rows:``.

- ``holdout:<n or fraction>:<path>``: a fixed subset of that source's examples (by a hash of
  their ids, the same on every machine) as dev; a split reading the whole source leaves them
  out. Used where a release has no dev set, so nothing is ever chosen on test data.
- ``index:<index file>:<path>``: the documents an index file names, in its order (BLURB's
  ``indexing/HoC/train_pmid.tsv`` and the like: names separated by commas or newlines; a
  ``.txt`` or ``.xml`` ending is ignored, so a file name matches its document).
- ``rows:<start>-<end>:<path>``: records start..end-1 of the source in file order (an empty
  end runs to the last record): BLURB's GAD train and dev are rows 0-4261 and 4261- of
  BioBERT's fold-1 train.tsv.

Ids of the form ``<document>:<n>`` belong to that document, so hold-outs and indexes take
whole documents.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import PipelineError

KINDS = ("holdout", "index", "rows")


def parse(path: str) -> tuple[str, str, str]:
    """(kind, argument, source) of a split path; kind is "" when it reads the whole source."""
    kind, sep, rest = path.partition(":")
    if sep and kind in KINDS:
        argument, sep, source = rest.partition(":")
        if not sep or not argument or not source:
            raise PipelineError(f"split path {path!r}: expected '{kind}:<argument>:<path>'")
        return kind, argument, source
    return "", "", path


def document(record_id: str) -> str:
    return record_id.split(":", 1)[0]


def held_out(ids: list[str], amount: str, where: str) -> set[str]:
    """Ids of a fixed subset: ``amount`` documents (or that fraction of them), ranked by sha256."""
    try:
        value = float(amount)
    except ValueError:
        raise PipelineError(f"{where}: holdout amount {amount!r} is not a number or fraction") from None
    groups = sorted({document(i) for i in ids})
    n = int(round(value * len(groups))) if value < 1 else int(value)
    if not 0 < n < len(groups):
        raise PipelineError(f"{where}: holding out {n} of {len(groups)} examples leaves no train or no dev")
    ranked = sorted(groups, key=lambda g: hashlib.sha256(g.encode("utf-8")).hexdigest())
    chosen = set(ranked[:n])
    return {i for i in ids if document(i) in chosen}


def index_entries(text: str) -> list[str]:
    """The document names of an index file, extensions dropped."""
    names = (n.strip() for n in re.split(r"[,\n]", text))
    return [re.sub(r"\.(txt|xml)$", "", n) for n in names if n]


def by_index(records: list[dict], entries: list[str], index_name: str, source: str) -> list[dict]:
    """The records of the documents ``entries`` names, in the index's order. A record id read
    twice (one question in two BioASQ files) keeps its last reading, as BLURB's builder does."""
    latest = {r["id"]: r for r in records}
    docs: dict[str, list[dict]] = {}
    for r in latest.values():
        docs.setdefault(document(r["id"]), []).append(r)
    missing = [e for e in entries if e not in docs]
    if missing:
        raise PipelineError(
            f"{index_name}: {len(missing)} of its {len(entries)} documents are not in {source} (first: "
            f"{missing[0]!r}); the corpus download is not the one the index was made from"
        )
    return [r for e in entries for r in docs[e]]


def by_rows(records: list[dict], span: str, where: str) -> list[dict]:
    match = re.fullmatch(r"(\d+)-(\d*)", span)
    if not match:
        raise PipelineError(f"{where}: rows {span!r} is not '<start>-<end>' (end may be empty)")
    start, end = int(match[1]), int(match[2]) if match[2] else len(records)
    if not start < end <= len(records):
        raise PipelineError(f"{where}: rows {span} but the source has {len(records)} records")
    return records[start:end]
