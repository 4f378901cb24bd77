"""Group means (Lewis et al.) and the BLURB score (Gu et al.), used for our tables and for
recomputing the published figures alike.

Lewis et al. Table 4 groups: Seq. Lab. = named-entity recognition and de-identification;
Classif. = every other task (relation extraction, document classification, inference, ...);
PubMed and Clinical by text domain; All = every task. Each group value is the plain mean of
the per-task values. EBM PICO does not appear in Lewis et al.; it is token-level labelling
(word-level macro-F1 over PICO spans), so it is counted with Seq. Lab.

BLURB score = mean over the six task types of the mean of that type's tasks.

A group or BLURB value is computed only when every member task has a value; otherwise the
result names the missing members and carries no number (never a mean of a subset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SEQ_LAB, CLASSIF, PUBMED, CLINICAL, ALL = "Seq. Lab.", "Classif.", "PubMed", "Clinical", "All"
GROUPS = (SEQ_LAB, CLASSIF, PUBMED, CLINICAL, ALL)
SEQUENCE_LABELLING_TYPES = ("ner", "pico")
BLURB_TYPES = ("ner", "pico", "relation", "similarity", "doc_classification", "qa")
BLURB_TYPE_NAMES = {
    "ner": "NER",
    "pico": "PICO",
    "relation": "Relation extraction",
    "similarity": "Sentence similarity",
    "doc_classification": "Document classification",
    "qa": "Question answering",
}


@dataclass(frozen=True)
class TaskKind:
    type: str
    domain: str


@dataclass
class GroupValue:
    """A mean over member tasks, or the reason there is none."""

    value: float | None
    members: list[str]
    missing: list[str] = field(default_factory=list)

    @property
    def note(self) -> str:
        if not self.members:
            return "no task configured"
        if self.missing:
            return "missing: " + ", ".join(self.missing)
        return ""


def lewis_groups(kind: TaskKind) -> list[str]:
    """The Lewis et al. groups a task of this type and domain belongs to."""
    type_group = SEQ_LAB if kind.type in SEQUENCE_LABELLING_TYPES else CLASSIF
    domain_group = CLINICAL if kind.domain == "clinical" else PUBMED
    return [type_group, domain_group, ALL]


def _mean_of(members: list[str], values: Mapping[str, float | None]) -> GroupValue:
    missing = [t for t in members if values.get(t) is None]
    if not members or missing:
        return GroupValue(None, members, missing)
    return GroupValue(sum(values[t] for t in members) / len(members), members)


def group_means(values: Mapping[str, float | None], kinds: Mapping[str, TaskKind]) -> dict[str, GroupValue]:
    """Mean of ``values`` (task -> value or None) over each Lewis group of the tasks in ``kinds``."""
    members: dict[str, list[str]] = {g: [] for g in GROUPS}
    for task, kind in kinds.items():
        for group in lewis_groups(kind):
            members[group].append(task)
    return {g: _mean_of(members[g], values) for g in GROUPS}


@dataclass
class BlurbScore:
    types: dict[str, GroupValue]
    score: GroupValue


def blurb_score(values: Mapping[str, float | None], types: Mapping[str, str]) -> BlurbScore:
    """Per-type means and the macro BLURB score over the six types (task -> type in ``types``)."""
    per_type = {t: _mean_of([task for task, ty in types.items() if ty == t], values) for t in BLURB_TYPES}
    type_values = {t: g.value for t, g in per_type.items()}
    incomplete = [BLURB_TYPE_NAMES[t] for t in BLURB_TYPES if type_values[t] is None]
    if incomplete:
        score = GroupValue(None, list(BLURB_TYPES), incomplete)
    else:
        score = GroupValue(sum(type_values.values()) / len(BLURB_TYPES), list(BLURB_TYPES))
    return BlurbScore(per_type, score)
