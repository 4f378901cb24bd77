"""Snakemake's filling of a path pattern's wildcards, with each pattern parsed once.

Snakemake fills every pattern of every job (outputs, log, benchmark, params, groups) with
`snakemake.io.apply_wildcards`: a regular-expression substitution whose callback runs once per
wildcard. The study's paths carry four wildcards each (model, task, fold, seed), and this
substitution took 2% of the full study's profiled dry run. A pattern's literal text and
wildcard names do not change, so each pattern is split into them once (the same matches
`re.sub` makes) and a job's path is joined from its values; a path without a brace (a concrete
one: a third of the calls at 1x) is returned as it is and not kept, so the kept patterns stay
the rules'. A missing wildcard raises the same `WildcardError`. `install()` is a no-op on a
Snakemake without `apply_wildcards`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from . import method_patch

PATTERNS_KEPT = 16384  # distinct patterns parsed and kept: the rules' patterns, many times over


def templates(regex) -> Callable[[str], tuple[tuple[str, ...], tuple[str, ...]]]:
    """A pattern's (literal parts, wildcard names), the literals one longer, as ``regex`` matches."""

    @functools.lru_cache(maxsize=PATTERNS_KEPT)
    def split(pattern: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        literals, names, last = [], [], 0
        for match in regex.finditer(pattern):
            literals.append(pattern[last : match.start()])
            names.append(match.group("name"))
            last = match.end()
        literals.append(pattern[last:])
        return tuple(literals), tuple(names)

    return split


def filler(regex, error: type[Exception]) -> Callable[[str, Mapping], str]:
    """`apply_wildcards(pattern, wildcards)` as Snakemake's: each wildcard replaced by
    ``str(wildcards[name])``, ``error(str(KeyError))`` where one is missing."""
    split = templates(regex)

    def apply_wildcards(pattern, wildcards):
        pattern = str(pattern)
        if "{" not in pattern:  # no wildcard can match
            return pattern
        literals, names = split(pattern)
        if not names:
            return literals[0]
        parts = [literals[0]]
        for name, literal in zip(names, literals[1:], strict=True):
            try:
                parts.append(str(wildcards[name]))
            except KeyError as ex:
                raise error(str(ex)) from ex
            parts.append(literal)
        return "".join(parts)

    return apply_wildcards


def install() -> bool:
    """Every Snakemake module that imported `apply_wildcards` calls the one above (once per
    process); False where `snakemake.io` has none."""
    import snakemake.api  # noqa: F401  (snakemake.rules alone imports in a cycle)
    from snakemake import io, rules

    plain = getattr(io, "apply_wildcards", None)
    fill = lambda _: filler(io.WILDCARD_REGEX, io.WildcardError)  # noqa: E731
    if not hasattr(io, "WILDCARD_REGEX") or not method_patch.replace(io, "apply_wildcards", fill):
        return False
    if getattr(rules, "apply_wildcards", None) is plain:
        rules.apply_wildcards = io.apply_wildcards
    return True
