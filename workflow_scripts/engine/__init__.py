"""Snakemake's planning made faster by patches of its internals, installed together and only on
the Snakemake versions they were tested on.

Each module here stands in for one Snakemake internal with code that does less work and gives
the same answers (docs/engine.md: what each replaces, what it saved, the upstream change that
would retire it); each has an equivalence test against the installed Snakemake. On any other
Snakemake, or with ``WORKFLOW_ENGINE_PATCHES=0``, none is installed and Snakemake runs as it
ships: planning is slower, the plan is the same. `whole_group` is no speed-up and is not
gated here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import PipelineError
from . import (
    directory_outputs,
    function_params,
    group_check,
    job_rate,
    job_validity,
    producers_once,
    ready_check,
    shellcmd_once,
    whole_group,
    wildcard_templates,
)

__all__ = ["install", "job_rate", "whole_group"]

# Snakemake releases every patch's equivalence test passed on (tests/unit/test_<patch>.py), and the demo
# planned the same jobs with the patches as without them (docs/engine.md).
TESTED = ("9.19.0", "9.20.0", "9.21.1", "9.22.0", "9.23.1", "9.24.0", "9.25.2", "9.26.1", "9.27.0", "9.27.1")
SWITCH = "WORKFLOW_ENGINE_PATCHES"
STOCK = "running on stock Snakemake: planning is slower, results are the same"

PATCHES: tuple[Callable[[], bool], ...] = (
    group_check.install,
    function_params.install,
    shellcmd_once.install,
    producers_once.install,
    directory_outputs.install,
    wildcard_templates.install,
    job_validity.install,
    ready_check.install,
)


def snakemake_version() -> str:
    import snakemake

    return snakemake.__version__


def refusal(version: str, environ: Mapping[str, str]) -> str | None:
    """Why the patches stay out, in one line; None where they go in."""
    switch = environ.get(SWITCH, "1")
    if switch not in ("0", "1"):
        raise PipelineError(f"{SWITCH}={switch!r}: set 0 to run stock Snakemake, or 1 (the default) for the patches")
    if switch == "0":
        return f"{SWITCH}=0: {STOCK}"
    if version not in TESTED:
        tested = ", ".join(TESTED)
        return f"snakemake {version} is outside the versions the planning speed-ups were tested on ({tested}); {STOCK}"
    return None


def install(workflow: Any) -> bool:
    """Every patch installed (once per process): True. Or none, on a Snakemake outside
    :data:`TESTED` or with the patches switched off, saying so in one line from the main
    process: False. A patch whose target is not there on a tested Snakemake is named."""
    why = refusal(snakemake_version(), os.environ)
    if why is not None:
        if workflow.is_main_process:
            print(f"note: {why}", file=sys.stderr)
        return False
    missed = [patch.__module__.rsplit(".", 1)[-1] for patch in PATCHES if not patch()]
    if missed and workflow.is_main_process:
        print(f"note: Snakemake internals not found, left stock: {', '.join(missed)}", file=sys.stderr)
    return True
