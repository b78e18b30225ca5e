"""The sample-size planner against closed forms computed here, statsmodels, the study's own tests, and
simulation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from lib.analysis import power
from lib.analysis.comparisons import holm
from lib.analysis.power import (
    PLAN_COLUMNS,
    Plan,
    _sign_flip_p,
    correlation_interval_half_width,
    design_effect,
    holm_min_p,
    kish_design_effect,
    min_nonzero_units,
    normal_draw,
    pilot_draw,
    plan_table,
    sign_flip_power,
    t_test_power,
    units_for_correlation_interval,
    units_for_interval,
    units_for_items,
    units_for_nonzero,
    units_for_sign_flip,
    units_for_t_test,
)
from lib.analysis.stats import MIN_CI_UNITS, minimum_detectable_effect, sign_flip_test, unit_bootstrap

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
        interval = unit_bootstrap(np.mean, [values.ravel()], np.repeat(np.arange(n), m), "units", seed=seed,
                                  n_resamples=1000)
        half_widths.append((interval.high - interval.low) / 2)
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


# --- a paired difference at given power: the t-test --------------------------------------------------------------

def test_t_test_units_for_d_half_is_34_as_in_cohens_table():
    n = units_for_t_test(0.5, 1.0, alpha=0.05, power=0.8)
    assert n == 34
    assert t_test_power(n - 1, 0.5, 1.0) < 0.8 <= t_test_power(n, 0.5, 1.0)


@pytest.mark.parametrize(("d", "alpha", "power"), [(0.2, 0.05, 0.8), (0.5, 0.05 / 14, 0.9), (1.2, 0.01, 0.8),
                                                   (-0.35, 0.05, 0.95), (3.0, 0.05, 0.5)])
def test_t_test_agrees_with_statsmodels(d, alpha, power):
    from statsmodels.stats.power import TTestPower

    solved = TTestPower().solve_power(effect_size=abs(d), alpha=alpha, power=power)
    n = units_for_t_test(2 * d, 2.0, alpha, power)
    assert n == max(2, math.ceil(solved))
    for near in range(max(2, n - 2), n + 3):
        assert t_test_power(near, 2 * d, 2.0, alpha) == pytest.approx(TTestPower().power(abs(d), near, alpha), abs=1e-9)


def test_t_test_power_is_defined_far_in_the_tail():
    # scipy's nct.cdf (and so statsmodels' power) is NaN here; the power is 1 to 14 decimals
    assert t_test_power(13, 3.0, 1.0) == pytest.approx(1.0, abs=1e-12)
    # at n = 6 statsmodels' power is NaN (0.983 here): a search comparing NaN < 0.99 would stop there
    assert t_test_power(6, 3.0, 1.0, alpha=0.01) < 0.99 <= t_test_power(7, 3.0, 1.0, alpha=0.01)
    assert units_for_t_test(3.0, 1.0, alpha=0.01, power=0.99) == 7


def test_t_test_power_matches_simulated_t_tests_and_the_studys_mde():
    rng = np.random.default_rng(8)
    differences = rng.normal(0.5, 1.0, size=(4000, 34))
    rejected = sps.ttest_1samp(differences, 0.0, axis=1).pvalue < 0.05
    assert rejected.mean() == pytest.approx(t_test_power(34, 0.5, 1.0), abs=4 * math.sqrt(0.8 * 0.2 / 4000))
    # stats.minimum_detectable_effect inverts the same question by the central-t approximation
    assert minimum_detectable_effect(1.0, units_for_t_test(0.5, 1.0), 0.05) == pytest.approx(0.5, rel=0.03)


# --- a paired difference at given power: the exact sign-flip test ------------------------------------------------

@pytest.mark.parametrize(("alpha", "family_size", "units"), [(0.05, 1, 6), (0.05 / 14, 1, 10), (0.05, 14, 10),
                                                             (0.01, 1, 8), (0.05, 3, 7), (2 / 32, 1, 6)])
def test_min_nonzero_units_hand_computed(alpha, family_size, units):
    # 2k/2^n < α: 2/64 = 0.031 < 0.05 ≤ 2/32; 2/1024 = 0.0020 < 0.0036 ≤ 2/512; 2/256 < 0.01 ≤ 2/128;
    # 6/128 = 0.047 < 0.05 ≤ 6/64; at α = 2/32 exactly, 5 units give p = α, which is not below it
    assert min_nonzero_units(alpha, family_size) == units
    assert family_size * 2 / 2 ** units < alpha <= family_size * 2 / 2 ** (units - 1)


def test_holm_min_p_is_what_holm_makes_of_the_best_possible_p():
    assert holm_min_p(10, 14) == pytest.approx(14 * 2 / 1024)
    assert holm_min_p(9, 14) > 0.05 > holm_min_p(10, 14)
    assert holm_min_p(3, 14) == 1.0
    best = 2 / 2 ** 10  # every sign alike; the other 13 tests may give anything
    assert holm([best] + [1.0] * 13)[0] == pytest.approx(holm_min_p(10, 14))
    assert holm([best, 0.2, 0.01, 0.5])[0] == pytest.approx(holm_min_p(10, 4))


def test_units_for_nonzero_with_ties():
    assert units_for_nonzero(6, 0.0) == 6
    assert units_for_nonzero(6, 1 / 3) == 9
    assert units_for_nonzero(10, 0.25) == 14  # ⌈13.3⌉


def test_simulated_p_values_are_the_studys_sign_flip_test():
    # Discrete differences with ties, as the study's are, in tenths whose sums round differently in another
    # order (0.1 + 0.2 − 0.3 ≠ 0): the batch p equals sign_flip_test's exactly (exact enumeration), and is close
    # where the batch draws random flips (above SIMULATED_EXACT_FLIPS; sign_flip_test is exact up to
    # MAX_EXACT_FLIPS and draws beyond). Where the differences sum to 0 but for rounding, p is 1;
    # scipy's tolerance, relative to the rounded mean, can miss null sums equal to it and give a little less.
    rng = np.random.default_rng(2)
    for n in (2, 3, 5, 8, 13):
        draw = pilot_draw([-0.3, -0.1, 0.0, 0.0, 0.1, 0.2, 0.2, 0.3, 0.7])
        differences = draw(rng, (40, n))
        batch = _sign_flip_p(differences, np.random.default_rng(0), 10_000)
        reference = np.array([sign_flip_test(d, seed=0).p for d in differences])
        balanced = np.abs(differences.sum(axis=1)) < 1e-12
        assert batch[~balanced] == pytest.approx(reference[~balanced], abs=1e-12)
        assert (batch[balanced] == 1.0).all() and (reference[balanced] > 0.9).all()
    differences = normal_draw(0.3, 1.0)(rng, (10, 30))
    batch = _sign_flip_p(differences, rng, 10_000)
    assert batch == pytest.approx([sign_flip_test(d, seed=0).p for d in differences], abs=0.03)
    # every difference positive: no random assignment reaches the observed sum, p = 2 · (0 + 1)/(10,000 + 1)
    assert _sign_flip_p(np.ones((3, 25)), rng, 10_000) == pytest.approx([2 / 10_001] * 3, abs=1e-15)
    assert sign_flip_test(np.ones(45), seed=0).p == pytest.approx(2 / 10_001, abs=1e-15)
    assert _sign_flip_p(np.array([[0.1, 0.2, -0.3]]), rng, 10_000)[0] == sign_flip_test([0.1, 0.2, -0.3], 0).p == 1


@pytest.mark.parametrize(("n", "alpha"), [(6, 0.05), (10, 0.05 / 14)])
def test_sign_flip_power_at_the_fewest_units_is_that_of_every_sign_alike(n, alpha):
    # With n = min_nonzero_units(α) only the two all-alike sign patterns give p < α, so for Normal(δ, σ²)
    # differences power = Φ(δ/σ)^n + Φ(−δ/σ)^n.
    closed = sps.norm.cdf(0.5) ** n + sps.norm.cdf(-0.5) ** n
    simulated = sign_flip_power(normal_draw(0.5, 1.0), n, alpha, seed=1, n_simulations=4000)
    assert simulated == pytest.approx(closed, abs=4 * math.sqrt(closed * (1 - closed) / 4000))


def test_sign_flip_power_with_ties_is_binomial_in_the_non_tied_units():
    # Pilot differences 0, 1, 2: a third tie, the rest are positive, so p < 0.05 exactly when at least 6 units
    # are non-tied: power(n) = P(Binomial(n, 2/3) ≥ 6).
    draw = pilot_draw([0.0, 1.0, 2.0])
    for n in (6, 8, 11):
        closed = sps.binom.sf(5, n, 2 / 3)
        simulated = sign_flip_power(draw, n, 0.05, seed=4, n_simulations=4000)
        assert simulated == pytest.approx(closed, abs=4 * math.sqrt(closed * (1 - closed) / 4000) + 1e-9)
    # power 0.85: P(K ≥ 6) = 0.787 at 10, 0.878 at 11; the expected-count rule 6 / (2/3) = 9 falls short
    assert units_for_sign_flip(draw, 0.05, 0.85, seed=4, n_simulations=4000) == 11
    assert units_for_nonzero(6, 1 / 3) == 9


def test_units_for_sign_flip_without_ties_or_spread_is_the_attainability_floor():
    # every drawn difference positive: p = 2/2^n, so the fewest units that can reach α are enough
    assert units_for_sign_flip(pilot_draw([1.0, 2.0, 3.0]), 0.05, 0.99, n_simulations=200) == 6
    assert units_for_sign_flip(pilot_draw([1.0, 2.0, 3.0]), 0.05 / 14, 0.99, n_simulations=200) == 10


def test_sign_flip_power_is_close_to_the_t_tests_for_normal_differences():
    # For normal differences the permutation test is as efficient as the t-test asymptotically (Lehmann 1975):
    # at d = 0.5, the same n within simulation error and a small-sample loss.
    simulated = sign_flip_power(normal_draw(0.5, 1.0), 34, 0.05, seed=6, n_simulations=2000)
    assert simulated == pytest.approx(t_test_power(34, 0.5, 1.0), abs=0.04)
    assert abs(units_for_sign_flip(normal_draw(0.5, 1.0), 0.05, 0.8, seed=6, n_simulations=2000) - 34) <= 3


def test_units_for_sign_flip_says_when_no_size_reaches_the_power():
    with pytest.raises(ValueError, match="do not reach power"):
        units_for_sign_flip(pilot_draw([-1.0, 1.0]), 0.05, 0.8, n_simulations=200, max_units=60)


# --- the plan of a chapter ----------------------------------------------------------------------------------------

def test_plan_text_and_table_are_formatted_from_the_fields():
    enough = Plan("Primary question: does the judge rank passages as the humans do", "query", 43, 43,
                  "κ_w interval ±0.10 from the pilot's SE")
    short = Plan("Does the system beat BM25", "query", 12, 34, "paired t, d = 0.5, power 0.8")
    assert enough.reaches_precision and not short.reaches_precision
    assert enough.decided is None and enough.with_outcome("undetermined").decided is False
    assert short.with_outcome("fails").decided is True
    # reaching the planned precision is not deciding: G-Eval on SummEval at cd3530b had its units and no answer
    assert enough.with_outcome("undetermined").text().endswith(
        "this run has 43, as planned; the result does not decide it (undetermined).")
    assert enough.text() == ("Primary question: does the judge rank passages as the humans do: needs 43 queries "
                             "(basis: κ_w interval ±0.10 from the pilot's SE); this run has 43, as planned.")
    assert short.text() == ("Does the system beat BM25: needs 34 queries (basis: paired t, d = 0.5, power 0.8); "
                            "this run has 12, too few for the plan, so the answer is at best less precise than "
                            "planned.")
    assert Plan("q", "document", 0, 1, "b").text() == ("q: needs 1 document (basis: b); this run has 0, too few for "
                                                        "the plan, so the answer is at best less precise than planned.")
    assert "needs 2 days" in Plan("q", "day", 3, 2, "b").text()
    table = plan_table([enough, short])
    assert tuple(table.columns) == PLAN_COLUMNS
    assert table["reaches_precision"].tolist() == [True, False]
    assert plan_table([short.with_outcome("fails")])["decided"].tolist() == [True]
    assert table["units_needed"].tolist() == [43, 34]
    assert plan_table([]).columns.tolist() == list(PLAN_COLUMNS)


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
    (lambda: units_for_t_test(0.5, 1.0, power=1.0), "power"),
    (lambda: units_for_t_test(0.5, 1.0, power=0.0), "power"),
    (lambda: units_for_t_test(0.5, 1.0, alpha=0.0), "alpha"),
    (lambda: units_for_t_test(0.0, 1.0), "mean_difference"),
    (lambda: units_for_t_test(0.5, 0.0), "sd"),
    (lambda: t_test_power(1, 0.5, 1.0), "at least 2"),
    (lambda: units_for_sign_flip(normal_draw(0.5, 1.0), power=1.2), "power"),
    (lambda: sign_flip_power(normal_draw(0.5, 1.0), 10, alpha=1.0, seed=0), "alpha"),
    (lambda: min_nonzero_units(0.0), "alpha"),
    (lambda: holm_min_p(10, 0), "family_size"),
    (lambda: units_for_nonzero(6, 1.0), "tie_share"),
    (lambda: units_for_nonzero(0, 0.2), "nonzero"),
    (lambda: pilot_draw([0.3]), "at least 2"),
    (lambda: normal_draw(0.5, -1.0), "sd"),
    (lambda: design_effect(0.0, 0.1), "se_clustered"),
    (lambda: kish_design_effect(0.5, 0.1), "items_per_unit"),
    (lambda: kish_design_effect(3, -0.8), "design effect"),
    (lambda: units_for_items(10, 0.5), "items_per_unit"),
    (lambda: Plan("q", "query", 5, 0, "b"), "units_needed"),
    (lambda: Plan("", "query", 5, 3, "b"), "question"),
])
def test_invalid_inputs_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_control_limit_power_and_items_by_hand():
    # Φ(δ√m/σ − z): δ = 2.3σ, z = 3 -> m = 1: Φ(-0.7) = 0.2420; m = 2: Φ(0.2527) = 0.5998
    assert power.control_limit_power(0.023, 0.010, 1) == pytest.approx(0.24196, abs=1e-4)
    assert power.control_limit_power(0.023, 0.010, 2) == pytest.approx(0.59975, abs=1e-4)
    # ((3 + 0.841621) · σ/δ)²: δ = σ -> 14.76 -> 15; δ = 2σ -> 3.69 -> 4
    assert power.items_for_control_limit(0.01, 0.01) == 15 and power.items_for_control_limit(0.02, 0.01) == 4
    assert power.control_limit_power(0.02, 0.01, power.items_for_control_limit(0.02, 0.01)) >= 0.8
    with pytest.raises(ValueError):
        power.control_limit_power(0.02, 0.0, 1)
