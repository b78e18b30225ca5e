"""Method summaries and paired comparisons of the system with each baseline over the same entries.

A *comparison* is system − baseline on one measure over the entries both score: mean difference with a
paired-bootstrap CI, paired t-test, Wilcoxon signed-rank, a paired randomisation test, Cohen's d_z, Holm
adjustment over the whole family (every measure × baseline) for each test, and the entries a paired test
would need to detect the observed difference.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib.analysis.ranking import MEASURES, RANDOM_EXPECTED, average_runs
from lib.analysis.stats import bootstrap_ci
from lib.rankers import METHOD_ORDER

TESTS = ("ttest", "wilcoxon", "permutation")  # p_<test> and p_holm_<test> columns of a comparison


def paired_comparison(system: Sequence[float], baseline: Sequence[float], seed: int,
                      n_resamples: int = 10_000) -> dict[str, float]:
    """System − baseline over the same entries: mean difference, its paired-bootstrap 95% CI, paired t-test,
    Wilcoxon signed-rank (zero differences dropped, Wilcoxon 1945), a paired randomisation test (sign flips
    of the differences, scipy.stats.permutation_test), and Cohen's d_z = mean(d) / sd(d).
    Keys: n, mean_diff, ci_low, ci_high, d_z, p_ttest, p_wilcoxon, p_permutation."""
    from scipy import stats as sps

    diff = np.asarray(system, dtype=float) - np.asarray(baseline, dtype=float)
    n = len(diff)
    out = {"n": n, "mean_diff": float(diff.mean()) if n else float("nan")}
    out["ci_low"], out["ci_high"] = bootstrap_ci(diff, seed, n_resamples)
    sd = float(diff.std(ddof=1)) if n > 1 else float("nan")
    out["d_z"] = out["mean_diff"] / sd if sd and sd > 0 else float("nan")
    if n < 2 or np.all(diff == 0):
        out.update({f"p_{test}": float("nan") for test in TESTS})
        return out
    with warnings.catch_warnings():
        # scipy warns of precision loss when differences are nearly identical (common for 0/1 Hit values);
        # the p-value is still the test's answer, and the CI and permutation test do not depend on it.
        warnings.simplefilter("ignore", RuntimeWarning)
        out["p_ttest"] = float(sps.ttest_rel(system, baseline).pvalue)
    out["p_wilcoxon"] = float(sps.wilcoxon(diff, zero_method="wilcox").pvalue) if np.any(diff != 0) else float("nan")
    out["p_permutation"] = float(sps.permutation_test(
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


def method_summary(values: pd.DataFrame, seed: int, n_resamples: int = 10_000) -> pd.DataFrame:
    """Per (measure, method): entries, mean, sd and percentile-bootstrap 95% CI (ci_low, ci_high) of the mean
    over entries; a method's runs are averaged per entry first."""
    rows = []
    for (measure, method), group in average_runs(values).groupby(["measure", "method"], sort=False):
        low, high = bootstrap_ci(group.value.to_numpy(), seed, n_resamples)
        rows.append({"measure": measure, "method": method, "entries": len(group), "mean": group.value.mean(),
                     "sd": group.value.std(ddof=1), "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def results_table(summary: pd.DataFrame, expected: pd.DataFrame, method_order: Sequence[str] = METHOD_ORDER
                  ) -> pd.DataFrame:
    """Method × measure cells "mean ± sd [ci_low, ci_high]" from :func:`method_summary`, with the random-order
    expectation rows (``lib.analysis.ranking.random_expected_rows``, "mean" only) right after "random"."""
    both = pd.concat([summary, expected], ignore_index=True)
    cell = both.apply(lambda r: f"{r['mean']:.3f} ± {r['sd']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                      if pd.notna(r.get("sd")) else f"{r['mean']:.3f}", axis=1)
    rows = [name for m in method_order for name in ([m, RANDOM_EXPECTED] if m == "random" else [m])]
    table = both.assign(cell=cell).pivot(index="method", columns="measure", values="cell")
    return table.reindex(index=rows, columns=list(MEASURES))


def by_entry(values: pd.DataFrame) -> pd.DataFrame:
    """Run-averaged values with one row per (measure, entry) and one column per method (NaN where unscored)."""
    return average_runs(values).pivot_table(index=["measure", "entry_id"], columns="method", values="value")


def compare_to_baselines(values: pd.DataFrame, system: str, seed: int, n_resamples: int = 10_000) -> pd.DataFrame:
    """:func:`paired_comparison` of ``system`` with every other method on every measure (entries both score),
    Holm-adjusted over the whole family for each test (p_holm_<test>), and :func:`entries_needed`."""
    wide = by_entry(values)
    rows = []
    for measure, table in wide.groupby(level="measure", sort=False):
        for baseline in [m for m in table.columns if m != system]:
            pair = table[[system, baseline]].dropna()
            rows.append({"measure": measure, "baseline": baseline,
                         **paired_comparison(pair[system].to_numpy(), pair[baseline].to_numpy(), seed, n_resamples),
                         "sd_diff": float((pair[system] - pair[baseline]).std(ddof=1))})
    result = pd.DataFrame(rows)
    for test in TESTS:
        result[f"p_holm_{test}"] = holm(result[f"p_{test}"].tolist())
    result["entries_needed"] = [entries_needed(m, s) for m, s in zip(result.mean_diff, result.sd_diff)]
    return result.drop(columns="sd_diff")


def paired_differences(values: pd.DataFrame, system: str) -> pd.DataFrame:
    """Long table of per-entry differences system − baseline: measure, entry_id, difference, baseline."""
    wide = by_entry(values)
    return pd.concat([(wide[system] - wide[b]).rename("difference").reset_index().assign(baseline=b)
                      for b in wide.columns if b != system], ignore_index=True).dropna()
