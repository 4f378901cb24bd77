"""What one optimiser step trains on: this process's rows of the global batch, masked and cut
into micro-batches of fixed shape.

A step's batch depends only on (settings, step) and the process's rank, never on what ran
before or on the number of processes, so a resumed run and an uninterrupted one see the
same batches. Each micro-batch predicts a fixed number of positions (like NVIDIA's
``max_predictions_per_seq``), padded with :data:`IGNORE_INDEX`, so every micro-batch of a
phase has the same shapes and a compiled step does not recompile.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ..pack.format import SPECIAL
from ..tokenizer import Specials
from . import layout
from .data import BlockOrder, PackedCorpus
from .masking import StepStream, apply_mask, draw, step_generator
from .settings import BranchStart, PretrainSettings

log = logging.getLogger(__name__)

IGNORE_INDEX = -100  # cross_entropy's default: padded prediction slots add nothing


@dataclass(frozen=True)
class MicroBatch:
    input_ids: torch.Tensor  # [rows, L] masked ids
    positions: torch.Tensor  # [slots] flat indices of the predicted positions, padding points at position 0
    labels: torch.Tensor  # [slots] the original ids there, IGNORE_INDEX in padding
    position_ids: torch.Tensor | None = None  # [rows, L] restarting per document (packing: documents)


@dataclass(frozen=True)
class StepBatch:
    step: int
    phase: int
    seq_len: int
    micro: list[MicroBatch]
    masked: int  # masked tokens in this process's rows
    mask_prob: float | None = None  # the phase's masking rate (None: the model's)


def prediction_slots(mask_prob: float, rows: int, seq_len: int, whole_word: bool) -> int:
    """Predicted positions per micro-batch: the mean masked count plus six standard deviations
    (twelve with whole words, whose sizes vary), rounded up to a multiple of 8. A micro-batch
    that masks more (odds below one in a billion) predicts only the first ``slots`` of them."""
    n = rows * seq_len
    spread = math.sqrt(n * mask_prob * (1 - mask_prob)) * (12 if whole_word else 6)
    return min(n, 8 * math.ceil((n * mask_prob + spread) / 8))


def mask_rows(
    settings: PretrainSettings,
    specials: Specials,
    toks: np.ndarray,
    flags: np.ndarray,
    stream: StepStream,
    first: int,
    mask_prob: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, masked ids, selection) of the blocks ``toks`` masked with rows ``first ..`` of ``stream``'s draws,
    at ``mask_prob`` (default: the model's).

    Special tokens are never selected: the block's own [CLS]/[SEP] carry the special flag, and any
    special token the text itself spelled out (a literal [MASK], <|endoftext|>) is flagged here."""
    input_ids = torch.from_numpy(toks)
    flags = np.where(np.isin(toks, specials.never_masked), SPECIAL, flags)
    masked, selected = apply_mask(
        input_ids,
        torch.from_numpy(flags),
        draw(stream, len(toks), toks.shape[1], specials.vocab_size, first_row=first),
        mask_prob=settings.mask_prob if mask_prob is None else mask_prob,
        mask_id=specials.mask,
        mask_replace_prob=settings.mask_replace_prob,
        random_replace_prob=settings.random_replace_prob,
        whole_word=settings.whole_word_mask,
    )
    return input_ids, masked, selected


def fixed_predictions(selected: torch.Tensor, input_ids: torch.Tensor, slots: int | None) -> tuple[torch.Tensor, ...]:
    """(positions, labels) of the selected tokens, padded or cut to ``slots`` (None: as many as selected)."""
    positions = selected.reshape(-1).nonzero().squeeze(1)
    if slots is not None:
        if len(positions) > slots:
            log.warning(
                "%d masked tokens in a micro-batch with %d prediction slots: the rest are not predicted",
                len(positions),
                slots,
            )
        positions = positions[:slots]
    labels = input_ids.reshape(-1)[positions]
    if slots is None or len(positions) == slots:
        return positions, labels
    pad = slots - len(positions)
    return (
        torch.cat([positions, positions.new_zeros(pad)]),
        torch.cat([labels, labels.new_full((pad,), IGNORE_INDEX)]),
    )


class BatchBuilder:
    """Builds step ``step``'s batch for process ``rank``: ``share`` rows in micro-batches of ``micro``.

    ``fixed_slots`` pads predictions to :func:`prediction_slots` at each phase's masking rate;
    ``pin`` puts the tensors in pinned memory, so the copy to the GPU does not wait; ``branch``
    starts the steps (layout.py) where a decay branch leaves its parent."""

    def __init__(
        self,
        settings: PretrainSettings,
        phases: list[PackedCorpus],
        specials: Specials,
        rank: int,
        share: int,
        micro: int,
        fixed_slots: bool = True,
        pin: bool = False,
        branch: BranchStart | None = None,
    ) -> None:
        self.s, self.phases, self.specials = settings, phases, specials
        self.rank, self.share, self.micro = rank, share, micro
        self.fixed_slots, self.pin = fixed_slots, pin
        self.segments = layout.segments(settings, branch)
        self.orders = {p.stream: BlockOrder(len(phases[p.data]), settings.seed, p.stream) for p in self.segments}

    def __call__(self, step: int) -> StepBatch:
        s = self.s
        part = layout.locate(self.segments, step)
        data, order = self.phases[part.data], self.orders[part.stream]
        L = data.seq_len
        in_phase = step - part.first + part.offset
        self._note_epoch(part.data, in_phase, len(data), step)
        first = in_phase * s.batch_size + self.rank * self.share
        blocks = order.indices(first, self.share)
        toks, flags = data.take(blocks)
        documents = data.positions(blocks)
        stream = step_generator(s.seed, part.stream, step)
        rate = part.mask_prob
        input_ids, masked, selected = mask_rows(s, self.specials, toks, flags, stream, self.rank * self.share, rate)
        slots = prediction_slots(rate, self.micro, L, s.whole_word_mask) if self.fixed_slots else None
        micro = []
        for k in range(self.share // self.micro):
            rows = slice(k * self.micro, (k + 1) * self.micro)
            tensors = [masked[rows], *fixed_predictions(selected[rows], input_ids[rows], slots)]
            if documents is not None:
                tensors.append(torch.from_numpy(documents[rows]))
            micro.append(MicroBatch(*(t.pin_memory() if self.pin else t for t in tensors)))
        return StepBatch(step, part.data, L, micro, int(selected.sum()), rate)

    def _note_epoch(self, phase: int, in_phase: int, n: int, step: int) -> None:
        B = self.s.batch_size
        if self.rank == 0 and (in_phase * B) // n != ((in_phase + 1) * B - 1) // n:
            log.info("phase %d: the data wraps into epoch %d at step %d", phase, ((in_phase + 1) * B - 1) // n, step)


def prefetched(build: BatchBuilder, start: int, stop: int) -> Iterator[StepBatch]:
    """The batches of steps ``start .. stop``, each built on a background thread while the previous one trains."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    done = threading.Event()

    def offer(item: StepBatch | BaseException) -> bool:
        while not done.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for step in range(start, stop):
                if not offer(build(step)):
                    return
        except BaseException as exc:  # handed to the training thread, which raises it
            offer(exc)

    thread = threading.Thread(target=work, name="batches", daemon=True)
    thread.start()
    try:
        for _ in range(start, stop):
            item = ready.get()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        done.set()
        thread.join()
