"""Readers of the benchmark tasks' canonical distribution formats.

Each reader turns one split file (or directory) into normalised records of the task's type
(see ``spec.py``). ``name`` is how the file is shown in errors (an archive member is shown
inside its archive), so a malformed line is reported as ``name:line``. ``selector`` is the
part after ``#`` in a split path, for formats where one directory holds several splits.
Modules hold one format family each; every reader is importable from here.
"""

from __future__ import annotations

from ...errors import PipelineError
from .common import Reader, Record
from .conll import read_conll, read_conll_untyped, read_ebm_nlp
from .corpora import read_chemprot_corpus, read_ddi_xml, read_hoc_corpus
from .i2b2 import read_i2b2_concepts, read_i2b2_relations, read_i2b2_xml
from .json_formats import read_bioasq, read_mednli, read_pubmedqa
from .mimic_icd import read_mimic_icd
from .tsv import read_biobert_tsv, read_biosses, read_blue_tsv, read_hoc

__all__ = [
    "READERS",
    "Reader",
    "Record",
    "get_reader",
    "read_bioasq",
    "read_biobert_tsv",
    "read_biosses",
    "read_blue_tsv",
    "read_chemprot_corpus",
    "read_conll",
    "read_conll_untyped",
    "read_ddi_xml",
    "read_ebm_nlp",
    "read_hoc",
    "read_hoc_corpus",
    "read_i2b2_concepts",
    "read_i2b2_relations",
    "read_i2b2_xml",
    "read_mednli",
    "read_mimic_icd",
    "read_pubmedqa",
]

READERS: dict[str, Reader] = {
    "conll": read_conll,
    "conll_untyped": read_conll_untyped,
    "i2b2_xml": read_i2b2_xml,
    "i2b2_concepts": read_i2b2_concepts,
    "i2b2_relations": read_i2b2_relations,
    "ebm_nlp": read_ebm_nlp,
    "blue_tsv": read_blue_tsv,
    "biobert_tsv": read_biobert_tsv,
    "hoc": read_hoc,
    "hoc_corpus": read_hoc_corpus,
    "ddi_xml": read_ddi_xml,
    "chemprot_corpus": read_chemprot_corpus,
    "biosses": read_biosses,
    "pubmedqa": read_pubmedqa,
    "bioasq": read_bioasq,
    "mednli": read_mednli,
    "mimic_icd": read_mimic_icd,
}


def get_reader(format: str, where: str = "format") -> Reader:
    try:
        return READERS[format]
    except KeyError:
        raise PipelineError(
            f"{where}: unknown task format {format!r}; known formats: {', '.join(sorted(READERS))}"
        ) from None
