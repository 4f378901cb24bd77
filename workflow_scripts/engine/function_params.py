"""Snakemake's reading of a function's parameters, once per function rather than once per call.

While the DAG is built Snakemake calls `get_function_params` on every input function, params
function and resource of every job (and on each resource's bound `evaluate`), which runs
`inspect.signature` each time: about 18 calls per job, a tenth of a full-study dry run. A
function's parameters never change, so they are kept per function (weakly: a function that
goes away takes its entry with it), and per underlying function for bound methods (a method's
parameters do not depend on the object it is bound to). Functions Snakemake marks with its own
override, and callables that cannot be weakly referenced, are read as Snakemake reads them.
`install()` is a no-op on a Snakemake without `get_function_params`.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

_PLAIN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def function_params(func: Callable, override: str = "_overwrite_params") -> Mapping[str, Any]:
    """What `snakemake.common.get_function_params(func)` returns: the override Snakemake set on
    ``func``, else ``inspect.signature(func).parameters``."""
    if hasattr(func, override):
        return getattr(func, override)
    key, cache = (func.__func__, _BOUND) if isinstance(func, types.MethodType) else (func, _PLAIN)
    try:
        return cache[key]
    except KeyError:
        params = cache[key] = inspect.signature(func).parameters
        return params
    except TypeError:  # neither hashable nor weakly referable
        return inspect.signature(func).parameters


def install() -> bool:
    """Snakemake's modules that read parameters read them through :func:`function_params`
    (once per process); False where this Snakemake has no `get_function_params`."""
    import snakemake.api  # noqa: F401  (snakemake.rules alone imports in a cycle)
    from snakemake import common, jobs, rules

    modules = [common, jobs, rules]
    if not all(callable(getattr(m, "get_function_params", None)) for m in modules):
        return False
    override = getattr(common, "FUNC_OVERWRITE_PARAMS_ATTR", "_overwrite_params")

    def get_function_params(func: Callable) -> Mapping[str, Any]:
        return function_params(func, override)

    for module in modules:
        module.get_function_params = get_function_params
    return True
