"""Snakemake's nested-output check on path strings: the same verdict and message as its own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import snakefile_runs
import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
from snakemake import dag
from snakemake.exceptions import ChildIOException

from workflow_scripts.engine import directory_outputs

SNAKEMAKES = dag.DAG.__dict__["check_directory_outputs"]


class Job(str):
    """A job as the check sees it: orderable, comparable, with its outputs."""

    def __new__(cls, name: str, *output: str):
        job = super().__new__(cls, name)
        job.output = list(output)
        return job


class Plain:
    check_directory_outputs = SNAKEMAKES

    def __init__(self, *jobs: Job):
        self.jobs = list(jobs)


class OnStrings(Plain):
    pass


def verdict(cls, jobs) -> str | None:
    try:
        cls(*jobs).check_directory_outputs()
    except ChildIOException as exc:
        return str(exc)
    return None


CASES = {
    "apart": [Job("a", "out/a.txt", "out/b/c.txt"), Job("b", "out/bc/d.txt", "out/b.txt")],
    "nested across jobs": [Job("a", "out/d"), Job("b", "out/d/x.txt"), Job("c", "out/e")],
    "nested in one job": [Job("a", "out/d", "out/d/x.txt")],
    "the same path twice": [Job("a", "out/x.txt"), Job("b", "out/x.txt")],
    "spelt differently": [Job("a", "./out//d/"), Job("b", "out/./d/x.txt")],
    "absolute and dotted": [Job("a", "/tmp/z/out"), Job("b", "out/../out/q"), Job("c", "/tmp/z/out/q/r")],
    "siblings sharing a prefix": [Job("a", "out/d"), Job("b", "out/d.txt"), Job("c", "out/d-e/f")],
    "first pair of several": [Job("c", "x/y/z"), Job("a", "x"), Job("b", "x/y")],
}


@pytest.fixture(scope="module")
def on_strings():
    assert directory_outputs.install(OnStrings)
    assert directory_outputs.install(OnStrings)  # a second install keeps the first
    return OnStrings


@pytest.mark.parametrize("jobs", CASES.values(), ids=CASES.keys())
def test_the_verdict_and_message_are_snakemakes(on_strings, jobs):
    assert verdict(on_strings, jobs) == verdict(Plain, jobs)


def test_the_cases_cover_both_verdicts():
    verdicts = {name: verdict(Plain, jobs) for name, jobs in CASES.items()}
    assert verdicts["nested across jobs"] is not None and verdicts["apart"] is None
    assert verdicts["spelt differently"] is not None and verdicts["nested in one job"] is None


def test_a_class_without_the_check_is_left_alone():
    class Other:
        pass

    assert not directory_outputs.install(Other)
    assert not hasattr(Other, "check_directory_outputs")


SNAKEFILE = """\
{install}

rule all:
    input:
        "out/d/x.txt",
        "out/d",

rule folder:
    output:
        directory("out/d"),
    shell:
        "mkdir -p {{output}}"

rule inside:
    output:
        "out/d/x.txt",
    shell:
        "touch {{output}}"
"""


def dry_run(workdir: Path, install: str):
    return snakefile_runs.dry_run(workdir, textwrap.dedent(SNAKEFILE.format(install=install)), check=False)


def test_snakemake_stops_on_a_file_inside_a_folder_output_as_before(tmp_path):
    plain = dry_run(tmp_path, "")
    patched = dry_run(tmp_path, "from workflow_scripts.engine import directory_outputs\ndirectory_outputs.install()")
    message = "File/directory is a child to another output:"
    assert plain.returncode == patched.returncode != 0
    assert message in plain.stdout
    assert patched.stdout[patched.stdout.index(message) :] == plain.stdout[plain.stdout.index(message) :]
    assert f"(PosixPath('{tmp_path}/out/d'), folder)" in patched.stdout
