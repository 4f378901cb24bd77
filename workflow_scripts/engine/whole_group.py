"""A job group kept whole in the Snakemake a Slurm allocation starts.

snakemake-executor-plugin-slurm 2.8 starts an allocation's Snakemake without the group arguments
and with `--jobs 1`: it would split the group job into its runs and run them one after another.
Every target job of that Snakemake is a run of the one group job, so the group is made one
component again (`group_components`, as `--group-components NAME=N` sets it) from inside an input
function: Snakemake evaluates input functions after its settings are final and before it forms
the groups. Not a speed-up of planning but the group's runs side by side as its resources were
sized for, so it applies on every Snakemake (`workflow.group_settings` is Snakemake's public
settings object; `tests/unit/test_engine.py` checks the timing on the installed Snakemake).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any


def whole(settings: Any, group: str) -> Any:
    """``settings`` (Snakemake's `GroupSettings`) with every job of ``group`` in one group job,
    unless the user set how many components that group joins."""
    if group in settings.group_components:
        return settings
    return dataclasses.replace(settings, group_components={**settings.group_components, group: sys.maxsize})
