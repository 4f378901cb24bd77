"""The training loop shared by pretraining and distillation.

An *objective* is an ``nn.Module`` whose ``forward(input_ids, positions, labels, norms)``
returns ``(loss, stats)``. ``positions`` has a fixed length per phase; slots past the
masked tokens have label ``IGNORE_INDEX`` (an objective that cannot pad sets
``fixed_predictions = False``). ``norms["masked"]`` and ``norms["tokens"]`` are the global
batch's expected masked count and its token count divided by the number of processes: a
loss summed over this micro-batch and divided by them is its share of the step's loss
(DDP then averages over processes). ``stats`` holds detached components normalised the same way,
``stats["loss"]`` the total; other keys are logged as ``loss_<key>``, except rates
(``*_accuracy``, ``*_fraction``), logged under their own name. This module orchestrates:
phases, logging, checkpoints, SIGTERM and the held-out evaluation. What a step trains on
(data order, dynamic masking, micro-batches) is batches.py; what a step does (forward,
backward, gradient accumulation, data parallelism, the update) is step.py. Optimiser,
learning-rate curve, mixed precision and seeding are the shared recipe of ``workflow_scripts.optim``.

The loss of a step is the sum over the global batch's masked tokens divided by their
expected number, whatever the split into processes and micro-batches, so 2 processes with
batch b reach the same weights as 1 process with batch 2b.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import resource
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import optim
from ..errors import PipelineError
from ..progress import progress
from ..tokenizer import Specials
from . import checkpoint as ckpt
from . import layout
from .batches import BatchBuilder, StepBatch, mask_rows, prefetched
from .data import PackedCorpus
from .dist import Dist
from .masking import step_generator
from .model import FLOPS_FORMULA, MLMObjective
from .settings import BranchStart, PretrainSettings
from .step import TrainStep, fixed_slots

log = logging.getLogger(__name__)

EVAL_SEED = 20200101  # fixed, so held-out losses of different models are comparable
# dense bf16/fp16 tensor-core peaks, TFLOP/s
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "V100": 125.0, "L4": 121.0}
SIGTERM_EXIT = 143


class Preempted(Exception):
    """SIGTERM arrived; a checkpoint was written and a re-run resumes from it."""


@dataclass
class Job:
    settings: PretrainSettings
    objective: nn.Module
    model: nn.Module  # the transformers model that is evaluated and exported
    tokenizer: Any
    phases: list[PackedCorpus]
    heldout: PackedCorpus | None
    state_dir: Path
    digest: str
    flops_per_token: Callable[[int, float], float]  # at a sequence length and masking rate
    dist: Dist = field(default_factory=Dist)
    evaluator: Callable[[Job], dict[str, Any]] | None = None  # held-out evaluation; default: MLM loss of ``model``
    companions: dict[str, nn.Module] = field(default_factory=dict)  # further models exported into <out>/<key>/
    branch: BranchStart | None = None  # a decay branch: starts from its parent's checkpoint at branch.step
    parent_state: Path | None = None  # the parent's training_state/ of a decay branch
    phase_start: Callable[[int], None] | None = None  # run when a phase's first step (or a resumed one) begins


def peak_tflops(settings: PretrainSettings, device: torch.device) -> float | None:
    if settings.peak_tflops is not None:
        return settings.peak_tflops
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_TFLOPS.items() if k in name), None)


def memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log_key(key: str) -> str:
    return key if key == "loss" or key.endswith(("_accuracy", "_fraction")) else f"loss_{key}"


class _Log:
    """train_log.jsonl in the state directory, cut back to the resumed step on restart."""

    def __init__(self, path: Path, resume_step: int, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        if not enabled:
            return
        kept = []
        if path.is_file():
            kept = [
                line
                for line in path.read_text().splitlines()
                if line.strip() and json.loads(line)["step"] <= resume_step
            ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in kept))

    def write(self, row: dict[str, Any]) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


def _shares(settings: PretrainSettings, world: int) -> tuple[int, int]:
    if settings.batch_size % world:
        raise PipelineError(f"batch_size: {settings.batch_size} is not divisible by the {world} processes")
    share = settings.batch_size // world
    micro = min(settings.micro_batch_size or share, share)
    if share % micro:
        raise PipelineError(f"micro_batch_size: {micro} does not divide the per-process batch of {share} sequences")
    return share, micro


class _Meter:
    """Throughput, memory and the objective's statistics, written every ``log_every`` steps."""

    def __init__(self, job: Job, trainer: TrainStep, start: int) -> None:
        self.job, self.trainer = job, trainer
        self.log = _Log(job.state_dir / "train_log.jsonl", start, job.dist.main)
        self.peak = peak_tflops(job.settings, job.dist.device)
        if self.peak and job.dist.main:
            log.info("mfu = flops_per_token x tokens/s / (%.0f TFLOP/s x GPUs); %s", self.peak, FLOPS_FORMULA)
        self.steps, self.tokens, self.masked, self.t_last = 0, 0, 0, time.perf_counter()
        self.logged = False  # whether the last recorded step wrote a log line
        self.bar = progress("training", total=job.settings.max_steps, unit="steps") if job.dist.main else None
        if self.bar is not None:
            self.bar.update(start)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def record(self, batch: StepBatch, grad_norm: torch.Tensor | None, lr: float) -> None:
        s, d = self.job.settings, self.job.dist
        self.steps += 1
        self.tokens += s.batch_size * batch.seq_len
        self.masked += batch.masked
        done = batch.step + 1
        if self.bar is not None:
            self.bar.update(1)
        self.logged = done % s.log_every == 0 or done == s.max_steps
        if not self.logged:
            return
        sums = {k: d.sum(float(v)) for k, v in sorted(self.trainer.take_stats().items())}
        tps = self.tokens / (time.perf_counter() - self.t_last)
        flops = self.job.flops_per_token(batch.seq_len, s.mask_prob if batch.mask_prob is None else batch.mask_prob)
        row = {
            "step": done,
            "phase": batch.phase,
            "seq_len": batch.seq_len,
            **{log_key(k): v / (d.world * self.steps) for k, v in sums.items()},
            "masked_fraction": d.sum(self.masked) / self.tokens,
            "lr": lr,
            "grad_norm": None if grad_norm is None else float(grad_norm),
            "tokens_per_s": tps,
            "flops_per_token": flops,
            "mfu": (flops * tps / (self.peak * 1e12 * d.world)) if self.peak else None,
            "memory_mb": memory_mb(d.device),
            "time": time.time(),
        }
        self.log.write(row)
        if self.bar is not None:
            self.bar.set_postfix_str(f"loss {row['loss']:.4f} lr {lr:.2e} {tps:,.0f} tok/s")
        self.steps, self.tokens, self.masked, self.t_last = 0, 0, 0, time.perf_counter()


class _Checkpoints:
    """Resumable checkpoints of the objective, its optimiser and every process's random state."""

    def __init__(self, job: Job, trainer: TrainStep) -> None:
        self.job, self.trainer = job, trainer

    def resume(self, stop_after: int | None) -> int:
        """Load the latest checkpoint, if any; return the step to continue from."""
        job, s = self.job, self.job.settings
        # dropout and ELECTRA's draws follow the seed also for a loaded model; a resumed run restores its own states
        optim.seed_everything(s.seed)
        resumed = ckpt.load_latest(job.state_dir, job.digest, job.dist.rank, self.trainer.objective.state_dict())
        if resumed is None and job.branch is not None:
            resumed = ckpt.load_step(job.parent_state, job.branch.step, job.dist.rank)
            data = "continues the parent's" if job.branch.continues else "restarts at 0 on its own packed corpora"
            log.info("decay branch of %s from its step %d: data position %s", job.branch.parent, job.branch.step, data)
        start = 0
        if resumed is not None:
            self.trainer.load_state_dict(resumed.payload)
            if "rng" in resumed.payload:
                ckpt.set_rng_state(resumed.payload["rng"])
            start = resumed.step
            log.info("resuming from %s (step %d of %d)", resumed.directory, start, s.max_steps)
        if start >= s.max_steps and stop_after is None:
            log.info("training already reached max_steps=%d", s.max_steps)
        return start

    def save(self, step: int, export: bool = True) -> None:
        job, d = self.job, self.job.dist
        if d.main:
            payload = {"step": step, "digest": job.digest, **self.trainer.state_dict()}
            model = job.model if export and job.settings.export_checkpoints else None
            ckpt.save_state(job.state_dir, step, payload, model, job.tokenizer)
        d.barrier()
        ckpt.save_rng(job.state_dir, step, d.rank)
        d.barrier()
        if d.main:
            ckpt.mark_latest(job.state_dir, step, job.settings.keep_checkpoints, job.settings.keep_steps)


@contextlib.contextmanager
def _sigterm_flag() -> Iterator[dict[str, bool]]:
    """A flag set by SIGTERM while the block runs; the previous handler is restored after."""
    term = {"flag": False}

    def on_term(signum, frame) -> None:
        term["flag"] = True

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield term
    finally:
        signal.signal(signal.SIGTERM, previous)


def _batches(builder: BatchBuilder, start: int, s: PretrainSettings) -> Iterator[StepBatch]:
    """The steps' batches, built ahead on a thread or, with ``prefetch: false``, in series."""
    if s.prefetch:
        return prefetched(builder, start, s.max_steps)
    return (builder(step) for step in range(start, s.max_steps))


def train(job: Job, stop_after: int | None = None) -> dict[str, Any] | None:
    """Train to ``max_steps`` (resuming from the latest checkpoint); return the summary.

    With ``stop_after`` the run checkpoints and returns None after that many steps in
    total, as a preempted run would. Process 0 holds the training state's lock throughout.
    """
    with ckpt.locked(job.state_dir, job.dist.main):
        s, d = job.settings, job.dist
        if s.num_threads:
            torch.set_num_threads(s.num_threads)
        share, micro = _shares(s, d.world)
        trainer = TrainStep(job.objective, s, d)
        saver = _Checkpoints(job, trainer)
        start = saver.resume(stop_after)
        if job.phase_start is not None:  # the model a resumed (or finished) run continues or exports
            job.phase_start(layout.locate(layout.segments(s, job.branch), min(start, s.max_steps - 1)).data)
        trainer.wrap()
        builder = BatchBuilder(
            s,
            job.phases,
            Specials.of(job.tokenizer, "tokenizer"),
            d.rank,
            share,
            micro,
            fixed_slots=getattr(job.objective, "fixed_predictions", True) and fixed_slots(s, d.device),
            pin=d.device.type == "cuda",
            branch=job.branch,
        )
        if not _run(job, trainer, builder, saver, start, stop_after):
            return None
        result = {"steps": s.max_steps, "world_size": d.world}
        if d.main:
            result.update((job.evaluator or evaluate)(job))
        return result


def norms_of(settings: PretrainSettings, seq_len: int, world: int, mask_prob: float | None = None) -> dict[str, float]:
    """Per-process shares of the step's loss normalisers: the expected masked count (the
    positions between a block's first and last token, times the phase's ``mask_prob``, default
    the model's) and the token count. Both are constants of the phase, so no process waits for
    another to count."""
    tokens = settings.batch_size * seq_len
    rate = settings.mask_prob if mask_prob is None else mask_prob
    masked = rate * settings.batch_size * (seq_len - 2)
    return {"masked": masked / world, "tokens": tokens / world}


def _run(
    job: Job, trainer: TrainStep, builder: BatchBuilder, saver: _Checkpoints, start: int, stop_after: int | None
) -> bool:
    """Steps from ``start``: train, log, checkpoint; False when stopped early by ``stop_after``.

    Processes exchange nothing but gradients on most steps: the SIGTERM flag is agreed on
    at log and checkpoint steps only (every step in a single process)."""
    s, d = job.settings, job.dist
    meter = _Meter(job, trainer, start)
    phase = None
    try:
        with _sigterm_flag() as term, contextlib.closing(_batches(builder, start, s)) as batches:
            for batch in batches:
                if batch.phase != phase and job.phase_start is not None:
                    job.phase_start(batch.phase)
                phase = batch.phase
                grad_norm, lr = trainer(batch, norms_of(s, batch.seq_len, d.world, batch.mask_prob))
                meter.record(batch, grad_norm, lr)
                done = batch.step + 1
                stopping = stop_after is not None and done >= stop_after
                saving = done == s.max_steps or done % s.checkpoint_every == 0 or stopping or done in s.keep_steps
                if (d.world == 1 or saving or meter.logged) and d.any(term["flag"]):
                    saver.save(done)
                    raise Preempted(f"SIGTERM at step {done}: checkpoint saved in {job.state_dir}; re-run to resume")
                if done == s.max_steps:
                    saver.save(done, export=False)  # a re-run after completion only re-exports; the model is the output
                elif saving:
                    saver.save(done)
                if stopping:
                    return False
    finally:
        meter.close()
    return True


NO_HELDOUT = {"heldout_loss": None, "heldout_blocks": 0, "heldout_masked_tokens": 0}


def heldout_batches(job: Job) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]]:
    """(masked ids, masked positions, labels, document position ids if any) on the device for the held-out
    blocks, with masks fixed across models."""
    data, s, device = job.heldout, job.settings, job.dist.device
    specials = Specials.of(job.tokenizer, "tokenizer")
    n = min(len(data), s.heldout_max_blocks)
    batch = s.micro_batch_size or min(s.batch_size, 32)
    for start in range(0, n, batch):
        idx = np.arange(start, min(start + batch, n))
        toks, flags = data.take(idx)
        input_ids, masked, selected = mask_rows(s, specials, toks, flags, step_generator(EVAL_SEED, 0, 0), start)
        positions = selected.reshape(-1).nonzero().squeeze(1)
        documents = data.positions(idx)
        extra = {} if documents is None else {"position_ids": torch.from_numpy(documents).to(device)}
        yield masked.to(device), positions.to(device), input_ids.reshape(-1)[positions].to(device), extra


def has_heldout(job: Job) -> bool:
    if job.heldout is None or len(job.heldout) == 0:
        log.warning("no held-out blocks: heldout_fraction is 0 or the held-out documents are shorter than one block")
        return False
    return True


@torch.no_grad()
def heldout_sums(job: Job, objective: nn.Module, keys: tuple[str, ...]) -> tuple[dict[str, float], int, int]:
    """Sums of the objective's ``stats[key]`` over the held-out blocks, in evaluation mode and the run's
    precision, with the masked and the total token counts (per-token figures are sum / count)."""
    modes = [(m, m.training) for m in objective.modules()]
    objective.eval()
    sums, masked_count, tokens = dict.fromkeys(keys, 0.0), 0, 0
    try:
        for masked, positions, labels, documents in heldout_batches(job):
            with optim.autocast(job.dist.device, job.settings.precision):
                _, stats = objective(masked, positions, labels, {"masked": 1.0, "tokens": 1.0}, **documents)
            for key in sums:
                sums[key] += float(stats[key])
            masked_count += len(positions)
            tokens += masked.numel()
    finally:
        for module, mode in modes:
            module.training = mode
    return sums, masked_count, tokens


def heldout_summary(job: Job, mlm_sum: float, masked_count: int) -> dict[str, Any]:
    loss = mlm_sum / max(masked_count, 1)
    return {
        "heldout_loss": loss,
        "heldout_perplexity": math.exp(min(loss, 50.0)),
        "heldout_blocks": min(len(job.heldout), job.settings.heldout_max_blocks),
        "heldout_masked_tokens": masked_count,
    }


@torch.no_grad()
def evaluate(job: Job) -> dict[str, Any]:
    """MLM loss per masked token on the held-out blocks, with masks fixed across models."""
    if not has_heldout(job):
        return dict(NO_HELDOUT)
    sums, masked_count, _ = heldout_sums(job, MLMObjective(job.model).to(job.dist.device), ("mlm",))
    return heldout_summary(job, sums["mlm"], masked_count)
