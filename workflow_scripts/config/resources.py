"""What one job of a rule needs (threads, memory, time, GPUs, nodes), as study data.

These belong to the study, not to the site: a paper-scale pretraining needs 16 GPUs on two
nodes, the demo's tiny one a CPU. The site profile (profiles/slurm) only maps jobs onto
partitions, accounts and GPU models; its set-resources still win for a rule where they set
the same key (its default-resources only fill keys a rule leaves unset). Keeping them out of
the workflow profile matters: Snakemake replaces a profile's whole `set-resources` with the
workflow profile's, so per-rule values there would wipe out the site's partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import PipelineError
from ..finetune.memory import MAX_RUNS_PER_GPU
from ..typed import help_field as _help

# Rules whose jobs take their size from `resources:` (models may override the GPU ones).
SIZED_RULES = (
    "download_corpus_file",
    "download_pmc_batch",
    "parse_corpus_file",
    "build_corpus",
    "train_vocab",
    "pack",
    "pretrain",
    "distill",
    "finetune",
    "inference_speed",
)
MODEL_RULES = ("pretrain", "distill")


@dataclass
class JobResources:
    threads: int = _help("CPU threads of one job (capped by --cores on one machine).", default=1)
    mem_mb: int = _help("Memory of one job in MB.", default=4000)
    runtime: int | Literal["auto"] = _help(
        "Time limit in minutes of the first attempt; retry n gets n times as long. finetune on a GPU may "
        "be auto: estimated per model and task from the task's examples, epochs and lengths and the "
        "model's size (twice the estimate; 240 where the task's size is unknown).",
        default=60,
    )
    gpu: int = _help(
        "GPUs of the whole job (sbatch --gpus): 0 runs python on the CPU, 1 python on one GPU, "
        "more than 1 torchrun with one process per GPU.",
        default=0,
    )
    nodes: int = _help(
        "Nodes of the job; more than 1 runs one torchrun per node through srun (the GPUs split evenly).",
        default=1,
    )
    gpu_mem_gb: int = _help(
        "Memory of each of the job's GPUs in GB: pretraining and distillation with micro_batch_size: auto fill it.",
        default=80,
    )
    runs_per_gpu: int | Literal["auto"] = _help(
        "finetune: runs sharing one GPU, side by side in one group job (Slurm: one allocation); auto: "
        "as many as the fine-tuning memory estimate fits into gpu_mem_gb at the run's batch size and "
        f"length, at most {MAX_RUNS_PER_GPU}. With gpu: 0, a number caps the runs one group job holds at "
        "once and auto leaves that to the job's cores.",
        default="auto",
    )

    def validate(self, where: str) -> None:
        for name in ("threads", "mem_mb", "runtime", "nodes", "gpu_mem_gb"):
            if getattr(self, name) != "auto" and getattr(self, name) < 1:
                raise PipelineError(f"{where}.{name}: must be at least 1, got {getattr(self, name)}")
        if self.runs_per_gpu != "auto" and not 1 <= self.runs_per_gpu <= MAX_RUNS_PER_GPU:
            raise PipelineError(
                f"{where}.runs_per_gpu: must be auto or 1 to {MAX_RUNS_PER_GPU}, got {self.runs_per_gpu}"
            )
        if self.runs_per_gpu not in ("auto", 1) and self.gpu > 1:
            raise PipelineError(
                f"{where}.runs_per_gpu: a run on {self.gpu} GPUs has its allocation to itself; "
                "set runs_per_gpu to 1 or auto, or gpu to 1"
            )
        if self.gpu < 0:
            raise PipelineError(f"{where}.gpu: must be 0 or more, got {self.gpu}")
        if self.nodes > 1 and (self.gpu < self.nodes or self.gpu % self.nodes):
            raise PipelineError(
                f"{where}.gpu: {self.gpu} GPUs cannot be split evenly over {self.nodes} nodes; "
                f"set gpu to a multiple of nodes, e.g. {self.nodes * max(self.gpu // self.nodes, 1)}"
            )


def check_rules(where: str, resources: dict[str, JobResources]) -> None:
    for rule in resources:
        if rule not in SIZED_RULES:
            raise PipelineError(f"{where}.{rule}: not a rule with sized jobs (known: {', '.join(SIZED_RULES)})")
        if rule == "finetune" and resources[rule].nodes > 1:
            raise PipelineError(f"{where}.finetune.nodes: a fine-tuning run runs on one node; set nodes to 1")
        if rule != "finetune" and resources[rule].runs_per_gpu != "auto":
            raise PipelineError(f"{where}.{rule}.runs_per_gpu: only fine-tuning runs share a GPU; delete the key")
        if resources[rule].runtime == "auto" and (rule != "finetune" or not resources[rule].gpu):
            raise PipelineError(
                f"{where}.{rule}.runtime: auto estimates a fine-tuning run on a GPU; give a number of minutes"
            )


def snakemake_resources(res: JobResources, multi_node_keys: bool) -> dict[str, Any]:
    """The rule's `resources:` for snakemake-executor-plugin-slurm.

    `multi_node_keys`: whether some job of the rule spans nodes. Such a job needs `mpi` (the
    job step then runs the rule's own srun instead of wrapping it in `srun -n1`, which cannot
    span nodes), `tasks` = nodes and `tasks_per_gpu: 0` (no --ntasks-per-gpu); the same keys
    with `mpi` empty leave a one-node job of that rule as it would be without them.
    """
    out: dict[str, Any] = {"mem_mb": res.mem_mb, "gpu": res.gpu, "nodes": res.nodes, "gpu_mem_gb": res.gpu_mem_gb}
    if multi_node_keys:
        out.update(mpi="srun" if res.nodes > 1 else "", tasks=res.nodes, tasks_per_gpu=0)
    return out
