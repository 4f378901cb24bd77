"""Dynamic masking for masked-language modelling (BERT's 80/10/10 recipe, optionally whole words).

Random draws are made for the whole global batch from a generator seeded by
(seed, phase, step), and every process applies its own rows. The masks therefore do not
depend on how many processes share the batch, and a resumed run masks exactly as an
uninterrupted one would.
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

    def rows(self, start: int, stop: int) -> MaskDraws:
        return MaskDraws(self.select[start:stop], self.action[start:stop], self.random_ids[start:stop])


def step_generator(seed: int, phase: int, step: int) -> torch.Generator:
    mixed = int(np.random.SeedSequence([seed, phase, step]).generate_state(1, dtype=np.uint64)[0])
    return torch.Generator().manual_seed(mixed)


def draw(gen: torch.Generator, batch: int, seq_len: int, vocab_size: int) -> MaskDraws:
    return MaskDraws(
        torch.rand(batch, seq_len, generator=gen),
        torch.rand(batch, seq_len, generator=gen),
        torch.randint(vocab_size, (batch, seq_len), generator=gen),
    )


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
