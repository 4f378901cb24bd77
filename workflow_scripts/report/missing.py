"""missing.md: what keeps a number out of the tables or rests on fewer runs than configured."""

from __future__ import annotations

import logging

from .aggregate import missing_runs
from .settings import ReportSettings

log = logging.getLogger(__name__)


def missing_report(settings: ReportSettings, missing, cells: dict, groups: dict, blurb: dict) -> str:
    """Everything that keeps a number out of the tables or rests on fewer runs than configured."""
    runs = [f"- metrics file missing: {m}" for m in missing_runs(missing)]
    by_run = {(c.model, c.task): c for c in cells.values()}
    runs += [f"- {c.model} / {c.task}: {c.note}" for c in by_run.values() if c.status != "ok"]
    summaries = [
        f"- {model} {kind} {name}: {row.ours.note}"
        for kind, table in (("group", groups), ("BLURB", blurb))
        for model, rows in table.items()
        for name, row in rows.items()
        if row.ours.value is None
    ]
    for line in runs:
        log.warning(line[2:])
    return "\n".join(
        [
            "# Missing results",
            "",
            "## Runs",
            "",
            *(runs or ["Every configured run has a result."]),
            "",
            "## Group means and BLURB scores not computed",
            "",
            *(summaries or ["Every group mean and BLURB score was computed."]),
            "",
        ]
    )
