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
