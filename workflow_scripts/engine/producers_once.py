"""The rules that can produce a file, looked up once per file rather than once per reader.

While the DAG is built, Snakemake asks its output index which rules produce each input of each
job (`OutputIndex.match_producers`): a prefix search over every rule's outputs and a regular
expression match per candidate rule. A file read by many jobs (a task's data, a model, the
settings of a model and task read by every seed's run) is looked up once per reading job:
about five lookups per job of the full study, a twentieth of its dry run. The answer depends
only on the file and the rules the index was built from, so each index keeps its answers; a
rebuilt index (Snakemake builds a new one when rules change) starts empty. `install()` is a
no-op on a Snakemake without `OutputIndex.match_producers`.
"""

from __future__ import annotations

from . import method_patch


def install(index_class: type | None = None) -> bool:
    """``index_class`` (Snakemake's `OutputIndex`) keeps each file's producers per index (once
    per process); False where the class lacks `match_producers`."""
    if index_class is None:
        from snakemake import output_index

        index_class = getattr(output_index, "OutputIndex", None)
    return method_patch.replace(index_class, "match_producers", _kept)


def _kept(plain):
    def match_producers(self, targetfile):
        try:
            kept = self._producers_kept
        except AttributeError:
            kept = self._producers_kept = {}
        try:
            return kept[targetfile]
        except KeyError:
            rules = kept[targetfile] = plain(self, targetfile)
            return rules

    return match_producers
