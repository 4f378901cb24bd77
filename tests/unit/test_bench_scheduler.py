"""benchmarks/bench_scheduler.py: both of Snakemake's selectors, timed on the same choice, make it alike."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pytest  # noqa: E402
from bench_scheduler import main  # noqa: E402


# Snakemake's ILP scheduler builds its program with PuLP calls that PuLP 3 marks deprecated
@pytest.mark.filterwarnings("ignore::DeprecationWarning:pulp")
def test_each_selector_fills_exactly_the_free_slots(tmp_path):
    out = tmp_path / "passes.json"
    main(["--passes", "--ready", "30", "--slots", "2", "40", "--repeat", "1", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [(r["ready"], r["slots"]) for r in rows] == [(30, 2), (30, 40)]
    for row in rows:
        for selector in ("ilp", "greedy"):
            assert row[selector]["chosen"] == min(row["slots"], row["ready"])
            assert row[selector]["pass_s"] > 0
