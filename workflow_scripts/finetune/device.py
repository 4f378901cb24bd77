"""Where a run trains and in which precision: bf16 autocast on a GPU unless the settings say
otherwise, fp32 on the CPU (whose fine-tuning numerics the demo's tables pin)."""

from __future__ import annotations

import dataclasses

import torch

from ..errors import PipelineError
from .settings import FinetuneSettings, gpu_precision


def device_for(cfg: FinetuneSettings) -> torch.device:
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise PipelineError("finetune.device: cuda requested but no GPU is visible; use auto or cpu")
    if cfg.device == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda")


def precision_for(precision: str, device: torch.device, task_type: str) -> str:
    """The precision a run trains in: fp32 on the CPU whatever was asked, else ``gpu_precision``'s."""
    return gpu_precision(precision, task_type) if device.type == "cuda" else "fp32"


def prepare(cfg: FinetuneSettings, task_type: str) -> tuple[torch.device, FinetuneSettings]:
    """The run's device and its settings with ``precision`` resolved. On CUDA, what autocast
    leaves in fp32 (the loss, the optimiser's arithmetic) may use TF32 matmuls; the CPU's
    float32 matmul precision is left as it is, so CPU runs stay bit for bit as before."""
    device = device_for(cfg)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    return device, dataclasses.replace(cfg, precision=precision_for(cfg.precision, device, task_type))
