"""Cross-reference checks of the study's models: every name a model refers to (vocabulary,
corpus, teacher, initial checkpoint) exists, each kind has the keys it needs, and no chain of
init/teacher references returns to where it started."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PipelineError
from .resources import MODEL_RULES

if TYPE_CHECKING:
    from .study import ModelEntry, Study

CONTROL_KINDS = ("control", "baseline")


def check_names(where: str, names: list[str], known: dict, what: str) -> None:
    for i, name in enumerate(names):
        if name not in known:
            raise PipelineError(
                f"{where}[{i}]: {name!r} is not a {what} of this config (known: {', '.join(sorted(known)) or 'none'})"
            )


def check_model(name: str, m: ModelEntry, study: Study) -> None:
    where = f"models.{name}"
    if m.resources is not None and m.kind not in MODEL_RULES:
        raise PipelineError(f"{where}.resources: only models trained here (pretrain, distill) run jobs of their own")
    if m.resources is not None and m.resources.runtime == "auto":
        raise PipelineError(f"{where}.resources.runtime: auto is for fine-tuning runs only; give a number of minutes")
    if m.kind in CONTROL_KINDS:
        if m.corpora or m.teacher or m.checkpoint or m.vocab:
            raise PipelineError(
                f"{where}: a {m.kind} model trains on nothing; drop corpora, teacher, checkpoint and vocab"
            )
        if (m.kind == "control") != (m.init is not None):
            need = "needs init (the model whose architecture it copies)" if m.kind == "control" else "takes no init"
            raise PipelineError(f"{where}.init: a {m.kind} model {need}")
        if m.init == name:
            raise PipelineError(f"{where}.init: a model cannot start from itself")
        return
    if m.kind == "external":
        if not m.checkpoint:
            raise PipelineError(f"{where}.checkpoint: an external model needs a local directory or {{hub, revision}}")
        return
    if not m.corpora:
        raise PipelineError(f"{where}.corpora: list the corpora it trains on")
    check_names(f"{where}.corpora", m.corpora, study.corpora, "corpus")
    if m.kind == "pretrain":
        if (m.vocab is None) == (m.init is None):
            raise PipelineError(
                f"{where}: give either vocab (from scratch with a learned vocabulary) or init "
                "(continual, keeping its vocabulary)"
            )
        if m.vocab is not None and m.vocab not in study.vocabularies:
            raise PipelineError(
                f"{where}.vocab: {m.vocab!r} is not a vocabulary of this config "
                f"(known: {', '.join(sorted(study.vocabularies)) or 'none'})"
            )
    if m.kind == "distill":
        if m.teacher not in study.models:
            raise PipelineError(f"{where}.teacher: {m.teacher!r} is not a model of this config")
    if m.init is not None and m.init == name:
        raise PipelineError(f"{where}.init: a model cannot start from itself")
    start = study.models.get(m.init) if m.kind == "pretrain" else None
    if start is not None and start.kind == "pretrain" and start.pretrain.objective != m.pretrain.objective:
        raise PipelineError(
            f"{where}.pretrain.objective: {m.init!r} was trained with objective {start.pretrain.objective}; "
            f"continue it with the same objective or start {name} from a vocabulary"
        )


def check_cycles(study: Study) -> None:
    def parents(name: str) -> list[str]:
        m = study.models[name]
        return [p for p in (m.init, m.teacher) if p in study.models]

    for start in study.models:
        seen, stack = set(), [start]
        while stack:
            for p in parents(stack.pop()):
                if p == start:
                    raise PipelineError(f"models.{start}: init/teacher references form a cycle")
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
