"""The linear group checks reach Snakemake's own verdicts, errors included, on random DAGs."""

import random
from types import SimpleNamespace

import pytest
import snakemake.api  # noqa: F401  (imports snakemake.dag without a cycle)
from snakemake.dag import DAG
from snakemake.exceptions import WorkflowError

from workflow_scripts.engine import group_check


class Job:
    def __init__(self, i: int, group: str | None):
        self.i, self.group = i, group
        self.rule = SimpleNamespace(name=f"rule{i % 4}")

    def __repr__(self):
        return f"job{self.i}"


class Group:
    def __init__(self, groupid: str, jobs):
        self.groupid, self.jobs = groupid, frozenset(jobs)

    def __iter__(self):
        return iter(sorted(self.jobs, key=lambda j: j.i))

    def __contains__(self, job):
        return job in self.jobs


class SnakemakeChecks:
    """Snakemake's DAG methods on a hand-made DAG: jobs, their dependencies and their groups."""

    bfs = DAG.bfs
    validate_group = DAG.validate_group
    _check_groups = DAG._check_groups

    def __init__(self, dependencies, groups):
        self._dependencies, self.groups = dependencies, groups
        self._group = {job: g for g in groups for job in g}

    def update_groups(self):
        for g in self.groups:
            self.validate_group(g)
        self._check_groups()


class LinearChecks(SnakemakeChecks):
    pass


assert group_check.install(LinearChecks)


def random_dag(rng: random.Random, n: int):
    jobs = [Job(i, rng.choice([None, None, "a", "b"])) for i in range(n)]
    dependencies = {job: dict.fromkeys(rng.sample(jobs[: job.i], min(job.i, rng.randint(0, 3)))) for job in jobs}
    groups = []
    for gid in ("a", "b"):
        members = [j for j in jobs if j.group == gid and rng.random() < 0.9]  # the others: done, in no group
        cut = rng.randint(0, len(members))
        groups += [Group(gid, part) for part in (members[:cut], members[cut:]) if part]
    return dependencies, groups


def verdict(checks):
    try:
        checks.update_groups()
    except WorkflowError as exc:
        return str(exc)
    return None


def test_linear_checks_raise_exactly_where_snakemake_does():
    rng = random.Random(0)
    verdicts = []
    for _ in range(400):
        dependencies, groups = random_dag(rng, rng.randint(2, 14))
        expected = verdict(SnakemakeChecks(dependencies, groups))
        assert verdict(LinearChecks(dependencies, groups)) == expected
        verdicts.append(expected is None)
    assert 50 < sum(verdicts) < 350  # both outcomes were exercised


def test_a_path_leaving_and_reentering_a_group_is_refused():
    a, outside, b = Job(0, "g"), Job(1, None), Job(2, "g")
    dependencies = {a: {}, outside: {a: None}, b: {outside: None}}
    with pytest.raises(WorkflowError, match="depends on rule"):
        LinearChecks(dependencies, [Group("g", [a, b])]).update_groups()
    # the same jobs with the one in between inside the group are fine
    outside.group = "g"
    LinearChecks(dependencies, [Group("g", [a, outside, b])]).update_groups()


def test_upstream_group_ids_are_collected_once_per_job():
    jobs = [Job(i, "g" if i == 0 else None) for i in range(2000)]
    dependencies = {job: dict.fromkeys(jobs[max(job.i - 2, 0) : job.i]) for job in jobs}  # a deep chain
    memo = {}
    assert group_check.upstream_group_ids(jobs[-1], dependencies, memo) == {"g"}
    assert len(memo) == len(jobs) and memo[jobs[0]] == {"g"}


def test_install_patches_snakemakes_dag_once():
    assert group_check.install() and group_check.install()
    assert DAG._linear_group_checks
