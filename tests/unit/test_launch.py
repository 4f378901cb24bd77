"""Launching training steps: python, torchrun on one node, one torchrun per Slurm node; and
what snakemake-executor-plugin-slurm makes of the pretraining rule's resources."""

from pathlib import Path

import pytest
import yaml
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from workflow_scripts.config.launch import launch_command
from workflow_scripts.errors import PipelineError

PROFILE = Path(__file__).resolve().parents[2] / "profiles/default/config.yaml"


def test_one_gpu_or_none_is_plain_python():
    assert launch_command(0, 1, 4) == "python"
    assert launch_command(1, 1, 4) == "python"


def test_several_gpus_on_one_node_use_standalone_torchrun():
    assert launch_command(8, 1, 16) == "torchrun --standalone --nproc-per-node 8"


def test_two_nodes_run_one_torchrun_per_node_with_a_shared_rendezvous():
    cmd = launch_command(16, 2, 16)
    assert cmd.startswith("srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpus-per-task=16 torchrun ")
    assert "--nnodes 2 --nproc-per-node 8 " in cmd
    assert "--rdzv-backend c10d --rdzv-endpoint $(hostname):29500 --rdzv-id $SLURM_JOB_ID" in cmd


def test_uneven_or_impossible_geometry_names_the_rule_and_the_fix():
    with pytest.raises(PipelineError, match=r"pretrain.*gpu=12.*nodes=5.*multiple of nodes"):
        launch_command(12, 5, 16, "pretrain")
    with pytest.raises(PipelineError, match=r"nodes=2 needs `mpi: srun`, `tasks: 2`"):
        launch_command(16, 2, 16, "pretrain", mpi=False)
    with pytest.raises(PipelineError, match="nodes >= 1"):
        launch_command(8, 0, 16, "distill")


class _Resources(dict):
    __getattr__ = dict.__getitem__


class _Job:
    def __init__(self, resources, threads):
        self.resources, self.threads, self.name = _Resources(resources), threads, "pretrain"


def test_slurm_plugin_requests_both_nodes_one_task_each_and_all_gpus():
    profile = yaml.safe_load(PROFILE.read_text())
    resources = {**profile["set-resources"]["pretrain"], "gpu_model": "a100"}
    job = _Job(resources, profile["set-threads"]["pretrain"])
    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "rule_pretrain",
              "account": "-A acct", "partition": "-p gpu", "workdir": "/w"}
    call = get_submit_command(job, params) + set_gres_string(job)
    flags = call.split()
    assert "--nodes=2" in flags and "--ntasks=2" in flags and "--cpus-per-task=16" in flags
    assert "--gpus=a100:16" in flags
    assert not any(f.startswith("--ntasks-per-gpu") for f in flags)
    # the command then launched inside that allocation
    assert launch_command(resources["gpu"], resources["nodes"], job.threads).startswith(
        "srun --nodes=2 --ntasks=2 --ntasks-per-node=1"
    )
