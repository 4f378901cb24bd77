"""Which artifacts of a study derive from credentialed data, computed from the study's graph.

The mark follows the data, never a key a user can forget: a MIMIC-III corpus is restricted
whether or not it says ``restricted: true``, and so is a credentialed task and everything
built from either: corpus -> vocabulary -> model (pretrained, continued, distilled) ->
fine-tuning run -> table cell and plot label.
"""

from __future__ import annotations

from dataclasses import dataclass

from .study import Study


@dataclass(frozen=True)
class Restricted:
    corpora: frozenset[str]
    vocabularies: frozenset[str]
    models: frozenset[str]
    tasks: frozenset[str]


def restricted(study: Study) -> Restricted:
    """The restricted corpora, vocabularies, models and tasks of ``study``."""
    corpora = frozenset(name for name, c in study.corpora.items() if c.restricted or c.type == "mimic")
    vocabs = frozenset(name for name, v in study.vocabularies.items() if corpora.intersection(v.corpora))
    # the registry marks credentialed tasks (i2b2, MedNLI); a registration alone (BioASQ) is no restriction
    tasks = frozenset(name for name, rt in study.resolved_tasks.items() if rt.spec.restricted)
    models: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> bool:
        m = study.models.get(name)
        if m is None or name in path:  # a local directory or hub id; cycles are refused at validation
            return False
        if m.kind == "external":
            return m.restricted
        parents = [p for p in (m.init, m.teacher) if p]
        return (
            bool(corpora.intersection(m.corpora)) or m.vocab in vocabs or any(visit(p, (*path, name)) for p in parents)
        )

    for name in study.models:
        if visit(name, ()):
            models.add(name)
    # a model trained once per pretraining seed is reported under its own name, its seeds pooled
    models |= {name for name, seeds in study.seeded.items() if models.intersection(seeds)}
    return Restricted(corpora, vocabs, frozenset(models), tasks)
