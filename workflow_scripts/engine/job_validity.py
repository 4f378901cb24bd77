"""Snakemake's check that a job's log and benchmark paths can be filled, reusing the paths it keeps.

Before planning, Snakemake checks every job by expanding its rule's benchmark and log patterns
with the job's wildcards (`Job.is_valid`) and discards the result; the job expands them again,
and keeps them, when its log or benchmark is first read. Every rule of the study has a log,
so the second expansion cost 1.5% of the full study's profiled dry run. The check here reads the
job's own `benchmark` and `log`, which expand the same patterns with the same wildcards (raising
the same error where one cannot be filled) and keep the result for later readers.

It stands in only for the `is_valid` it was proven equivalent to: one whose code is Snakemake
9.27.1's (:func:`snakemake_is_valid`, compiled by the running Python and compared op for op).
Any check a later Snakemake adds there changes that code, and then Snakemake's own `is_valid`
stays. `install()` is a no-op on a Snakemake whose `Job` lacks either property.
"""

from __future__ import annotations

from collections.abc import Callable

from . import method_patch


def snakemake_is_valid(self):
    """Check if job is valid"""
    # Snakemake 9.27.1's `Job.is_valid`, word for word: the code the check below is equivalent to
    self.rule.expand_benchmark(self.wildcards_dict)
    self.rule.expand_log(self.wildcards_dict)


def _code(func: Callable) -> tuple:
    code = getattr(func, "__code__", None)
    return () if code is None else (code.co_code, code.co_names, code.co_consts, code.co_varnames)


def is_proven(is_valid: Callable) -> bool:
    """Whether ``is_valid`` runs exactly the code the check here was proven equivalent to."""
    return _code(is_valid) == _code(snakemake_is_valid)


def install(job_class: type | None = None) -> bool:
    """``job_class`` (Snakemake's `Job`) checks validity through its kept paths (once per
    process); False where it lacks `benchmark` or `log`, or its `is_valid` is not the proven one."""
    if job_class is None:
        from snakemake import jobs

        job_class = getattr(jobs, "Job", None)
    kept = all(isinstance(getattr(job_class, p, None), property) for p in ("benchmark", "log"))
    plain = getattr(job_class, "is_valid", None)
    if not kept or not (getattr(plain, method_patch.MARK, False) or is_proven(plain)):
        return False
    return method_patch.replace(job_class, "is_valid", lambda plain: _through_kept_paths)


def _through_kept_paths(self):
    self.benchmark  # noqa: B018  (the properties expand and keep the paths)
    self.log  # noqa: B018
