"""Agreement and correlation statistics used across chapters (thin, documented wrappers over statsmodels,
krippendorff and scipy, cross-checked by hand-computed cases in tests/test_stats.py)."""
from __future__ import annotations

import warnings
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


def bootstrap_ci(values: Sequence[float], seed: int, n_resamples: int = 10_000, level: float = 0.95
                 ) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over entries (scipy.stats.bootstrap, seeded). Percentile rather
    than BCa because per-entry Hit values are often all 0 or all 1, where BCa is undefined."""
    from scipy.stats import bootstrap

    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.all(values == values[0]):
        return (float(values[0]), float(values[0])) if len(values) else (float("nan"), float("nan"))
    result = bootstrap((values,), np.mean, n_resamples=n_resamples, confidence_level=level,
                       method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_comparison(system: Sequence[float], baseline: Sequence[float], seed: int,
                      n_resamples: int = 10_000) -> dict[str, float]:
    """System − baseline over the same entries: mean difference, its paired-bootstrap 95% CI, paired t-test,
    Wilcoxon signed-rank (zero differences dropped, Wilcoxon 1945), a paired randomisation test (sign flips
    of the differences, scipy.stats.permutation_test), and Cohen's d_z = mean(d) / sd(d)."""
    from scipy import stats as sps

    diff = np.asarray(system, dtype=float) - np.asarray(baseline, dtype=float)
    n = len(diff)
    out = {"n": n, "mean diff": float(diff.mean()) if n else float("nan")}
    out["ci low"], out["ci high"] = bootstrap_ci(diff, seed, n_resamples)
    sd = float(diff.std(ddof=1)) if n > 1 else float("nan")
    out["d_z"] = out["mean diff"] / sd if sd and sd > 0 else float("nan")
    if n < 2 or np.all(diff == 0):
        out.update({"p t-test": float("nan"), "p wilcoxon": float("nan"), "p permutation": float("nan")})
        return out
    with warnings.catch_warnings():
        # scipy warns of precision loss when differences are nearly identical (common for 0/1 Hit values);
        # the p-value is still the test's answer, and the CI and permutation test do not depend on it.
        warnings.simplefilter("ignore", RuntimeWarning)
        out["p t-test"] = float(sps.ttest_rel(system, baseline).pvalue)
    out["p wilcoxon"] = float(sps.wilcoxon(diff, zero_method="wilcox").pvalue) if np.any(diff != 0) else float("nan")
    out["p permutation"] = float(sps.permutation_test(
        (diff,), np.mean, permutation_type="samples", n_resamples=n_resamples, alternative="two-sided",
        rng=np.random.default_rng(seed)).pvalue)
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (Holm 1979) via statsmodels.multipletests; NaN stays NaN."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        adjusted[ok] = multipletests(p[ok], method="holm")[1]
    return adjusted.tolist()


def entries_needed(mean_diff: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Entries a paired two-sided test needs to detect ``mean_diff`` (normal approximation):
    n = ((z_{1−α/2} + z_{power}) · sd_d / |mean_d|)²."""
    from scipy.stats import norm

    if not mean_diff or not np.isfinite(mean_diff) or not np.isfinite(sd_diff):
        return float("inf")
    return float(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd_diff / abs(mean_diff)) ** 2)
