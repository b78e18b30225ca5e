"""Statistics shared by the chapters: Cohen's κ, Krippendorff's α and the bootstrap CI of a mean — thin,
documented wrappers over statsmodels, krippendorff and scipy, checked against hand-computed cases in
tests/test_analysis_stats.py."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cohen_kappa(a: Sequence[int], b: Sequence[int], categories: Sequence[int], weights: str | None = None) -> float:
    """Cohen's κ between two label sequences over fixed ``categories`` (Cohen 1960):
    κ = (p_o − p_e) / (1 − p_e), p_o observed agreement, p_e agreement expected from the marginals.
    ``weights="quadratic"`` gives weighted κ (Cohen 1968) with disagreement weights (i−j)²/(k−1)².
    Computed by statsmodels.stats.inter_rater.cohens_kappa on the k×k contingency table.
    Returns NaN when both raters use a single identical category (κ undefined)."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b, strict=True):
        table[index[x], index[y]] += 1
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum() ** 2
    if np.isclose(expected.trace(), 1.0):
        return float("nan")
    return float(sm_kappa(table, wt=weights, return_results=False))


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]], level: str = "ordinal") -> float:
    """Krippendorff's α (Krippendorff 2004) for raters × items, missing ratings as None/NaN:
    α = 1 − D_o / D_e with the distance of ``level`` (nominal, ordinal, interval, ratio);
    computed by the ``krippendorff`` package."""
    import krippendorff

    data = np.array([[np.nan if r is None else r for r in row] for row in ratings], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def bootstrap_ci(values: Sequence[float], seed: int, n_resamples: int = 10_000, level: float = 0.95
                 ) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over entries (Efron & Tibshirani 1993, §13.3; scipy.stats.bootstrap,
    seeded): the (1 − level)/2 and (1 + level)/2 quantiles of the means of ``n_resamples`` resamples drawn with
    replacement. Percentile rather than BCa because per-entry Hit values are often all 0 or all 1, where BCa is
    undefined; constant values give the degenerate interval (v, v)."""
    from scipy.stats import bootstrap

    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.all(values == values[0]):
        return (float(values[0]), float(values[0])) if len(values) else (float("nan"), float("nan"))
    result = bootstrap((values,), np.mean, n_resamples=n_resamples, confidence_level=level,
                       method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)
