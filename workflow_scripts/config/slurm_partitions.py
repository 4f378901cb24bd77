"""Check the Slurm partitions a run will submit to, once, before the first sbatch.

The slurm executor plugin passes each job's ``slurm_partition`` to sbatch unchecked: a
leftover ``SITE_GPU_PARTITION`` placeholder or a misspelt name only fails when the first
job of that rule is submitted, often hours into a study, after hundreds of other jobs.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping

from ..errors import PipelineError

PROFILE = "~/.config/snakemake/slurm/config.yaml"
PLACEHOLDER = "SITE_"


def requested_partitions(jobs: Iterable[tuple[str, object]]) -> dict[str, list[str]]:
    """Partition -> sorted rules that ask for it, from (rule, slurm_partition) pairs."""
    found: dict[str, set[str]] = {}
    for rule, partition in jobs:
        if partition in (None, ""):
            continue
        found.setdefault(str(partition), set()).add(rule)
    return {p: sorted(rules) for p, rules in sorted(found.items())}


def parse_sinfo(output: str) -> set[str]:
    """Partition names from `sinfo -h -o %P` (the default partition carries a `*`)."""
    return {line.strip().rstrip("*") for line in output.splitlines() if line.strip()}


def available_partitions() -> set[str]:
    if shutil.which("sinfo") is None:
        raise PipelineError(
            "sinfo not found: run `snakemake --profile slurm` on a machine that can submit to your Slurm cluster"
        )
    proc = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise PipelineError(
            f"`sinfo -h -o %P` failed ({proc.stderr.strip()}): check that Slurm answers on this machine"
        )
    return parse_sinfo(proc.stdout)


def _where(rules: list[str]) -> str:
    shown = ", ".join(rules[:5]) + (f" and {len(rules) - 5} more" if len(rules) > 5 else "")
    return f"rules {shown}" if len(rules) > 1 else f"rule {shown}"


def check(requested: Mapping[str, list[str]], available: set[str]) -> None:
    """Raise PipelineError naming the key to set for every placeholder or unknown partition."""
    problems = []
    for partition, rules in requested.items():
        if PLACEHOLDER in partition:
            problems.append(
                f"slurm_partition is still the placeholder {partition!r} for {_where(rules)}: "
                f"set {partition} in {PROFILE} (default-resources / set-resources) to a partition from `sinfo`"
            )
        elif partition not in available:
            problems.append(
                f"slurm_partition {partition!r} of {_where(rules)} is not a partition of this cluster "
                f"(sinfo lists: {', '.join(sorted(available)) or 'none'}): fix slurm_partition in {PROFILE}"
            )
    if problems:
        raise PipelineError("; ".join(problems) + ". Nothing was submitted.")


def check_jobs(jobs: Iterable[tuple[str, object]]) -> None:
    requested = requested_partitions(jobs)
    needs_sinfo = any(PLACEHOLDER not in p for p in requested)
    check(requested, available_partitions() if needs_sinfo else set())
