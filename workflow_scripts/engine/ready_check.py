"""Snakemake's test of whether a job group is ready, without comparing a group with itself.

A job in a group is ready when, for every job of its group, the unfinished dependencies equal
those inside the group (`DAG._ready`). Snakemake counts the inside ones by comparing each
dependency's group with the job's (`==`), and comparing two groups compares their sets of jobs:
a group compared with itself walks all its jobs. A dry run asks this of every job (its debug
line does, whatever the log level), so on the study's fine-tuning groups it was 2% of
the full study's profiled dry run. Here a dependency without a group counts as outside and the same group
object as inside, as `==` would answer; any other pair is still compared with `==`. `install()`
is a no-op on a Snakemake whose `DAG` lacks `_ready`; a DAG without the tables it reads is asked
as Snakemake asks it.
"""

from __future__ import annotations

from . import method_patch


def install(dag_class: type | None = None) -> bool:
    """``dag_class`` (Snakemake's `DAG`) tests readiness as above (once per process); False where
    it lacks `_ready`."""
    if dag_class is None:
        import snakemake.api  # noqa: F401  (snakemake.dag alone imports in a cycle)
        from snakemake import dag

        dag_class = getattr(dag, "DAG", None)
    return method_patch.replace(dag_class, "_ready", _direct)


def _direct(plain):
    def _ready(self, job):
        try:
            groups, until_ready, dependencies = self._group, self._n_until_ready, self._dependencies
        except AttributeError:
            return plain(self, job)
        group = groups.get(job)
        if group is None:
            return until_ready[job] == 0
        for member in group:
            inside = 0
            for dep in dependencies[member]:
                other = groups.get(dep)
                if other is group or (other is not None and other == group):
                    inside += 1
            if until_ready[member] - inside != 0:
                return False
        return True

    return _ready
