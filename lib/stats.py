"""Agreement and correlation statistics used across chapters (thin, documented wrappers over statsmodels,
krippendorff and scipy, cross-checked by hand-computed cases in tests/test_stats.py)."""
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


def agreement(a: Sequence[int], b: Sequence[int], categories: Sequence[int]) -> dict[str, float]:
    """n, exact agreement, Cohen's κ and quadratic-weighted κ of two label sequences."""
    a, b = list(a), list(b)
    return {"n": len(a), "exact agreement": float(np.mean(np.equal(a, b))) if a else float("nan"),
            "kappa": cohen_kappa(a, b, categories) if a else float("nan"),
            "weighted kappa": cohen_kappa(a, b, categories, weights="quadratic") if a else float("nan")}


def agreement_of_columns(frame, a: str, b: str, categories: Sequence[int]) -> dict[str, float]:
    """:func:`agreement` of two label columns over the rows where both are present."""
    both = frame[a].notna() & frame[b].notna()
    return agreement(frame.loc[both, a].astype(int), frame.loc[both, b].astype(int), categories)


def per_group_correlation(frame, group: str, x: str, y: str, method: str = "spearman") -> tuple[float, int]:
    """G-Eval's summary-level protocol (meta_eval_summeval.py in nlpyang/geval): correlate x and y inside
    each group, skip groups where either is constant, and average over the groups kept.
    ``method``: spearman, pearson or kendall (scipy; Kendall is τ-b). Returns (mean, groups kept)."""
    from scipy import stats as sps

    func = {"spearman": sps.spearmanr, "pearson": sps.pearsonr, "kendall": sps.kendalltau}[method]
    values = [func(g[x], g[y]).statistic for _, g in frame.groupby(group)
              if g[x].nunique() > 1 and g[y].nunique() > 1]
    return (float(np.mean(values)) if values else float("nan")), len(values)
