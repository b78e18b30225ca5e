"""Agreement statistics cross-checked against hand-computed cases."""
from __future__ import annotations

import math

import pytest

from lib.stats import cohen_kappa, krippendorff_alpha


def test_cohen_kappa_hand_computed():
    a = [0, 0, 1, 1, 2, 2, 2, 0]
    b = [0, 1, 1, 1, 2, 2, 0, 0]
    # p_o = 6/8; marginals a: (3,2,3)/8, b: (3,3,2)/8 -> p_e = (9+6+6)/64 = 21/64
    p_o, p_e = 6 / 8, 21 / 64
    assert cohen_kappa(a, b, [0, 1, 2]) == pytest.approx((p_o - p_e) / (1 - p_e))


def test_quadratic_weighted_kappa_hand_computed():
    a, b = [0, 1, 2, 2], [0, 2, 2, 0]
    # weights w_ij = (i-j)^2/4; observed disagreement = (0 + 1/4 + 0 + 1)/4 = 0.3125
    # marginals a: (1,1,2)/4, b: (2,0,2)/4; expected = Σ_ij p_i q_j w_ij
    p, q = [0.25, 0.25, 0.5], [0.5, 0.0, 0.5]
    expected = sum(p[i] * q[j] * (i - j) ** 2 / 4 for i in range(3) for j in range(3))
    assert cohen_kappa(a, b, [0, 1, 2], weights="quadratic") == pytest.approx(1 - 0.3125 / expected)


def test_kappa_is_one_for_identical_and_nan_when_undefined():
    assert cohen_kappa([0, 1, 2, 1], [0, 1, 2, 1], [0, 1, 2]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([2, 2, 2], [2, 2, 2], [0, 1, 2]))


def test_krippendorff_alpha_nominal_hand_computed():
    # Two raters, four items: (0,0), (1,1), (0,1), (1,1). Coincidence matrix o: o00=2, o01=o10=1, o11=4; n=8
    # D_o = (o01+o10)/n = 2/8; n0=3, n1=5 -> D_e = 2·n0·n1/(n(n-1)) = 30/56
    alpha = krippendorff_alpha([[0, 1, 0, 1], [0, 1, 1, 1]], level="nominal")
    assert alpha == pytest.approx(1 - (2 / 8) / (30 / 56))


def test_krippendorff_alpha_handles_missing_ratings():
    full = krippendorff_alpha([[0, 1, 2, 1], [0, 1, 2, 2]])
    with_gap = krippendorff_alpha([[0, 1, 2, 1, None], [0, 1, 2, 2, 1]])
    assert with_gap == pytest.approx(full)


def test_agreement_summary():
    from lib.stats import agreement

    row = agreement([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2])
    assert row["n"] == 4 and row["exact agreement"] == 0.75
    assert row["kappa"] == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2]))


def test_per_group_correlation_skips_constant_groups():
    import pandas as pd

    from lib.stats import per_group_correlation

    frame = pd.DataFrame({"doc": [1, 1, 1, 2, 2, 2, 3, 3, 3],
                          "human": [1, 2, 3, 1, 2, 3, 2, 2, 2],   # doc 3 constant -> skipped
                          "judge": [1, 2, 3, 3, 2, 1, 1, 2, 3]})
    assert per_group_correlation(frame, "doc", "human", "judge") == (pytest.approx(0.0), 2)  # mean(1, -1)
    assert per_group_correlation(frame, "doc", "human", "judge", "kendall") == (pytest.approx(0.0), 2)


def test_paired_comparison_matches_scipy_and_hand_values():
    from scipy import stats as sps

    from lib.stats import paired_comparison

    system = [0.9, 0.8, 0.7, 1.0, 0.6, 0.9, 0.75, 0.85]
    baseline = [0.5, 0.7, 0.7, 0.6, 0.4, 0.8, 0.5, 0.6]
    out = paired_comparison(system, baseline, seed=0, n_resamples=2000)
    diff = [s - b for s, b in zip(system, baseline)]
    assert out["mean diff"] == pytest.approx(sum(diff) / 8)
    assert out["p t-test"] == pytest.approx(sps.ttest_rel(system, baseline).pvalue)
    assert out["ci low"] < out["mean diff"] < out["ci high"]
    # 7 positive differences and one zero: the exact sign-flip test over 2^8 flips gives p = 2·2/256
    # (all-positive and the flip of the zero are both as extreme) — the randomisation estimate is close.
    assert out["p permutation"] == pytest.approx(4 / 256, abs=0.01)
    import statistics
    assert out["d_z"] == pytest.approx(statistics.mean(diff) / statistics.stdev(diff))


def test_paired_comparison_with_no_difference_has_no_p_values():
    from lib.stats import paired_comparison

    out = paired_comparison([1, 0, 1], [1, 0, 1], seed=0)
    assert out["mean diff"] == 0 and math.isnan(out["p t-test"]) and math.isnan(out["p permutation"])


def test_holm_hand_computed():
    from lib.stats import holm

    # sorted p: .01, .03, .04 -> ×3, ×2, ×1 = .03, .06, .06 (monotone); NaN passes through
    assert holm([0.04, 0.01, float("nan"), 0.03]) == pytest.approx([0.06, 0.03, float("nan"), 0.06], nan_ok=True)


def test_entries_needed_normal_approximation():
    from lib.stats import entries_needed

    # (1.959964 + 0.841621)^2 * (1 / 0.5)^2 = 31.40
    assert entries_needed(0.5, 1.0) == pytest.approx(31.3956, abs=1e-3)
    assert entries_needed(0.0, 1.0) == float("inf")


def test_bootstrap_ci_constant_and_seeded():
    from lib.stats import bootstrap_ci

    assert bootstrap_ci([1, 1, 1], seed=0) == (1.0, 1.0)
    values = [0, 1, 1, 0, 1, 1, 1, 0]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
