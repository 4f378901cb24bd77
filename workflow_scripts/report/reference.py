"""The published reference tables (tasks x models CSVs) and what their task names mean.

``LEWIS_TASKS`` gives the type and domain of every row of Lewis et al. Table 7 and
``BLURB_TASKS`` the type of every row of Gu et al. Table 6, so the published group means and
BLURB scores can be recomputed with the same functions that build our tables.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..errors import PipelineError
from .groups import ALL, CLASSIF, CLINICAL, PUBMED, SEQ_LAB, TaskKind

_P, _C = "pubmed", "clinical"
LEWIS_TASKS: dict[str, TaskKind] = {
    "BC5CDR-C.": TaskKind("ner", _P),
    "BC5CDR-D.": TaskKind("ner", _P),
    "JNLPBA": TaskKind("ner", _P),
    "NCBI-disease": TaskKind("ner", _P),
    "BC4CHEMD": TaskKind("ner", _P),
    "BC2GM": TaskKind("ner", _P),
    "LINNAEUS": TaskKind("ner", _P),
    "Species-800": TaskKind("ner", _P),
    "I2B2-2010": TaskKind("ner", _C),
    "I2B2-2012": TaskKind("ner", _C),
    "I2B2-2014": TaskKind("ner", _C),
    "HOC": TaskKind("doc_classification", _P),
    "ChemProt": TaskKind("relation", _P),
    "GAD": TaskKind("relation", _P),
    "EU-ADR": TaskKind("relation", _P),
    "DDI-2013": TaskKind("relation", _P),
    "I2B2-2010-RE": TaskKind("relation", _C),
    "MedNLI": TaskKind("nli", _C),
}
LEWIS_GROUP_ROWS = {
    SEQ_LAB: "Mean (Seq. Lab.)",
    CLASSIF: "Mean (Classif.)",
    PUBMED: "Mean (PubMed)",
    CLINICAL: "Mean (Clinical)",
    ALL: "Mean (all)",
}

BLURB_TASKS: dict[str, str] = {
    "BC5-chem": "ner",
    "BC5-disease": "ner",
    "NCBI-disease": "ner",
    "BC2GM": "ner",
    "JNLPBA": "ner",
    "EBM PICO": "pico",
    "ChemProt": "relation",
    "DDI": "relation",
    "GAD": "relation",
    "BIOSSES": "similarity",
    "HoC": "doc_classification",
    "PubMedQA": "qa",
    "BioASQ": "qa",
}
BLURB_SCORE_ROW = "BLURB score"


@dataclass
class ReferenceTable:
    """Published numbers (x100, as printed) by row (task or summary) and column (model)."""

    path: str
    values: dict[str, dict[str, float]]
    models: list[str]

    def get(self, row: str, model: str) -> float | None:
        return self.values.get(row, {}).get(model)

    def require_model(self, model: str, key: str) -> None:
        if model not in self.models:
            raise PipelineError(f"{key}: {model!r} is not a column of {self.path} (columns: {', '.join(self.models)})")

    def require_row(self, row: str, key: str) -> None:
        if row not in self.values:
            raise PipelineError(f"{key}: {row!r} is not a row of {self.path} (rows: {', '.join(self.values)})")


def read_reference(path: str | Path) -> ReferenceTable:
    """Read a reference CSV whose first column names the row and the others are models."""
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"{path}: reference table not found; fix reference: in the report settings")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2 or len(rows[0]) < 2:
        raise PipelineError(f"{path}: expected a header row 'task,MODEL,...' and one row per task")
    models = [m.strip() for m in rows[0][1:]]
    values: dict[str, dict[str, float]] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(models) + 1:
            raise PipelineError(f"{path}:{lineno}: expected {len(models) + 1} fields, got {len(row)}")
        cells = {}
        for model, cell in zip(models, row[1:], strict=True):
            try:
                cells[model] = float(cell)
            except ValueError:
                raise PipelineError(f"{path}:{lineno}: {cell!r} in column {model!r} is not a number") from None
        values[row[0].strip()] = cells
    return ReferenceTable(str(path), values, models)
