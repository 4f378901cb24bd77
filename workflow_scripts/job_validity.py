"""Snakemake's check that a job's log and benchmark paths can be filled, reusing the paths it keeps.

Before planning, Snakemake checks every job by expanding its rule's benchmark and log patterns
with the job's wildcards (`Job.is_valid`) and discards the result; the job expands them again,
and keeps them, when its log or benchmark is first read. Every rule of the study has a log,
so the second expansion cost 1.5% of the full study's profiled dry run. The check here reads the
job's own `benchmark` and `log`, which expand the same patterns with the same wildcards (raising
the same error where one cannot be filled) and keep the result for later readers. `install()`
is a no-op on a Snakemake whose `Job` lacks either property.
"""

from __future__ import annotations

from . import method_patch


def install(job_class: type | None = None) -> bool:
    """``job_class`` (Snakemake's `Job`) checks validity through its kept paths (once per
    process); False where it lacks `is_valid`, `benchmark` or `log`."""
    if job_class is None:
        from snakemake import jobs

        job_class = getattr(jobs, "Job", None)
    kept = all(isinstance(getattr(job_class, p, None), property) for p in ("benchmark", "log"))
    return kept and method_patch.replace(job_class, "is_valid", lambda plain: _through_kept_paths)


def _through_kept_paths(self):
    self.benchmark  # noqa: B018  (the properties expand and keep the paths)
    self.log  # noqa: B018
