"""Decay branches: a pretrained model with ``branch: {step: k}`` resumes its ``init``'s own
training at step ``k`` (weights, optimiser, schedule position, random states, data position)
and runs only a decay, from ``k`` to its own ``max_steps``, possibly on other corpora.

A branch's ``pretrain`` keys are laid over its parent's: it inherits the recipe and typically
sets ``max_steps``, ``decay_shape``, ``mask_prob`` or ``phases`` (the decay's own phases, as
fractions of its steps). Its curve is a warm-up-stable-decay curve with no warm-up whose decay
spans exactly ``k .. max_steps``, starting from the parent's stable rate. The parent keeps the
checkpoint of every step a branch starts from (its ``keep_steps``).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PipelineError
from ..lr_curve import decay_start, warmup_steps
from ..pretrain.settings import BranchStart
from ..typed import help_field as _help

if TYPE_CHECKING:
    from .study import ModelEntry, Study

# what the branch's resumed weights and optimiser were made with, so it cannot differ from the parent's
INHERITED = (
    "architecture",
    "objective",
    "electra",
    "size",
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
    "dropout",
    "attention_dropout",
    "batch_size",
    "lr",
    "betas",
    "eps",
    "weight_decay",
    "seed",
    "precision",
    "residual_stream",
    "heldout_fraction",
)
# the branch's curve is its decay alone
CURVE_KEYS = ("schedule", "warmup_ratio", "decay_ratio")
NOT_INHERITED = ("keep_steps",)


@dataclass
class Branch:
    step: int = _help(
        "The step of init's run to resume (init must be pretrained here with schedule wsd or "
        "constant_with_warmup, and the step must lie after its warm-up and before its decay); "
        "the branch then decays from that step to its own max_steps."
    )


def inherit_recipes(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with each branch's ``pretrain`` laid over its parent's (the raw mappings, before parsing)."""
    models = config.get("models")
    if not isinstance(models, dict):
        return config
    merged = dict(models)
    for name, entry in models.items():
        if not isinstance(entry, dict) or entry.get("branch") is None:
            continue
        own = entry.get("pretrain") or {}
        for key in CURVE_KEYS:
            if key in own:
                raise PipelineError(
                    f"models.{name}.pretrain.{key}: a decay branch decays from branch.step to its max_steps "
                    "(set decay_shape); drop this key"
                )
        parent = models.get(entry.get("init"))
        inherited = (parent.get("pretrain") or {}) if isinstance(parent, dict) else {}
        recipe = {k: v for k, v in copy.deepcopy(inherited).items() if k not in NOT_INHERITED}
        merged[name] = {**entry, "pretrain": {**recipe, **own}}
    return {**config, "models": merged}


def check_branches(study: Study) -> None:
    """Refuse bad branches (naming the key), then give each its decay curve and its parent the step to keep."""
    for name, m in study.models.items():
        if m.branch is not None:
            _check(name, m, study)
    for m in study.models.values():
        if m.branch is None:
            continue
        parent = study.models[m.init].pretrain
        k, total = m.branch.step, m.pretrain.max_steps
        m.pretrain = dataclasses.replace(m.pretrain, schedule="wsd", warmup_ratio=0.0, decay_ratio=(total - k) / total)
        study.models[m.init].pretrain = dataclasses.replace(parent, keep_steps=sorted({*parent.keep_steps, k}))


def _parent(name: str, m: ModelEntry, study: Study) -> ModelEntry:
    where = f"models.{name}"
    if m.kind != "pretrain":
        raise PipelineError(f"{where}.branch: only a kind: pretrain model can be a decay branch")
    if m.vocab is not None:
        raise PipelineError(f"{where}.vocab: a decay branch keeps its parent's vocabulary; drop vocab")
    parent = study.models.get(m.init) if m.init is not None else None
    if parent is None:
        raise PipelineError(
            f"{where}.init: {m.init!r} is not a model of this config; a decay branch names as init the model "
            "pretrained here whose stable phase it continues"
        )
    if parent.kind != "pretrain":
        raise PipelineError(
            f"{where}.init: {m.init!r} is a kind: {parent.kind} model; a decay branch continues a model "
            "pretrained here (kind: pretrain), whose training state holds the step"
        )
    if parent.branch is not None:
        raise PipelineError(f"{where}.init: {m.init!r} is itself a decay branch; branch from its parent instead")
    return parent


def _check(name: str, m: ModelEntry, study: Study) -> None:
    where, parent = f"models.{name}", _parent(name, m, study)
    p, k = parent.pretrain, m.branch.step
    if not 0 < k <= p.max_steps:
        raise PipelineError(f"{where}.branch.step: {k} is outside {m.init}'s steps 1..{p.max_steps} (its max_steps)")
    if p.schedule == "linear":
        raise PipelineError(
            f"{where}.branch.step: {m.init} has schedule linear, which decays from its warm-up on; "
            "give it schedule wsd or constant_with_warmup"
        )
    if k < warmup_steps(p.warmup_ratio, p.max_steps):
        raise PipelineError(f"{where}.branch.step: {k} is inside {m.init}'s warm-up; branch from its stable phase")
    stable_end = decay_start(p.max_steps, p.decay_ratio) if p.schedule == "wsd" else p.max_steps
    if k > stable_end:
        raise PipelineError(
            f"{where}.branch.step: {k} is inside {m.init}'s decay (steps {stable_end}..{p.max_steps}); "
            f"branch from step {stable_end} or earlier"
        )
    for key in INHERITED:
        if getattr(m.pretrain, key) != getattr(p, key):
            raise PipelineError(
                f"{where}.pretrain.{key}: a decay branch resumes {m.init}'s weights and optimiser and keeps its "
                f"{key} ({getattr(p, key)!r}); drop this key"
            )
    decay = m.pretrain.max_steps - k
    if decay <= 0:
        raise PipelineError(f"{where}.pretrain.max_steps: must exceed branch.step ({k}); the branch decays in between")
    if min(m.pretrain.phase_steps(decay)) <= 0:
        raise PipelineError(f"{where}.pretrain.phases: a phase gets none of the decay's {decay} steps")


def branch_start(study: Study, name: str) -> BranchStart | None:
    """Where the branch ``name`` starts in its parent's run: the phase and data position at its step."""
    m = study.models[name]
    if m.branch is None:
        return None
    parent = study.models[m.init]
    p, k = parent.pretrain, m.branch.step
    first = 0
    for phase, n in enumerate(p.phase_steps()):
        if k < first + n or phase == len(p.phases) - 1:
            break
        first += n
    continues = m.corpora == parent.corpora and m.pretrain.phases[0].seq_len == p.phases[phase].seq_len
    return BranchStart(m.init, k, phase, k - first, len(p.phases), continues)
