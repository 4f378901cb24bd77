"""One GPU server without Slurm (profiles/gpu-server): the launch commands, the card budget
Snakemake schedules by, real Snakemake runs through the profile on fake cards, the preloaded
interpreter's forks on the cards of their runs, and torchrun's own rendezvous per job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from card_jobs import ROOT, Seen, card_env, most_units_at_once, probe_file, violations, wait_for
from snakemake.resources import Resources

from workflow_scripts import preload
from workflow_scripts.cards.ledger import Ledger
from workflow_scripts.cards.plan import Request
from workflow_scripts.config import launch
from workflow_scripts.config.resources import JobResources
from workflow_scripts.errors import PipelineError

BIN = Path(sys.executable).parent
PROFILE = ROOT / "profiles" / "gpu-server"


def test_the_profile_marks_the_gpu_rules_and_refuses_anything_else():
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert launch.server_rules(profile["set-resources"]) == ["pretrain", "distill", "finetune", "inference_speed"]
    # as Snakemake 9 holds set-resources
    assert launch.server_rules({"finetune": Resources.from_mapping({"gpu_ids": "allocate"})}) == ["finetune"]
    assert launch.server_rules({"finetune": {"mem_mb": 8000}}) == []
    with pytest.raises(PipelineError, match="gpu_ids=yes; the one value is allocate"):
        launch.server_rules({"finetune": {"gpu_ids": "yes"}})
    with pytest.raises(PipelineError, match="rule pack: gpu_ids hands out cards to the jobs of pretrain, distill"):
        launch.server_rules({"pack": {"gpu_ids": "allocate"}})


def test_jobs_take_whole_cards_or_a_share_and_cpu_jobs_see_none():
    torchrun = launch.launch_command(4, 1, 16)
    assert launch.on_gpu_server(torchrun, 4, 3360) == (
        "python -m workflow_scripts.cards --cards 4 -- torchrun --standalone --nproc-per-node 4"
    )
    assert launch.on_gpu_server("python", 1, 840) == "python -m workflow_scripts.cards --cards 1 -- python"
    assert launch.on_gpu_server("python", 1, 105) == "python -m workflow_scripts.cards --share 105 -- python"
    assert launch.on_gpu_server("python", 0, 420) == "CUDA_VISIBLE_DEVICES= python"


def test_a_job_size_the_server_cannot_hold_names_its_key_and_the_fix():
    with pytest.raises(
        PipelineError, match=r"resources.pretrain.gpu: 16 cards, but nvidia-smi -L offers 8 .*at most 8"
    ):
        launch.check_server_job("resources.pretrain", JobResources(gpu=16), [str(i) for i in range(8)], "nvidia-smi -L")
    with pytest.raises(PipelineError, match="models.big.resources.nodes: 2 nodes on one GPU server.*Slurm"):
        launch.check_server_job("models.big.resources", JobResources(gpu=16, nodes=2), ["0"], "nvidia-smi -L")
    launch.check_server_job("resources.finetune", JobResources(gpu=1), ["3"], "CUDA_VISIBLE_DEVICES")


def test_the_budget_is_every_card_offered_or_the_gpu_resource_of_them():
    assert launch.card_budget(4, None) == 4 * 840
    assert launch.card_budget(4, 2) == 2 * 840
    assert launch.card_budget(2, 8) == 2 * 840
    assert launch.card_budget(0, None) == 840  # CPU runs sharing one group's worth, as on the CPU profile


def test_runs_on_different_cards_share_one_preloaded_interpreter(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = preload.socket_path()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    assert preload.socket_path() == first
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")  # read when torch imports: another server
    assert preload.socket_path() != first


TINY = """
from workflow_scripts.config import launch
from workflow_scripts.config.resources import JobResources

SIZES = {{"pretrain": JobResources(gpu=2), "finetune": JobResources(gpu=1)}}
GPU_SERVER = launch.gpu_server(workflow, lambda rule: {{f"resources.{{rule}}": SIZES.get(rule, JobResources())}})


def launcher(rule):
    def command(wildcards, resources):
        if rule not in GPU_SERVER:
            return "python"
        return launch.on_gpu_server("python", resources.gpu, resources.gpu_share)
    return command


rule all:
    input:
        expand("seen/pretrain{{i}}.json", i=range(2)),
        expand("seen/finetune{{i}}.json", i=range(8)),


rule pretrain:
    output: "seen/pretrain{{i}}.json"
    resources: gpu=2, gpu_share=1680
    params: launch=launcher("pretrain")
    shell: "{{params.launch}} {probe} {{output}} 1.5"


# runs_per_gpu 2
rule finetune:
    output: "seen/finetune{{i}}.json"
    resources: gpu=1, gpu_share=420
    params: launch=launcher("finetune")
    shell: "{{params.launch}} {probe} {{output}} 1.5"
"""


def tiny_run(tmp_path: Path, *args: str) -> list[Seen]:
    (tmp_path / "Snakefile").write_text(TINY.format(probe=probe_file(tmp_path)))
    env = card_env(tmp_path, "0,1,2,3", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [str(BIN / "snakemake"), "--workflow-profile", str(PROFILE), "--cores", "8", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [Seen.read(path) for path in sorted((tmp_path / "seen").glob("*.json"))]


def test_a_workflow_through_the_profile_uses_every_card_and_never_overloads_one(tmp_path):
    jobs = tiny_run(tmp_path)
    assert len(jobs) == 10 and violations(jobs) == []
    assert {len(job.cards) for job in jobs} == {1, 2}
    # one party, this Snakemake, and more than one card's worth busy at once
    assert len({job.party for job in jobs}) == 1 and jobs[0].party.endswith(str(tmp_path))
    assert most_units_at_once(jobs) > 840


def test_resources_gpu_limits_how_many_cards_are_busy(tmp_path):
    """Two of the four cards: four runs at half a card at once, not two runs counted a card each."""
    jobs = tiny_run(tmp_path, *[f"seen/finetune{i}.json" for i in range(8)], "--resources", "gpu=2")
    assert len(jobs) == 8 and violations(jobs) == []
    assert 840 < most_units_at_once(jobs) <= 2 * 840


def test_the_workflows_gpu_jobs_are_launched_behind_the_allocator(tmp_path):
    """The real Snakefile on the demo's config, with the training rules given cards."""
    study = tmp_path / "study"
    study.mkdir()
    (study / "config.yaml").write_text((ROOT / "demo" / "config.yaml").read_text())
    (study / "raw_source").symlink_to(ROOT / "demo" / "raw_source")
    overlay = tmp_path / "cards.yaml"
    cards = {"pretrain": {"gpu": 2}, "finetune": {"gpu": 1, "runs_per_gpu": 2}, "inference_speed": {"gpu": 1}}
    overlay.write_text(yaml.safe_dump({"resources": cards}))
    env = card_env(tmp_path, "0,1", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-p", "--directory", str(study), "--workflow-profile", str(PROFILE)]
        + ["--snakefile", str(ROOT / "Snakefile"), "--configfile", str(study / "config.yaml"), str(overlay)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    commands = [line.removeprefix("Shell command: ") for line in done.stdout.splitlines() if "workflow_scripts" in line]
    launched = {
        # two cards each, torchrun's two ranks on them
        "pretrain.pretrain": "python -m workflow_scripts.cards --cards 2 -- torchrun --standalone --nproc-per-node 2 ",
        # half a card each, from the preloaded interpreter
        "finetune.finetune": "python -m workflow_scripts.cards --share 420 -- python -m workflow_scripts.preload ",
        # a whole card, whose speed it measures
        "report.inference_speed": "python -m workflow_scripts.cards --cards 1 -- python -m workflow_scripts.preload ",
        # gpu: 0 in the demo's config: no card at all
        "distill.distill": "CUDA_VISIBLE_DEVICES= python -m workflow_scripts.distill.distill ",
    }
    for step, start in launched.items():
        jobs = [c for c in commands if f"workflow_scripts.{step} " in c]
        assert jobs and all(c.startswith(start) for c in jobs), step


PRELOADED_PROBE = """
import os, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, signal.SIG_IGN)
env = os.environ
Path(sys.argv[1]).write_text(f"{os.getpid()} {env.get('CUDA_VISIBLE_DEVICES')} {env.get('WORKFLOW_PRELOADED')}")
time.sleep(120)
"""


def test_a_preloaded_run_keeps_its_card_when_its_command_is_killed(tmp_path):
    """The fork of the preloaded interpreter runs on the command's card and holds it: killing the
    command outright does not free a card the run still uses."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "card_probe.py").write_text(PRELOADED_PROBE)
    env = card_env(tmp_path, "0", PYTHONPATH=f"{code}{os.pathsep}{ROOT}", TMPDIR=str(tmp_path))
    env.update(WORKFLOW_PRELOAD="1", WORKFLOW_PRELOAD_IDLE="3")
    seen = tmp_path / "seen.txt"
    command = subprocess.Popen(
        [sys.executable, "-m", "workflow_scripts.cards", "--cards", "1", "--"]
        + [sys.executable, "-m", "workflow_scripts.preload", "card_probe", str(seen)],
        env=env,
    )
    wait_for(seen.exists, "the preloaded run started")
    pid, cards, preloaded = seen.read_text().split()
    assert (cards, preloaded) == ("0", "1") and int(pid) != command.pid
    command.send_signal(signal.SIGKILL)
    command.wait()
    ledger = Ledger(tmp_path / "locks")
    time.sleep(0.5)  # the server has told the run to stop (it does not)
    assert ledger.try_take(Request(cards=1), ["0"], None, "probe") is None
    os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: ledger.try_take(Request(cards=1), ["0"], None, "probe"), "the card came back")


TORCHRUN_PROBE = """
import json, os, torch, torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1])
dist.all_reduce(total)
print(json.dumps({"port": os.environ["MASTER_PORT"], "world": dist.get_world_size(), "sum": int(total.item())}))
dist.destroy_process_group()
"""


@pytest.mark.slow  # four torchrun workers and two agents: ~15 s on two shared cores
def test_two_standalone_torchrun_jobs_at_once_each_get_their_own_rendezvous(tmp_path):
    script = tmp_path / "rendezvous.py"
    script.write_text(TORCHRUN_PROBE)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    jobs = [
        subprocess.Popen(
            launch.launch_command(2, 1, 1).split() + [str(script)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    seen = [[json.loads(line) for line in job.communicate(timeout=300)[0].splitlines()] for job in jobs]
    assert all(job.returncode == 0 for job in jobs)
    for ranks in seen:
        assert [r["world"] for r in ranks] == [2, 2] and [r["sum"] for r in ranks] == [3, 3]
    assert len({r["port"] for r in seen[0]}) == 1 and seen[0][0]["port"] != seen[1][0]["port"]
