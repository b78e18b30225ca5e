"""Paired comparisons, Holm, power and summaries on hand-computed and constructed cases."""
from __future__ import annotations

import math
import statistics

import pandas as pd
import pytest

from lib.analysis.comparisons import (compare_to_baselines, entries_needed, holm, method_summary, paired_comparison,
                                      paired_differences, results_table)


def test_paired_comparison_matches_scipy_and_hand_values():
    from scipy import stats as sps

    system = [0.9, 0.8, 0.7, 1.0, 0.6, 0.9, 0.75, 0.85]
    baseline = [0.5, 0.7, 0.7, 0.6, 0.4, 0.8, 0.5, 0.6]
    out = paired_comparison(system, baseline, seed=0, n_resamples=2000)
    diff = [s - b for s, b in zip(system, baseline)]
    assert out["mean_diff"] == pytest.approx(sum(diff) / 8)
    assert out["p_ttest"] == pytest.approx(sps.ttest_rel(system, baseline).pvalue)
    assert out["p_wilcoxon"] == pytest.approx(sps.wilcoxon(diff).pvalue)
    assert out["ci_low"] < out["mean_diff"] < out["ci_high"]
    # 7 positive differences and one zero: the exact sign-flip test over 2^8 flips gives p = 2·2/256
    # (all-positive and the flip of the zero are both as extreme) — the randomisation estimate is close.
    assert out["p_permutation"] == pytest.approx(4 / 256, abs=0.01)
    assert out["d_z"] == pytest.approx(statistics.mean(diff) / statistics.stdev(diff))


def test_paired_comparison_with_no_difference_has_no_p_values():
    out = paired_comparison([1, 0, 1], [1, 0, 1], seed=0)
    assert out["mean_diff"] == 0 and math.isnan(out["p_ttest"]) and math.isnan(out["p_permutation"])
    assert (out["ci_low"], out["ci_high"]) == (0.0, 0.0) and math.isnan(out["d_z"])


def test_holm_hand_computed():
    # sorted p: .01, .03, .04 -> ×3, ×2, ×1 = .03, .06, .06 (monotone); NaN passes through
    assert holm([0.04, 0.01, float("nan"), 0.03]) == pytest.approx([0.06, 0.03, float("nan"), 0.06], nan_ok=True)


def test_entries_needed_normal_approximation():
    # (1.959964 + 0.841621)^2 * (1 / 0.5)^2 = 31.40
    assert entries_needed(0.5, 1.0) == pytest.approx(31.3956, abs=1e-3)
    assert entries_needed(0.0, 1.0) == float("inf")


def constructed_values():
    """sys scores 1 on six entries; rand scores 1 in run 0 and 0 in run 1 (mean 0.5 per entry)."""
    return pd.DataFrame(
        [{"method": "sys", "run": 0, "entry_id": f"e{i}", "measure": "NDCG@3", "value": 1.0} for i in range(6)]
        + [{"method": "rand", "run": r, "entry_id": f"e{i}", "measure": "NDCG@3", "value": float(r == 0)}
           for i in range(6) for r in range(2)])


def test_summary_and_comparisons_on_a_constructed_case():
    values = constructed_values()
    summary = method_summary(values, seed=0).set_index("method")
    assert summary.loc["rand", "mean"] == 0.5 and summary.loc["rand", "entries"] == 6  # averaged over runs
    assert (summary.loc["sys", "ci_low"], summary.loc["sys", "ci_high"]) == (1.0, 1.0)
    comparison = compare_to_baselines(values, "sys", seed=0)
    assert list(comparison.columns) == ["measure", "baseline", "n", "mean_diff", "ci_low", "ci_high", "d_z", "p_ttest",
                                        "p_wilcoxon", "p_permutation", "p_holm_ttest", "p_holm_wilcoxon",
                                        "p_holm_permutation", "entries_needed"]
    row = comparison.iloc[0]
    assert row["baseline"] == "rand" and row["mean_diff"] == 0.5 and row["n"] == 6
    assert row["entries_needed"] == 0.0  # the difference is the same on every entry: sd_d = 0, so n = 0
    differences = paired_differences(values, "sys")
    assert differences.difference.tolist() == [0.5] * 6 and set(differences.baseline) == {"rand"}


def test_results_table_puts_the_expected_row_after_random():
    summary = pd.DataFrame([{"measure": "NDCG@3", "method": m, "entries": 2, "mean": 0.5, "sd": 0.1,
                             "ci_low": 0.4, "ci_high": 0.6} for m in ("value_aware", "random")])
    expected = pd.DataFrame([{"measure": "NDCG@3", "method": "random (expected)", "entries": 2, "mean": 0.25}])
    table = results_table(summary, expected, method_order=("random", "value_aware"))
    assert table.index.tolist() == ["random", "random (expected)", "value_aware"]
    assert table["NDCG@3"].tolist() == ["0.500 ± 0.100 [0.400, 0.600]", "0.250", "0.500 ± 0.100 [0.400, 0.600]"]
    assert table["NDCG@5"].isna().all()  # every registered measure is a column
