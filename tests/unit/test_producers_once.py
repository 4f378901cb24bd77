"""Each file's producing rules looked up once per output index; what Snakemake plans stays the same."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import snakefile_runs

from workflow_scripts.engine import producers_once


class Index:
    """Snakemake's `OutputIndex` in the shape the patch touches: a lookup counting its calls."""

    def __init__(self, rules: dict[str, set[str]]):
        self.rules, self.looked_up = rules, []

    def match_producers(self, targetfile):
        self.looked_up.append(targetfile)
        return set(self.rules.get(targetfile, ()))


@pytest.fixture(scope="module")
def patched():
    assert producers_once.install(Index)
    assert producers_once.install(Index)  # a second install keeps the first
    return Index


def test_a_file_is_looked_up_once_per_index(patched):
    index = patched({"a.txt": {"make"}, "b.txt": {"copy", "make"}})
    answers = [index.match_producers(f) for f in ("a.txt", "b.txt", "a.txt", "a.txt", "c.txt", "c.txt")]
    assert answers == [{"make"}, {"copy", "make"}, {"make"}, {"make"}, set(), set()]
    assert index.looked_up == ["a.txt", "b.txt", "c.txt"]


def test_a_new_index_starts_afresh(patched):
    first, second = patched({"a.txt": {"make"}}), patched({"a.txt": {"other"}})
    assert first.match_producers("a.txt") == {"make"}
    assert second.match_producers("a.txt") == {"other"}
    assert (first.looked_up, second.looked_up) == (["a.txt"], ["a.txt"])


def test_a_class_without_the_lookup_is_left_alone():
    class Other:
        pass

    assert not producers_once.install(Other)
    assert not hasattr(Other, "match_producers")


SNAKEFILE = """\
import atexit, sys
from snakemake import output_index
looked_up = []
_plain = output_index.OutputIndex.match_producers
output_index.OutputIndex.match_producers = lambda self, f: looked_up.append(f) or _plain(self, f)
atexit.register(lambda: print(f"looked up {{len(looked_up)}}", file=sys.stderr))
{install}

rule all:
    input:
        expand("out/run~{{seed}}.txt", seed=range(6)),

rule shared:
    output:
        "data/shared.txt",
    shell:
        "touch {{output}}"

rule run:
    input:
        "data/shared.txt",
    output:
        "out/run~{{seed}}.txt",
    shell:
        "cp {{input}} {{output}}"
"""


def dry_run(workdir: Path, install: str) -> tuple[list[str], int]:
    result = snakefile_runs.dry_run(workdir, textwrap.dedent(SNAKEFILE.format(install=install)))
    return snakefile_runs.printed(result, drop=r"^looked up"), int(
        re.search(r"looked up (\d+)", result.stderr).group(1)
    )


INSTALL = "from workflow_scripts.engine import producers_once\nproducers_once.install()"


def test_snakemake_plans_the_same_jobs_looking_the_shared_file_up_once(tmp_path):
    plain, plain_count = dry_run(tmp_path, "")
    patched, patched_count = dry_run(tmp_path, INSTALL)
    assert patched == plain
    assert sum(line.endswith("cp data/shared.txt out/run~3.txt") for line in patched) == 1
    # six runs read data/shared.txt: six lookups of it before, one now
    assert (plain_count - patched_count) == 5
