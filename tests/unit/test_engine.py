"""The engine's patches go in together on a Snakemake they were tested on and stay out, saying why in one line,
on any other; local runs drop Snakemake's job-rate limiter; the fine-tuning group stays whole."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import snakefile_runs
from snakemake.settings.types import GroupSettings

from workflow_scripts import engine
from workflow_scripts.engine import job_rate, whole_group
from workflow_scripts.errors import PipelineError

OUTSIDE = "9.30.0"


@pytest.fixture
def patches(monkeypatch):
    """The engine's patches replaced by ones that record being installed."""
    installed = []

    def patch(name, works=True):
        def install():
            installed.append(name)
            return works

        install.__module__ = f"workflow_scripts.engine.{name}"
        return install

    monkeypatch.setattr(engine, "PATCHES", (patch("group_check"), patch("job_validity", works=False)))
    monkeypatch.delenv(engine.SWITCH, raising=False)
    return installed


def main_process(main=True):
    return SimpleNamespace(is_main_process=main)


def test_a_snakemake_outside_the_tested_versions_gets_no_patch_and_one_line(patches, monkeypatch, capsys):
    monkeypatch.setattr(engine, "snakemake_version", lambda: OUTSIDE)
    assert engine.install(main_process()) is False
    assert patches == []
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"note: snakemake {OUTSIDE} is outside the versions the planning speed-ups were tested on "
        f"({', '.join(engine.TESTED)}); running on stock Snakemake: planning is slower, results are the same"
    ]
    # the jobs a Slurm allocation's Snakemake runs say nothing
    assert engine.install(main_process(False)) is False
    assert capsys.readouterr().err == ""


def test_a_tested_snakemake_gets_every_patch_and_a_missing_target_is_named(patches, monkeypatch, capsys):
    monkeypatch.setattr(engine, "snakemake_version", lambda: engine.TESTED[-1])
    assert engine.install(main_process()) is True
    assert patches == ["group_check", "job_validity"]
    assert capsys.readouterr().err == "note: Snakemake internals not found, left stock: job_validity\n"


def test_the_installed_snakemake_is_a_tested_one():
    assert engine.refusal(engine.snakemake_version(), {}) is None


def test_the_switch_turns_the_patches_off_and_refuses_other_values(patches, monkeypatch, capsys):
    monkeypatch.setenv(engine.SWITCH, "0")
    assert engine.install(main_process()) is False
    assert patches == []
    assert capsys.readouterr().err.startswith(f"note: {engine.SWITCH}=0: running on stock Snakemake")
    with pytest.raises(PipelineError, match=f"{engine.SWITCH}='off': set 0 .* or 1"):
        engine.refusal(engine.TESTED[0], {engine.SWITCH: "off"})


def test_local_runs_drop_the_job_rate_limiter_and_others_keep_it():
    remote = SimpleNamespace(local_exec=False, scheduler=SimpleNamespace(job_rate_limiter="limiter"))
    assert not job_rate.unlimit_local_jobs(remote)
    assert remote.scheduler.job_rate_limiter == "limiter"
    assert not job_rate.unlimit_local_jobs(SimpleNamespace(local_exec=True, scheduler=SimpleNamespace()))


RUN = """\
import sys
from workflow_scripts.engine import job_rate

onstart:
    {drop}
    print(f"limiter {{type(workflow.scheduler.job_rate_limiter).__name__}}", file=sys.stderr)

rule all:
    input:
        expand("out/{{i}}.txt", i=range(3)),

rule make:
    output:
        "out/{{i}}.txt",
    shell:
        "touch {{output}}"
"""


DROP = "job_rate.unlimit_local_jobs(workflow)"


@pytest.mark.parametrize(("drop", "limiter"), [("pass", "JobRateLimiter"), (DROP, "NoneType")])
def test_a_local_run_without_the_limiter_runs_every_job(tmp_path, drop, limiter):
    # Snakemake asserts, before each start, that a scheduler without a limiter counts no jobs against a rate
    result = snakefile_runs.run(tmp_path, RUN.format(drop=drop), ["--cores", "1"], check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"limiter {limiter}" in result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["0.txt", "1.txt", "2.txt"]


def test_a_group_is_made_whole_unless_the_user_set_its_components():
    settings = GroupSettings(group_components={"other": 2})
    whole = whole_group.whole(settings, "finetune")
    assert dict(whole.group_components) == {"other": 2, "finetune": sys.maxsize}
    assert whole_group.whole(whole, "finetune") is whole
    own = GroupSettings(group_components={"finetune": 4})
    assert whole_group.whole(own, "finetune") is own


GROUPED = """\
from workflow_scripts.engine import whole_group

def step(wildcards):
    {keep}
    return []

rule all:
    input:
        expand("out/run~{{seed}}.txt", seed=range(3)),

rule run:
    input:
        step,
    output:
        "out/run~{{seed}}.txt",
    group:
        "finetune"
    shell:
        "touch {{output}}"
"""

KEEP = "workflow.group_settings = whole_group.whole(workflow.group_settings, 'finetune')"


def test_snakemake_forms_one_group_job_when_an_input_function_keeps_the_group_whole(tmp_path):
    def group_jobs(keep: str) -> int:
        result = snakefile_runs.dry_run(tmp_path, GROUPED.format(keep=keep))
        return sum("Group job finetune" in line for line in snakefile_runs.printed(result))

    assert (group_jobs("pass"), group_jobs(KEEP)) == (3, 1)
