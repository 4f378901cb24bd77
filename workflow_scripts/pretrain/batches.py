"""What one optimiser step trains on: this process's rows of the global batch, masked and cut
into micro-batches.

A step's batch depends only on (settings, step) and the process's rank, never on what ran
before, so a resumed run and an uninterrupted one see the same batches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from ..tokenizer import Specials
from .data import BlockOrder, PackedCorpus
from .masking import apply_mask, draw, step_generator
from .settings import PretrainSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MicroBatch:
    input_ids: torch.Tensor  # [rows, L] masked ids
    positions: torch.Tensor  # flat indices of the predicted positions
    labels: torch.Tensor  # the original ids there


@dataclass(frozen=True)
class StepBatch:
    step: int
    phase: int
    seq_len: int
    micro: list[MicroBatch]
    masked: int  # masked tokens in this process's rows


def phase_of(steps_per_phase: list[int], step: int) -> tuple[int, int]:
    for i, n in enumerate(steps_per_phase):
        if step < n:
            return i, step
        step -= n
    raise ValueError(step)


class BatchBuilder:
    """Builds step ``step``'s batch for process ``rank`` of ``world``, ``share`` rows in micro-batches of ``micro``."""

    def __init__(
        self,
        settings: PretrainSettings,
        phases: list[PackedCorpus],
        specials: Specials,
        rank: int,
        share: int,
        micro: int,
    ) -> None:
        self.s, self.phases, self.specials = settings, phases, specials
        self.rank, self.share, self.micro = rank, share, micro
        self.steps_per_phase = settings.phase_steps()
        self.orders = [BlockOrder(len(p), settings.seed, i) for i, p in enumerate(phases)]

    def __call__(self, step: int) -> StepBatch:
        s = self.s
        phase, in_phase = phase_of(self.steps_per_phase, step)
        data, order = self.phases[phase], self.orders[phase]
        L = data.seq_len
        self._note_epoch(phase, in_phase, len(data), step)
        first = in_phase * s.batch_size + self.rank * self.share
        toks, flags = data.take(order.indices(first, self.share))
        draws = draw(step_generator(s.seed, phase, step), s.batch_size, L, self.specials.vocab_size).rows(
            self.rank * self.share, (self.rank + 1) * self.share
        )
        input_ids = torch.from_numpy(toks)
        masked, selected = apply_mask(
            input_ids,
            torch.from_numpy(flags),
            draws,
            mask_prob=s.mask_prob,
            mask_id=self.specials.mask,
            mask_replace_prob=s.mask_replace_prob,
            random_replace_prob=s.random_replace_prob,
            whole_word=s.whole_word_mask,
        )
        micro = []
        for k in range(self.share // self.micro):
            rows = slice(k * self.micro, (k + 1) * self.micro)
            positions = selected[rows].reshape(-1).nonzero().squeeze(1)
            micro.append(MicroBatch(masked[rows], positions, input_ids[rows].reshape(-1)[positions]))
        return StepBatch(step, phase, L, micro, int(selected.sum()))

    def _note_epoch(self, phase: int, in_phase: int, n: int, step: int) -> None:
        B = self.s.batch_size
        if self.rank == 0 and (in_phase * B) // n != ((in_phase + 1) * B - 1) // n:
            log.info("phase %d: the data wraps into epoch %d at step %d", phase, ((in_phase + 1) * B - 1) // n, step)
