"""The sample-size planner against closed forms computed here and simulation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from lib.analysis.power import (
    correlation_interval_half_width,
    design_effect,
    kish_design_effect,
    units_for_correlation_interval,
    units_for_interval,
    units_for_items,
)
from lib.analysis.stats import MIN_CI_UNITS, cluster_bootstrap_ci

Z95 = sps.norm.ppf(0.975)


def clustered_values(rng: np.random.Generator, units: int, items_per_unit: int, icc: float) -> np.ndarray:
    """units × items values with variance 1 and intraclass correlation ``icc``: a unit effect plus item noise."""
    unit_effect = rng.normal(0.0, math.sqrt(icc), size=(units, 1))
    return unit_effect + rng.normal(0.0, math.sqrt(1 - icc), size=(units, items_per_unit))


def unit_bootstrap_se(values: np.ndarray, rng: np.random.Generator, n_resamples: int = 2000) -> float:
    """SD of the mean over items when whole units (rows) are resampled."""
    drawn = rng.integers(0, len(values), size=(n_resamples, len(values)))
    return float(values[drawn].mean(axis=(1, 2)).std(ddof=1))


# --- design effect ---------------------------------------------------------------------------------------------

def test_design_effect_is_the_squared_ratio_of_standard_errors_and_kish_for_a_mean():
    assert design_effect(0.2, 0.1) == pytest.approx(4.0)
    assert kish_design_effect(5, 0.3) == pytest.approx(2.2)
    assert kish_design_effect(1, 0.9) == pytest.approx(1.0)  # one item per unit: no clustering
    # The mean of G units of m items with variance σ² and ICC ρ: Var = σ²(1 + (m − 1)ρ)/(Gm) against σ²/(Gm)
    m, icc, g = 5, 0.3, 40
    se_clustered, se_independent = math.sqrt((1 + (m - 1) * icc) / (g * m)), math.sqrt(1 / (g * m))
    assert design_effect(se_clustered, se_independent) == pytest.approx(kish_design_effect(m, icc))


def test_design_effect_measured_by_bootstrap_on_clustered_data_matches_kish():
    rng = np.random.default_rng(11)
    values = clustered_values(rng, units=400, items_per_unit=5, icc=0.3)
    se_clustered = unit_bootstrap_se(values, rng)
    items = values.ravel()
    drawn = rng.integers(0, len(items), size=(2000, len(items)))
    se_independent = float(items[drawn].mean(axis=1).std(ddof=1))
    assert design_effect(se_clustered, se_independent) == pytest.approx(2.2, rel=0.15)


def test_units_for_items_divides_the_inflated_items_among_units():
    assert units_for_items(100, items_per_unit=4, design_effect=2.2) == 55  # 100 · 2.2 / 4
    assert units_for_items(100, items_per_unit=3) == 34  # ⌈33.3⌉
    assert units_for_items(30, items_per_unit=1) == 30


# --- an interval of given half-width from a pilot ---------------------------------------------------------------

def test_units_for_interval_hand_computed():
    # 25 · (1.959964 · 0.1 / 0.1)² = 96.04 → 97
    assert units_for_interval(se_pilot=0.1, n_pilot=25, half_width=0.1) == 97
    # halving the half-width quadruples n before rounding: 4 · 96.04 = 384.15 → 385
    assert units_for_interval(se_pilot=0.1, n_pilot=25, half_width=0.05) == 385
    # 90% interval: z = 1.644854, 25 · 1.644854² = 67.64 → 68
    assert units_for_interval(se_pilot=0.1, n_pilot=25, half_width=0.1, level=0.9) == 68
    # a pilot already precise enough still needs MIN_CI_UNITS units for any interval
    assert units_for_interval(se_pilot=0.01, n_pilot=12, half_width=0.5) == MIN_CI_UNITS


def test_units_for_interval_matches_the_closed_form_of_a_clustered_mean():
    # SE of the mean over n_pilot units of m items, variance 1, ICC ρ: √(deff / (m · n_pilot)); units for a
    # half-width h: z² · deff / (m · h²), whatever the pilot's size
    m, icc, h = 4, 0.25, 0.08
    deff = 1 + (m - 1) * icc
    needed = math.ceil(Z95 ** 2 * deff / (m * h ** 2))
    for n_pilot in (12, 30, 200):
        se_pilot = math.sqrt(deff / (m * n_pilot))
        assert units_for_interval(se_pilot, n_pilot, h) == needed


def test_units_for_interval_from_a_simulated_pilot_give_about_the_requested_half_width():
    # A pilot of clustered values (5 items per unit, ICC 0.3): its unit-bootstrap SE plans n; runs of n units
    # then get cluster-bootstrap intervals (the study's own) whose half-width is about the requested one.
    rng = np.random.default_rng(3)
    m, icc, h = 5, 0.3, 0.15
    pilot = clustered_values(rng, units=200, items_per_unit=m, icc=icc)
    n = units_for_interval(unit_bootstrap_se(pilot, rng), len(pilot), h)
    assert n == pytest.approx(Z95 ** 2 * kish_design_effect(m, icc) / (m * h ** 2), rel=0.15)
    half_widths = []
    for seed in range(150):
        values = clustered_values(rng, units=n, items_per_unit=m, icc=icc)
        low, high = cluster_bootstrap_ci(values.ravel(), np.repeat(np.arange(n), m), seed=seed, n_resamples=1000)
        half_widths.append((high - low) / 2)
    assert np.mean(half_widths) == pytest.approx(h, rel=0.08)


# --- a correlation interval -------------------------------------------------------------------------------------

def test_pearson_units_for_r_half_and_half_width_a_tenth_by_the_textbook_formulas():
    n = units_for_correlation_interval(0.5, 0.1, coefficient="pearson")
    assert n == 219

    def half_width(pairs: int) -> float:  # Fisher 1921: tanh(atanh r ± z/√(n − 3)), half the width
        spread = Z95 / math.sqrt(pairs - 3)
        return (math.tanh(math.atanh(0.5) + spread) - math.tanh(math.atanh(0.5) - spread)) / 2

    assert half_width(n) <= 0.1 < half_width(n - 1)
    assert correlation_interval_half_width(0.5, n, "pearson") == pytest.approx(half_width(n))
    # delta method: SE(r) ≈ (1 − r²)/√(n − 3), so n ≈ (1 − r²)² (z/h)² + 3 = 219.08
    assert n == pytest.approx((1 - 0.25) ** 2 * (Z95 / 0.1) ** 2 + 3, abs=1.0)
    # Bonett & Wright 2000, two stages on the full width w = 2h: n₀ = 4c(1 − r²)²(z/w)² + b, then
    # n = (n₀ − b)(w₀/w)² + b with w₀ the width at n₀
    n0 = math.ceil(4 * (1 - 0.25) ** 2 * (Z95 / 0.2) ** 2 + 3)
    assert n == math.ceil((n0 - 3) * (2 * half_width(n0) / 0.2) ** 2 + 3)


@pytest.mark.parametrize(("r", "h", "coefficient"), [(0.3, 0.15, "spearman"), (0.8, 0.05, "spearman"),
                                                      (-0.6, 0.1, "kendall"), (0.0, 0.2, "pearson")])
def test_correlation_units_are_the_smallest_whose_interval_is_narrow_enough(r, h, coefficient):
    n = units_for_correlation_interval(r, h, coefficient)
    assert correlation_interval_half_width(r, n, coefficient) <= h < correlation_interval_half_width(r, n - 1,
                                                                                                    coefficient)
    assert units_for_correlation_interval(-r, h, coefficient) == n


def test_correlation_units_over_nested_items_and_the_floor():
    assert units_for_correlation_interval(0.5, 0.1, "pearson", items_per_unit=4, design_effect=2.0) == 110  # 219·2/4
    assert units_for_correlation_interval(0.5, 0.9, "pearson") == MIN_CI_UNITS


@pytest.mark.parametrize(("coefficient", "rho", "pairs"), [("spearman", 0.8, 100), ("kendall", 0.5, 60)])
def test_fisher_z_variances_of_spearman_and_kendall_match_simulation(coefficient, rho, pairs):
    # Bonett & Wright 2000: Var(atanh r̂) ≈ c / (n − b) with c from the population value of the coefficient
    # (bivariate normal: Spearman 6/π · asin(ρ/2), Kendall 2/π · asin ρ)
    rng = np.random.default_rng(5)
    cov = [[1.0, rho], [rho, 1.0]]
    estimates = []
    for _ in range(1500):
        x, y = rng.multivariate_normal([0.0, 0.0], cov, size=pairs).T
        statistic = sps.spearmanr(x, y) if coefficient == "spearman" else sps.kendalltau(x, y)
        estimates.append(math.atanh(statistic.statistic))
    population = 6 / math.pi * math.asin(rho / 2) if coefficient == "spearman" else 2 / math.pi * math.asin(rho)
    predicted = {"spearman": math.sqrt((1 + population ** 2 / 2) / (pairs - 3)),
                 "kendall": math.sqrt(0.437 / (pairs - 4))}[coefficient]
    assert np.std(estimates, ddof=1) == pytest.approx(predicted, rel=0.06)
    zeta = math.atanh(population)
    assert correlation_interval_half_width(population, pairs, coefficient) == pytest.approx(
        (math.tanh(zeta + Z95 * predicted) - math.tanh(zeta - Z95 * predicted)) / 2)


# --- invalid inputs -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "message"), [
    (lambda: units_for_interval(0.1, 20, 0.0), "half_width"),
    (lambda: units_for_interval(0.1, 20, -0.1), "half_width"),
    (lambda: units_for_interval(0.1, 1, 0.1), "n_pilot"),
    (lambda: units_for_interval(0.0, 20, 0.1), "se_pilot"),
    (lambda: units_for_interval(0.1, 20, 0.1, level=1.0), "level"),
    (lambda: units_for_interval(0.1, 20, 0.1, level=0.0), "level"),
    (lambda: units_for_correlation_interval(0.5, 0.0), "half_width"),
    (lambda: units_for_correlation_interval(0.5, 1.0), "half_width"),
    (lambda: units_for_correlation_interval(1.0, 0.1), "r must"),
    (lambda: units_for_correlation_interval(0.5, 0.1, level=1.5), "level"),
    (lambda: units_for_correlation_interval(0.5, 0.1, "tau"), "coefficient"),  # type: ignore[arg-type]
    (lambda: correlation_interval_half_width(0.5, 4, "kendall"), "more than 4 pairs"),
    (lambda: design_effect(0.0, 0.1), "se_clustered"),
    (lambda: kish_design_effect(0.5, 0.1), "items_per_unit"),
    (lambda: kish_design_effect(3, -0.8), "design effect"),
    (lambda: units_for_items(10, 0.5), "items_per_unit"),
])
def test_invalid_inputs_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
