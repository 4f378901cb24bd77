"""Pretraining seeds: a model that lists ``pretrain_seeds`` becomes one model per seed.

Each seed's model is named ``<name>/pseed~<seed>`` (paths.PRETRAIN_SEED), trains with its
recipe's seed set to that seed, and has its own cached checkpoint, settings and fine-tuning runs,
so that adding a seed runs only that seed's jobs and a model without the key keeps its paths and
jobs. A model trained from a seeded one (``init`` or ``teacher``, or a decay branch) is seeded
the same way, seed by seed (MultiBERTs' pretraining seed is the seed of the whole chain); a
random-weight control and a vocabulary's diagnostics only copy its architecture or tokenizer,
which every seed shares, and read the first seed's. The study keeps which seeds belong to which
model (``Study.seeded``, ``Study.seed_of``) for the tables, which aggregate over them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .. import paths
from ..errors import PipelineError
from .seeds import check_seeds

if TYPE_CHECKING:
    from .study import ModelEntry, Study

TRAINED = ("pretrain", "distill")


def instance(model: str, seed: int) -> str:
    return paths.PRETRAIN_SEED.format(model=model, seed=seed)


def _parents(m: ModelEntry, models: dict) -> list[str]:
    return [p for p in (m.init, m.teacher) if p in models]


def resolve_seeds(study: Study) -> dict[str, list[int]]:
    """Each seeded model's seeds: its own, else its seeded parents' (which must agree)."""
    out: dict[str, list[int]] = {}

    def seeds_of(name: str) -> list[int] | None:
        if name in out:
            return out[name]
        m = study.models[name]
        own = m.pretrain_seeds
        if own is not None and m.kind not in TRAINED:
            raise PipelineError(f"models.{name}.pretrain_seeds: only models trained here (pretrain, distill) have them")
        if own is not None:
            check_seeds(f"models.{name}.pretrain_seeds", own)
        inherited = {tuple(s) for p in _parents(m, study.models) if (s := seeds_of(p))} if m.kind in TRAINED else set()
        if len(inherited) > 1 or (own is not None and inherited and tuple(own) not in inherited):
            raise PipelineError(
                f"models.{name}.pretrain_seeds: it is trained from seeded models, seed by seed; "
                f"give it their seeds ({', '.join(str(list(s)) for s in sorted(inherited))}) or none"
            )
        seeds = own or (list(next(iter(inherited))) if inherited else None)
        if seeds:
            out[name] = seeds
        return seeds

    for name in study.models:
        seeds_of(name)
    return out


def _seeded(m: ModelEntry, seed: int, seeded: dict[str, list[int]]) -> ModelEntry:
    """The model of one seed: its recipe's seed, and its seeded parents' models of that seed."""

    def parent(name: str | None) -> str | None:
        return instance(name, seed) if name in seeded else name

    recipe = {m.kind: dataclasses.replace(getattr(m, m.kind), seed=seed)}
    return dataclasses.replace(m, init=parent(m.init), teacher=parent(m.teacher), pretrain_seeds=None, **recipe)


def expand_pretrain_seeds(study: Study) -> None:
    """Replace every seeded model by its seeds' models, in place and in configuration order."""
    seeded = resolve_seeds(study)
    if not seeded:
        return
    models = {}
    for name, m in study.models.items():
        if name not in seeded:
            if m.init in seeded:  # a control copies the architecture and vocabulary
                m = dataclasses.replace(m, init=instance(m.init, seeded[m.init][0]))
            models[name] = m
            continue
        study.seeded[name] = [instance(name, s) for s in seeded[name]]
        for seed in seeded[name]:
            models[instance(name, seed)] = _seeded(m, seed, seeded)
            study.seed_of[instance(name, seed)] = (name, seed)
    study.models = models
    for v in study.vocabularies.values():
        v.compare = [study.seeded[o][0] if o in study.seeded else o for o in v.compare]
