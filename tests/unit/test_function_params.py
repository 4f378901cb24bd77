"""Snakemake's parameter reading, kept per function: the same answer as Snakemake's own."""

from __future__ import annotations

import functools
import gc
import inspect

import pytest
from snakemake import common

from workflow_scripts.engine import function_params as fp


class Sized:
    def evaluate(self, wildcards, input=None, attempt=1):
        return attempt

    def __call__(self, wildcards, threads):
        return threads


def _plain(wildcards, input, **kwargs):
    return input


CALLABLES = [
    _plain,
    lambda wildcards, attempt: attempt,
    Sized().evaluate,
    Sized(),
    functools.partial(_plain, input=[]),
    len,
]


@pytest.mark.parametrize("func", CALLABLES, ids=["function", "lambda", "bound method", "object", "partial", "builtin"])
def test_parameters_are_snakemakes_own(func):
    expected = dict(common.get_function_params(func))
    assert dict(fp.function_params(func)) == expected
    assert dict(fp.function_params(func)) == expected  # the kept answer


def test_a_bound_method_is_read_once_for_every_object_it_is_bound_to(monkeypatch):
    calls = []
    signature = inspect.signature
    monkeypatch.setattr(fp.inspect, "signature", lambda f: calls.append(f) or signature(f))
    for _ in range(3):
        fp.function_params(Sized().evaluate)
        fp.function_params(Sized().evaluate)
    assert len(calls) <= 1  # none where an earlier test read it


def test_snakemakes_override_wins_and_a_dropped_function_takes_its_entry_with_it():
    def func(wildcards, input):
        return input

    fp.function_params(func)
    common.overwrite_function_params(func, ["wildcards"])
    assert fp.function_params(func) == ["wildcards"]
    size = len(fp._PLAIN)
    del func
    gc.collect()
    assert len(fp._PLAIN) == size - 1


def test_install_reads_through_the_cache_in_snakemakes_modules():
    from snakemake import jobs, rules

    assert fp.install()
    for module in (common, jobs, rules):
        assert module.get_function_params(_plain) is fp.function_params(_plain)
    # Snakemake's helper for resources and input functions goes through the module's binding
    assert set(common.get_input_function_aux_params(_plain, {"input": 1, "output": 2})) == {"input", "output"}
