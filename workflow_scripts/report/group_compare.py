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
from .seed_grid import pair_grid, pretrain_seeds, seed_order
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


def seed_means(cells: dict[tuple[str, str, str], Cell], model: str, tasks: list[str]) -> dict[tuple, float]:
    """(pretraining seed, fine-tuning seed) -> mean over ``tasks`` of that run's score (x100, in
    the Lewis et al. metric), for the seeds every task has (pretraining seed None for a model
    trained once)."""
    per_task: dict[str, dict[tuple, float]] = {}
    for task in tasks:
        by_seed: dict[tuple, list[float]] = defaultdict(list)
        cell = cells[(model, task, "lewis")]
        for r in cell.runs:
            by_seed[(r.pretrain_seed, r.seed)].append(r.scores[cell.metric])
        per_task[task] = {s: sum(v) / len(v) for s, v in by_seed.items()}
    seeds = set.intersection(*(set(v) for v in per_task.values())) if per_task else set()
    order = sorted(seeds, key=lambda k: (seed_order(k[0]), k[1]))
    return {s: 100.0 * sum(per_task[t][s] for t in tasks) / len(tasks) for s in order}


def _pair(sa: dict[tuple, float], sb: dict[tuple, float], group: str) -> tuple[int, tuple | None, str]:
    """n, scores (fractions) and note of two models' seed means, paired as seed_grid.py pairs them."""
    if len(pretrain_seeds(sa)) > 1 or len(pretrain_seeds(sb)) > 1:
        pairing = pair_grid({k: v / 100 for k, v in sa.items()}, {k: v / 100 for k, v in sb.items()}, "seed")
        return pairing.n_pairs, pairing.scores, pairing.note
    by_b = {s: v for (_, s), v in sb.items()}
    shared = [(s, v) for (_, s), v in sa.items() if s in by_b]
    if len(shared) < 2:
        return len(shared), None, f"{len(shared)} seed(s) with every {group} task in both models; need at least 2"
    return len(shared), ([v / 100 for _, v in shared], [by_b[s] / 100 for s, _ in shared]), ""


def compare_groups(
    settings: ReportSettings, cells: dict[tuple[str, str, str], Cell], groups: dict
) -> list[GroupComparison]:
    """Every configured pair on every group that has member tasks (untested)."""
    out = []
    for group, tasks in group_members(settings).items():
        if not tasks:
            continue
        for a, b in settings.aggregation.compare:
            n, scores, note = _pair(seed_means(cells, a, tasks), seed_means(cells, b, tasks), group)
            values = groups[a][group].ours.value, groups[b][group].ours.value
            out.append(GroupComparison(group, a, b, *values, n, scores, note))
    return out
