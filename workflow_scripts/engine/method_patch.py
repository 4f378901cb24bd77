"""One method of a Snakemake class (or function of a module) replaced, once per process, by one
built around the original."""

from __future__ import annotations

from collections.abc import Callable

MARK = "_replaced_once"


def replace(owner: object, name: str, build: Callable[[Callable], Callable]) -> bool:
    """``owner.name`` becomes ``build(original)``, with the original's docstring; True where it
    was replaced now or before, False where ``owner`` has no such method."""
    plain = getattr(owner, name, None)
    if getattr(plain, MARK, False):
        return True
    if not callable(plain):
        return False
    method = build(plain)
    setattr(method, MARK, True)
    method.__doc__ = plain.__doc__
    setattr(owner, name, method)
    return True
