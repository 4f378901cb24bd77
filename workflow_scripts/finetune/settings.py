"""Settings of one fine-tuning run: the model, the part of the task it reads, and the hyper-parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import PipelineError
from ..typed import load_settings

# poolings that read a relation's two entity spans
ENTITY_POOLING = ("entity_start", "mention")


@dataclass
class GridSettings:
    lr: list[float] = field(default_factory=list, metadata={"help": "learning rates to try (empty = the run's lr)"})
    batch_size: list[int] = field(
        default_factory=list, metadata={"help": "batch sizes to try (empty = the run's batch_size)"}
    )

    def validate(self, where: str) -> None:
        if any(v <= 0 for v in self.lr):
            raise PipelineError(f"{where}.lr: every learning rate must be > 0")
        if any(v <= 0 for v in self.batch_size):
            raise PipelineError(f"{where}.batch_size: every batch size must be > 0")


@dataclass
class FinetuneSettings:
    lr: float = field(default=3e-5, metadata={"help": "peak learning rate of AdamW"})
    batch_size: int = field(default=32, metadata={"help": "training examples (or windows) per step"})
    micro_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "examples (or windows) per forward and backward pass: a batch's micro-batches add their "
            "gradients, weighted by their share of the batch's loss terms, before one optimiser step "
            "(the same step in less memory); null = the whole batch at once"
        },
    )
    eval_batch_size: int = field(default=64, metadata={"help": "examples per batch when scoring"})
    epochs: int = field(default=3, metadata={"help": "passes over the training data"})
    max_steps: int | None = field(default=None, metadata={"help": "cap on optimiser steps (null = epochs decide)"})
    eval_every: int = field(default=0, metadata={"help": "score dev every N steps; 0 = once per epoch"})
    patience: int = field(
        default=0,
        metadata={"help": "stop after this many dev evaluations without improvement; 0 = never"},
    )
    warmup_ratio: float = field(
        default=0.1, metadata={"help": "fraction of steps of linear warm-up before linear decay"}
    )
    weight_decay: float = field(
        default=0.01, metadata={"help": "AdamW weight decay (not applied to biases and LayerNorm)"}
    )
    adam_epsilon: float = field(default=1e-8, metadata={"help": "AdamW epsilon"})
    dropout: float = field(default=0.1, metadata={"help": "dropout of the encoder and the task head"})
    grad_clip: float = field(default=1.0, metadata={"help": "clip the gradient norm to this value; 0 = no clipping"})
    max_length: int | None = field(
        default=None, metadata={"help": "maximum sequence length in tokens (null = the task's)"}
    )
    tagging: Literal["bio", "io", "bioul"] = field(
        default="bio",
        metadata={"help": "tag scheme trained for NER (scored as BIO entities either way)"},
    )
    label_all_subtokens: bool = field(
        default=False,
        metadata={"help": "train on every sub-token of a word, not only the first"},
    )
    window_context: int = field(
        default=16,
        metadata={"help": "sub-tokens of context either side of a window of a long sentence"},
    )
    chunking: bool = field(
        default=False,
        metadata={
            "help": "read an input longer than the model's context in chunks (README, long inputs); "
            "false = a max_length above the model's context is refused"
        },
    )
    chunk_length: int | None = field(
        default=None,
        metadata={"help": "tokens of one chunk, special tokens included (null = the model's context)"},
    )
    chunk_stride: int = field(
        default=0,
        metadata={
            "help": "tokens a chunk shares with the one before (overlap); tagging takes each token from "
            "the chunk where it is most central"
        },
    )
    chunk_pooling: Literal["mean", "max"] = field(
        default="mean",
        metadata={"help": "how a sequence-level task combines its chunks' outputs (logits): mean or max per label"},
    )
    max_chunks: int | None = field(
        default=None,
        metadata={
            "help": "sequence-level tasks read at most this many chunks of an input (null = as many as "
            "max_length needs); tagging predicts every token"
        },
    )
    re_input: Literal["dummify", "markers"] = field(
        default="dummify",
        metadata={"help": "relation input: dummified entities as given, or entity markers around them"},
    )
    pooling: Literal["cls", "mean", "entity_start", "mention"] = field(
        default="cls",
        metadata={
            "help": "what a sentence-level head reads: [CLS] (the papers' choice), the mean over the "
            "input's tokens, or for relations the two entities' first tokens (their markers with "
            "re_input: markers) or max pooling over each entity's tokens; tagging reads every token"
        },
    )
    threshold: float = field(default=0.5, metadata={"help": "multi-label decision threshold on sigmoid outputs"})
    group_by_length: bool = field(
        default=True,
        metadata={"help": "batch examples of similar length together (less padding)"},
    )
    layerwise_lr_decay: float = field(
        default=1.0,
        metadata={
            "help": "layer-wise learning-rate decay in (0, 1]: layer l of L trains at lr x decay^(L-l), "
            "the embeddings lowest (l = 0), the head at lr; 1 = none (Tinn et al. 2023)"
        },
    )
    freeze_layers: int = field(
        default=0,
        metadata={"help": "freeze the embeddings and the lowest k encoder layers; 0 = train everything"},
    )
    reinit_top_layers: int = field(
        default=0,
        metadata={"help": "re-initialise the top k encoder layers with the model's initialiser before training"},
    )
    grid: GridSettings = field(
        default_factory=GridSettings,
        metadata={"help": "hyper-parameter grid (lr x batch_size), the best chosen on dev; empty = none"},
    )
    num_threads: int = field(default=1, metadata={"help": "CPU threads of torch (many runs share a node)"})
    device: Literal["auto", "cpu", "cuda"] = field(
        default="auto", metadata={"help": "where to train; auto = cuda when available"}
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = field(
        default="auto",
        metadata={
            "help": "autocast precision on GPU; auto = bf16, fp32 for regression (similarity); CPU always runs fp32"
        },
    )
    sdpa_backends: list[Literal["flash", "efficient", "math", "cudnn"]] = field(
        default_factory=lambda: ["flash", "efficient", "math"],
        metadata={
            "help": "attention kernels SDPA may use, set by every step (empty = torch's choice per shape); "
            "cudnn is left out by default: with padding masks it builds a plan for every new (batch, length) "
            "shape, which made bf16 5.7x slower than fp32 on an H100"
        },
    )
    cuda_graphs: bool = field(
        default=False,
        metadata={
            "help": "on a GPU, pad lengths to a fixed bucket set (32, 64, 96, 128, 192, 256, 384, 512, ...) and "
            "replay the model's forward and backward as CUDA graphs, one per bucket (torch.compile, mode "
            "reduce-overhead); a batch of another shape runs eagerly; ignored on the CPU"
        },
    )

    def validate(self, where: str) -> None:
        positive = {
            "lr": self.lr,
            "batch_size": self.batch_size,
            "eval_batch_size": self.eval_batch_size,
            "epochs": self.epochs,
            "num_threads": self.num_threads,
            "adam_epsilon": self.adam_epsilon,
        }
        for key, value in positive.items():
            if value <= 0:
                raise PipelineError(f"{where}.{key}: must be > 0, got {value}")
        for key in ("max_steps", "micro_batch_size"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise PipelineError(f"{where}.{key}: must be > 0 or null, got {getattr(self, key)}")
        for key in ("eval_every", "patience", "window_context"):
            if getattr(self, key) < 0:
                raise PipelineError(f"{where}.{key}: must be >= 0, got {getattr(self, key)}")
        if not 0 <= self.warmup_ratio < 1:
            raise PipelineError(f"{where}.warmup_ratio: must be in [0, 1), got {self.warmup_ratio}")
        if not 0 <= self.dropout < 1:
            raise PipelineError(f"{where}.dropout: must be in [0, 1), got {self.dropout}")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise PipelineError(f"{where}: weight_decay and grad_clip must be >= 0")
        if not 0 < self.layerwise_lr_decay <= 1:
            raise PipelineError(f"{where}.layerwise_lr_decay: must be in (0, 1], got {self.layerwise_lr_decay}")
        for key in ("freeze_layers", "reinit_top_layers"):
            if getattr(self, key) < 0:
                raise PipelineError(f"{where}.{key}: must be >= 0 (a number of layers), got {getattr(self, key)}")
        if not 0 < self.threshold < 1:
            raise PipelineError(f"{where}.threshold: must be in (0, 1), got {self.threshold}")
        if self.max_length is not None and self.max_length < 8:
            raise PipelineError(f"{where}.max_length: {self.max_length} is too short (at least 8)")
        if self.sdpa_backends and not {"efficient", "math", "cudnn"} & set(self.sdpa_backends):
            raise PipelineError(
                f"{where}.sdpa_backends: {self.sdpa_backends} has no kernel that takes a padding mask "
                "(flash does not); add efficient or math"
            )
        self._validate_chunks(where)

    def _validate_chunks(self, where: str) -> None:
        if self.chunk_length is not None and self.chunk_length < 8:
            raise PipelineError(f"{where}.chunk_length: {self.chunk_length} is too short (at least 8)")
        if self.max_chunks is not None and self.max_chunks < 1:
            raise PipelineError(f"{where}.max_chunks: must be >= 1 or null, got {self.max_chunks}")
        if self.chunk_stride < 0:
            raise PipelineError(f"{where}.chunk_stride: must be >= 0, got {self.chunk_stride}")
        if self.chunk_length is not None and self.chunk_stride >= self.chunk_length // 2:
            raise PipelineError(
                f"{where}.chunk_stride: {self.chunk_stride} leaves too little new text per chunk of "
                f"{self.chunk_length}; keep it below half the chunk length"
            )


def problem_type(task_type: str) -> str:
    """What a task type's head predicts (transformers' ``problem_type``, or ``token`` for tagging)."""
    return {
        "ner": "token",
        "pico": "token",
        "doc_classification": "multi_label_classification",
        "similarity": "regression",
    }.get(task_type, "single_label_classification")


def gpu_precision(precision: str, task_type: str) -> str:
    """The autocast precision a run trains in on a GPU (the CPU always runs fp32: device.py).
    ``auto`` is bf16 (an H100 does 989 dense TFLOP/s in bf16 against 67 in fp32), except for
    regression (similarity): a bf16 output keeps 8 significant bits, steps of 0.016 at a score of
    2.5, which flattened a barely trained toy model's predictions and took its Pearson from 0.82
    to 0; such tasks are small, so fp32 costs little. The run and the planner's memory estimate
    (config/gpu_share.py) both resolve it here."""
    if precision != "auto":
        return precision
    return "fp32" if problem_type(task_type) == "regression" else "bf16"


def planned_steps(train_units: int, batch_size: int, epochs: int, max_steps: int | None) -> int:
    """Optimiser steps of a run: ``epochs`` passes over ``train_units`` (examples, or windows) in
    batches of ``batch_size``, capped by ``max_steps`` (None: no cap). The run's schedule and the
    planner's time limit (runtime.py) both count with this."""
    total = math.ceil(train_units / batch_size) * epochs
    return total if max_steps is None else min(total, max_steps)


@dataclass
class FinetuneModel:
    name: str = field(metadata={"help": "model name (the {model} wildcard)"})
    restricted: bool = field(default=False, metadata={"help": "the model was trained on credentialed data (MIMIC-III)"})


@dataclass
class FinetuneTask:
    """The part of a task a fine-tuning run reads (labels and tables are the report's)."""

    name: str = field(metadata={"help": "task name (the {task} wildcard)"})
    type: Literal["ner", "pico", "relation", "similarity", "doc_classification", "qa", "nli"] = field(
        metadata={"help": "task type; decides the model head and the decoding"}
    )
    metric: str | dict[str, str] = field(
        metadata={"help": "metric name, or one per benchmark; dev selection maximises the first"}
    )
    labels: list[str] = field(default_factory=list, metadata={"help": "label set (empty: taken from the data)"})
    negative_label: str | None = field(default=None, metadata={"help": "the 'no relation' class of micro-F1"})
    folds: int = field(default=0, metadata={"help": "0 = fixed train/dev/test; k = k cross-validation folds"})
    restricted: bool = field(default=False, metadata={"help": "credentialed data (i2b2, MedNLI)"})


@dataclass
class FinetuneRunSettings:
    """Everything one fine-tuning run reads, resolved while the workflow plans it."""

    model: FinetuneModel = field(metadata={"help": "the model being fine-tuned"})
    task: FinetuneTask = field(metadata={"help": "the task's labels, metric and folds"})
    finetune: FinetuneSettings = field(
        default_factory=FinetuneSettings, metadata={"help": "fine-tuning hyper-parameters"}
    )

    def validate(self, where: str) -> None:
        if self.finetune.max_length is None:
            raise PipelineError(f"{where}.finetune.max_length: the resolved settings need the sequence length")
        if self.finetune.pooling in ENTITY_POOLING and self.task.type != "relation":
            raise PipelineError(
                f"{where}.finetune.pooling: {self.finetune.pooling} pools a relation's two entities, "
                f"but task {self.task.name} is {self.task.type}: use cls or mean"
            )


def load(path: str | Path) -> FinetuneRunSettings:
    return load_settings(path, FinetuneRunSettings)
