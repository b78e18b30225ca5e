"""A sample-size planner: how many independent units a question needs, from a pilot's spread and design effect.

The *unit* is what an interval resamples and a paired test pairs (a query with several judged passages, a
summarised document, a question, a user); *items* are nested in units. The units for an interval of given
half-width come from a pilot's bootstrap SE over units (:func:`units_for_interval`: κ_w, α, a mean, any statistic
whose SE shrinks as 1/√n), or in closed form for a correlation (:func:`units_for_correlation_interval`, Fisher's
z); never fewer than ``MIN_CI_UNITS``. No LLM is called here.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from lib.analysis.stats import MIN_CI_UNITS

Coefficient = Literal["pearson", "spearman", "kendall"]

# Fisher-z variance c / (n − b) of each coefficient: (c as a function of the planning value r, b).
FISHER_Z_VARIANCE: dict[Coefficient, tuple[Callable[[float], float], int]] = {
    "pearson": (lambda r: 1.0, 3),  # Fisher 1921
    "spearman": (lambda r: 1.0 + r * r / 2.0, 3),  # Bonett & Wright 2000
    "kendall": (lambda r: 0.437, 4),  # Fieller, Hartley & Pearson 1957, as in Bonett & Wright 2000
}

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
