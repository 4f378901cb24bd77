"""How a training step is started from its rule's resources: plain python, torchrun on one
machine, or one torchrun per node of a Slurm allocation.

`gpu` counts the GPUs of the whole job, as snakemake-executor-plugin-slurm requests them
(`sbatch --gpus=[MODEL:]N`); they are split evenly over `nodes`. A multi-node rule also
needs the resources `mpi`, `tasks` (= nodes) and `tasks_per_gpu: 0`: with `mpi` set, the
plugin's job step runs the rule's command as it is on the first node instead of inside
`srun -n1` (which cannot span nodes), and `tasks` gives the allocation one task per node
for the `srun` below.
"""

from __future__ import annotations

from ..errors import PipelineError

# torchrun's c10d rendezvous store; one per allocation, on the node running the batch step.
RDZV_PORT = 29500


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
