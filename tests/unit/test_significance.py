"""Paired tests against scipy and textbook values, Holm against a worked example, the
multi-bootstrap against a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from workflow_scripts.report.multibootstrap import multibootstrap
from workflow_scripts.report.significance import BEYOND, SUGGESTIVE, WITHIN, adjust, run_family, verdict
from workflow_scripts.report.stats import (
    SIGN_FLIP,
    T_TEST,
    choose_test,
    paired_comparison,
    seeds_for_exact,
    sign_flip_interval,
    sign_flip_p,
    t_test,
)

# Student (1908) / Cushny & Peebles: extra hours of sleep, drug 2 minus drug 1, 10 patients.
# R: t.test(extra ~ group, data = sleep, paired = TRUE) gives t = -4.0621, df = 9,
# p-value = 0.002833, 95 percent CI -2.4598858 -0.7001142 (group 1 minus group 2).
SLEEP_DIFFS = [1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4]


def _scipy_sign_flip(a, b) -> float:
    return scipy_stats.permutation_test(
        (a, b), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=np.inf
    ).pvalue


def test_paired_t_test_matches_the_textbook_and_scipy():
    p, lo, hi = t_test(SLEEP_DIFFS, 0.95)
    assert p == pytest.approx(0.002833, abs=5e-7)
    assert (lo, hi) == pytest.approx((0.7001142, 2.4598858), abs=1e-7)
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 8):
        a, b = rng.normal(0.6, 0.05, n), rng.normal(0.58, 0.05, n)
        assert t_test(a - b, 0.9)[0] == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-12)
        ci = scipy_stats.ttest_rel(a, b).confidence_interval(0.9)
        assert t_test(a - b, 0.9)[1:] == pytest.approx((ci.low, ci.high), rel=1e-12)


def test_exact_sign_flip_p_matches_scipy_permutation_test():
    rng = np.random.default_rng(1)
    for n in (3, 5, 6, 9):
        a, b = rng.normal(0.6, 0.05, n), rng.normal(0.58, 0.05, n)
        assert sign_flip_p(a - b) == pytest.approx(_scipy_sign_flip(a, b), rel=1e-12)
    # ties: a constant difference is as extreme as only its mirror image
    assert sign_flip_p([0.01] * 5) == pytest.approx(_scipy_sign_flip(np.full(5, 0.81), np.full(5, 0.80)))
    assert sign_flip_p([0.01] * 5) == pytest.approx(2 / 32)
    assert sign_flip_p([1.0, -1.0, 1.0, -1.0]) == 1.0


def test_sign_flip_interval_is_the_set_of_shifts_the_test_does_not_reject():
    d = np.array([0.031, 0.012, 0.044, -0.008, 0.027, 0.019, 0.035])
    lo, hi = sign_flip_interval(d, 0.9)
    assert lo < d.mean() < hi
    zeros = np.zeros(d.size)
    for edge, outward in ((lo, -1), (hi, 1)):
        assert _scipy_sign_flip(d - (edge - outward * 1e-7), zeros) >= 0.1
        assert _scipy_sign_flip(d - (edge + outward * 1e-7), zeros) < 0.1


def test_the_exact_test_is_chosen_only_where_its_smallest_p_can_reach_the_level():
    # 5 seeds: the smallest two-sided p is 2/32 = 0.0625, which never falls below 0.05
    assert choose_test(5, 0.05) == T_TEST and seeds_for_exact(0.05) == 6
    assert choose_test(6, 0.05) == SIGN_FLIP
    # 18 claims under Holm: the first step judges at 0.05/18 = 0.0028; 2/2^10 = 0.00195
    assert choose_test(9, 0.05 / 18) == T_TEST and seeds_for_exact(0.05 / 18) == 10
    assert choose_test(10, 0.05 / 18) == SIGN_FLIP
    paired = paired_comparison([0.80, 0.82, 0.81, 0.83, 0.80], [0.78, 0.80, 0.80, 0.80, 0.79], 0.05, 0.95)
    assert paired.test == T_TEST and paired.wins == 5
    assert paired.p == pytest.approx(
        scipy_stats.ttest_rel([0.80, 0.82, 0.81, 0.83, 0.80], [0.78, 0.80, 0.80, 0.80, 0.79]).pvalue
    )


def test_holm_matches_the_worked_example():
    # Wikipedia, "Holm–Bonferroni method", example: four hypotheses at alpha = 0.05 with
    # p = 0.01, 0.04, 0.03, 0.005: H4 (0.005 < 0.05/4) and H1 (0.01 < 0.05/3) are rejected,
    # H3 (0.03 > 0.05/2) is not, so neither is H2. Adjusted p (R p.adjust "holm"):
    # 4 x 0.005, 3 x 0.01, 2 x 0.03, and max(0.06, 0.04) for H2.
    assert adjust([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    rejected = [p < 0.05 for p in adjust([0.01, 0.04, 0.03, 0.005], "holm")]
    assert rejected == [True, False, False, True]
    assert adjust([0.01, 0.04, 0.03, 0.005], "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert adjust([0.01, 0.04, 0.03, 0.005], "none") == [0.01, 0.04, 0.03, 0.005]
    assert adjust([0.3, 0.6], "holm") == pytest.approx([0.6, 0.6])


def test_verdicts_follow_the_corrected_p():
    assert verdict(0.001, 0.004, 0.05) == BEYOND
    assert verdict(0.02, 0.08, 0.05) == SUGGESTIVE
    assert verdict(0.2, 0.4, 0.05) == WITHIN
    assert verdict(0.04, 0.05, 0.05) == SUGGESTIVE  # "below alpha" is strict


def test_a_family_counts_only_its_tested_claims_and_corrects_them_together():
    a = [0.80, 0.82, 0.81, 0.83, 0.80, 0.84]
    strong = (a, [x - 0.02 for x in a])
    weak = (a, [0.81, 0.81, 0.82, 0.82, 0.80, 0.83])
    one, none_, two = run_family([strong, None, weak], 0.05, "holm", 0.95)
    assert none_ is None
    # two claims: 2/2^6 = 0.03125 is not below 0.05 / 2, so the t-test decides both
    assert one.test == two.test == T_TEST
    assert [one.p_corrected, two.p_corrected] == pytest.approx(adjust([one.p, two.p], "holm"))
    (alone,) = run_family([strong], 0.05, "holm", 0.95)
    assert alone.test == SIGN_FLIP and alone.p == pytest.approx(2 / 64) and alone.p_corrected == alone.p


def test_multibootstrap_matches_the_hand_computed_resampling_distribution():
    # differences A - B [pretraining seed, fine-tuning seed] = [[-1, 1], [2, 4]]. A replicate
    # draws two pretraining seeds, then two fine-tuning seeds for each. Each drawn seed adds the
    # mean of two draws from its row: row 0 gives -1, 0, 1 with 1/4, 1/2, 1/4. The mean is <= 0
    # only when both drawn seeds are seed 0 (1/4) and the two row-0 means sum to <= 0
    # (1/16 + 4/16 + 6/16 = 11/16): P = 11/64; below 0 (sum < 0): 5/64.
    a = np.array([[0.0, 2.0], [3.0, 5.0]])
    b = np.ones((2, 2))
    r = multibootstrap(a, b, samples=200_000, seed=0)
    assert r.mean_diff == 1.5 and (r.pretrain_seeds, r.finetune_seeds) == (2, 2)
    assert r.p_one_sided == pytest.approx(11 / 64, abs=0.004)
    assert r.p == pytest.approx(2 * 11 / 64, abs=0.008)
    # the replicate means range over -1 .. 4; the 2.5% quantile lies in the both-row-0 mass
    assert -1.0 <= r.ci_low <= 0.0 and 3.0 <= r.ci_high <= 4.0


def test_multibootstrap_with_one_pretraining_seed_resamples_fine_tuning_seeds_only():
    d = np.array([[0.01, 0.03, 0.02, 0.04]])
    r = multibootstrap(d, np.zeros_like(d), samples=2000, seed=1)
    assert r.p_one_sided == 0.0 and 0.01 <= r.ci_low < r.ci_high <= 0.04
    with pytest.raises(ValueError, match="one shape"):
        multibootstrap(d, np.zeros((2, 4)))


def test_a_claim_over_pretraining_seeds_reports_the_interval_of_its_own_test():
    # Two pretraining seeds x five fine-tuning seeds, A - B. The bootstrap's interval lies below
    # zero, but the five fine-tuning seeds' means (-6, 0, -6, -3.5, +3) do not reject zero in the
    # t-test, whose p the claim takes: its interval must then hold zero as well.
    b = np.full((2, 5), 60.0)
    a = b + np.array([[-7.0, 0.0, -5.0, -2.0, 3.0], [-5.0, 0.0, -7.0, -5.0, 3.0]])
    (claim,) = run_family([(a.tolist(), b.tolist())], 0.05, "holm", 0.95)
    boot = multibootstrap(a, b, seed=0)
    t_p, t_low, t_high = t_test((a - b).mean(axis=0), 0.95)
    assert boot.ci_high < 0 < t_high and t_p > 0.05 and claim.p == pytest.approx(t_p)
    assert (claim.ci_low, claim.ci_high) == pytest.approx((min(boot.ci_low, t_low), t_high))
    assert claim.ci_low < 0 < claim.ci_high
