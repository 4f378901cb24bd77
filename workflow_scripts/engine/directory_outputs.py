"""Snakemake's check that no output lies inside another job's output, on path strings.

`DAG.check_directory_outputs` sorts every output of the DAG as an absolute `pathlib.Path` and
compares neighbours with `os.path.commonpath`: object construction and comparison for each of
the full study's 44,000 outputs, a twentieth of its dry run. The same order comes from the
paths' components as tuples of strings (how `Path` compares them on POSIX), and "a contains b"
is "a's components begin b's". Where a pair is found, Snakemake's own check runs: its verdict
and its message stand. `install()` is a no-op where the DAG has no such check or paths are
not POSIX.
"""

from __future__ import annotations

import os
from itertools import pairwise

from . import method_patch


def components(path: str, cwd: str) -> tuple[str, ...]:
    """``path`` made absolute against ``cwd`` and split as `Path` splits it (empty and "."
    components dropped, ".." kept)."""
    return tuple(part for part in os.path.join(cwd, path).split("/") if part and part != ".")


def any_nested(outputs, cwd: str) -> bool:
    """Whether, in sorted order, some (path, job) of ``outputs`` ((job, path) pairs) lies inside
    its predecessor's path with another job: where Snakemake's own check raises."""
    ordered = sorted({(components(str(f), cwd), job) for job, f in outputs})
    return any(len(a) < len(b) and b[: len(a)] == a and job_a != job_b for (a, job_a), (b, job_b) in pairwise(ordered))


def install(dag_class: type | None = None) -> bool:
    """``dag_class`` (Snakemake's `DAG`) checks nested outputs on strings (once per process);
    False where it has no `check_directory_outputs` or paths are not POSIX."""
    if dag_class is None:
        import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
        from snakemake import dag

        dag_class = dag.DAG
    return os.sep == "/" and method_patch.replace(dag_class, "check_directory_outputs", _on_strings)


def _on_strings(plain):
    def check_directory_outputs(self):
        if any_nested(((job, f) for job in self.jobs for f in job.output), os.getcwd()):
            plain(self)  # Snakemake's own verdict and error, raised from its frame as before

    return check_directory_outputs
