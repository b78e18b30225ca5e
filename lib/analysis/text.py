"""How the study writes its numbers in prose: counts with their noun, rounded values without a rounded-away sign,
the one way an interval is written, a correlation with what its interval resampled. Formatting only: nothing
here computes a statistic (those are in :mod:`lib.analysis.stats`) or decides anything."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def count_text(n: int, noun: str) -> str:
    """"1 query", "43 queries", "12 documents", "3 judged items": the count with its noun, plural unless 1."""
    if n == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if len(noun) > 1 and noun[-1] == "y" and noun[-2] not in "aeiou" else noun + "s"
    return f"{n} {plural}"


def number_text(x: float, digits: int = 2, signed: bool = False) -> str:
    """``x`` rounded for prose, with a rounded-away sign dropped ("-0.00" reads "0.00")."""
    text = f"{x:{'+' if signed else ''}.{digits}f}"
    zero = f"{0:.{digits}f}"
    return text.replace(f"-{zero}", f"+{zero}" if signed else zero)


def interval_text(low: float, high: float, digits: int = 2, signed: bool = False, prefix: str = "95% CI ",
                  undefined: str = "no interval") -> str:
    """The one way the study writes an interval: "95% CI 0.10 to 0.68" (``prefix`` first, ``digits`` decimals,
    a sign on both ends when ``signed``); ``undefined`` when either end is missing (NaN), never "nan to nan"."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return undefined
    return f"{prefix}{number_text(low, digits, signed)} to {number_text(high, digits, signed)}"


def interval_over_text(result: Mapping[str, Any], digits: int = 2, signed: bool = False) -> str:
    """The interval of a result with keys ci_low, ci_high and ci_over, with what it resampled: "95% CI 0.10 to
    0.68, 12 questions"; "no interval: 4 questions" when there is none (fewer than ``MIN_CI_UNITS`` units)."""
    interval = interval_text(result["ci_low"], result["ci_high"], digits, signed, undefined="")
    return f"{interval}, {result['ci_over']}" if interval else f"no interval: {result['ci_over']}"


def correlation_text(correlation: Mapping[str, Any], symbol: str = "ρ") -> str:
    """A :func:`correlation_ci` result in words: "ρ = 0.42 (95% CI 0.10 to 0.68, 12 users), n = 23"
    (:func:`interval_over_text`); an undefined coefficient is said to be undefined rather than printed as nan."""
    n = int(correlation["n"])
    if not np.isfinite(correlation["r"]):
        return f"{symbol} undefined (n = {n}: fewer than 3 pairs or a constant side)"
    return f"{symbol} = {correlation['r']:.2f} ({interval_over_text(correlation)}), n = {n}"
