"""Process-group set-up for torchrun (one node or many) and for plain Slurm ``srun`` launches."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as tdist

from ..errors import PipelineError


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            tdist.barrier()

    def sum(self, value: float) -> float:
        if self.world == 1:
            return value
        t = torch.tensor(
            [float(value)], dtype=torch.float64, device=self.device if self.device.type == "cuda" else "cpu"
        )
        tdist.all_reduce(t)
        return float(t.item())

    def any(self, flag: bool) -> bool:
        return self.sum(1.0 if flag else 0.0) > 0


def _env_from_slurm() -> None:
    """Fill torch's variables from Slurm's when launched by ``srun`` without torchrun."""
    if "RANK" in os.environ or "SLURM_PROCID" not in os.environ or int(os.environ.get("SLURM_NTASKS", "1")) < 2:
        return
    os.environ["RANK"] = os.environ["SLURM_PROCID"]
    os.environ["WORLD_SIZE"] = os.environ["SLURM_NTASKS"]
    os.environ["LOCAL_RANK"] = os.environ.get("SLURM_LOCALID", "0")
    if "MASTER_ADDR" not in os.environ:
        raise PipelineError(
            "MASTER_ADDR: set it to the first node of the allocation when launching with srun (or use torchrun)"
        )
    os.environ.setdefault("MASTER_PORT", "29500")


def setup() -> Dist:
    _env_from_slurm()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if world == 1:
        return Dist(device=device)
    if not tdist.is_initialized():
        tdist.init_process_group(
            backend="nccl" if device.type == "cuda" else "gloo", timeout=datetime.timedelta(minutes=60)
        )
    return Dist(rank=tdist.get_rank(), world=tdist.get_world_size(), local_rank=local_rank, device=device)


def teardown(d: Dist) -> None:
    if d.world > 1 and tdist.is_initialized():
        tdist.destroy_process_group()
