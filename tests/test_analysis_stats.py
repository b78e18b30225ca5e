"""κ, α and the bootstrap CI checked against hand-computed cases and scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lib.analysis.stats import bootstrap_ci, cohen_kappa, krippendorff_alpha


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


def test_bootstrap_ci_hand_computable_binomial_case():
    # Values 0, 0, 0, 1: a resample's mean is K/4 with K ~ Binomial(4, 1/4), so
    # P(K ≤ 0) = 81/256 = 0.316 ≥ 0.025 -> the 2.5% quantile is 0;
    # P(K ≤ 2) = 243/256 = 0.949 < 0.975 ≤ P(K ≤ 3) = 255/256 -> the 97.5% quantile is 3/4.
    assert bootstrap_ci([0, 0, 0, 1], seed=0) == (0.0, 0.75)
    # 50% interval: P(K ≤ 0) = 0.316 ≥ 0.25 -> 0; P(K ≤ 1) = 189/256 = 0.738 < 0.75 ≤ P(K ≤ 2) -> 2/4
    assert bootstrap_ci([0, 0, 0, 1], seed=0, level=0.5) == (0.0, 0.5)


def test_bootstrap_ci_matches_the_normal_interval_and_scipy_on_a_large_sample():
    from scipy import stats as sps

    values = np.random.default_rng(7).normal(loc=3.0, scale=2.0, size=400)
    low, high = bootstrap_ci(values, seed=1, n_resamples=20_000)
    # Known interval: x̄ ± t_{0.975, n−1} · s / √n; the percentile bootstrap agrees to within a few % of its width.
    half = sps.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    assert low == pytest.approx(values.mean() - half, abs=0.05 * half)
    assert high == pytest.approx(values.mean() + half, abs=0.05 * half)
    # scipy's BCa interval on other resamples agrees as well (both estimate the same interval)
    bca = sps.bootstrap((values,), np.mean, n_resamples=20_000, method="BCa", rng=np.random.default_rng(2))
    assert (low, high) == pytest.approx((bca.confidence_interval.low, bca.confidence_interval.high), abs=0.05 * half)


def test_bootstrap_ci_constant_seeded_and_level():
    assert bootstrap_ci([1, 1, 1], seed=0) == (1.0, 1.0)
    assert all(math.isnan(x) for x in bootstrap_ci([], seed=0))
    values = [0, 1, 1, 0, 1, 1, 1, 0]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    narrow, wide = bootstrap_ci(values, seed=3, level=0.5), bootstrap_ci(values, seed=3, level=0.95)
    assert wide[0] <= narrow[0] <= np.mean(values) <= narrow[1] <= wide[1]
