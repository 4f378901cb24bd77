"""Launching training steps: python, torchrun on one node, one torchrun per Slurm node; and
what snakemake-executor-plugin-slurm makes of the pretraining rule's resources."""

from pathlib import Path

import pytest
import yaml
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from workflow_scripts.config.launch import launch_command
from workflow_scripts.config.resources import JobResources, snakemake_resources
from workflow_scripts.errors import PipelineError

STUDY_CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"


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


def _submit_flags(res: JobResources) -> list[str]:
    # the full study has a two-node pretraining, so every pretraining job carries the multi-node keys
    job = _Job({**snakemake_resources(res, multi_node_keys=True), "gpu_model": "a100"}, res.threads)
    params = {
        "run_uuid": "u",
        "slurm_logfile": "log",
        "comment_str": "rule_pretrain",
        "account": "-A acct",
        "partition": "-p gpu",
        "workdir": "/w",
    }
    return (get_submit_command(job, params) + set_gres_string(job)).split()


def test_slurm_plugin_requests_both_nodes_one_task_each_and_all_gpus():
    res = JobResources(**yaml.safe_load(STUDY_CONFIG.read_text())["resources"]["pretrain"])
    flags = _submit_flags(res)
    assert "--nodes=2" in flags and "--ntasks=2" in flags and "--cpus-per-task=16" in flags
    assert "--gpus=a100:16" in flags
    assert not any(f.startswith("--ntasks-per-gpu") for f in flags)
    # the command then launched inside that allocation
    assert launch_command(res.gpu, res.nodes, res.threads).startswith("srun --nodes=2 --ntasks=2 --ntasks-per-node=1")


def test_a_one_node_job_beside_a_two_node_one_is_an_ordinary_gpu_job():
    flags = _submit_flags(JobResources(threads=8, gpu=4, nodes=1))
    assert "--gpus=a100:4" in flags and "--nodes=1" in flags
    assert not any(f.startswith(("--ntasks", "--ntasks-per-gpu")) for f in flags)
    assert launch_command(4, 1, 8) == "torchrun --standalone --nproc-per-node 4"
