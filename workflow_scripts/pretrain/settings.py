"""Settings of the pretraining step (top-level YAML key ``model.pretrain``).

Defaults follow the papers: AdamW with betas (0.9, 0.98), eps 1e-6, weight decay 0.01,
warm-up then linear decay to zero, 15% masking with 80/10/10 replacement. ``objective:
electra`` trains a generator and discriminator (Clark et al. 2020; BioM-ELECTRA) instead
of a masked-language model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from .. import lr_curve
from ..errors import PipelineError
from .family_settings import ElectraSettings, ModernBertSettings

# hidden, layers, heads, intermediate; "small" is BERT-small (Turc et al.), tiny suits CPU tests and the demo
SIZES: dict[str, tuple[int, int, int, int]] = {
    "tiny": (64, 2, 4, 256),
    "small": (512, 4, 8, 2048),
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
}
# peak learning rate per size when ``lr`` is not given (Lewis et al.: 6e-4 base, 4e-4 large)
DEFAULT_LR = {"tiny": 2e-3, "small": 1e-3, "base": 6e-4, "large": 4e-4}


@dataclass
class Phase:
    seq_len: int = field(default=128, metadata={"help": "Sequence length (tokens per packed block) in this phase."})
    fraction: float = field(default=1.0, metadata={"help": "Fraction of max_steps spent in this phase."})
    mask_prob: float | None = field(
        default=None, metadata={"help": "Masking rate in this phase (default: the model's mask_prob)."}
    )
    grow_positions: Literal["copy"] | None = field(
        default=None,
        metadata={
            "help": "A continued model with learned positions (BERT, RoBERTa, ELECTRA) whose checkpoint has fewer "
            "positions than seq_len: copy grows the table to seq_len, each new row a copy of the checkpoint's rows "
            "in turn (Longformer's initialisation); null refuses such a phase."
        },
    )
    rope_theta: float | None = field(
        default=None,
        metadata={
            "help": "modernbert only: the global layers' rotary base from this phase on (ModernBERT extended "
            "its context to 8,192 tokens by raising it from 10,000 to 160,000); default: the base of the phase before."
        },
    )


@dataclass
class PretrainSettings:
    architecture: Literal["bert", "roberta", "electra", "modernbert"] = field(
        default="roberta",
        metadata={
            "help": "Model family built from scratch (ignored with --init, which keeps its own, but modernbert "
            "asks --init to be a ModernBERT checkpoint); electra requires objective electra."
        },
    )
    objective: Literal["mlm", "electra"] = field(
        default="mlm",
        metadata={
            "help": "mlm: masked-language modelling; electra: generator + replaced-token-detection discriminator."
        },
    )
    electra: ElectraSettings = field(
        default_factory=ElectraSettings, metadata={"help": "Generator and loss of objective electra (ignored for mlm)."}
    )
    size: Literal["tiny", "small", "base", "large"] = field(
        default="base", metadata={"help": "Preset shape: tiny (64x2), small (512x4), base (768x12), large (1024x24)."}
    )
    hidden_size: int | None = field(default=None, metadata={"help": "Hidden width; overrides the size preset."})
    num_layers: int | None = field(default=None, metadata={"help": "Transformer layers; overrides the size preset."})
    num_heads: int | None = field(default=None, metadata={"help": "Attention heads; overrides the size preset."})
    intermediate_size: int | None = field(
        default=None,
        metadata={
            "help": "Feed-forward width; overrides the size preset (default 4 x hidden; modernbert: the GeGLU "
            "width, default 1.5 x hidden, its input projection twice that)."
        },
    )
    modernbert: ModernBertSettings | None = field(
        default=None,
        metadata={"help": "architecture modernbert: ModernBERT's own settings (default: ModernBERT's)."},
    )
    dropout: float = field(default=0.1, metadata={"help": "Hidden-state dropout probability."})
    attention_dropout: float = field(default=0.1, metadata={"help": "Attention-probability dropout."})
    max_steps: int = field(default=1000, metadata={"help": "Optimiser steps in total, over all phases."})
    batch_size: int = field(
        default=32,
        metadata={"help": "Global batch in sequences per optimiser step (all processes, all accumulation steps)."},
    )
    micro_batch_size: int | Literal["auto"] | None = field(
        default=None,
        metadata={
            "help": "Sequences per forward pass per process; gradient accumulation makes up the "
            "global batch. auto: the largest divisor of the per-process share whose estimated "
            "memory (pretrain/memory.py) fits the GPU memory the job declares (resources: "
            "gpu_mem_gb). Default: the whole per-process share."
        },
    )
    phases: list[Phase] = field(
        default_factory=lambda: [Phase(128, 1.0)],
        metadata={
            "help": "Sequence-length schedule, e.g. [{seq_len: 128, fraction: 0.9}, {seq_len: 512, fraction: 0.1}]."
        },
    )
    packing: Literal["concatenate", "documents"] = field(
        default="concatenate",
        metadata={
            "help": "concatenate: documents run on across a packed block, attention crossing their boundaries "
            "(RoBERTa's FULL-SENTENCES); documents: each block keeps its documents apart (block-diagonal attention, "
            "positions restarting per document, as ModernBERT trains)."
        },
    )
    mask_prob: float = field(default=0.15, metadata={"help": "Fraction of tokens (or words) selected for prediction."})
    mask_replace_prob: float = field(
        default=0.8, metadata={"help": "Of the selected tokens, fraction replaced by the mask token."}
    )
    random_replace_prob: float = field(
        default=0.1,
        metadata={"help": "Of the selected tokens, fraction replaced by a random token (the rest stay unchanged)."},
    )
    whole_word_mask: bool = field(
        default=False, metadata={"help": "Select whole words (all their sub-word tokens) rather than single tokens."}
    )
    lr: float | None = field(
        default=None,
        metadata={"help": "Peak learning rate (default by size: 2e-3 tiny, 1e-3 small, 6e-4 base, 4e-4 large)."},
    )
    warmup_ratio: float = field(
        default=0.06, metadata={"help": "Fraction of max_steps of linear warm-up from 0 to the peak."}
    )
    schedule: Literal["linear", "constant_with_warmup", "wsd"] = field(
        default="linear",
        metadata={
            "help": "After warm-up: linear (decay to 0 at max_steps, RoBERTa's), constant_with_warmup (at the "
            "peak), or wsd (warm-up, stable at the peak, then the last decay_ratio of the run decays to 0)."
        },
    )
    decay_ratio: float = field(
        default=0.1, metadata={"help": "wsd: the fraction of max_steps spent decaying at the end."}
    )
    decay_shape: Literal["linear", "1-sqrt", "cosine"] = field(
        default="linear", metadata={"help": "wsd: the decay's shape (1-sqrt: 1 - sqrt(t), MiniCPM's and ModernBERT's)."}
    )
    weight_decay: float = field(
        default=0.01, metadata={"help": "AdamW weight decay (not applied to biases and LayerNorm)."}
    )
    betas: tuple[float, ...] = field(default=(0.9, 0.98), metadata={"help": "AdamW beta1 and beta2."})
    eps: float = field(default=1e-6, metadata={"help": "AdamW epsilon."})
    grad_clip: float = field(
        default=1.0, metadata={"help": "Clip the global gradient norm to this value (0 disables)."}
    )
    precision: Literal["fp32", "bf16", "fp16"] = field(
        default="bf16", metadata={"help": "Autocast precision on GPU; on CPU bf16 and fp16 fall back to fp32."}
    )
    compile: bool | Literal["auto"] = field(
        default="auto",
        metadata={"help": "Wrap the training objective in torch.compile; auto: on CUDA devices, not on the CPU."},
    )
    cuda_graphs: bool = field(
        default=False,
        metadata={
            "help": "When compiling on CUDA, replay each micro-step's forward and backward as CUDA graphs "
            "(torch.compile mode reduce-overhead), taking the per-kernel host work out of small micro-batches; "
            "gradients then accumulate into buffers kept across steps and zeroed in place (on the CPU too, where "
            "nothing else changes)."
        },
    )
    autotune: bool = field(
        default=False,
        metadata={
            "help": "When compiling on CUDA, time Triton templates for each matrix product against cuBLAS and "
            "fuse the bias, GELU and their gradients into the products they win (torch.compile mode "
            "max-autotune): the GELU's kernels are the largest memory-bound group once the residual stream is "
            "bf16. Compiling takes minutes longer; results differ from cuBLAS's in rounding only."
        },
    )
    residual_stream: Literal["fp32", "autocast"] = field(
        default="fp32",
        metadata={
            "help": "Under autocast (bf16 or fp16 on CUDA), the dtype between layers: fp32 (torch's autocast: "
            "LayerNorms return fp32, so residual sums and their gradients are fp32) or autocast (LayerNorms "
            "normalise in fp32 and return bf16/fp16, as Megatron-LM keeps it): half the "
            "bytes through the norm, dropout and residual kernels. No effect in fp32 or on the CPU."
        },
    )
    prediction_slots: Literal["fixed", "exact", "auto"] = field(
        default="fixed",
        metadata={
            "help": "fixed: every micro-batch predicts the same number of positions (masked ones, then ignored "
            "padding), the static shapes torch.compile needs; exact: only the masked ones (less head work in eager "
            "runs); auto: fixed when compiling, else exact."
        },
    )
    prefetch: bool = field(
        default=True,
        metadata={"help": "Build the next step's batch on a background thread while this one trains (off: in series)."},
    )
    attention: Literal["sdpa", "eager"] = field(
        default="sdpa",
        metadata={"help": "Attention kernel: PyTorch scaled-dot-product attention or the eager reference."},
    )
    checkpoint_every: int = field(
        default=500, metadata={"help": "Save a resumable checkpoint every N steps (and always on SIGTERM)."}
    )
    keep_checkpoints: int = field(
        default=2, metadata={"help": "Resumable checkpoints kept in training_state/ (older ones are deleted)."}
    )
    keep_steps: list[int] = field(
        default_factory=list,
        metadata={
            "help": "Steps whose checkpoints are always saved and never deleted, beside keep_checkpoints (the "
            "workflow adds the steps its decay branches start from)."
        },
    )
    export_checkpoints: bool = field(
        default=True,
        metadata={
            "help": "Also save each checkpoint as a transformers model "
            "(training_state/step~N/model) usable for fine-tuning."
        },
    )
    log_every: int = field(default=10, metadata={"help": "Write a train_log.jsonl line every N steps."})
    seed: int = field(default=42, metadata={"help": "Seed for initialisation, data order, masking and dropout."})
    num_threads: int = field(default=0, metadata={"help": "torch CPU threads (0: leave torch's default)."})
    heldout_fraction: float = field(
        default=0.01, metadata={"help": "Fraction of documents held out for the evaluation loss."}
    )
    heldout_max_blocks: int = field(default=256, metadata={"help": "At most this many held-out blocks are evaluated."})
    peak_tflops: float | None = field(
        default=None,
        metadata={"help": "Device peak TFLOP/s for MFU (default: looked up from the GPU name; none on CPU)."},
    )

    def shape(self) -> tuple[int, int, int, int]:
        hidden, layers, heads, inter = SIZES[self.size]
        hidden = self.hidden_size or hidden
        default_inter = inter if self.hidden_size is None else 4 * hidden
        if self.architecture == "modernbert":
            default_inter = 3 * hidden // 2  # ModernBERT-base's GeGLU: 1,152 at hidden 768
        return (hidden, self.num_layers or layers, self.num_heads or heads, self.intermediate_size or default_inter)

    def modernbert_settings(self) -> ModernBertSettings:
        return self.modernbert or ModernBertSettings()

    def peak_lr(self) -> float:
        return self.lr if self.lr is not None else DEFAULT_LR[self.size]

    def curve(self) -> lr_curve.Curve:
        kind = {"linear": "linear", "constant_with_warmup": "constant", "wsd": "wsd"}[self.schedule]
        return lr_curve.Curve(kind, self.decay_ratio, self.decay_shape)

    def phase_mask_probs(self) -> list[float]:
        """Each phase's masking rate: its own, else the model's ``mask_prob``."""
        return [self.mask_prob if p.mask_prob is None else p.mask_prob for p in self.phases]

    def phase_steps(self, total: int | None = None) -> list[int]:
        """Steps per phase of ``total`` (default max_steps); the last phase takes the rounding remainder."""
        total = self.max_steps if total is None else total
        steps = [int(round(p.fraction * total)) for p in self.phases]
        steps[-1] = total - sum(steps[:-1])
        return steps

    def validate(self, where: str) -> None:
        hidden, layers, heads, inter = self.shape()
        checks = [
            (hidden > 0 and layers > 0 and heads > 0 and inter > 0, "hidden_size", "model shape must be positive"),
            (hidden % heads == 0, "num_heads", f"hidden size {hidden} is not divisible by {heads} heads"),
            (self.max_steps > 0, "max_steps", "must be positive"),
            (self.batch_size > 0, "batch_size", "must be positive"),
            (
                self.micro_batch_size in (None, "auto") or 0 < self.micro_batch_size <= self.batch_size,
                "micro_batch_size",
                "must be auto or between 1 and batch_size",
            ),
            (bool(self.phases), "phases", "give at least one phase"),
            (all(p.seq_len >= 8 for p in self.phases), "phases", "seq_len must be at least 8"),
            (all(p.fraction > 0 for p in self.phases), "phases", "every fraction must be positive"),
            (
                math.isclose(sum(p.fraction for p in self.phases), 1.0, abs_tol=1e-6),
                "phases",
                "fractions must sum to 1",
            ),
            (0 < self.mask_prob < 1, "mask_prob", "must be between 0 and 1"),
            (all(0 < m < 1 for m in self.phase_mask_probs()), "phases", "mask_prob must be between 0 and 1"),
            (
                self.mask_replace_prob >= 0
                and self.random_replace_prob >= 0
                and self.mask_replace_prob + self.random_replace_prob <= 1,
                "mask_replace_prob",
                "mask_replace_prob + random_replace_prob must be at most 1",
            ),
            (self.peak_lr() > 0, "lr", "must be positive"),
            (0 <= self.warmup_ratio < 1, "warmup_ratio", "must be in [0, 1)"),
            (0 < self.decay_ratio <= 1, "decay_ratio", "must be in (0, 1]"),
            (
                self.schedule != "wsd" or self.warmup_ratio + self.decay_ratio <= 1,
                "decay_ratio",
                "warm-up and decay together must fit in max_steps (warmup_ratio + decay_ratio <= 1)",
            ),
            (self.weight_decay >= 0, "weight_decay", "must be non-negative"),
            (len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas), "betas", "give two numbers in [0, 1)"),
            (self.eps > 0, "eps", "must be positive"),
            (self.grad_clip >= 0, "grad_clip", "must be non-negative (0 disables)"),
            (self.checkpoint_every > 0, "checkpoint_every", "must be positive"),
            (self.keep_checkpoints >= 1, "keep_checkpoints", "keep at least one"),
            (all(0 < k <= self.max_steps for k in self.keep_steps), "keep_steps", "steps must be in 1..max_steps"),
            (self.log_every > 0, "log_every", "must be positive"),
            (self.num_threads >= 0, "num_threads", "must be non-negative"),
            (0 <= self.heldout_fraction < 1, "heldout_fraction", "must be in [0, 1)"),
            (0 <= self.dropout < 1 and 0 <= self.attention_dropout < 1, "dropout", "must be in [0, 1)"),
        ]
        for ok, key, msg in checks:
            if not ok:
                raise PipelineError(f"{where}.{key}: {msg}")
        if (self.objective == "electra") != (self.architecture == "electra"):
            raise PipelineError(
                f"{where}.objective: objective {self.objective} does not go with architecture {self.architecture}; "
                "use objective electra with architecture electra, and objective mlm with bert, roberta or modernbert"
            )
        self._check_modernbert(where)
        if min(self.phase_steps()) <= 0:
            raise PipelineError(
                f"{where}.phases: a phase gets no steps with max_steps={self.max_steps}; raise "
                "max_steps or its fraction"
            )

    def _check_modernbert(self, where: str) -> None:
        """ModernBERT's keys only with architecture modernbert: other families learn their positions."""
        if self.architecture == "modernbert":
            self.modernbert_settings().validate(f"{where}.modernbert")
            hidden, _, heads, _ = self.shape()
            if (hidden // heads) % 2:
                raise PipelineError(f"{where}.num_heads: rotary positions need an even head width ({hidden // heads})")
        elif self.modernbert is not None:
            raise PipelineError(
                f"{where}.modernbert: ModernBERT's settings apply to architecture modernbert only (architecture is "
                f"{self.architecture}); remove them or set architecture: modernbert"
            )
        for i, phase in enumerate(self.phases):
            if phase.rope_theta is None:
                continue
            if self.architecture != "modernbert":
                raise PipelineError(
                    f"{where}.phases[{i}].rope_theta: a rotary base applies to architecture modernbert only; "
                    f"{self.architecture} learns its positions (set architecture: modernbert, also to continue a "
                    "ModernBERT checkpoint)"
                )
            if phase.rope_theta <= 0:
                raise PipelineError(f"{where}.phases[{i}].rope_theta: must be positive, e.g. 160000")


@dataclass
class BranchStart:
    """Where a decay branch starts in its parent's run (resolved by the workflow from the two models' settings)."""

    parent: str = field(metadata={"help": "The parent model, whose training_state/ holds the checkpoint."})
    step: int = field(metadata={"help": "The parent's step resumed from; the branch decays from there to max_steps."})
    phase: int = field(metadata={"help": "The parent's phase at that step (keys its data order and masks)."})
    position: int = field(metadata={"help": "Steps the parent had taken in that phase: its data position."})
    parent_phases: int = field(metadata={"help": "The parent's phase count: the branch's new data orders follow."})
    continues: bool = field(
        metadata={
            "help": "The branch's first phase reads the parent's packed data at the parent's length, so the data "
            "position continues; otherwise it restarts at 0 on the branch's own packed corpora."
        }
    )


@dataclass
class PretrainModelSettings:
    """The ``model`` key of the settings file written by the workflow."""

    name: str = field(metadata={"help": "Model name (the results/pretrain/<name> directory)."})
    pretrain: PretrainSettings = field(default_factory=PretrainSettings, metadata={"help": "Pretraining recipe."})
    branch: BranchStart | None = field(
        default=None, metadata={"help": "A decay branch: the parent's step and data position it resumes from."}
    )
