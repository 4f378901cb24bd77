"""A job's check reads the log and benchmark paths it keeps: each expanded once, the same errors; and it stands
in only for the `is_valid` it was proven equivalent to."""

from __future__ import annotations

import pytest
import snakefile_runs

from workflow_scripts.engine import job_validity


class Rule:
    """A rule as a job's paths need it: expansions counted, a missing wildcard raising."""

    def __init__(self):
        self.expanded = []

    def expand_benchmark(self, wildcards):
        self.expanded.append("benchmark")
        return f"bench/{wildcards['seed']}.tsv"

    def expand_log(self, wildcards):
        self.expanded.append("log")
        return [f"logs/{wildcards['seed']}.log"]


class Job:
    """Snakemake's `Job` in the shape the patch touches."""

    def __init__(self, rule, wildcards):
        self.rule, self.wildcards_dict, self._log, self._benchmark = rule, wildcards, None, None

    is_valid = job_validity.snakemake_is_valid

    @property
    def log(self):
        if self._log is None:
            self._log = self.rule.expand_log(self.wildcards_dict)
        return self._log

    @property
    def benchmark(self):
        if self._benchmark is None:
            self._benchmark = self.rule.expand_benchmark(self.wildcards_dict)
        return self._benchmark


@pytest.fixture(scope="module")
def patched():
    assert job_validity.install(Job)
    assert job_validity.install(Job)  # a second install keeps the first
    return Job


def test_the_check_expands_each_path_once_for_the_job_to_keep(patched):
    job = patched(Rule(), {"seed": 3})
    job.is_valid()
    assert (job.log, job.benchmark) == (["logs/3.log"], "bench/3.tsv")
    assert job.rule.expanded == ["benchmark", "log"]


def test_a_path_that_cannot_be_filled_fails_the_check(patched):
    with pytest.raises(KeyError, match="seed"):
        patched(Rule(), {}).is_valid()


def test_a_check_snakemake_extends_is_left_to_snakemake():
    class Extended(Job):
        def is_valid(self):
            """Check if job is valid"""
            self.rule.expand_benchmark(self.wildcards_dict)
            self.rule.expand_log(self.wildcards_dict)
            self.rule.expand_resources(self.wildcards_dict)  # a check a later Snakemake might add

    assert not job_validity.install(Extended)
    assert Extended.__dict__["is_valid"].__name__ == "is_valid"


def test_a_class_without_the_paths_is_left_alone():
    class Other:
        def is_valid(self):
            return "plain"

    assert not job_validity.install(Other)
    assert Other().is_valid() == "plain"


SNAKEFILE = """\
{install}

rule all:
    input:
        expand("out/run~{{seed}}.txt", seed=range(3)),

rule run:
    output:
        "out/run~{{seed}}.txt",
    log:
        "logs/{{seed}}.log",
    benchmark:
        "bench/{{seed}}.tsv"
    shell:
        "touch {{output}} 2> {{log}}"
"""


def test_snakemake_plans_and_prints_the_same_jobs(tmp_path):
    # planned_alike asserts install() in the dry run: the installed Snakemake's is_valid is the proven one
    patched = snakefile_runs.planned_alike(tmp_path, SNAKEFILE, "job_validity")
    assert sum("touch out/run~2.txt 2> logs/2.log" in line for line in patched) == 1
