"""missing.md: what keeps a number out of the tables or rests on fewer runs than configured."""

from __future__ import annotations

import logging

from .aggregate import missing_runs
from .families import Claim
from .settings import ReportSettings
from .stats import smallest_sign_flip_p

log = logging.getLogger(__name__)


def seed_shortfalls(settings: ReportSettings, claims: list[Claim]) -> list[str]:
    """Per family where the exact sign-flip test cannot decide at its seed counts: how many
    seeds would let it."""
    short: dict[str, list[Claim]] = {}
    for c in claims:
        if c.seeds_for_exact is not None:
            short.setdefault(c.family, []).append(c)
    out = []
    for family, cs in short.items():
        c, ns = cs[0], sorted({c.n_pairs for c in cs})
        smallest = ", ".join(f"{smallest_sign_flip_p(n):.4g}" for n in ns)
        out.append(
            f"- {family} ({c.family_size} claims, {settings.significance.correction} correction): {len(cs)} claims "
            f"over {' or '.join(map(str, ns))} paired runs, whose exact sign-flip test's smallest p ({smallest}) "
            f"cannot fall below {c.level:.4g}, the strictest level a claim of the family is judged at; the paired "
            f"t-test, which assumes roughly normal differences, decides them. {c.seeds_for_exact} seeds would let "
            "the exact test decide."
        )
    return out


def pretraining_seed_notes(settings: ReportSettings) -> list[str]:
    """Which compared models were pretrained with several seeds, and which once."""
    compared = dict.fromkeys(name for pair in settings.aggregation.compare for name in pair)
    trained = [n for n in compared if settings.models[n].kind in ("pretrain", "distill")]
    seeded = [n for n in trained if len(settings.models[n].pretrain_seeds) > 1]
    once = [n for n in trained if n not in seeded]
    out = [f"- {n}: pretraining seeds {', '.join(map(str, settings.models[n].pretrain_seeds))}" for n in seeded]
    if once:
        out.append(
            f"- pretrained once: {', '.join(once)}. Their claims cover fine-tuning seeds only, so none of them is "
            "shown to survive pretraining-seed variation. `pretrain_seeds: [...]` on a model trains it once per "
            "seed (each seed costs its pretraining's GPU-hours again: benchmarks/README.md, GPU-hours per model)."
        )
    return out


def missing_report(
    settings: ReportSettings, missing, cells: dict, groups: dict, blurb: dict, claims: list[Claim]
) -> str:
    """Everything that keeps a number out of the tables or rests on fewer runs than configured."""
    runs = [f"- metrics file missing: {m}" for m in missing_runs(missing)]
    by_run = {(c.model, c.task): c for c in cells.values()}
    runs += [f"- {c.model} / {c.task}: {c.note}" for c in by_run.values() if c.status != "ok"]
    summaries = [
        f"- {model} {kind} {name}: {row.ours.note}"
        for kind, table in (("group", groups), ("BLURB", blurb))
        for model, rows in table.items()
        for name, row in rows.items()
        if row.ours.value is None
    ]
    for line in runs:
        log.warning(line[2:])
    return "\n".join(
        [
            "# Missing results",
            "",
            "## Runs",
            "",
            *(runs or ["Every configured run has a result."]),
            "",
            "## Group means and BLURB scores not computed",
            "",
            *(summaries or ["Every group mean and BLURB score was computed."]),
            "",
            "## Seeds for an assumption-free test",
            "",
            *(seed_shortfalls(settings, claims) or ["Every paired claim's test can decide at its level."]),
            "",
            "## Pretraining seeds",
            "",
            *(pretraining_seed_notes(settings) or ["No compared model is trained here."]),
            "",
        ]
    )
