"""A job group's readiness as Snakemake decides it, without comparing the group with itself."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
import snakefile_runs
import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
from snakemake import dag

from workflow_scripts.engine import ready_check

PLAIN = dag.DAG._ready


class Group:
    """A job group compared as Snakemake's `GroupJob` is: by its set of jobs, comparisons counted."""

    compared = 0

    def __init__(self, jobs):
        self.jobs = frozenset(jobs)

    def __iter__(self):
        return iter(sorted(self.jobs))

    def __hash__(self):
        return hash(self.jobs)

    def __eq__(self, other):
        Group.compared += 1
        return isinstance(other, Group) and self.jobs == other.jobs


class Dag:
    """The tables `_ready` reads, for jobs 0..n-1 in random groups with random dependencies."""

    def __init__(self, rng: random.Random, n: int = 12):
        self._group, self._dependencies, self._n_until_ready = {}, defaultdict(set), {}
        jobs = list(range(n))
        rng.shuffle(jobs)
        while jobs:
            members, jobs = jobs[: rng.randint(1, 4)], jobs[rng.randint(1, 4) :]
            if len(members) > 1 or rng.random() < 0.5:
                group = Group(members)
                # an equal group that is another object, as a rebuilt group would be
                copy = Group(members) if rng.random() < 0.3 else group
                for m in members:
                    self._group[m] = rng.choice([group, copy])
        for job in range(n):
            self._dependencies[job] = set(rng.sample(range(n), rng.randint(0, 3))) - {job}
            self._n_until_ready[job] = rng.randint(0, 3)


class Patched(Dag):
    _ready = PLAIN


@pytest.fixture(scope="module")
def patched():
    assert ready_check.install(Patched)
    assert ready_check.install(Patched)  # a second install keeps the first
    return Patched


def test_every_job_is_ready_exactly_when_snakemake_says_so(patched):
    answers = []
    for seed in range(300):
        ours = patched(random.Random(seed))
        for job in range(12):
            expected = PLAIN(ours, job)
            assert ours._ready(job) == expected, (seed, job)
            answers.append(expected)
    assert True in answers and False in answers


def test_a_group_is_not_compared_with_itself(patched):
    group = Group(range(20))
    state = patched(random.Random(0))
    state._group = dict.fromkeys(range(20), group)
    state._dependencies = defaultdict(set, {j: set(range(j)) for j in range(20)})
    state._n_until_ready = {j: j for j in range(20)}
    Group.compared = 0
    assert PLAIN(state, 19)
    plain_comparisons, Group.compared = Group.compared, 0
    assert state._ready(19)
    assert (plain_comparisons, Group.compared) == (sum(range(20)), 0)


def test_a_dag_without_the_tables_is_asked_as_snakemake_asks_it(patched):
    class Bare(patched):
        def __init__(self):
            pass

    with pytest.raises(AttributeError):
        Bare()._ready(0)


SNAKEFILE = """\
{install}

rule all:
    input:
        expand("out/{{model}}/run~{{seed}}.txt", model=["a", "b"], seed=range(3)),

rule model:
    output:
        "models/{{model}}.txt",
    shell:
        "touch {{output}}"

rule run:
    input:
        "models/{{model}}.txt",
    output:
        "out/{{model}}/run~{{seed}}.txt",
    group:
        "runs"
    shell:
        "cp {{input}} {{output}}"
"""


def test_snakemake_plans_and_prints_the_same_jobs(tmp_path):
    patched = snakefile_runs.planned_alike(tmp_path, SNAKEFILE, "ready_check")
    assert any("group job runs" in line.lower() for line in patched), patched
    assert sum(line.endswith("cp models/b.txt out/b/run~2.txt") for line in patched) == 1
