"""Snakemake's group checks in time linear in the DAG, with Snakemake's own verdicts.

Whenever Snakemake builds or updates the DAG it checks that no path of jobs leaves a group and
enters it again. `DAG.validate_group` walks every ancestor of every job of a group, and
`DAG._check_groups` does so again for each job of a group once per job of that group: every
fine-tuning run walks its model's whole upstream (thousands of download, parse and pack jobs),
which made the check most of a full-study dry run (and 20 times more under Slurm's
group-components). A path can only re-enter a group through a job with a job of that group's
id somewhere upstream; the group ids upstream of each job are collected once per DAG update,
and Snakemake's own check runs, unchanged, only for a group where some are (and raises its own
error there). `install()` is a no-op on a Snakemake whose DAG lacks these methods.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

_NONE: frozenset = frozenset()


def upstream_group_ids(job: Any, dependencies: Mapping[Any, Iterable[Any]], memo: dict) -> frozenset:
    """The group ids of ``job`` and of every job it depends on, directly or not (memoised in ``memo``)."""
    stack = [(job, False)]
    while stack:
        node, expanded = stack.pop()
        if node in memo:
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((dep, False) for dep in dependencies[node] if dep not in memo)
            continue
        ids = {node.group} if node.group is not None else set()
        for dep in dependencies[node]:
            ids |= memo[dep]
        memo[node] = frozenset(ids) if ids else _NONE
    return memo[job]


def may_reenter(jobs: Iterable[Any], dependencies: Mapping[Any, Iterable[Any]], memo: dict) -> bool:
    """Whether some path from one of ``jobs`` leaves them and could come back: a job outside
    the group that one of them depends on has a job of the group's id upstream."""
    members = set(jobs)
    ids: set[Hashable] = {job.group for job in members}
    return any(
        not ids.isdisjoint(upstream_group_ids(dep, dependencies, memo))
        for job in members
        for dep in dependencies[job]
        if dep not in members
    )


def _memo(dag: Any) -> dict:
    memo = getattr(dag, "_upstream_group_ids", None)
    return {} if memo is None else memo


def _fast_update_groups(original: Callable) -> Callable:
    def update_groups(self) -> None:
        # one memo per update: the DAG's jobs and edges change between updates
        self._upstream_group_ids = {}
        try:
            original(self)
        finally:
            self._upstream_group_ids = None

    return update_groups


def _fast_validate_group(original: Callable) -> Callable:
    def validate_group(self, group) -> None:
        if may_reenter(group.jobs, self._dependencies, _memo(self)):
            original(self, group)

    return validate_group


def _fast_check_groups(original: Callable) -> Callable:
    def check_groups(self) -> None:
        memo = _memo(self)
        # each group once, in Snakemake's order, so the same group's error comes first
        for group in dict.fromkeys(self._group.values()):
            if may_reenter(group.jobs, self._dependencies, memo):
                original(SimpleNamespace(_group={job: group for job in group}, _dependencies=self._dependencies))

    return check_groups


def install(dag_class: type | None = None) -> bool:
    """Replace the DAG's group checks by the linear ones (once per process); False where
    this Snakemake's DAG has no such methods."""
    if dag_class is None:
        import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
        from snakemake.dag import DAG as dag_class
    names = ("update_groups", "validate_group", "_check_groups")
    if getattr(dag_class, "_linear_group_checks", False):
        return True
    if not all(callable(getattr(dag_class, name, None)) for name in names):
        return False
    dag_class.update_groups = _fast_update_groups(dag_class.update_groups)
    dag_class.validate_group = _fast_validate_group(dag_class.validate_group)
    dag_class._check_groups = _fast_check_groups(dag_class._check_groups)
    dag_class._linear_group_checks = True
    return True
