"""Settings of the cost steps: how inference speed is measured (``inference_speed`` in config.yaml,
``results/configs/inference_speed.yaml``) and which records the cost table sums
(``results/configs/cost.yaml``, written by the workflow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import PipelineError
from ..typed import help_field


@dataclass
class SpeedSettings:
    lengths: list[int] = help_field(
        "Sequence lengths (tokens) at which each model's inference throughput is measured; a length beyond a "
        "model's position table is reported as such, never extrapolated.",
        default_factory=lambda: [128, 512],
    )
    batch_size: int = help_field("Sequences per forward pass.", default=32)
    warmup: int = help_field("Untimed forward passes per length before the timed ones.", default=2)
    batches: int = help_field("Timed forward passes per length.", default=10)
    num_threads: int = help_field("CPU threads of the measurement (0: torch's default).", default=0)

    def validate(self, where: str) -> None:
        if not self.lengths or any(n < 2 for n in self.lengths):
            raise PipelineError(f"{where}.lengths: give at least one length of 2 tokens or more, got {self.lengths}")
        for key in ("batch_size", "batches"):
            if getattr(self, key) < 1:
                raise PipelineError(f"{where}.{key}: must be at least 1, got {getattr(self, key)}")
        if self.warmup < 0 or self.num_threads < 0:
            raise PipelineError(f"{where}: warmup and num_threads must be 0 or more")


@dataclass
class CostModel:
    display: str = help_field("Name shown in the table and the plot.")
    kind: Literal["pretrain", "distill", "external", "control", "baseline"] = help_field("How it was obtained.")
    restricted: bool = help_field("Derived from credentialed data: its row is marked.", default=False)
    scored_as: str | None = help_field(
        "The name its scores are tabled under: a seeded model's, for each of its pretraining seeds (null: its own).",
        default=None,
    )
    training: str | None = help_field(
        "provenance.json of its pretraining or distillation run here (with train_log.jsonl beside it), or null.",
        default=None,
    )
    speed: str | None = help_field("Its inference_speed JSON, or null (no model: the baseline).", default=None)
    runs: list[str] = help_field("provenance.json of each of its fine-tuning runs.", default_factory=list)
    upstream: dict[str, int | None] = help_field(
        "Models whose training precedes its own (init, teacher), each with the step it started from "
        "(a decay branch) or null (the whole run).",
        default_factory=dict,
    )
    checkpoint: str | None = help_field(
        "external: the hub id or directory, the key of its published pretraining compute.", default=None
    )


@dataclass
class CostSettings:
    models: dict[str, CostModel] = help_field("Every model of the study, by name, in display order.")
    groups: str = help_field("groups.csv of the tables step (the All mean per model).")
    blurb: str = help_field("blurb.csv of the tables step (the BLURB score per model).")
    reported_compute: str = help_field(
        "CSV of the pretraining compute the external checkpoints' papers report (checkpoint, compute, source)."
    )
    lengths: list[int] = help_field("The inference speed lengths, in table order.", default_factory=list)

    def validate(self, where: str) -> None:
        for name, m in self.models.items():
            unknown = [u for u in m.upstream if u not in self.models]
            if unknown:
                raise PipelineError(f"{where}.models.{name}.upstream: {unknown[0]!r} is not a model of the study")
