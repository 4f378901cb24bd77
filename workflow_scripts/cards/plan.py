"""Which cards a request gets, given what every holder holds: pure arithmetic on the ledger.

A card has ``CARD_UNITS`` units. Whole cards go only where no one holds a unit; a share goes to
the fullest card of the requester's own party that still fits it (packing runs tightly keeps
whole cards free for the jobs that need them), else to a free card.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import PipelineError

# The units of one card (config/gpu_share.py's GPU_SHARE_UNITS, Snakemake's resource gpu_share): 840 is
# the least common multiple of 1 to 8, so any runs_per_gpu up to 8 splits a card exactly.
CARD_UNITS = 840


@dataclass(frozen=True)
class Request:
    """``cards`` whole cards, or ``share`` units of one card."""

    cards: int = 0
    share: int = 0

    def check(self, offered: Sequence[str], source: str) -> None:
        """Refuse what no wait can satisfy, naming the fix."""
        if self.cards < 0 or self.share < 0 or bool(self.cards) == bool(self.share):
            raise PipelineError("ask for --cards N (1 or more) or --share UNITS, one of them")
        if self.share and not 0 < self.share <= CARD_UNITS:
            raise PipelineError(f"--share {self.share}: a card has {CARD_UNITS} units; ask for 1 to {CARD_UNITS}")
        wanted = self.cards or 1
        if wanted > len(offered):
            raise PipelineError(
                f"the job needs {wanted} card(s), but {source} offers {len(offered)} "
                f"({','.join(offered) or 'none'}); lower the rule's `gpu` in the config's resources:, "
                "or offer more cards (CUDA_VISIBLE_DEVICES)"
            )

    def describe(self) -> str:
        return f"{self.cards} whole card(s)" if self.cards else f"{self.share}/{CARD_UNITS} of a card"


@dataclass
class CardUse:
    units: int = 0
    parties: set[str] = field(default_factory=set)


def usage(holdings: Mapping[str, Mapping]) -> dict[str, CardUse]:
    """Units and parties on each card, from the ledger's holdings."""
    cards: dict[str, CardUse] = {}
    for holding in holdings.values():
        for card, units in holding["cards"].items():
            use = cards.setdefault(card, CardUse())
            use.units += units
            use.parties.add(holding["party"])
    return cards


def choose(
    request: Request, offered: Sequence[str], holdings: Mapping[str, Mapping], party: str
) -> dict[str, int] | None:
    """The units to take on each card, or None while the request does not fit."""
    use = usage(holdings)
    free = [card for card in offered if card not in use or not use[card].units]
    if request.cards:
        return {card: CARD_UNITS for card in free[: request.cards]} if len(free) >= request.cards else None
    shared = [
        card
        for card in offered
        if card in use and use[card].units and use[card].parties == {party}
        if use[card].units + request.share <= CARD_UNITS
    ]
    if shared:
        return {max(shared, key=lambda card: use[card].units): request.share}
    return {free[0]: request.share} if free else None
