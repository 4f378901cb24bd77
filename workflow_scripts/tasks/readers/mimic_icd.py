"""MIMIC-III top-k ICD-9 coding as Mullenbach et al. (2018) build it (caml-mimic's
``dataproc_mimic_III`` notebook), from a credentialed MIMIC-III copy.

- Text: the notes of CATEGORY ``Discharge summary`` of one admission (addenda included) joined
  by a space in NOTEEVENTS order, as their stable sort by (SUBJECT_ID, HADM_ID) leaves them.
  Whitespace is normalised and each de-identification placeholder is one token (the MIMIC
  corpus's ``keep`` mode); their lower-casing and number dropping is their word vocabulary's tokenisation,
  left to each model's tokenizer here.
- Codes: DIAGNOSES_ICD and PROCEDURES_ICD codes with the decimal point put back (diagnoses
  after 3 characters, 4 for E codes; procedures after 2), read as text so leading zeros stay.
- Label set: the k codes assigned most often over every admission with a discharge summary
  (each code row counts; ties in order of first appearance, admissions ordered by SUBJECT_ID
  and HADM_ID, diagnoses before procedures). It must equal the task's labels.
- A split: the admissions its id file lists (one HADM_ID a line), each labelled with its codes
  among the top k. Their notebook drops a listed admission without such a code; here that, or a
  listed admission without a discharge summary, stops the build: the copy differs from theirs.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from ...corpus.mimic import BadRow, iter_notes
from ...errors import PipelineError
from ...textfile import text_lines
from ..spec import TaskSpec
from .common import Record, numbered_lines

NOTES = "NOTEEVENTS.csv.gz"
DIAGNOSES = "DIAGNOSES_ICD.csv.gz"
PROCEDURES = "PROCEDURES_ICD.csv.gz"
CODE_COLUMNS = ("SUBJECT_ID", "HADM_ID", "ICD9_CODE")
DISCHARGE = "Discharge summary"


def format_code(code: str, diagnosis: bool) -> str:
    """An ICD-9 code as MIMIC-III stores it (no point) with its decimal point put back."""
    code = code.strip().replace(".", "")
    if not diagnosis:
        return f"{code[:2]}.{code[2:]}"
    cut = 4 if code.startswith("E") else 3
    return f"{code[:cut]}.{code[cut:]}" if len(code) > cut else code


def _code_rows(path: Path) -> Iterator[tuple[int, str, str, str]]:
    """(line, SUBJECT_ID, HADM_ID, ICD9_CODE) of a DIAGNOSES_ICD or PROCEDURES_ICD file."""
    try:
        with gzip.open(path, "rb") as raw:
            reader = csv.reader(text_lines(raw, str(path)), strict=True)
            header = next(reader, [])
            missing = [c for c in CODE_COLUMNS if c not in header]
            if missing:
                raise PipelineError(
                    f"{path}:1: missing column(s) {', '.join(missing)}; expected the MIMIC-III columns "
                    "ROW_ID, SUBJECT_ID, HADM_ID, SEQ_NUM, ICD9_CODE"
                )
            at = [header.index(c) for c in CODE_COLUMNS]
            for row in reader:
                if len(row) != len(header):
                    raise PipelineError(f"{path}:{reader.line_num}: {len(row)} fields instead of {len(header)}")
                yield reader.line_num, *(row[i].strip() for i in at)
    except (EOFError, zlib.error, gzip.BadGzipFile, csv.Error) as exc:
        raise PipelineError(f"{path}: truncated or corrupt ({exc}); copy it again from your MIMIC-III release") from exc


def admission_codes(folder: Path) -> dict[str, list[str]]:
    """Formatted codes per HADM_ID: diagnoses, then procedures, each in file order (empty codes skipped)."""
    codes: dict[str, list[str]] = {}
    for name, diagnosis in ((DIAGNOSES, True), (PROCEDURES, False)):
        for _, _, hadm, code in _code_rows(folder / name):
            if code:
                codes.setdefault(hadm, []).append(format_code(code, diagnosis))
    return codes


def discharge_summaries(path: Path) -> dict[tuple[str, str], str]:
    """(SUBJECT_ID, HADM_ID) -> its discharge summary and addenda joined by a space."""
    texts: dict[tuple[str, str], list[str]] = {}
    for note in iter_notes(path, "keep"):
        if isinstance(note, BadRow):
            raise PipelineError(f"{path}:{note.line}: {note.reason}; copy the file again from your MIMIC-III release")
        if note.category == DISCHARGE and note.hadm_id.strip():
            texts.setdefault((note.subject_id.strip(), note.hadm_id.strip()), []).append(note.text)
    return {key: " ".join(parts) for key, parts in texts.items()}


def top_codes(admissions: list[tuple[str, str]], codes: dict[str, list[str]], k: int) -> list[str]:
    """The k codes assigned most often to ``admissions``, ties by first appearance (see the module)."""
    counts: Counter[str] = Counter()
    # numeric order of the ids (MIMIC-III ids have no leading zeros)
    for _, hadm in sorted(admissions, key=lambda a: (len(a[0]), a[0], len(a[1]), a[1])):
        counts.update(codes.get(hadm, []))
    return [code for code, _ in sorted(counts.items(), key=lambda item: -item[1])[:k]]


@lru_cache(maxsize=1)
def _build(folder: Path, labels: tuple[str, ...]) -> dict[str, tuple[str, list[str]]]:
    """HADM_ID -> (text, its codes among the top k) for every admission with a discharge summary."""
    codes = admission_codes(folder)
    notes = discharge_summaries(folder / NOTES)
    top = top_codes(list(notes), codes, len(labels))
    if set(top) != set(labels):
        extra, lost = sorted(set(top) - set(labels)), sorted(set(labels) - set(top))
        raise PipelineError(
            f"{folder}: the {len(labels)} most frequent codes of this MIMIC-III copy differ from the task's "
            f"labels (here but not listed: {', '.join(extra)}; listed but not here: {', '.join(lost)}); "
            "the split was made from MIMIC-III v1.4: point the task at that release"
        )
    keep = set(labels)
    order = {label: i for i, label in enumerate(labels)}
    return {
        hadm: (text, sorted(keep.intersection(codes.get(hadm, [])), key=order.__getitem__))
        for (_, hadm), text in notes.items()
    }


def _tables(path: Path, spec: TaskSpec) -> Path:
    """The folder holding the MIMIC-III tables: beside the split file (the workflow copies them
    there), else the user's copy."""
    folders = [Path(path).parent]
    if spec.source.local_dir:
        folders.append(Path(spec.source.local_dir).expanduser())
    for folder in folders:
        if all((folder / table).is_file() for table in (NOTES, DIAGNOSES, PROCEDURES)):
            return folder.resolve()
    raise PipelineError(
        f"task {spec.name}: {NOTES}, {DIAGNOSES} and {PROCEDURES} not all found in "
        f"{' or '.join(map(str, folders))}; set tasks.{spec.name}.source.local_dir to the folder of your "
        f"MIMIC-III copy ({spec.source.access or 'PhysioNet credentialed access'})"
    )


def read_mimic_icd(path: Path, spec: TaskSpec, *, name: str, selector: str | None = None) -> list[Record]:
    """One split: ``path`` lists its HADM_IDs (one a line, a ``HADM_ID`` header allowed)."""
    if not spec.labels:
        raise PipelineError(f"task {spec.name}: labels must list the codes of the label set")
    folder = _tables(path, spec)
    admissions = _build(folder, tuple(spec.labels))
    records = []
    for number, line in numbered_lines(path, name):
        hadm = line.strip()
        if not hadm or (number == 1 and hadm.upper() == "HADM_ID"):
            continue
        if not hadm.isdigit():
            raise PipelineError(f"{name}:{number}: {hadm!r} is not an admission id (HADM_ID)")
        if hadm not in admissions:
            raise PipelineError(f"{name}:{number}: admission {hadm} has no discharge summary in {folder / NOTES}")
        text, labels = admissions[hadm]
        if not labels:
            raise PipelineError(f"{name}:{number}: admission {hadm} has none of the task's {len(spec.labels)} codes")
        records.append({"id": hadm, "text": text, "labels": labels})
    return records
