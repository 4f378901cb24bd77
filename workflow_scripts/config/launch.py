"""How a training step is started from its rule's resources: plain python, torchrun on one
machine, or one torchrun per node of a Slurm allocation.

`gpu` counts the GPUs of the whole job, as snakemake-executor-plugin-slurm requests them
(`sbatch --gpus=[MODEL:]N`); they are split evenly over `nodes`. A multi-node rule also
needs the resources `mpi`, `tasks` (= nodes) and `tasks_per_gpu: 0`: with `mpi` set, the
plugin's job step runs the rule's command as it is on the first node instead of inside
`srun -n1` (which cannot span nodes), and `tasks` gives the allocation one task per node
for the `srun` below.

On one GPU server without Slurm (profiles/gpu-server), the profile gives the GPU rules the resource
`gpu_ids: allocate`: each job then takes its cards from workflow_scripts/cards before it starts
(`gpu` whole cards, or a fine-tuning run's `gpu_share` of one), and a job with `gpu: 0` sees no
card at all; Snakemake keeps the cards' units busy at most (`card_budget`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..cards import PARTY
from ..cards.visible import visible_cards
from ..errors import PipelineError
from .gpu_share import GPU_SHARE_UNITS
from .resources import JobResources

# torchrun's c10d rendezvous store; one per allocation, on the node running the batch step.
RDZV_PORT = 29500
# the resource (and its one value) by which profiles/gpu-server hands a rule's cards out
CARDS_KEY, ALLOCATE = "gpu_ids", "allocate"
# the rules whose jobs may train on a card
GPU_RULES = ("pretrain", "distill", "finetune", "inference_speed")


def launch_command(gpus: int, nodes: int, threads: int, rule: str = "pretrain", mpi: bool = True) -> str:
    """The command that replaces `python` in front of `-m workflow_scripts...`; `mpi`: whether
    the rule has the `mpi` resource."""
    if nodes < 1 or gpus < 0:
        raise PipelineError(
            f"resources of rule {rule}: nodes={nodes}, gpu={gpus}; set nodes >= 1 and gpu >= 0 "
            "in the profile's set-resources"
        )
    if nodes == 1:
        if gpus <= 1:
            return "python"
        # --standalone picks a free local port: several jobs may share a node.
        return f"torchrun --standalone --nproc-per-node {gpus}"
    if not mpi:
        raise PipelineError(
            f"resources of rule {rule}: nodes={nodes} needs `mpi: srun`, `tasks: {nodes}` and "
            "`tasks_per_gpu: 0` beside it in the profile's set-resources (see profiles/default)"
        )
    if gpus % nodes:
        raise PipelineError(
            f"resources of rule {rule}: gpu={gpus} (GPUs of the whole job) cannot be split evenly "
            f"over nodes={nodes}; set gpu to a multiple of nodes, e.g. {nodes * max(gpus // nodes, 1)}"
        )
    # The job step strips SLURM_* from the rule's environment but SLURM_JOB_ID, so the
    # geometry is explicit; the rule runs on the batch host, which hosts the rendezvous.
    return (
        f"srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 --cpus-per-task={threads} "
        f"torchrun --nnodes {nodes} --nproc-per-node {max(gpus // nodes, 1)} "
        f"--rdzv-backend c10d --rdzv-endpoint $(hostname):{RDZV_PORT} --rdzv-id $SLURM_JOB_ID"
    )


def server_rules(set_resources: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The rules whose jobs take their cards from the allocator: those given `gpu_ids: allocate`
    in the profile's (or the command line's) set-resources."""
    rules = []
    for rule, resources in set_resources.items():
        value = resources.get(CARDS_KEY)
        value = getattr(value, "raw", value)  # Snakemake 9 holds each value in a Resource
        if value in (None, ""):
            continue
        _check_allocate(rule, value)
        rules.append(rule)
    return rules


def _check_allocate(rule: str, value: object) -> None:
    if rule not in GPU_RULES:
        raise PipelineError(
            f"set-resources of rule {rule}: {CARDS_KEY} hands out cards to the jobs of {', '.join(GPU_RULES)} "
            "only; delete the key"
        )
    if value != ALLOCATE:
        raise PipelineError(
            f"set-resources of rule {rule}: {CARDS_KEY}={value}; the one value is {ALLOCATE} "
            "(profiles/gpu-server), or leave the key out"
        )


def on_gpu_server(launch: str, gpus: int, share: int) -> str:
    """`launch` (python or torchrun) behind the card allocator: `gpus` whole cards, or `share`
    units of one card for a run that shares it; a CPU job (no GPU) sees no card at all."""
    if gpus == 0:
        return f"CUDA_VISIBLE_DEVICES= {launch}"
    take = f"--share {share}" if gpus == 1 and 0 < share < GPU_SHARE_UNITS else f"--cards {gpus}"
    return f"python -m workflow_scripts.cards {take} -- {launch}"


def check_server_job(where: str, size: JobResources, offered: list[str], source: str) -> None:
    """Refuse, before any job starts, a job size (the config's ``where``) this server cannot hold."""
    if size.nodes > 1:
        raise PipelineError(
            f"{where}.nodes: {size.nodes} nodes on one GPU server; set nodes: 1 (and gpu to at most "
            f"{len(offered)}), or run on Slurm (--profile slurm)"
        )
    if size.gpu > len(offered):
        raise PipelineError(
            f"{where}.gpu: {size.gpu} cards, but {source} offers {len(offered)} "
            f"({','.join(offered) or 'none'}); set it to at most {len(offered)}, or offer more cards"
        )


def card_budget(offered: int, asked: int | None) -> int:
    """Snakemake's `gpu_share` on a GPU server: the units of the cards it may keep busy, every
    card offered or `--resources gpu=N` of them (at least one card's worth, which CPU runs
    sharing a group's units need)."""
    cards = offered if asked is None else min(asked, offered)
    return GPU_SHARE_UNITS * max(cards, 1)


def gpu_server(workflow: Any, sizes: Callable[[str], Mapping[str, JobResources]]) -> list[str]:
    """The rules whose jobs take their cards from the allocator on this machine (none but on a GPU
    server), each job size of theirs (``sizes(rule)``: by the config key that sets it) checked
    against the cards on offer. In the Snakemake that schedules the jobs, its jobs share cards
    with each other only (their party), and its budget of card units becomes ``card_budget``: a
    fine-tuning run takes its share, a training job 840 per card; ``gpu``, which cannot count a
    shared card, no longer limits anything."""
    rules = server_rules(workflow.resource_settings.overwrite_resources)
    if not rules:
        return rules
    offered, source = visible_cards()
    for rule in rules:
        for where, size in sizes(rule).items():
            check_server_job(where, size, offered, source)
    if workflow.is_main_process:
        if workflow.global_resources.get("gpu_share").value is not None:
            raise PipelineError(
                "--resources gpu_share: on a GPU server the workflow sets it from the cards on offer; "
                "limit the cards with --resources gpu=N"
            )
        os.environ[PARTY] = f"{os.getpid()}:{os.getcwd()}"
        workflow.register_resource("gpu_share", card_budget(len(offered), workflow.global_resources.get("gpu").value))
        workflow.register_resource("gpu", None)
    return rules
