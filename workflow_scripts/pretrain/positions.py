"""A continued model's learned position embeddings against its phases' lengths: checked, or grown where
a phase asks for it (``grow_positions: copy``).

Growth copies the checkpoint's rows in turn into the new ones, as Longformer initialised its 4,096
positions from RoBERTa's 512: row ``offset + k`` of the grown table is row ``offset + k mod n``
of the old one, ``n`` the old number of usable positions and ``offset`` the rows before the first
position (RoBERTa's padding index + 1). Nothing else in the model changes but
``config.max_position_embeddings``.
"""

from __future__ import annotations

import logging

import torch
from torch import nn

from ..errors import PipelineError
from .documents import position_offset
from .settings import Phase

log = logging.getLogger(__name__)


def position_limit(config) -> int:
    """The longest sequence a model's position table numbers."""
    return config.max_position_embeddings - position_offset(config)


def grow(model: nn.Module, seq_len: int) -> None:
    """Grow ``model``'s learned positions in place to number ``seq_len`` tokens (a table shared with another
    model that was grown already only updates this model's config)."""
    config = model.config
    offset, rows = position_offset(config), seq_len + position_offset(config)
    embeddings = model.base_model.embeddings
    if not isinstance(getattr(embeddings, "position_embeddings", None), nn.Embedding):
        raise PipelineError(f"{type(model).__name__}: no learned position table to grow (grow_positions: copy)")
    old = embeddings.position_embeddings
    if old.num_embeddings < rows:
        usable = old.num_embeddings - offset
        source = offset + (torch.arange(rows - offset) % usable)
        new = nn.Embedding(rows, old.embedding_dim, padding_idx=old.padding_idx, device=old.weight.device)
        with torch.no_grad():
            new.weight[:offset] = old.weight[:offset]
            new.weight[offset:] = old.weight[source]
        new.weight.requires_grad_(old.weight.requires_grad)
        embeddings.position_embeddings = new
        device = embeddings.position_ids.device
        embeddings.position_ids = torch.arange(rows, device=device).expand((1, -1))
        embeddings.token_type_ids = torch.zeros((1, rows), dtype=torch.long, device=device)
        log.info("grew the position table from %d to %d rows, copying old rows in turn", old.num_embeddings, rows)
    config.max_position_embeddings = rows


def fit_positions(models: list[nn.Module], phases: list[Phase], where: str, source: str) -> None:
    """Grow ``models`` (continued from ``source``) for the phases longer than their positions that ask for
    it; refuse a longer phase that does not."""
    limit = position_limit(models[0].config)
    longer = [(i, p) for i, p in enumerate(phases) if p.seq_len > limit]
    for i, phase in longer:
        if phase.grow_positions != "copy":
            raise PipelineError(
                f"{where}.phases[{i}].seq_len: {phase.seq_len} exceeds the {limit} positions of {source}; "
                "set that phase's grow_positions: copy to grow them, or shorten the phase"
            )
    if longer:
        for model in models:
            grow(model, max(p.seq_len for _, p in longer))
