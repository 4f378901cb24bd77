"""Local runs without Snakemake's job-rate limiter.

Snakemake 9.27's limiter (`--max-jobs-per-timespan`, default 100/1s) runs the scheduler again a
second after every scheduling pass, and each finished job starts one more such chain: after n
jobs it schedules n times a second over every ready job. On the 2-core demo Snakemake's own
process took 743 CPU s, more than the jobs it waited for; without the limiter, 18 CPU s. Local
jobs are bounded by the cores, not by a rate, so a local run drops it once its scheduler exists
(`onstart`, before the first scheduling pass); a run on a cluster keeps it (it spaces the
submissions). Snakemake itself builds no limiter where the setting is empty, and then counts the
jobs it may start by the cores alone, as here.
"""

from __future__ import annotations

from typing import Any


def unlimit_local_jobs(workflow: Any) -> bool:
    """Drop the job-rate limiter of ``workflow``'s scheduler where its jobs run locally; True where
    it was dropped (or there was none), False where the run is not local or the scheduler has no
    such limiter."""
    scheduler = getattr(workflow, "scheduler", None)
    if not workflow.local_exec or not hasattr(scheduler, "job_rate_limiter"):
        return False
    scheduler.job_rate_limiter = None
    return True
