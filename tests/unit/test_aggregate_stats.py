"""Statistics over seeds on hand-checked values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from workflow_scripts.report.stats import bootstrap_ci, summarise


def test_median_mean_and_spread():
    s = summarise([0.9, 0.7, 0.8, 0.95, 0.1], "median")
    assert s.value == pytest.approx(0.8)
    assert s.mean == pytest.approx(0.69)
    assert (s.min, s.max, s.n) == (0.1, 0.95, 5)
    assert s.std == pytest.approx(np.sqrt(((np.array([0.9, 0.7, 0.8, 0.95, 0.1]) - 0.69) ** 2).sum() / 4))
    assert summarise([0.2, 0.4], "median").value == pytest.approx(0.3)
    assert summarise([0.9, 0.7, 0.8, 0.95, 0.1], "mean").value == pytest.approx(0.69)
    one = summarise([0.5], "median")
    assert one.std is None and one.value == 0.5


def test_bootstrap_interval_of_one_run_is_that_run():
    assert bootstrap_ci([0.42], "median", 100, 0.95, 0) == (0.42, 0.42)


def test_bootstrap_interval_matches_the_exact_resampling_distribution():
    values = [1.0, 2.0, 3.0]
    # all 27 equally likely resamples: the mean is 1.0 in one and 3.0 in one of them
    exact = sorted(np.mean(r) for r in itertools.product(values, repeat=3))
    lo, hi = bootstrap_ci(values, "mean", 20000, 0.9, seed=1)
    assert lo == pytest.approx(np.quantile(exact, 0.05), abs=0.12)
    assert hi == pytest.approx(np.quantile(exact, 0.95), abs=0.12)
    assert bootstrap_ci(values, "mean", 500, 0.9, seed=3) == bootstrap_ci(values, "mean", 500, 0.9, seed=3)
