"""Where a run trains and in which precision: bf16 autocast on a GPU unless the settings say
otherwise, fp32 on the CPU (whose fine-tuning numerics the demo's tables pin)."""

from __future__ import annotations

import dataclasses

import torch

from ..errors import PipelineError
from .heads import problem_type
from .settings import FinetuneSettings


def device_for(cfg: FinetuneSettings) -> torch.device:
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise PipelineError("finetune.device: cuda requested but no GPU is visible; use auto or cpu")
    if cfg.device == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda")


def precision_for(precision: str, device: torch.device, task_type: str) -> str:
    """The precision a run trains in: fp32 on the CPU whatever was asked; on CUDA ``auto`` is
    bf16 (an H100 does 989 dense TFLOP/s in bf16 against 67 in fp32), except for regression
    (similarity): a bf16 output keeps 8 significant bits, steps of 0.016 at a score of 2.5,
    which flattened a barely trained toy model's predictions and took its Pearson from 0.82
    to 0; such tasks are small, so fp32 costs little."""
    if device.type != "cuda":
        return "fp32"
    if precision != "auto":
        return precision
    return "fp32" if problem_type(task_type) == "regression" else "bf16"


def prepare(cfg: FinetuneSettings, task_type: str) -> tuple[torch.device, FinetuneSettings]:
    """The run's device and its settings with ``precision`` resolved. On CUDA, what autocast
    leaves in fp32 (the loss, the optimiser's arithmetic) may use TF32 matmuls; the CPU's
    float32 matmul precision is left as it is, so CPU runs stay bit for bit as before."""
    device = device_for(cfg)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    return device, dataclasses.replace(cfg, precision=precision_for(cfg.precision, device, task_type))
