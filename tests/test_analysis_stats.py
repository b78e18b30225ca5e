"""κ, α, the bootstrap CIs (by entry and by cluster), the exact paired tests and the MDE checked against
hand-computed cases and scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lib.analysis.stats import (
    average_ranks,
    cohen_kappa,
    kappa_cells,
    kappa_interval,
    kappa_of_tables,
    krippendorff_alpha,
    min_attainable_p,
    minimum_detectable_effect,
    nested_sample,
    resample_counts,
    sign_flip_test,
    sign_test,
    spearman,
    table_bootstrap,
    unit_bootstrap,
    win_loss_tie,
)


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


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_cohen_kappa_equals_statsmodels_to_the_last_bit(weights):
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    rng = np.random.default_rng(3)
    categories = [0, 1, 2, 3]
    for _ in range(200):
        n = int(rng.integers(2, 40))
        a, b = rng.integers(0, 4, n), rng.integers(0, 4, n)
        table = np.zeros((4, 4))
        np.add.at(table, (a, b), 1)
        if np.isclose(np.outer(table.sum(1), table.sum(0)).trace() / n ** 2, 1.0):
            continue
        assert cohen_kappa(a, b, categories, weights) == float(sm_kappa(table, wt=weights, return_results=False))


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_kappa_interval_is_the_unit_bootstrap_of_kappa_on_count_tables(weights):
    rng = np.random.default_rng(5)
    for trial in range(40):
        k, n, groups = int(rng.integers(2, 5)), int(rng.integers(10, 90)), int(rng.integers(8, 25))
        a = rng.integers(0, k, n)
        b = np.clip(a + rng.integers(-1, 2, n), 0, k - 1)
        units = rng.integers(0, groups, n)
        scale = list(range(k))
        fast = kappa_interval(a, b, units, scale, "queries", trial, 300, weights=weights)
        slow = unit_bootstrap(lambda x, y, scale=scale: cohen_kappa(x, y, scale, weights), [a, b], units, "queries",
                              trial, 300)
        np.testing.assert_array_equal([fast.value, fast.low, fast.high, fast.units, fast.se],
                                      [slow.value, slow.low, slow.high, slow.units, slow.se])  # NaN equals NaN


def test_table_bootstrap_of_a_kappa_difference_pairs_the_two_tables_by_resample():
    rng = np.random.default_rng(6)
    h = rng.integers(0, 4, 120)
    x, y = np.clip(h + rng.integers(-1, 2, 120), 0, 3), rng.integers(0, 4, 120)
    units, scale = rng.integers(0, 15, 120), [0, 1, 2, 3]

    def difference(tables):
        return kappa_of_tables(tables[0], "quadratic") - kappa_of_tables(tables[1], "quadratic")

    fast = table_bootstrap([kappa_cells(h, x, scale), kappa_cells(h, y, scale)], 4, difference, units, "queries", 0,
                           500)
    slow = unit_bootstrap(lambda a, b, c: cohen_kappa(a, b, scale, "quadratic") - cohen_kappa(a, c, scale, "quadratic"),
                          [h, x, y], units, "queries", 0, 500)
    assert (fast.value, fast.low, fast.high) == (slow.value, slow.low, slow.high) and fast.low > 0


def test_resample_counts_count_the_draws_of_each_resample():
    counts = resample_counts(7, seed=2, n_resamples=50)
    drawn = np.random.default_rng(2).integers(0, 7, size=(50, 7))
    assert counts.shape == (50, 7) and (counts.sum(axis=1) == 7).all()
    assert all((np.bincount(row, minlength=7) == c).all() for row, c in zip(drawn, counts, strict=True))


def test_spearman_and_average_ranks_equal_scipy_to_the_last_bit():
    from scipy.stats import rankdata, spearmanr

    rng = np.random.default_rng(4)
    for trial in range(600):
        n = int(rng.integers(2, 60))
        x = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n)
        y = x + rng.normal(size=n) if trial % 3 else rng.integers(1, 6, n) / 2
        assert (average_ranks(x) == rankdata(x)).all()
        if len(set(x)) > 1 and len(set(y)) > 1:
            assert spearman(x, y) == spearmanr(x, y).statistic
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3])) and math.isnan(spearman([1, 2, np.nan], [1, 2, 3]))
    assert spearman([1, 2, 3, 4], [10, 20, 40, 30]) == pytest.approx(0.8)


def test_cohen_kappa_refuses_labels_outside_its_categories():
    with pytest.raises(KeyError, match="outside the categories"):
        cohen_kappa([0, 1, 5], [0, 1, 1], [0, 1, 2])
    with pytest.raises(KeyError, match="outside the categories"):
        cohen_kappa([0, 1, 1], [0, -1, 1], [0, 1, 2])


def test_cohen_kappa_reads_integer_grades_float_grades_and_other_labels_alike():
    a, b = [1, 2, 3, 3, 2, 1, 1], [1, 3, 3, 2, 2, 1, 2]
    expected = cohen_kappa(a, b, [1, 2, 3], "quadratic")
    assert cohen_kappa(np.array(a, dtype=float), np.array(b, dtype=float), [1, 2, 3], "quadratic") == expected
    letters = {1: "x", 2: "y", 3: "z"}
    assert cohen_kappa([letters[x] for x in a], [letters[x] for x in b], ["x", "y", "z"], "quadratic") == expected


def test_krippendorff_alpha_nominal_hand_computed():
    # Two raters, four items: (0,0), (1,1), (0,1), (1,1). Coincidence matrix o: o00=2, o01=o10=1, o11=4; n=8
    # D_o = (o01+o10)/n = 2/8; n0=3, n1=5 -> D_e = 2·n0·n1/(n(n-1)) = 30/56
    alpha = krippendorff_alpha([[0, 1, 0, 1], [0, 1, 1, 1]], level="nominal")
    assert alpha == pytest.approx(1 - (2 / 8) / (30 / 56))


def test_krippendorff_alpha_handles_missing_ratings():
    full = krippendorff_alpha([[0, 1, 2, 1], [0, 1, 2, 2]])
    with_gap = krippendorff_alpha([[0, 1, 2, 1, None], [0, 1, 2, 2, 1]])
    assert with_gap == pytest.approx(full)


def mean_interval(values, units=None, **kwargs):
    """unit_bootstrap of the mean over ``units`` (default: every value its own unit), as (low, high), with no
    minimum of units: the hand-computed cases below have few."""
    values = np.asarray(values, dtype=float)
    interval = unit_bootstrap(np.mean, [values], np.arange(len(values)) if units is None else units, "units",
                              min_units=1, **kwargs)
    return interval.low, interval.high


@pytest.mark.parametrize("n", [10, 17, 40, 129, 300])
def test_unit_bootstrap_of_a_mean_at_once_equals_the_resample_loop_to_the_bit(n):
    """np.mean over one float per unit takes the path that averages every resample at once; any other statistic
    takes the loop. Both must draw the same resamples and give the same bits, NaN resamples included."""
    rng = np.random.default_rng(n)
    values = rng.normal(size=n) * 10.0 ** rng.integers(-3, 6, size=n)
    values[rng.random(n) < 0.05] = np.nan if n > 100 else values[0]
    for seed in (0, 7):
        at_once = unit_bootstrap(np.mean, [values], np.arange(n), "units", seed, 500)
        looped = unit_bootstrap(lambda v: float(np.mean(v)), [values], np.arange(n), "units", seed, 500)
        assert at_once == looped or (np.isnan(at_once.value) and np.isnan(looped.value))


def test_unit_bootstrap_hand_computable_binomial_case():
    # Values 0, 0, 0, 1: a resample's mean is K/4 with K ~ Binomial(4, 1/4), so
    # P(K ≤ 0) = 81/256 = 0.316 ≥ 0.025 -> the 2.5% quantile is 0;
    # P(K ≤ 2) = 243/256 = 0.949 < 0.975 ≤ P(K ≤ 3) = 255/256 -> the 97.5% quantile is 3/4.
    assert mean_interval([0, 0, 0, 1], seed=0, n_resamples=10_000) == (0.0, 0.75)
    # 50% interval: P(K ≤ 0) = 0.316 ≥ 0.25 -> 0; P(K ≤ 1) = 189/256 = 0.738 < 0.75 ≤ P(K ≤ 2) -> 2/4
    assert mean_interval([0, 0, 0, 1], seed=0, n_resamples=10_000, level=0.5) == (0.0, 0.5)


def test_unit_bootstrap_matches_the_normal_interval_and_scipy_on_a_large_sample():
    from scipy import stats as sps

    values = np.random.default_rng(7).normal(loc=3.0, scale=2.0, size=400)
    low, high = mean_interval(values, seed=1, n_resamples=20_000)
    # Known interval: x̄ ± t_{0.975, n−1} · s / √n; the percentile bootstrap agrees to within a few % of its width.
    half = sps.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    assert low == pytest.approx(values.mean() - half, abs=0.05 * half)
    assert high == pytest.approx(values.mean() + half, abs=0.05 * half)
    # scipy's BCa interval on other resamples agrees as well (both estimate the same interval)
    bca = sps.bootstrap((values,), np.mean, n_resamples=20_000, method="BCa", rng=np.random.default_rng(2))
    assert (low, high) == pytest.approx((bca.confidence_interval.low, bca.confidence_interval.high), abs=0.05 * half)


def test_unit_bootstrap_constant_seeded_and_level():
    assert mean_interval([1, 1, 1], seed=0) == (1.0, 1.0)
    assert all(math.isnan(x) for x in mean_interval([], seed=0))
    values = [0, 1, 1, 0, 1, 1, 1, 0]
    assert mean_interval(values, seed=3) == mean_interval(values, seed=3)
    narrow, wide = mean_interval(values, seed=3, level=0.5), mean_interval(values, seed=3, level=0.95)
    assert wide[0] <= narrow[0] <= np.mean(values) <= narrow[1] <= wide[1]


def test_unit_bootstrap_two_units_by_hand():
    # Units A = {1, 1} and B = {0}. A resample draws two units with replacement: AA (p = 1/4) has mean 1,
    # AB or BA (p = 1/2) mean (1 + 1 + 0)/3 = 2/3, BB (p = 1/4) mean 0. The 2.5% and 97.5% quantiles are the
    # extremes 0 and 1; the 30% and 70% quantiles both fall inside the middle mass, at 2/3.
    values, units = [1.0, 1.0, 0.0], ["A", "A", "B"]
    assert mean_interval(values, units, seed=0, n_resamples=20_000) == (0.0, 1.0)
    middle = mean_interval(values, units, seed=0, n_resamples=20_000, level=0.4)
    assert middle == pytest.approx((2 / 3, 2 / 3))


def test_unit_bootstrap_resamples_units_not_items():
    # Two units of 50 items each, within-unit constant: resampling items would give a narrow interval around 0.5;
    # resampling units can only give means 0, 0.5 or 1.
    values = [0.0] * 50 + [1.0] * 50
    units = ["a"] * 50 + ["b"] * 50
    assert mean_interval(values, units, seed=1) == (0.0, 1.0)
    low, high = mean_interval(values, seed=1)
    assert 0.35 < low < 0.5 < high < 0.65


def test_unit_bootstrap_degenerate_cases():
    assert all(math.isnan(x) for x in mean_interval([0.1, 0.3], ["only", "only"], seed=0))  # one unit
    assert mean_interval([0.5, 0.5, 0.5], ["a", "b", "c"], seed=0) == (0.5, 0.5)
    assert mean_interval([0, 1, 1, 0], list("aabb"), seed=3) == mean_interval([0, 1, 1, 0], list("aabb"), seed=3)


def test_win_loss_tie_counts():
    assert win_loss_tie([0.2, -0.1, 0.0, 0.0, 1.0]) == (2, 1, 2)
    assert win_loss_tie([]) == (0, 0, 0)


def test_sign_test_exact_by_hand():
    # 6 wins, 1 loss: P(X ≤ 1) for X ~ Bin(7, ½) = (1 + 7)/128; two-sided p = 16/128
    assert sign_test(6, 1) == pytest.approx(16 / 128)
    assert sign_test(6, 1, "greater") == pytest.approx(8 / 128)  # the declared direction: more wins
    assert sign_test(6, 1, "less") == pytest.approx(127 / 128)
    # 3 wins, 1 loss: (1 + 4)/16 on each side -> 10/16
    assert sign_test(3, 1) == pytest.approx(10 / 16)
    assert sign_test(2, 1) == pytest.approx(1.0) and sign_test(0, 0) == 1.0


def test_sign_flip_test_exact_by_hand():
    # Three ±1 differences (2 wins, 1 loss): sums over the 8 sign assignments are 3, 1, 1, 1, −1, −1, −1, −3;
    # observed 1: P(S ≥ 1) = 4/8, P(S ≤ 1) = 7/8, two-sided 2·min = 1 — where t and Wilcoxon give ≈ 0.58.
    result = sign_flip_test([1, -1, 1], seed=0)
    assert (result.p, result.exact, result.nonzero) == (pytest.approx(1.0), True, 3)
    assert sign_flip_test([1, -1, 1], seed=0, alternative="greater").p == pytest.approx(4 / 8)
    assert sign_flip_test([1, -1, 1], seed=0, alternative="less").p == pytest.approx(7 / 8)
    # |d| = 3, 1, 1, 2 (sum 7), observed signs +, +, −, +: S = 5. S ≥ 5 when the negative set weighs ≤ 1:
    # ∅, {first 1}, {second 1} -> 3/16; two-sided 6/16. The sign test on 3 wins, 1 loss gives 10/16.
    assert sign_flip_test([3, 1, -1, 2], seed=0).p == pytest.approx(6 / 16)
    # All four positive: only the observed assignment is as large, 1/16 each side -> 2/16.
    assert sign_flip_test([0.2, 0.3, 0.5, 0.1], seed=0).p == pytest.approx(2 / 16)
    assert sign_flip_test([3, 1, -1, 2], seed=0).method == "exact sign-flip, two-sided, 4 non-zero"


def _brute_force_flip_p(d, alternative):
    """Every one of the 2^k sign assignments summed one by one (in chunks), the reference for the enumeration."""
    sizes = np.abs(np.asarray(d, dtype=float))
    k, observed = len(sizes), float(np.sum(d))
    greater = less = 0
    tolerance = 100 * np.finfo(float).eps * sizes.sum()
    for start in range(0, 2 ** k, 2 ** 18):
        codes = np.arange(start, min(start + 2 ** 18, 2 ** k))
        signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(k)) & 1)
        sums = signs @ sizes
        greater += int((sums >= observed - tolerance).sum())
        less += int((sums <= observed + tolerance).sum())
    one = {"greater": greater / 2 ** k, "less": less / 2 ** k}
    return min(1.0, 2 * min(one.values())) if alternative == "two-sided" else one[alternative]


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_test_is_exact_at_23_differences_against_brute_force(alternative):
    # chapter 04's primary at cd3530b had 23 non-zero differences: beyond the old limit of 20, so its p was
    # simulated; now it is enumerated, and equals the sum over all 8,388,608 assignments
    rng = np.random.default_rng(4)
    d = np.round(rng.normal(-0.002, 0.01, 23), 4)
    d[d == 0] = 0.0001
    result = sign_flip_test(d, seed=0, alternative=alternative)
    assert result.exact and result.nonzero == 23 and result.draws == 0
    assert result.p == pytest.approx(_brute_force_flip_p(d, alternative), abs=1e-12)


def test_sign_flip_test_ignores_zeros_and_degenerate_cases():
    assert sign_flip_test([3, 1, -1, 2, 0, 0, 0], seed=0).p == pytest.approx(6 / 16)
    assert sign_flip_test([0, 0, 0], seed=0).p == 1.0
    assert sign_flip_test([0.4, 0], seed=0).p == 1.0  # one non-zero difference: both flips as extreme


def test_sign_flip_test_is_labelled_monte_carlo_beyond_the_exact_limit():
    d = [0.1 * (i + 1) for i in range(6)]  # all positive: exact p = 2/64
    result = sign_flip_test(d, seed=0, n_resamples=20_000, max_exact=4)
    assert not result.exact and result.p == pytest.approx(2 / 64, abs=0.01)
    assert result.draws == 20_000 and result.mc_se == pytest.approx(np.sqrt(result.p * (1 - result.p) / 20_000))
    assert result.method.startswith("Monte Carlo sign-flip, two-sided, 20,000 draws (MC SE ")
    assert sign_flip_test(d, seed=0, n_resamples=20_000, max_exact=4) == result


def test_min_attainable_p():
    assert min_attainable_p(0) == 1.0 and min_attainable_p(1) == 1.0
    assert min_attainable_p(5) == pytest.approx(1 / 16) and min_attainable_p(6) == pytest.approx(1 / 32)
    assert min_attainable_p(5, "greater") == pytest.approx(1 / 32)
    assert sign_flip_test([1, 2, 3, 4, 5], seed=0).p == pytest.approx(min_attainable_p(5))
    assert sign_flip_test([1, 2, 3, 4, 5], seed=0, alternative="greater").p == pytest.approx(
        min_attainable_p(5, "greater"))


def test_minimum_detectable_effect_by_hand():
    # n = 16, df = 15: t_0.975 = 2.131450, t_0.8 = 0.866245; MDE = (2.131450 + 0.866245) · 1 / 4 = 0.749424
    assert minimum_detectable_effect(1.0, 16, alpha=0.05, power=0.8) == pytest.approx(0.749424, abs=1e-5)
    # halving α tightens: t_0.9875(15) = 2.489880 -> (2.489880 + 0.866245) · 0.2 / 4 = 0.167806
    assert minimum_detectable_effect(0.2, 16, alpha=0.025, power=0.8) == pytest.approx(0.167806, abs=1e-5)
    assert math.isnan(minimum_detectable_effect(0.0, 16, 0.05)) and math.isnan(minimum_detectable_effect(1.0, 1, 0.05))


def test_correlation_ci_point_value_by_hand_and_degenerate_resamples_dropped():
    from lib.analysis.stats import correlation_ci
    # pairs (1,2),(2,1),(3,4),(4,3),(5,6),(6,5): 15 pairs, 3 discordant -> τ = (12 - 3) / 15 = 0.6
    out = correlation_ci([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5], "kendall", seed=0, n_resamples=500)
    assert out["r"] == pytest.approx(0.6) and np.isnan(out["ci_low"]) and out["ci_over"] == "6 pairs"  # no CI
    twice = correlation_ci([1, 2, 3, 4, 5, 6] * 2, [2, 1, 4, 3, 6, 5] * 2, "kendall", seed=0, n_resamples=500)
    assert twice["ci_low"] <= twice["r"] <= twice["ci_high"] <= 1.0 and twice["ci_over"] == "12 pairs"
    # the 12 pairs as 6 units of two copies: the units are resampled, so again fewer than 10 and no interval
    paired_units = correlation_ci([1, 2, 3, 4, 5, 6] * 2, [2, 1, 4, 3, 6, 5] * 2, "kendall", seed=0,
                                  units=list(range(6)) * 2, unit="questions")
    assert paired_units["units"] == 6 and np.isnan(paired_units["ci_high"])
    # x is 2 in 2 of 10 pairs: about 1 resample in 10 draws no 2 (τ undefined); those are dropped, the rest count
    tied = correlation_ci([1, 1, 1, 1, 2] * 2, [1, 2, 3, 4, 5] * 2, "kendall", seed=0, n_resamples=500)
    assert np.isfinite(tied["ci_low"]) and tied["ci_low"] <= tied["r"] <= tied["ci_high"]
    assert math.isnan(correlation_ci([1, 1, 1], [1, 2, 3], "spearman", seed=0)["r"])


def test_interval_text_is_the_one_way_an_interval_is_written():
    from lib.analysis.text import interval_text, number_text

    assert interval_text(0.1, 0.684) == "95% CI 0.10 to 0.68"
    assert interval_text(-0.0001, 0.2, digits=3, signed=True, prefix="") == "+0.000 to +0.200"  # no "-0.000"
    assert interval_text(-0.5, float("nan")) == "no interval"
    assert interval_text(float("nan"), 1.0, undefined="undefined") == "undefined"
    assert number_text(-0.004) == "0.00" and number_text(-0.006) == "-0.01"


def test_unit_bootstrap_of_a_mean_is_the_cluster_bootstrap_of_the_mean():
    rng = np.random.default_rng(3)
    units: np.ndarray = np.repeat([f"q{g}" for g in range(12)], rng.integers(1, 6, size=12))
    values = rng.normal(size=len(units)) + (np.unique(units, return_inverse=True)[1] % 3)
    interval = unit_bootstrap(np.mean, [values], units, "queries", seed=5, n_resamples=4000)
    assert interval.value == pytest.approx(values.mean())
    # independent reference: the same draws, each resample's mean as Σ drawn unit sums / Σ drawn unit sizes
    names, index = np.unique(units, return_inverse=True)
    sums, sizes = np.bincount(index, weights=values), np.bincount(index)
    drawn = np.random.default_rng(5).integers(0, len(names), size=(4000, len(names)))
    means = sums[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)
    assert (interval.low, interval.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))
    assert interval.units == 12 and interval.ci_over == "12 queries" and interval.undefined_share == 0


def test_unit_bootstrap_is_wider_than_the_item_bootstrap_when_items_of_a_unit_agree():
    """Items of one query share most of their value (intra-class correlation near 1): resampling the 60 items
    as if independent understates the spread of the mean over 12 queries by about √5."""
    rng = np.random.default_rng(0)
    unit_effect = rng.normal(size=12)
    units: np.ndarray = np.repeat(np.arange(12), 5)
    values = unit_effect[units] + rng.normal(scale=0.1, size=60)
    by_unit = unit_bootstrap(np.mean, [values], units, "queries", seed=1)
    by_item = unit_bootstrap(np.mean, [values], np.arange(60), "passages", seed=1)
    ratio = (by_unit.high - by_unit.low) / (by_item.high - by_item.low)
    assert 1.7 < ratio < 2.9  # √5 ≈ 2.24 up to bootstrap noise


def test_unit_bootstrap_two_stage_adds_the_within_unit_spread():
    rng = np.random.default_rng(2)
    units: np.ndarray = np.repeat(np.arange(15), 4)
    values = rng.normal(size=60)  # no unit effect: all spread is within units
    one = unit_bootstrap(np.mean, [values], units, "documents", seed=4)
    two = unit_bootstrap(np.mean, [values], units, "documents", seed=4, two_stage=True)
    assert (two.high - two.low) > 1.2 * (one.high - one.low)


def test_unit_bootstrap_below_the_minimum_units_gives_no_interval_and_says_why():
    values = np.arange(24.0)
    interval = unit_bootstrap(np.mean, [values], np.repeat(np.arange(6), 4), "queries", seed=0)
    assert np.isnan(interval.low) and np.isnan(interval.high) and interval.units == 6
    assert interval.ci_over == "6 queries"
    assert interval.text() == "11.50 (6 queries, fewer than 10 queries)"


def test_unit_bootstrap_drops_undefined_resamples_and_reports_their_share():
    # κ-like statistic undefined when the resample holds only unit 0's items (both raters constant there)
    a = np.array([0, 0, 1, 2, 1, 2, 0, 1, 2, 1, 0, 2] * 2)
    b = np.array([0, 0, 1, 2, 2, 2, 0, 1, 1, 1, 0, 2] * 2)
    units: np.ndarray = np.repeat(np.arange(12), 2)

    def kappa(x, y):
        return cohen_kappa(x, y, [0, 1, 2]) if len(set(x)) > 1 else float("nan")

    interval = unit_bootstrap(kappa, [a, b], units, "queries", seed=0, n_resamples=500)
    assert interval.value == pytest.approx(cohen_kappa(a, b, [0, 1, 2]))
    assert 0 <= interval.undefined_share < 0.01 and interval.low <= interval.value <= interval.high
    assert interval.text().endswith(", 12 queries)")


def test_unit_bootstrap_refuses_columns_and_units_of_different_lengths():
    with pytest.raises(ValueError, match="unit labels"):
        unit_bootstrap(np.mean, [np.arange(5)], np.arange(4), "queries", seed=0)


def test_a_nested_sample_grows_by_adding_units_and_keeps_the_units_already_judged():
    ids = [f"doc{i}" for i in range(40)]
    small, large = nested_sample(ids, 4, seed=7), nested_sample(ids, 10, seed=7)
    assert large[:4] == small and len(set(large)) == 10
    assert nested_sample(reversed(ids), 10, seed=7) == large  # the order of the pool does not matter
    # a larger pool keeps the relative order of the shared ids
    wider = nested_sample(ids + [f"new{i}" for i in range(40)], 80, seed=7)
    assert [unit for unit in wider if unit in set(ids)] == nested_sample(ids, 40, seed=7)
    judged = ["doc3", "doc30"]
    assert nested_sample(ids, 5, seed=7, first=judged)[:2] == judged
    assert nested_sample(ids, 4, seed=8) != small
    with pytest.raises(ValueError, match="not among the ids"):
        nested_sample(ids, 5, seed=7, first=["elsewhere"])
    with pytest.raises(ValueError, match="cannot draw 41"):
        nested_sample(ids, 41, seed=7)


def test_count_text_pluralises_unless_one():
    from lib.analysis.text import count_text

    assert [count_text(1, "query"), count_text(43, "query"), count_text(2, "day"), count_text(3, "judged item")] == \
        ["1 query", "43 queries", "2 days", "3 judged items"]
