"""Statistics shared by the chapters: Cohen's κ, Spearman's ρ, Krippendorff's α, the bootstrap CI of a mean (by
entry and by cluster), the interval of any statistic over its independent units (:func:`unit_bootstrap`, and
:func:`table_bootstrap` for statistics of contingency tables), samples that grow by nesting
(:func:`nested_sample`), exact paired tests for few, discrete differences (sign test, sign-flip permutation test,
win/loss/tie counts) and the minimum detectable effect. κ, ρ and τ-b are numpy kernels that give statsmodels' and
scipy's bits (a bootstrap calls them thousands of times); the rest are thin wrappers over krippendorff and scipy.
All are checked against hand-computed cases and those libraries in tests/test_analysis_stats.py."""
from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from lib.analysis.text import interval_text, number_text


def _category_index(values: ArrayLike, categories: Sequence[Hashable], name: str) -> np.ndarray:
    """The position of each label of ``values`` among ``categories``; a label outside them is an error."""
    labels = np.asarray(categories)
    k = len(labels)
    column = np.asarray(values).reshape(-1)
    # consecutive integer categories (the grade scales) index by subtraction; any others by comparison
    if labels.dtype.kind in "iu" and np.array_equal(labels, labels[0] + np.arange(k)) and column.dtype.kind in "iu":
        index = column - labels[0]
        found = (index >= 0) & (index < k)
    else:
        match = column[:, None] == labels[None, :]
        index, found = match.argmax(axis=1), match.any(axis=1)
    if not found.all():
        raise KeyError(f"{name} holds labels outside the categories {list(categories)}")
    return index


def kappa_cells(a: ArrayLike, b: ArrayLike, categories: Sequence[Hashable]) -> np.ndarray:
    """The cell of each item in the k×k contingency table of ``a`` (rows) by ``b`` (columns) over ``categories``,
    flattened: position in ``categories`` of a × k + that of b."""
    first, second = _category_index(a, categories, "a"), _category_index(b, categories, "b")
    if len(first) != len(second):
        raise ValueError(f"label sequences of lengths {len(first)} and {len(second)}")
    return first * len(categories) + second


def kappa_of_tables(tables: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's κ of each k×k contingency table of counts in ``tables`` (shape (..., k, k)), NaN where both raters
    use one identical category: κ = (p_o − p_e) / (1 − p_e) (Cohen 1960), or with ``weights="quadratic"``
    κ_w = 1 − Σ w_ij o_ij / Σ w_ij e_ij with w_ij = (i−j)²/(k−1)² (Cohen 1968), o and e the observed and expected
    shares. It repeats statsmodels' ``cohens_kappa`` operation for operation on each table, so one table gives the
    same bits (tests/test_analysis_stats.py), and a whole bootstrap's tables are one call."""
    tables = np.asarray(tables, dtype=float)
    k = tables.shape[-1]
    nobs = tables.sum(axis=(-2, -1))
    rows, columns = tables.sum(axis=-1), tables.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_trace = (rows * columns).sum(axis=-1) / nobs ** 2
        freq_row, freq_col = rows / nobs[..., None], columns / nobs[..., None]
        prob_exp = freq_col[..., None, :] * freq_row[..., :, None]
        if weights is None:
            agree_exp = np.diagonal(prob_exp, axis1=-2, axis2=-1).sum(axis=-1)
            kappa = (np.diagonal(tables, axis1=-2, axis2=-1).sum(axis=-1) / nobs - agree_exp) / (1 - agree_exp)
        elif weights == "quadratic":
            steps: np.ndarray = np.arange(k, dtype=float)
            disagreement = (steps[:, None] - steps) ** 2 / (steps[-1] - steps[0]) ** 2
            flat = (*tables.shape[:-2], k * k)
            kappa = 1 - ((disagreement * tables).reshape(flat).sum(axis=-1) / nobs
                         / (disagreement * prob_exp).reshape(flat).sum(axis=-1))
        else:
            raise ValueError(f"weights {weights!r}: None or 'quadratic'")
    return np.where(np.isclose(expected_trace, 1.0), np.nan, kappa)


def cohen_kappa(a: ArrayLike, b: ArrayLike, categories: Sequence[Hashable], weights: str | None = None) -> float:
    """Cohen's κ between two label sequences over fixed ``categories`` (:func:`kappa_of_tables` of their
    contingency table, counted with one ``bincount``; ``weights="quadratic"``: weighted κ). A bootstrap calls this
    thousands of times, and statsmodels' per-call overhead was most of a chapter's statistics time; a bootstrap
    of κ over units is :func:`kappa_interval`. Returns NaN when both raters use a single identical category."""
    k = len(categories)
    table = np.bincount(kappa_cells(a, b, categories), minlength=k * k).reshape(k, k)
    return float(kappa_of_tables(table, weights))


def average_ranks(values: ArrayLike) -> np.ndarray:
    """Ranks 1..n of ``values``, ties given the mean of the ranks they span (``scipy.stats.rankdata``'s
    "average"): one stable sort, the runs of equal values found on the sorted array."""
    x = np.asarray(values)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]] if len(x) else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(x)]
    ranks = np.empty(len(x))
    ranks[order] = np.repeat((starts + 1 + ends) / 2, ends - starts)
    return ranks


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's ρ (Spearman 1904): Pearson's r of the :func:`average_ranks` of x and y, with numpy's
    ``corrcoef`` on the two rank columns as ``scipy.stats.spearmanr`` computes it, so the value has the same bits
    (tests/test_analysis_stats.py) without scipy's per-call overhead (bootstraps call it thousands of times).
    NaN with fewer than two pairs, a constant side or a NaN."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"{len(a)} values against {len(b)}")
    if len(a) < 2 or np.isnan(a).any() or np.isnan(b).any() or (a == a[0]).all() or (b == b[0]).all():
        return float("nan")
    return float(np.corrcoef(np.column_stack((average_ranks(a), average_ranks(b))), rowvar=False)[1, 0])


def kendall_tau_b(x: np.ndarray, y: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Kendall's τ-b (Kendall 1945) of every row of two matrices, over the columns ``present`` in that row (the other
    columns are padding and may hold anything; e.g. pools × slots of candidates, or resamples × systems):

        τ_b = (C − D) / √(n₀ − n_x) / √(n₀ − n_y),

    with C − D = Σ_{i<j} sgn(x_i − x_j)·sgn(y_i − y_j) over the n₀ = n(n−1)/2 pairs of present slots, n_x and n_y
    the pairs tied in x and in y (so n₀ − n_x counts the pairs x orders). Ties shrink the denominator, not only the
    numerator as in τ-a = (C − D) / n₀. This is ``scipy.stats.kendalltau``'s default (variant 'b'), computed as it
    does: the same integers, divided in the same order, clipped to [−1, 1]; NaN for a row whose x or y orders no pair
    (fewer than 2 present slots, or all tied) or holds a NaN among its present slots (scipy's nan_policy
    'propagate'). Comparisons rather than differences, so −∞ ties −∞ as in scipy."""
    x, y, present = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(present, dtype=bool)
    pairs = present[:, :, None] & present[:, None, :] & np.triu(np.ones((x.shape[1],) * 2, dtype=bool), k=1)

    def signs(v: np.ndarray) -> np.ndarray:
        return (v[:, :, None] > v[:, None, :]).astype(np.int64) - (v[:, :, None] < v[:, None, :])

    sx, sy = signs(x), signs(y)
    con_minus_dis = (sx * sy * pairs).sum(axis=(1, 2))
    ordered_x, ordered_y = ((sx != 0) & pairs).sum(axis=(1, 2)), ((sy != 0) & pairs).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = con_minus_dis / np.sqrt(ordered_x.astype(float)) / np.sqrt(ordered_y.astype(float))
    undefined = (ordered_x == 0) | (ordered_y == 0) | ((np.isnan(x) | np.isnan(y)) & present).any(axis=1)
    return np.where(undefined, np.nan, np.clip(tau, -1.0, 1.0))


MeasurementLevel = Literal["nominal", "ordinal", "interval", "ratio"]


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]], level: MeasurementLevel = "ordinal") -> float:
    """Krippendorff's α (Krippendorff 2004) for raters × items, missing ratings as None/NaN:
    α = 1 − D_o / D_e with the distance of ``level`` (nominal, ordinal, interval, ratio);
    computed by the ``krippendorff`` package."""
    import krippendorff

    data = np.array([[np.nan if r is None else r for r in row] for row in ratings], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def win_loss_tie(differences: ArrayLike) -> tuple[int, int, int]:
    """Counts of positive (win), negative (loss) and zero (tie) paired differences."""
    d = np.asarray(differences, dtype=float)
    return int((d > 0).sum()), int((d < 0).sum()), int((d == 0).sum())


Alternative = Literal["two-sided", "greater", "less"]


def sign_test(wins: int, losses: int, alternative: Alternative = "two-sided") -> float:
    """Exact sign test (Dixon & Mood 1946): under H0 a non-tied difference is positive with probability ½, so
    wins ~ Binomial(wins + losses, ½); p from scipy.stats.binomtest (two-sided: the outcomes no more probable
    than the observed one; ``greater``: P(W ≥ wins), the declared direction being more wins; ``less``:
    P(W ≤ wins)). Ties are dropped; no non-tied difference gives p = 1."""
    from scipy.stats import binomtest

    return float(binomtest(wins, wins + losses, 0.5, alternative=alternative).pvalue) if wins + losses else 1.0


MAX_EXACT_FLIPS = 40  # sign-flip tests enumerate all 2^k flips (meet in the middle) up to k = 40 non-zero differences


def signed_sums(sizes: np.ndarray) -> np.ndarray:
    """Σ ±size_i under every assignment of signs, per row of ``sizes`` (rows × k): an array (rows, 2^k)."""
    sums = np.zeros((len(sizes), 1))
    for size in sizes.T:
        sums = np.concatenate([sums + size[:, None], sums - size[:, None]], axis=1)
    return sums


def exact_flip_counts(sizes: np.ndarray, observed: np.ndarray,
                      tolerance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``sizes`` (rows × k absolute differences), how many of the 2^k sign assignments give
    Σ ±size_i ≥ observed − tolerance (``greater``) and ≤ observed + tolerance (``less``). Meet in the middle
    (Horowitz & Sahni 1974): a sum is a + b with a over the first half of the columns and b over the second
    (sorted), so a row costs 2^⌈k/2⌉ binary searches instead of 2^k sums; k = 40 takes well under a second."""
    half = sizes.shape[1] // 2
    first, second = signed_sums(sizes[:, :half]), np.sort(signed_sums(sizes[:, half:]), axis=1)
    greater: np.ndarray = np.empty(len(sizes), dtype=np.int64)
    less: np.ndarray = np.empty(len(sizes), dtype=np.int64)
    for row, (a, b) in enumerate(zip(first, second, strict=True)):
        greater[row] = (len(b) - np.searchsorted(b, observed[row] - tolerance[row] - a, side="left")).sum()
        less[row] = np.searchsorted(b, observed[row] + tolerance[row] - a, side="right").sum()
    return greater, less


def flip_tolerance(sizes: np.ndarray) -> np.ndarray:
    """Sums of ±|d_i| equal up to rounding count as equal: within 100·eps·Σ|d_i| per row (scipy's permutation
    test uses 100·eps·|observed|, which a sum computed in another order can miss)."""
    return 100 * np.finfo(float).eps * sizes.sum(axis=1)


@dataclass(frozen=True)
class FlipTest:
    """The result of :func:`sign_flip_test`: ``p`` for ``alternative`` over ``nonzero`` non-zero differences;
    ``exact`` when all 2^nonzero sign assignments were enumerated, else ``draws`` seeded random assignments
    with ``mc_se`` = √(p(1 − p)/draws), the Monte Carlo standard error of p."""

    p: float
    alternative: Alternative
    nonzero: int
    exact: bool
    draws: int = 0
    mc_se: float = 0.0

    @property
    def method(self) -> str:
        """How p was computed, for a table's ``test`` column: "exact sign-flip, one-sided (greater), 23 non-zero"
        or "Monte Carlo sign-flip, two-sided, 10,000 draws (MC SE 0.004)"."""
        side = "two-sided" if self.alternative == "two-sided" else f"one-sided ({self.alternative})"
        if self.exact:
            return f"exact sign-flip, {side}, {self.nonzero} non-zero"
        return f"Monte Carlo sign-flip, {side}, {self.draws:,} draws (MC SE {self.mc_se:.3f})"


def sign_flip_test(differences: ArrayLike, seed: int, n_resamples: int = 10_000,
                   max_exact: int = MAX_EXACT_FLIPS, alternative: Alternative = "two-sided") -> FlipTest:
    """Paired permutation (sign-flip) test of the mean difference (Fisher 1935, §21; Pitman 1937): under H0 each
    paired difference d_i is symmetric about 0, so every assignment of signs to |d_i| is equally likely. With
    T = Σ d_i (it orders the assignments as the mean does), ``greater``: p = share of assignments with T* ≥ T
    (the declared direction is a positive difference); ``less``: T* ≤ T; ``two-sided``: 2·min of the two,
    capped at 1 (scipy.stats.permutation_test's convention).
    Zero differences are left out: flipping them changes nothing, so p is the same with or without them.
    Exact enumeration (:func:`exact_flip_counts`) when the k non-zero differences number at most ``max_exact``;
    otherwise ``n_resamples`` seeded random assignments with p = (count + 1)/(n_resamples + 1), labelled Monte
    Carlo with its standard error. The smallest attainable p is :func:`min_attainable_p`; with k ≤ 1 and a
    two-sided alternative, p = 1."""
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    k = len(d)
    if k == 0:
        return FlipTest(1.0, alternative, 0, True)
    sizes, observed = np.abs(d)[None, :], np.array([d.sum()])
    tolerance = flip_tolerance(sizes)
    if k <= max_exact:
        greater, less = (int(c[0]) for c in exact_flip_counts(sizes, observed, tolerance))
        total, adjustment, draws = 2 ** k, 0, 0
    else:
        rng = np.random.default_rng(seed)
        greater = less = 0
        for start in range(0, n_resamples, 8192):  # chunks bound the memory of the draws
            signs = rng.choice([-1.0, 1.0], size=(min(8192, n_resamples - start), k))
            null = signs @ sizes[0]
            greater += int((null >= observed[0] - tolerance[0]).sum())
            less += int((null <= observed[0] + tolerance[0]).sum())
        total, adjustment, draws = n_resamples, 1, n_resamples
    one_sided = {"greater": (greater + adjustment) / (total + adjustment),
                 "less": (less + adjustment) / (total + adjustment)}
    p = (min(1.0, 2 * min(one_sided.values())) if alternative == "two-sided" else one_sided[alternative])
    mc_se = float(np.sqrt(p * (1 - p) / draws)) if draws else 0.0
    return FlipTest(float(p), alternative, k, draws == 0, draws, mc_se)


def min_attainable_p(nonzero: int, alternative: Alternative = "two-sided") -> float:
    """Smallest p an exact sign-flip or sign test can give with ``nonzero`` non-tied differences: 2^−k one-sided
    (all signs the declared way), 2 · 2^−k two-sided, capped at 1. A comparison with min_attainable_p ≥ its
    level cannot be significant whatever the differences are."""
    factor = 2.0 if alternative == "two-sided" else 1.0
    return float(min(1.0, factor / 2.0 ** nonzero))


def minimum_detectable_effect(sd: float, n: int, alpha: float, power: float = 0.8) -> float:
    """Smallest true mean paired difference a two-sided level-α test on n paired differences with standard
    deviation ``sd`` detects with probability ``power`` (Bloom 1995; Cohen 1988, ch. 2):
    MDE = (t_{1−α/2, n−1} + t_{power, n−1}) · sd / √n.
    A normal-theory approximation: the exact sign-flip test used for the decisions is no more powerful on
    discrete, tied differences, so the MDE is optimistic (the smallest effect this study could hope to detect).
    NaN when n < 2 or the differences have no spread (sd = 0 or not finite: no variance to plan with)."""
    from scipy.stats import t

    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return float("nan")
    return float((t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * sd / np.sqrt(n))


def correlation_ci(x: ArrayLike, y: ArrayLike, method: str, seed: int, n_resamples: int = 2000,
                   level: float = 0.95, units: ArrayLike | None = None, unit: str = "pairs") -> dict[str, Any]:
    """Rank correlation of paired values with a percentile bootstrap CI over the independent ``units`` the pairs
    belong to (``units[i]``: the question of answer i, the user of session i; default: every pair its own unit),
    pairs kept together (:func:`unit_bootstrap`, seeded; none over fewer than ``MIN_CI_UNITS`` units).
    ``method``: ``spearman`` (Spearman's ρ) or ``kendall`` (Kendall's τ-b, which corrects for ties). Resamples
    where the coefficient is undefined (a constant side) are dropped. Keys: n (pairs), r, p (scipy's test of
    r = 0, which treats the pairs as independent), ci_low, ci_high (NaN when n < 3, a side is constant or there
    are too few units), units, ci_over ("12 questions"), undefined_share (of the resamples, when there is an
    interval)."""
    from scipy.stats import kendalltau, spearmanr

    coefficient = {"spearman": spearmanr, "kendall": kendalltau}[method]
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = np.arange(len(x)) if units is None else np.asarray(units)
    out: dict[str, Any] = {"n": len(x), "r": float("nan"), "p": float("nan"), "ci_low": float("nan"),
                           "ci_high": float("nan"), "units": len(set(labels.tolist())),
                           "ci_over": f"{len(set(labels.tolist()))} {unit}"}
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return out
    result = coefficient(x, y)
    out["r"], out["p"] = float(result.statistic), float(result.pvalue)

    def statistic(a: np.ndarray, b: np.ndarray) -> float:
        if method == "spearman":
            return spearman(a, b)
        return float(coefficient(a, b).statistic) if len(set(a)) > 1 and len(set(b)) > 1 else float("nan")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns of the undefined resamples, dropped by unit_bootstrap
        interval = unit_bootstrap(statistic, [x, y], labels, unit, seed, n_resamples, level)
    out |= {"ci_low": interval.low, "ci_high": interval.high, "ci_over": interval.ci_over,
            "undefined_share": interval.undefined_share}
    return out


MIN_CI_UNITS = 10  # fewer resampled independent units: no interval is reported, in any chapter


@dataclass(frozen=True)
class Interval:
    """A statistic with its percentile bootstrap interval and what the interval resampled: ``units`` distinct
    independent units called ``unit`` (plural, e.g. "queries"). ``undefined_share``: the share of resamples
    where the statistic was undefined (dropped before taking percentiles; a large share is a warning; NaN when no
    resample was drawn).
    ``low``/``high`` are NaN when there is no interval (fewer than :data:`MIN_CI_UNITS` units, an undefined
    value, or every resample undefined). ``se``: the standard deviation of the defined resample values, the
    bootstrap standard error a sample-size plan starts from (:mod:`lib.analysis.power`), NaN likewise."""

    value: float
    low: float
    high: float
    unit: str
    units: int
    undefined_share: float = 0.0
    se: float = float("nan")

    @property
    def ci_over(self) -> str:
        """What the interval resampled (or would have), e.g. "43 queries"."""
        return f"{self.units} {self.unit}"

    def text(self, digits: int = 2, signed: bool = False) -> str:
        """"0.41 (95% CI 0.20 to 0.58, 43 queries)"; the value alone with the reason when there is no interval."""
        if not np.isfinite(self.value):
            return "undefined"
        value = number_text(self.value, digits, signed)
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            reason = (f"fewer than {MIN_CI_UNITS} {self.unit}" if self.units < MIN_CI_UNITS
                      else "no interval: the statistic is undefined in every resample")
            return f"{value} ({self.units} {self.unit}, {reason})"
        return f"{value} ({interval_text(self.low, self.high, digits, signed)}, {self.units} {self.unit})"


def unit_bootstrap(statistic: Callable[..., float], columns: Sequence[ArrayLike], units: ArrayLike, unit: str,
                   seed: int, n_resamples: int = 2000, level: float = 0.95, two_stage: bool = False,
                   min_units: int = MIN_CI_UNITS) -> Interval:
    """``statistic(*columns)`` over all items, with a percentile cluster-bootstrap interval over the independent
    units the items are nested in (Davison & Hinkley 1997, §3.8; Field & Welsh 2007).

    ``units[i]`` names the unit of item i (the query of a judged passage, the document of a summary, the user
    of a session). Each resample draws the G observed units with replacement and keeps every item of each
    drawn unit (with multiplicity); with ``two_stage`` it then draws each drawn unit's items with replacement
    (stage 2, for a statistic that should also carry the within-unit sampling of items). The statistic of the
    resample is computed on the kept items; resamples where it is undefined (NaN, e.g. κ of a constant rater)
    are dropped and their share reported. Resampling items instead of units treats n items from G units as n
    independent ones and understates the interval by the design effect whenever items of one unit resemble
    each other. No interval with fewer than ``min_units`` units (the study's rule, in every chapter) or an
    undefined value. Seeded numpy draws; percentiles by numpy's linear interpolation."""
    arrays = [np.asarray(column) for column in columns]
    labels = np.asarray(units, dtype=object).astype(str)
    if any(len(array) != len(labels) for array in arrays):
        raise ValueError(f"columns of lengths {[len(a) for a in arrays]} but {len(labels)} unit labels")
    names, index = np.unique(labels, return_inverse=True)
    with np.errstate(all="ignore"):
        value = float(statistic(*arrays)) if len(labels) else float("nan")
    nan = float("nan")
    if len(names) < max(min_units, 2) or not np.isfinite(value):
        return Interval(value, nan, nan, unit, len(names), undefined_share=nan)  # no resample was drawn
    members = [np.flatnonzero(index == g) for g in range(len(names))]
    # one item per unit (a plain bootstrap over items): unit g's item is item_of[g], no concatenation needed
    item_of = np.argsort(index) if len(labels) == len(names) and not two_stage else None
    rng = np.random.default_rng(seed)
    if statistic is np.mean and item_of is not None and len(arrays) == 1 and arrays[0].dtype == np.float64:
        # The mean of one value per unit: every resample's rows at once, drawn as the loop below draws them (one
        # call per resample, so the generator's stream is the same); a row's mean has np.mean's bits (tested).
        rows = item_of[np.stack([rng.integers(0, len(names), size=len(names)) for _ in range(n_resamples)])]
        with np.errstate(all="ignore"):
            return _percentile_interval(value, arrays[0][rows].mean(axis=1), unit, len(names), level)
    distribution = np.empty(n_resamples)
    for r in range(n_resamples):
        units_drawn = rng.integers(0, len(names), size=len(names))
        if item_of is not None:
            rows = item_of[units_drawn]
        else:
            drawn = [members[g] for g in units_drawn]
            if two_stage:
                drawn = [items[rng.integers(0, len(items), size=len(items))] for items in drawn]
            rows = np.concatenate(drawn)
        with np.errstate(all="ignore"):
            distribution[r] = statistic(*(array[rows] for array in arrays))
    return _percentile_interval(value, distribution, unit, len(names), level)


def _percentile_interval(value: float, distribution: np.ndarray, unit: str, units: int, level: float) -> Interval:
    """The percentile interval of the defined resample values (undefined ones dropped, their share kept)."""
    finite = distribution[np.isfinite(distribution)]
    undefined_share = 1 - len(finite) / len(distribution)
    if not len(finite):
        return Interval(value, float("nan"), float("nan"), unit, units, undefined_share)
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    se = float(finite.std(ddof=1)) if len(finite) > 1 else float("nan")
    return Interval(value, float(low), float(high), unit, units, undefined_share, se)


def resample_counts(n_units: int, seed: int, n_resamples: int) -> np.ndarray:
    """How often each of ``n_units`` units is drawn in each of ``n_resamples`` bootstrap resamples: an
    (n_resamples × n_units) count matrix of the draws :func:`unit_bootstrap` makes with the same ``seed`` (numpy
    ``default_rng(seed)``, ``n_units`` draws with replacement per resample, resample after resample)."""
    drawn = np.random.default_rng(seed).integers(0, n_units, size=(n_resamples, n_units))
    counts = np.zeros((n_resamples, n_units))
    np.add.at(counts, (np.arange(n_resamples)[:, None], drawn), 1.0)
    return counts


def table_bootstrap(cells: Sequence[ArrayLike], k: int, statistic: Callable[[np.ndarray], np.ndarray],
                    units: ArrayLike, unit: str, seed: int, n_resamples: int = 2000, level: float = 0.95,
                    min_units: int = MIN_CI_UNITS) -> Interval:
    """:func:`unit_bootstrap` of a statistic of k×k contingency tables, on count tables: ``cells[j][i]`` is item
    i's flattened cell in table j (:func:`kappa_cells`), and ``statistic`` maps a stack of tables of shape
    (len(cells), R, k, k) to R values. A resample's table is the sum of its drawn units' tables, each as often as
    it was drawn (:func:`resample_counts`: the resamples :func:`unit_bootstrap` draws with the same ``seed``), so
    all resamples' tables are one matrix product and the statistic one call; the interval equals
    :func:`unit_bootstrap`'s of the same statistic (tested)."""
    columns = [np.asarray(c) for c in cells]
    labels = np.asarray(units, dtype=object).astype(str)
    if any(len(c) != len(labels) for c in columns):
        raise ValueError(f"cell columns of lengths {[len(c) for c in columns]} but {len(labels)} unit labels")
    names, index = np.unique(labels, return_inverse=True)
    whole = np.stack([np.bincount(c, minlength=k * k).reshape(1, k, k) for c in columns])
    value = float(statistic(whole)[0]) if len(labels) else float("nan")
    nan = float("nan")
    if len(names) < max(min_units, 2) or not np.isfinite(value):
        return Interval(value, nan, nan, unit, len(names), undefined_share=nan)
    counts = resample_counts(len(names), seed, n_resamples)
    per_unit = np.zeros((len(columns), len(names), k * k))
    for j, column in enumerate(columns):
        np.add.at(per_unit[j], (index, column), 1.0)
    tables = np.stack([(counts @ per_unit[j]).reshape(n_resamples, k, k) for j in range(len(columns))])
    return _percentile_interval(value, statistic(tables), unit, len(names), level)


def kappa_interval(a: ArrayLike, b: ArrayLike, units: ArrayLike, categories: Sequence[Hashable], unit: str,
                   seed: int, n_resamples: int = 2000, level: float = 0.95, weights: str | None = None) -> Interval:
    """Cohen's κ of ``a`` and ``b`` (:func:`cohen_kappa`, ``weights``) with its cluster-bootstrap interval over
    ``units`` (:func:`table_bootstrap`: the interval :func:`unit_bootstrap` gives with the same seed)."""
    return table_bootstrap([kappa_cells(a, b, categories)], len(categories),
                           lambda tables: kappa_of_tables(tables[0], weights), units, unit, seed, n_resamples, level)


def nested_sample(ids: Iterable[Hashable], n: int, seed: int, first: Sequence[Hashable] = ()) -> list[Hashable]:
    """``n`` of ``ids`` in a seeded order that does not depend on ``n`` or on the other ids: the ``first`` ids
    (units already judged, kept whatever the order says), then the rest sorted by SHA-256 of "seed:id". So
    raising ``n`` adds units and never swaps the ones already drawn, and a larger pool keeps the relative order
    of the ids it shares with a smaller one. Returned in draw order (the first ``k`` of a sample are the sample
    of size ``k``)."""
    pool = list(dict.fromkeys(ids))
    missing = [unit for unit in first if unit not in set(pool)]
    if missing:
        raise ValueError(f"{len(missing)} of the units to keep are not among the ids, e.g. {missing[0]!r}")
    if not 0 <= n <= len(pool):
        raise ValueError(f"cannot draw {n} of {len(pool)} ids")
    kept = list(dict.fromkeys(first))
    rest = sorted((unit for unit in pool if unit not in set(kept)),
                  key=lambda unit: hashlib.sha256(f"{seed}:{unit}".encode()).hexdigest())
    return (kept + rest)[:n]
