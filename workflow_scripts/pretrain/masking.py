"""Dynamic masking for masked-language modelling (BERT's 80/10/10 recipe, optionally whole words).

Random draws come from a counter-based generator (Philox) keyed by (seed, phase, step):
the draws of global row r sit at a fixed offset of its stream, so a process computes only
its own rows and gets exactly what it would have got from drawing the whole global batch.
The masks therefore do not depend on how many processes share the batch, and a resumed
run masks exactly as an uninterrupted one would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..pack.format import SPECIAL


@dataclass(frozen=True)
class MaskDraws:
    select: torch.Tensor  # uniform [B, L]: selection
    action: torch.Tensor  # uniform [B, L]: mask / random / keep
    random_ids: torch.Tensor  # random token ids [B, L]


@dataclass(frozen=True)
class StepStream:
    """The key of one step's random stream."""

    key: np.ndarray  # two uint64 words


def step_generator(seed: int, phase: int, step: int) -> StepStream:
    return StepStream(np.random.SeedSequence([seed, phase, step]).generate_state(2, dtype=np.uint64))


def draw(stream: StepStream, batch: int, seq_len: int, vocab_size: int, first_row: int = 0) -> MaskDraws:
    """The draws of global rows ``first_row .. first_row + batch`` of ``stream``."""
    width = -(-3 * seq_len // 4) * 4  # a row takes whole Philox blocks of four 64-bit words
    bits = np.random.Philox(key=stream.key, counter=first_row * (width // 4))
    u = torch.from_numpy(np.random.Generator(bits).random((batch, width)))
    random_ids = (u[:, 2 * seq_len : 3 * seq_len] * vocab_size).to(torch.long).clamp_max(vocab_size - 1)
    return MaskDraws(u[:, :seq_len], u[:, seq_len : 2 * seq_len], random_ids)


def word_start_index(flags: torch.Tensor) -> torch.Tensor:
    """For each position, the position of the token that starts its word (specials start their own)."""
    pos = torch.arange(flags.shape[1]).expand_as(flags)
    starts = torch.where(flags != 0, pos, torch.zeros_like(pos))
    return torch.cummax(starts, dim=1).values


def apply_mask(
    input_ids: torch.Tensor,
    flags: torch.Tensor,
    draws: MaskDraws,
    *,
    mask_prob: float,
    mask_id: int,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    whole_word: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (masked input ids, boolean selection). Special tokens are never selected.

    With ``whole_word`` a word is selected when the draw at its first token is below
    ``mask_prob``, and all its sub-word tokens follow; the 80/10/10 choice is per token.
    """
    flags = flags.to(torch.long)
    select = draws.select
    if whole_word:
        select = torch.gather(select, 1, word_start_index(flags))
    selected = (select < mask_prob) & (flags != SPECIAL)
    to_mask = selected & (draws.action < mask_replace_prob)
    to_random = (
        selected & (draws.action >= mask_replace_prob) & (draws.action < mask_replace_prob + random_replace_prob)
    )
    out = input_ids.clone()
    out[to_mask] = mask_id
    out[to_random] = draws.random_ids[to_random]
    return out, selected
