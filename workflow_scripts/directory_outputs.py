"""Snakemake's check that no output lies inside another job's output, on path strings.

`DAG.check_directory_outputs` sorts every output of the DAG as an absolute `pathlib.Path` and
compares neighbours with `os.path.commonpath`: object construction and comparison for each of
the full study's 44,000 outputs, a twentieth of its dry run. The same order comes from the
paths' components as tuples of strings (how `Path` compares them on POSIX), and "a contains b"
is "a's components begin b's". Where a pair is found, Snakemake's own check runs and raises, so the
message is its own. `install()` is a no-op where the DAG has no such check or paths are
not POSIX.
"""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path


def components(path: str, cwd: str) -> tuple[str, ...]:
    """``path`` made absolute against ``cwd`` and split as `Path` splits it (empty and "."
    components dropped, ".." kept)."""
    return tuple(part for part in os.path.join(cwd, path).split("/") if part and part != ".")


def first_nested(outputs, cwd: str):
    """The first (outer, inner) pair of ((path, job), (path, job)) in sorted order where inner's
    path lies inside outer's and the jobs differ; None where there is none."""
    ordered = sorted({(components(str(f), cwd), job) for job, f in outputs})
    for (a, job_a), (b, job_b) in pairwise(ordered):
        if len(a) < len(b) and b[: len(a)] == a and job_a != job_b:
            return ((Path("/", *a), job_a), (Path("/", *b), job_b))
    return None


def install(dag_class: type | None = None) -> bool:
    """``dag_class`` (Snakemake's `DAG`) checks nested outputs on strings (once per process);
    False where it has no `check_directory_outputs` or paths are not POSIX."""
    if dag_class is None:
        import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
        from snakemake import dag

        dag_class = dag.DAG
    plain = getattr(dag_class, "check_directory_outputs", None)
    if getattr(plain, "_on_strings", False):
        return True
    if not callable(plain) or os.sep != "/":
        return False
    from snakemake.exceptions import ChildIOException

    def check_directory_outputs(self):
        nested = first_nested(((job, f) for job in self.jobs for f in job.output), os.getcwd())
        if nested is not None:
            plain(self)  # raises from Snakemake's own frame, so its message reads as before
            raise ChildIOException(parent=nested[0], child=nested[1])

    check_directory_outputs._on_strings = True
    check_directory_outputs.__doc__ = plain.__doc__
    dag_class.check_directory_outputs = check_directory_outputs
    return True
