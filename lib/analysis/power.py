"""A sample-size planner: how many independent units a question needs, from a pilot's spread and design effect.

The *unit* is what an interval resamples and a paired test pairs (a query with several judged passages, a
summarised document, a question, a user); *items* are nested in units. The planners answer three questions
in units:

* an interval of given half-width — from a pilot's bootstrap SE over units (:func:`units_for_interval`: κ_w,
  α, a mean, any statistic whose SE shrinks as 1/√n), or in closed form for a correlation
  (:func:`units_for_correlation_interval`, Fisher's z); never fewer than ``MIN_CI_UNITS``;
* a paired difference at given power — by the noncentral t (:func:`units_for_t_test`) and, for the study's
  decision test, the exact sign-flip test, by seeded simulation (:func:`units_for_sign_flip`);
* whether an exact test can reach p < α at all, alone or as the best test of a Holm family
  (:func:`min_nonzero_units`, :func:`holm_min_p`).

A chapter states each primary question's answer as a :class:`Plan` (units it has, units it needs, on what
basis, whether the run has them); :func:`plan_table` lists them. No LLM is called here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lib.analysis.stats import MIN_CI_UNITS, exact_flip_counts, flip_tolerance, min_attainable_p
from lib.analysis.text import count_text

Coefficient = Literal["pearson", "spearman", "kendall"]

# Fisher-z variance c / (n − b) of each coefficient: (c as a function of the planning value r, b).
FISHER_Z_VARIANCE: dict[Coefficient, tuple[Callable[[float], float], int]] = {
    "pearson": (lambda r: 1.0, 3),  # Fisher 1921
    "spearman": (lambda r: 1.0 + r * r / 2.0, 3),  # Bonett & Wright 2000
    "kendall": (lambda r: 0.437, 4),  # Fieller, Hartley & Pearson 1957, as in Bonett & Wright 2000
}

# The differences of simulated runs: (generator, (runs, units)) -> array of that shape.
DifferenceDraw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


def _check_open_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")


def _check_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")


def _ceil(x: float) -> int:
    """⌈x⌉ without float noise: 36.000000000004 units are 36, not 37."""
    return math.ceil(round(x, 9))


def _z(level: float) -> float:
    """z_{(1+level)/2}, the standard normal quantile of a two-sided interval at ``level``."""
    from scipy.stats import norm

    _check_open_unit("level", level)
    return float(norm.ppf((1.0 + level) / 2.0))


def design_effect(se_clustered: float, se_independent: float) -> float:
    """Design effect of a statistic (Kish 1965): deff = (SE_clustered / SE_independent)², the ratio of its
    variance when units are resampled (items kept with their unit) to its variance when items are resampled as
    if independent. n items nested in units carry the information of n / deff independent items."""
    _check_positive("se_clustered", se_clustered)
    _check_positive("se_independent", se_independent)
    return (se_clustered / se_independent) ** 2


def kish_design_effect(items_per_unit: float, icc: float) -> float:
    """Kish's design effect of a mean over units of m items each (Kish 1965): deff = 1 + (m − 1)·ICC, ICC the
    intraclass correlation of the items within a unit. It is the formula for a mean; for another statistic
    (κ_w, a correlation) measure the design effect on the pilot with :func:`design_effect`."""
    if not (math.isfinite(items_per_unit) and items_per_unit >= 1.0):
        raise ValueError(f"items_per_unit must be at least 1, got {items_per_unit}")
    if not (math.isfinite(icc) and icc <= 1.0):
        raise ValueError(f"icc must be a finite correlation at most 1, got {icc}")
    deff = 1.0 + (items_per_unit - 1.0) * icc
    if deff <= 0.0:
        raise ValueError(f"icc = {icc} with {items_per_unit} items per unit gives a design effect {deff} ≤ 0")
    return deff


def units_for_items(items: float, items_per_unit: float, design_effect: float = 1.0) -> int:
    """Units whose nested items carry the information of ``items`` independent items (Kish 1965's effective
    sample size n_eff = n / deff, solved for n): ⌈items · deff / m⌉ with m items per unit."""
    _check_positive("items", items)
    _check_positive("design_effect", design_effect)
    if not (math.isfinite(items_per_unit) and items_per_unit >= 1.0):
        raise ValueError(f"items_per_unit must be at least 1, got {items_per_unit}")
    return _ceil(items * design_effect / items_per_unit)


def units_for_interval(se_pilot: float, n_pilot: int, half_width: float, level: float = 0.95) -> int:
    """Units for an interval of half-width h from a pilot: n = max(MIN_CI_UNITS, ⌈n_pilot · (z · SE_pilot / h)²⌉),
    z = z_{(1+level)/2}.

    SE_pilot is the SD of the statistic's bootstrap distribution over the pilot's n_pilot units (units resampled
    with their items, as the study's intervals are; Efron & Tibshirani 1993, ch. 6), so it already holds the
    design effect. The SE of a statistic that is asymptotically normal over independent units (a mean, κ_w, α, a
    correlation) shrinks as 1/√n, so at n units the interval is about ±z · SE_pilot · √(n_pilot / n); the
    percentile interval has that half-width when the bootstrap distribution is close to normal. A pilot interval
    at the same level gives z · SE_pilot directly as its half-width."""
    _check_positive("se_pilot", se_pilot)
    _check_positive("half_width", half_width)
    if n_pilot < 2:
        raise ValueError(f"n_pilot must be at least 2 units (a bootstrap SE needs two), got {n_pilot}")
    return max(MIN_CI_UNITS, _ceil(n_pilot * (_z(level) * se_pilot / half_width) ** 2))


def _check_correlation(r: float, coefficient: Coefficient) -> tuple[float, int]:
    if coefficient not in FISHER_Z_VARIANCE:
        raise ValueError(f"coefficient must be one of {sorted(FISHER_Z_VARIANCE)}, got {coefficient!r}")
    if not -1.0 < r < 1.0:
        raise ValueError(f"r must be strictly between −1 and 1, got {r}")
    scale, offset = FISHER_Z_VARIANCE[coefficient]
    return scale(r), offset


def correlation_interval_half_width(r: float, n: int, coefficient: Coefficient = "spearman",
                                    level: float = 0.95) -> float:
    """Half the width of the Fisher-z interval of a correlation r over n independent pairs:
    (tanh(atanh r + z·s) − tanh(atanh r − z·s)) / 2 with s = √(c / (n − b)) — Pearson c = 1, b = 3 (Fisher
    1921); Spearman c = 1 + r²/2, b = 3; Kendall's τ c = 0.437, b = 4 (Bonett & Wright 2000). The interval is
    asymmetric around r (longer towards 0); half its width is what Bonett & Wright plan with."""
    scale, offset = _check_correlation(r, coefficient)
    if n <= offset:
        raise ValueError(f"a {coefficient} Fisher-z interval needs more than {offset} pairs, got {n}")
    spread = _z(level) * math.sqrt(scale / (n - offset))
    return (math.tanh(math.atanh(r) + spread) - math.tanh(math.atanh(r) - spread)) / 2.0


def units_for_correlation_interval(r: float, half_width: float, coefficient: Coefficient = "spearman",
                                   level: float = 0.95, items_per_unit: float = 1.0,
                                   design_effect: float = 1.0) -> int:
    """Units for a Fisher-z correlation interval (:func:`correlation_interval_half_width`) of half-width h at
    the planning value r, in closed form: the width tanh(ζ + a) − tanh(ζ − a) = 2·sinh 2a / (cosh 2ζ + cosh 2a),
    ζ = atanh r, equals 2h at 2a = atanh h + asinh(h · cosh 2ζ / √(1 − h²)), cosh 2ζ = (1 + r²)/(1 − r²); the
    smallest n with z·√(c / (n − b)) ≤ a is n = ⌈b + c · (z / a)²⌉ pairs (Bonett & Wright 2000 approximate
    it in two stages). Pairs that are items nested in units of ``items_per_unit`` with the correlation's
    ``design_effect`` need :func:`units_for_items` units; never fewer than MIN_CI_UNITS."""
    scale, offset = _check_correlation(r, coefficient)
    _check_open_unit("half_width of a correlation interval", half_width)
    cosh_2zeta = (1.0 + r * r) / (1.0 - r * r)
    a = (math.atanh(half_width) + math.asinh(half_width * cosh_2zeta / math.sqrt(1.0 - half_width ** 2))) / 2.0
    pairs = _ceil(offset + scale * (_z(level) / a) ** 2)
    return max(MIN_CI_UNITS, units_for_items(pairs, items_per_unit, design_effect))


def t_test_power(n: int, mean_difference: float, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample (paired) t-test on n differences with true mean δ and SD σ (Cohen 1988,
    ch. 2): with T ~ noncentral t(n − 1, δ√n / σ) and t* = t_{1−α/2, n−1}, power = P(T > t*) + P(T < −t*).
    ``sd`` is the SD of the per-unit differences (items averaged within their unit first), so no design effect
    enters."""
    from scipy.stats import nct, t

    _check_positive("sd", sd)
    _check_open_unit("alpha", alpha)
    if n < 2:
        raise ValueError(f"a t-test needs at least 2 units, got {n}")
    critical = float(t.ppf(1.0 - alpha / 2.0, n - 1))
    noncentrality = mean_difference * math.sqrt(n) / sd
    # P(T < −t*) as P(−T > t*), −T ~ noncentral t(n − 1, −δ√n/σ): scipy's nct.cdf is NaN far in that tail
    return float(nct.sf(critical, n - 1, noncentrality) + nct.sf(critical, n - 1, -noncentrality))


def units_for_t_test(mean_difference: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Smallest n ≥ 2 units whose paired t-test has :func:`t_test_power` ≥ ``power`` (Cohen 1988, ch. 2:
    d = δ/σ = 0.5, α = 0.05 two-sided, power 0.8 gives 34). The search starts at the normal approximation
    ((z_{1−α/2} + z_power) · σ / δ)² and steps to the exact answer."""
    from scipy.stats import norm

    _check_open_unit("power", power)
    _check_open_unit("alpha", alpha)
    _check_positive("sd", sd)
    if mean_difference == 0.0 or not math.isfinite(mean_difference):
        raise ValueError(f"mean_difference must be a nonzero finite number, got {mean_difference}")
    n = max(2, math.floor(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / mean_difference) ** 2))
    while n > 2 and t_test_power(n - 1, mean_difference, sd, alpha) >= power:
        n -= 1
    while t_test_power(n, mean_difference, sd, alpha) < power:
        n += 1
    return n


def control_limit_power(drop: float, sd: float, items: int, limit_sds: float = 3.0) -> float:
    """Probability that a day whose items' mean falls by ``drop`` goes below a Shewhart control limit (Shewhart
    1931; Montgomery, *Introduction to Statistical Quality Control*, ch. 6) set ``limit_sds`` standard errors under
    the baseline mean: with the day's mean of m items ~ N(μ − δ, σ²/m) and the limit μ − z·σ/√m,
    power = Φ(δ√m/σ − z). The baseline's μ and σ are taken as known, so with a short baseline the power is
    optimistic. (δ = 2.3σ: m = 1 gives 0.24, m = 2 gives 0.60.)"""
    from scipy.stats import norm

    _check_positive("sd", sd)
    _check_positive("limit_sds", limit_sds)
    if items < 1:
        raise ValueError(f"a day needs at least 1 item, got {items}")
    return float(norm.cdf(drop * math.sqrt(items) / sd - limit_sds))


def items_for_control_limit(drop: float, sd: float, limit_sds: float = 3.0, power: float = 0.8) -> int:
    """Fewest items a day for which :func:`control_limit_power` reaches ``power``: m = ⌈((z + z_power)·σ/δ)²⌉
    (δ = σ, z = 3, power 0.8: (3.8416)² → 15)."""
    from scipy.stats import norm

    _check_open_unit("power", power)
    _check_positive("drop", drop)
    return max(1, _ceil(((limit_sds + float(norm.ppf(power))) * sd / drop) ** 2))


def min_nonzero_units(alpha: float, family_size: int = 1) -> int:
    """Fewest non-tied units for which an exact sign-flip or sign test can give p < α at all, alone
    (``family_size`` 1) or as the best test of a Holm family of k: the smallest n with :func:`holm_min_p`
    = min(1, k · 2/2^n) < α, i.e. n = ⌊log₂(2k/α)⌋ + 1 (6 at α = 0.05; 10 at 0.05/14 or for k = 14)."""
    _check_open_unit("alpha", alpha)
    n = 1
    while holm_min_p(n, family_size) >= alpha:
        n += 1
    return n


def holm_min_p(nonzero: int, family_size: int) -> float:
    """Smallest Holm-adjusted p the best of a family of k exact tests with ``nonzero`` non-tied units each can
    reach, whatever the data (Holm 1979): Holm multiplies the smallest p by k, so min(1, k · 2/2^n)
    (:func:`lib.analysis.stats.min_attainable_p`)."""
    if family_size < 1:
        raise ValueError(f"family_size must be at least 1, got {family_size}")
    return min(1.0, family_size * min_attainable_p(nonzero))


def units_for_nonzero(nonzero: int, tie_share: float) -> int:
    """Units for ``nonzero`` non-tied units when a share t of units tie (difference 0, dropped by the exact
    tests): ⌈nonzero / (1 − t)⌉. That many units give ``nonzero`` non-tied ones on average only: the count is
    Binomial(n, 1 − t), so about half the runs of that size have fewer; :func:`units_for_sign_flip` on the
    pilot's differences counts the ties' spread too."""
    if nonzero < 1:
        raise ValueError(f"nonzero must be at least 1, got {nonzero}")
    if not 0.0 <= tie_share < 1.0:
        raise ValueError(f"tie_share must be in [0, 1), got {tie_share}")
    return _ceil(nonzero / (1.0 - tie_share))


def pilot_draw(pilot_differences: ArrayLike, shift: float = 0.0) -> DifferenceDraw:
    """Simulated differences resampled with replacement from a pilot's per-unit differences, plus ``shift``
    (Lehmann 1975's shift alternative: the pilot's shape, another effect). The pilot's ties are drawn as
    ties only with shift 0: a shift moves them off 0 too."""
    pilot = np.asarray(pilot_differences, dtype=float)
    if len(pilot) < 2 or not np.isfinite(pilot).all():
        raise ValueError(f"pilot_differences must hold at least 2 finite differences, got {len(pilot)}")
    if not math.isfinite(shift):
        raise ValueError(f"shift must be finite, got {shift}")
    return lambda rng, shape: rng.choice(pilot, size=shape) + shift


def normal_draw(mean_difference: float, sd: float) -> DifferenceDraw:
    """Simulated differences drawn from Normal(δ, σ²): no ties."""
    _check_positive("sd", sd)
    if not math.isfinite(mean_difference):
        raise ValueError(f"mean_difference must be finite, got {mean_difference}")
    return lambda rng, shape: rng.normal(mean_difference, sd, size=shape)


# Simulated runs that share one set of random sign assignments: sharing ties their Monte Carlo errors together (a
# power's own error grows with it), a set per run costs n_flips × n draws each.
_RUNS_PER_FLIP_SET = 32
SIMULATED_EXACT_FLIPS = 20  # simulated runs enumerate their 2^n flips up to n = 20 units, then draw them


def _random_counts(sizes: np.ndarray, observed: np.ndarray, tolerance: np.ndarray, rng: np.random.Generator,
                   n_flips: int) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`lib.analysis.stats.exact_flip_counts` over ``n_flips`` random sign assignments, drawn afresh for every
    ``_RUNS_PER_FLIP_SET`` rows."""
    greater: np.ndarray = np.empty(len(sizes), dtype=np.int64)
    less: np.ndarray = np.empty(len(sizes), dtype=np.int64)
    for start in range(0, len(sizes), _RUNS_PER_FLIP_SET):
        rows = slice(start, start + _RUNS_PER_FLIP_SET)
        null = sizes[rows] @ rng.choice([-1.0, 1.0], size=(n_flips, sizes.shape[1])).T
        greater[rows] = (null >= (observed[rows] - tolerance[rows])[:, None]).sum(axis=1)
        less[rows] = (null <= (observed[rows] + tolerance[rows])[:, None]).sum(axis=1)
    return greater, less


def _sign_flip_p(differences: np.ndarray, rng: np.random.Generator, n_flips: int) -> np.ndarray:
    """The p of :func:`lib.analysis.stats.sign_flip_test` for each row of ``differences`` (simulated runs ×
    units), all rows at once: sign_flip_test takes seconds per call at 20 differences and a power needs
    thousands.

    The comparisons of scipy.stats.permutation_test on the null distribution of Σ ±|d_i| (the sum orders the
    assignments as the mean does): one-sided counts, p = min(1, 2 · min(less, greater)). Exact (all 2^n
    assignments, p = count / 2^n) for n ≤ SIMULATED_EXACT_FLIPS units; zero differences are kept, which doubles
    both counts and leaves p unchanged. Above that, ``n_flips`` random assignments (:func:`_random_counts`),
    p = (count + 1)/(n_flips + 1), as sign_flip_test draws them above stats.MAX_EXACT_FLIPS non-tied differences;
    between the two limits sign_flip_test is exact where this is not: the same p up to Monte Carlo error, which
    thousands of simulated runs average out (exact enumeration of 2^40 per run would cost minutes).
    Sums equal up to rounding count as equal (:func:`lib.analysis.stats.flip_tolerance`)."""
    n = differences.shape[1]
    sizes, observed = np.abs(differences), differences.sum(axis=1)
    tolerance = flip_tolerance(sizes)
    if n <= SIMULATED_EXACT_FLIPS:
        greater, less = exact_flip_counts(sizes, observed, tolerance)
        assignments, adjustment = 2 ** n, 0
    else:
        greater, less = _random_counts(sizes, observed, tolerance, rng, n_flips)
        assignments, adjustment = n_flips, 1
    return np.minimum(1.0, 2 * (np.minimum(greater, less) + adjustment) / (assignments + adjustment))


def sign_flip_power(draw: DifferenceDraw, n: int, alpha: float, seed: int, n_simulations: int = 2000,
                    n_flips: int = 10_000) -> float:
    """Power of the study's exact sign-flip test (Fisher 1935; Pitman 1937; :func:`lib.analysis.stats.
    sign_flip_test`) on n units, by seeded simulation: the share of ``n_simulations`` runs of n differences
    from ``draw`` (:func:`pilot_draw`, :func:`normal_draw`) with p < α. Drawn ties are dropped by the test as in
    the study, so a pilot's tie share is counted. Its Monte Carlo SE is √(power · (1 − power) / n_simulations)
    (0.009 at 0.8 with 2000 runs)."""
    _check_open_unit("alpha", alpha)
    if n < 1 or n_simulations < 1 or n_flips < 1:
        raise ValueError(f"n, n_simulations and n_flips must be at least 1, got {n}, {n_simulations}, {n_flips}")
    rng = np.random.default_rng(seed)
    differences = draw(rng, (n_simulations, n))
    return float((_sign_flip_p(differences, rng, n_flips) < alpha).mean())


def units_for_sign_flip(draw: DifferenceDraw, alpha: float = 0.05, power: float = 0.8, seed: int = 0,
                        n_simulations: int = 2000, n_flips: int = 10_000, max_units: int = 5000) -> int:
    """Smallest n whose simulated :func:`sign_flip_power` reaches ``power``: doubling from
    :func:`min_nonzero_units` (no fewer can reach p < α), then bisection, every n simulated with the same seed.
    The answer carries the simulation's error (a neighbour of n may be the exact one). ValueError when even
    ``max_units`` units fall short (e.g. a pilot with no effect)."""
    _check_open_unit("power", power)

    def reaches(n: int) -> bool:
        return sign_flip_power(draw, n, alpha, seed, n_simulations, n_flips) >= power

    low = min_nonzero_units(alpha)
    if reaches(low):
        return low
    high = 2 * low
    while not reaches(high):
        if high >= max_units:
            raise ValueError(f"{max_units} units do not reach power {power} at α = {alpha}")
        low, high = high, min(2 * high, max_units)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class Plan:
    """One question's sample size: the ``units_needed`` for the planned precision (from a planner above, named in
    ``basis``) beside the ``units_have`` of this run. ``unit`` is the independent unit, singular ("query",
    "document", "user"). Two separate answers: whether the design reaches the planned precision
    (:attr:`reaches_precision`, known before the run) and whether the realised result decides the question
    (``outcome``: the verdict of its row in the ``verdicts`` table, set with :meth:`with_outcome` after the run;
    :attr:`decided`). A design with every unit it asked for can still end undetermined."""

    question: str
    unit: str
    units_have: int
    units_needed: int
    basis: str
    outcome: str | None = None

    def __post_init__(self) -> None:
        if not (self.question and self.unit and self.basis):
            raise ValueError("a plan needs a question, a unit and a basis")
        if self.units_have < 0 or self.units_needed < 1:
            raise ValueError(f"units_have must be ≥ 0 and units_needed ≥ 1, got {self.units_have} and "
                             f"{self.units_needed}")

    @property
    def reaches_precision(self) -> bool:
        """Whether this run has the units the plan asks for: what a design can promise in advance."""
        return self.units_have >= self.units_needed

    @property
    def decided(self) -> bool | None:
        """Whether the realised result decides the question (its verdict is not "undetermined"); None before
        the outcome is known."""
        return None if self.outcome is None else self.outcome != "undetermined"

    def with_outcome(self, outcome: str) -> Plan:
        """This plan with the verdict its question received."""
        return replace(self, outcome=outcome)

    def text(self) -> str:
        """The plan in one sentence: "…: needs 43 queries (basis: …); this run has 43, as planned; the result:
        undetermined."."""
        design = ("as planned" if self.reaches_precision else
                  "too few for the plan, so the answer is at best less precise than planned")
        result = ("" if self.outcome is None else
                  f"; the result {'decides it' if self.decided else 'does not decide it'} ({self.outcome})")
        return (f"{self.question}: needs {count_text(self.units_needed, self.unit)} (basis: {self.basis}); "
                f"this run has {self.units_have}, {design}{result}.")


PLAN_COLUMNS = ("question", "unit", "units_have", "units_needed", "reaches_precision", "outcome", "decided", "basis")


def plan_table(plans: Sequence[Plan]) -> pd.DataFrame:
    """One row per :class:`Plan`, columns ``PLAN_COLUMNS``."""
    return pd.DataFrame([{"question": p.question, "unit": p.unit, "units_have": p.units_have,
                          "units_needed": p.units_needed, "reaches_precision": p.reaches_precision,
                          "outcome": p.outcome, "decided": p.decided, "basis": p.basis} for p in plans],
                        columns=list(PLAN_COLUMNS))
