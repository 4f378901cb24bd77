"""A job's record formats its shell command once; what Snakemake prints stays the same."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import snakefile_runs

from workflow_scripts.engine import shellcmd_once


class Job:
    """Snakemake's `Job` in the shape the patch touches: a formatted property, a record reading it."""

    def __init__(self, name: str, fail: bool = False):
        self.name, self.fail, self.formatted = name, fail, 0

    @property
    def shellcmd(self):
        self.formatted += 1
        if self.fail:
            raise KeyError("params")
        return f"run {self.name} {self.formatted}"

    def log_info(self, inner=None):
        lines = [self.shellcmd, self.shellcmd]
        if inner is not None:
            lines += inner.log_info()
        return [*lines, self.shellcmd]


@pytest.fixture(scope="module")
def patched():
    assert shellcmd_once.install(Job)
    assert shellcmd_once.install(Job)  # a second install keeps the first
    return Job


def test_a_record_formats_its_command_once(patched):
    job = patched("a")
    assert job.log_info() == ["run a 1"] * 3
    assert job.formatted == 1


def test_outside_a_record_every_read_formats_afresh(patched):
    job = patched("a")
    assert [job.shellcmd, job.shellcmd] == ["run a 1", "run a 2"]
    assert job.log_info() == ["run a 3"] * 3  # a later record reads the command as it is then


def test_a_record_inside_another_keeps_each_jobs_own_command(patched):
    outer, inner = patched("outer"), patched("inner")
    assert outer.log_info(inner) == ["run outer 1"] * 2 + ["run inner 1"] * 3 + ["run outer 1"]
    assert (outer.formatted, inner.formatted) == (1, 1)


def test_a_command_that_cannot_be_formatted_raises_as_before(patched):
    job = patched("a", fail=True)
    with pytest.raises(KeyError):
        job.log_info()
    with pytest.raises(KeyError):
        job.log_info()
    assert job.formatted == 2


def test_a_class_without_the_members_is_left_alone():
    class Other:
        shellcmd = "plain"

    assert not shellcmd_once.install(Other)
    assert Other.shellcmd == "plain"


SNAKEFILE = """\
import atexit, sys
{install}

class Tick:
    count = 0

    def __str__(self):
        Tick.count += 1
        return "tick"

atexit.register(lambda: print(f"formatted {{Tick.count}}", file=sys.stderr))

rule all:
    input:
        expand("out/{{name}}.txt", name=["a", "b"]),

rule make:
    output:
        "out/{{name}}.txt",
    params:
        tick=Tick(),
    log:
        "logs/{{name}}.log",
    shell:
        "echo {{params.tick}} {{wildcards.name}} > {{output}} 2> {{log}}"
"""


def dry_run(tmp_path: Path, install: str) -> tuple[list[str], int]:
    result = snakefile_runs.dry_run(tmp_path / "study", textwrap.dedent(SNAKEFILE.format(install=install)))
    formatted = int(re.search(r"formatted (\d+)", result.stderr).group(1))
    return snakefile_runs.printed(result, drop=r"^formatted"), formatted


INSTALL = "from workflow_scripts.engine import shellcmd_once\nshellcmd_once.install()"


def test_snakemakes_dry_run_prints_the_same_with_a_third_of_the_formatting(tmp_path):
    plain, plain_count = dry_run(tmp_path, "")
    patched, patched_count = dry_run(tmp_path, INSTALL)
    assert patched == plain
    assert sum("echo tick a > out/a.txt 2> logs/a.log" in line for line in patched) >= 1
    assert (plain_count, patched_count) == (6, 2)  # two jobs: three formattings each, one each
