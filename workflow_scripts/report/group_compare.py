"""Paired comparisons of group means (Lewis et al. groups: All, Clinical, ...) over seeds.

A seed's group mean is the plain mean over the group's tasks of that seed's test score
(averaged over a task's evaluation folds); two models are paired on the seeds where both
have every member task. The per-task comparisons cannot say whether a model is better
overall; this one does, with the same paired tests (stats.py). The findings state the All and
Clinical means (``STATED_GROUPS``), which form their own family of claims.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .aggregate import Cell
from .groups import ALL, CLINICAL, GROUPS, TaskKind, lewis_groups
from .settings import ReportSettings
from .stats import Paired

# comparisons.csv names a group row's "task" so, e.g. mean:All
GROUP_PREFIX = "mean:"
STATED_GROUPS = (ALL, CLINICAL)


@dataclass
class GroupComparison:
    group: str
    model_a: str
    model_b: str
    value_a: float | None
    value_b: float | None
    n_pairs: int
    scores: tuple[list[float], list[float]] | None
    note: str
    paired: Paired | None = None  # set when its family is tested (significance.run_family)


def group_members(settings: ReportSettings) -> dict[str, list[str]]:
    """Tasks of each Lewis group (tasks of the lewis benchmark only, as in the group means)."""
    members: dict[str, list[str]] = {g: [] for g in GROUPS}
    for name, t in settings.tasks.items():
        if "lewis" in t.benchmarks:
            for g in lewis_groups(TaskKind(t.type, t.domain)):
                members[g].append(name)
    return members


def seed_means(cells: dict[tuple[str, str, str], Cell], model: str, tasks: list[str]) -> dict[int, float]:
    """seed -> mean over ``tasks`` of the seed's score (x100, in the Lewis et al. metric), for
    seeds every task has."""
    per_task: dict[str, dict[int, float]] = {}
    for task in tasks:
        by_seed: dict[int, list[float]] = defaultdict(list)
        cell = cells[(model, task, "lewis")]
        for r in cell.runs:
            by_seed[r.seed].append(r.scores[cell.metric])
        per_task[task] = {s: sum(v) / len(v) for s, v in by_seed.items()}
    seeds = set.intersection(*(set(v) for v in per_task.values())) if per_task else set()
    return {s: 100.0 * sum(per_task[t][s] for t in tasks) / len(tasks) for s in sorted(seeds)}


def compare_groups(
    settings: ReportSettings, cells: dict[tuple[str, str, str], Cell], groups: dict
) -> list[GroupComparison]:
    """Every configured pair on every group that has member tasks (untested)."""
    out = []
    for group, tasks in group_members(settings).items():
        if not tasks:
            continue
        for a, b in settings.aggregation.compare:
            sa, sb = seed_means(cells, a, tasks), seed_means(cells, b, tasks)
            shared = [s for s in sa if s in sb]
            scores, note = None, ""
            if len(shared) < 2:
                note = f"{len(shared)} seed(s) with every {group} task in both models; need at least 2"
            else:
                scores = ([sa[s] / 100 for s in shared], [sb[s] / 100 for s in shared])
            values = groups[a][group].ours.value, groups[b][group].ours.value
            out.append(GroupComparison(group, a, b, *values, len(shared), scores, note))
    return out
