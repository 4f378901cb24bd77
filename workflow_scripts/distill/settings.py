"""Settings of the distillation step (top-level YAML key ``model.distill``).

They extend the pretraining settings (optimisation, data, masking, checkpoints: the same
keys, the same loop); ``architecture``/``size``/``hidden_size``... give the shape of a
randomly initialised student. Defaults are Lewis et al.'s recipe: MLM x5, output KL at
temperature 2 x2, last-hidden-state cosine x1.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from ..errors import PipelineError
from ..pretrain.settings import PretrainSettings


@dataclass
class LossWeights:
    mlm: float = field(default=5.0, metadata={"help": "Masked-language-model cross-entropy of the student."})
    kl: float = field(
        default=2.0,
        metadata={
            "help": "KL(teacher || student) of the output distributions at the temperature, times "
            "T^2 (positions: kl_positions)."
        },
    )
    soft_ce: float = field(
        default=0.0,
        metadata={"help": "Soft cross-entropy against the teacher's output distribution (TinyBERT prediction layer)."},
    )
    cosine: float = field(
        default=1.0,
        metadata={"help": "1 - cosine similarity of the last hidden states (projected when widths differ)."},
    )
    hidden_mse: float = field(
        default=0.0,
        metadata={
            "help": "MSE of mapped hidden states through a learned projection, summed over the layer map (TinyBERT)."
        },
    )
    hidden_cosine: float = field(
        default=0.0,
        metadata={"help": "1 - cosine of mapped hidden states, summed over the layer map (CompactBioBERT)."},
    )
    attention_mse: float = field(
        default=0.0, metadata={"help": "Per-head MSE of mapped attention maps (TinyBERT; needs equal head counts)."}
    )
    attention_kl: float = field(
        default=0.0,
        metadata={"help": "KL(teacher || student) of mapped attention maps, per head and query (CompactBioBERT)."},
    )
    embedding_mse: float = field(
        default=0.0, metadata={"help": "MSE of the embedding-layer outputs through a learned projection (TinyBERT)."}
    )

    def teacher_terms(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "mlm" and getattr(self, f.name) > 0}


@dataclass
class StudentSettings:
    init: Literal["teacher_layers", "model", "random"] = field(
        default="teacher_layers",
        metadata={
            "help": "teacher_layers: copy the teacher's embeddings, head and a subset of its "
            "layers; model: load --init; random: a fresh model of the given shape."
        },
    )
    num_layers: int | None = field(
        default=None, metadata={"help": "Student layers for init teacher_layers (default: half the teacher's)."}
    )
    layers: list[int] | None = field(
        default=None,
        metadata={
            "help": "Teacher layers (0-based) copied into the student for init teacher_layers "
            "(default: every k-th from 0)."
        },
    )


@dataclass
class DistillSettings(PretrainSettings):
    student: StudentSettings = field(
        default_factory=StudentSettings, metadata={"help": "Student shape and initialisation."}
    )
    loss: LossWeights = field(
        default_factory=LossWeights,
        metadata={"help": "Loss weights; all teacher terms 0 is the 'train longer' control (plain MLM, no teacher)."},
    )
    temperature: float = field(default=2.0, metadata={"help": "Softmax temperature of the output-distribution terms."})
    layer_map: list[int] | None = field(
        default=None,
        metadata={
            "help": "Teacher layer (1-based; 0 = embeddings) matched to each student layer 1..n by "
            "the layer-wise terms (default: evenly spaced)."
        },
    )
    kl_positions: Literal["all", "masked"] = field(
        default="all",
        metadata={
            "help": "Positions where the output terms (kl, soft_ce) compare distributions: every "
            "token (DistilBERT's default) or only the masked ones."
        },
    )
    teacher_precision: Literal["fp32", "bf16", "fp16"] = field(
        default="bf16", metadata={"help": "Teacher weights and forward pass precision on GPU (fp32 on CPU)."}
    )

    def validate(self, where: str) -> None:
        super().validate(where)
        if self.objective != "mlm":
            raise PipelineError(
                f"{where}.objective: students are distilled with the MLM objective; remove objective {self.objective}"
            )
        for f in fields(self.loss):
            if getattr(self.loss, f.name) < 0:
                raise PipelineError(f"{where}.loss.{f.name}: weights must be non-negative")
        if self.loss.mlm == 0 and not self.loss.teacher_terms():
            raise PipelineError(f"{where}.loss: every weight is 0; give at least one positive weight")
        if self.temperature <= 0:
            raise PipelineError(f"{where}.temperature: must be positive")
        if any(p.grow_positions for p in self.phases):
            raise PipelineError(
                f"{where}.phases: grow_positions applies to pretraining only; distil at the teacher's lengths"
            )
        if self.student.num_layers is not None and self.student.num_layers < 1:
            raise PipelineError(f"{where}.student.num_layers: must be at least 1")


@dataclass
class DistillModelSettings:
    """The ``model`` key of the settings file written by the workflow."""

    name: str = field(metadata={"help": "Student name (the results/distill/<name> directory)."})
    distill: DistillSettings = field(default_factory=DistillSettings, metadata={"help": "Distillation recipe."})
