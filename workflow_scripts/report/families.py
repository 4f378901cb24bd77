"""Every paired claim the report tests, in its family: one row of comparisons.csv each.

Families, each corrected on its own (significance.py):

- the configured pairs on the group means the findings state (All, Clinical);
- the configured pairs on the other group means (in comparisons.csv only);
- the configured pairs per task and benchmark view (in comparisons.csv only);
- every real model against the no-training baseline per task, in the main table's view
  (the findings' per-task baseline sentences).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .aggregate import compare, compare_to_baseline
from .group_compare import GROUP_PREFIX, STATED_GROUPS, GroupComparison, compare_groups
from .settings import ReportSettings
from .significance import run_family, strictest_level
from .stats import T_TEST, Paired, seeds_for_exact

STATED, OTHER_GROUPS, PER_TASK, BASELINE = "stated group means", "other group means", "per task", "above baseline"


@dataclass
class Claim:
    family: str
    family_size: int
    level: float  # the strictest level a claim of the family is judged at
    task: str
    benchmark: str
    metric: str
    model_a: str
    model_b: str
    statistic: str
    value_a: float | None
    value_b: float | None
    n_pairs: int
    paired: Paired | None
    note: str

    @property
    def seeds_for_exact(self) -> int | None:
        """Pairs the exact sign-flip test needs to decide at the family's level, where the
        t-test stood in for it for want of pairs."""
        if self.paired is None or self.paired.test != T_TEST:
            return None
        needed = seeds_for_exact(self.level)
        return needed if needed > self.n_pairs else None


def _tested(settings: ReportSettings, family: str, items: Sequence) -> list[Claim]:
    """Test one family of comparisons (per task or group) and make them claims."""
    sig, conf = settings.significance, settings.aggregation.confidence
    seed = settings.aggregation.bootstrap_seed
    tested = run_family([i.scores for i in items], sig.alpha, sig.correction, conf, seed)
    m = sum(t is not None for t in tested)
    level = min(strictest_level(sig.alpha, m, sig.correction), 1.0 - conf)
    out = []
    for i, paired in zip(items, tested, strict=True):
        if isinstance(i, GroupComparison):
            task, view, metric, statistic = GROUP_PREFIX + i.group, "lewis", "mean over the group's tasks", "mean"
            values = i.value_a, i.value_b
        else:
            task, view, metric, statistic = i.task, i.view, i.cell_a.metric, i.cell_a.statistic
            values = i.cell_a.value, i.cell_b.value
        out.append(
            Claim(
                family,
                m,
                level,
                task,
                view,
                metric,
                i.model_a,
                i.model_b,
                statistic,
                *values,
                i.n_pairs,
                paired,
                i.note,
            )
        )
    return out


def claims(settings: ReportSettings, cells: dict, groups: dict) -> list[Claim]:
    """Per task, then per group mean (in the groups' order), then against the baseline."""
    group_rows = compare_groups(settings, cells, groups)
    stated = _tested(settings, STATED, [g for g in group_rows if g.group in STATED_GROUPS])
    other = _tested(settings, OTHER_GROUPS, [g for g in group_rows if g.group not in STATED_GROUPS])
    by_group = {(c.task, c.model_a, c.model_b): c for c in stated + other}
    return [
        *_tested(settings, PER_TASK, compare(settings, cells)),
        *(by_group[(GROUP_PREFIX + g.group, g.model_a, g.model_b)] for g in group_rows),
        *_tested(settings, BASELINE, compare_to_baseline(settings, cells)),
    ]
