"""Paired comparisons on informative entries, the declared Holm family, measures dropped for zero variance, MDE
and summaries — on hand-computed and constructed cases."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lib import tables
from lib.analysis.comparisons import (
    COMPARISON_COLUMNS,
    above_random,
    compare_to_baselines,
    holm,
    holm_by_family,
    measure_status,
    one_sided_tests,
    paired_comparison,
    paired_differences,
    ranker_summary,
    results_table,
)
from lib.analysis.ranking import MEASURES, per_entry
from lib.analysis.stats import sign_flip_test

SWAPPED = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))  # NDCG@3 of a two-candidate pool (2, 1) shown as 1, 2


def test_paired_comparison_by_hand():
    system = [0.5, 0.3, 0.2, 0.4, 0.1]
    baseline = [0.2, 0.2, 0.3, 0.2, 0.1]  # differences 0.3, 0.1, −0.1, 0.2, 0
    out = paired_comparison(system, baseline, ["a", "a", "b", "b", "c"], seed=0, n_resamples=2000)
    assert (out["wins"], out["losses"], out["ties"], out["n_informative"], out["n_personas"]) == (3, 1, 1, 5, 3)
    assert out["mean_diff"] == pytest.approx(0.1)
    # exact sign-flip on |d| = 3, 1, 1, 2 (×0.1): 6/16 (tests/test_analysis_stats.py); sign test 3 vs 1: 10/16
    assert out["p_permutation"] == pytest.approx(6 / 16) and out["permutation_exact"]
    assert out["p_sign"] == pytest.approx(10 / 16) and out["min_p"] == pytest.approx(2 / 16)
    # 5 entries in 3 personas: no interval over fewer than 10 units, and each says so
    assert np.isnan(out["ci_low"]) and np.isnan(out["ci_high_persona"])
    assert (out["ci_over"], out["ci_over_persona"]) == ("5 entries", "3 personas")
    # the same differences over 15 entries (12 non-tied) in 15 personas: both intervals, by the unit bootstrap
    thrice = paired_comparison(system * 3, baseline * 3, list("abcdefghijklmno"), seed=0, n_resamples=2000)
    assert thrice["ci_low"] < thrice["mean_diff"] < thrice["ci_high"] and thrice["ci_over"] == "15 entries"
    assert thrice["ci_over_persona"] == "15 personas" and np.isfinite(thrice["ci_low_persona"])
    # 20 entries of which only 4 differ: an interval made of zeros and a few values is not given
    mostly_tied = paired_comparison(system[:4] + [0.0] * 16, baseline[:4] + [0.0] * 16, list("abcdefghijklmnopqrst"),
                                    seed=0, n_resamples=2000)
    assert np.isnan(mostly_tied["ci_low"]) and np.isnan(mostly_tied["ci_low_persona"])
    assert mostly_tied["ci_over"] == "20 entries" and mostly_tied["min_p"] == pytest.approx(2 / 16)


def test_paired_comparison_treats_last_bit_differences_as_ties():
    out = paired_comparison([0.1 + 0.2, 1.0], [0.3, 1.0], ["a", "b"], seed=0)  # 0.1 + 0.2 − 0.3 = 5.6e−17
    assert (out["wins"], out["losses"], out["ties"]) == (0, 0, 2) and out["p_permutation"] == 1.0


def test_holm_hand_computed():
    # sorted p: .01, .03, .04 -> ×3, ×2, ×1 = .03, .06, .06 (monotone); NaN passes through
    assert holm([0.04, 0.01, float("nan"), 0.03]) == pytest.approx([0.06, 0.03, float("nan"), 0.06], nan_ok=True)


def test_holm_applies_to_the_declared_family_only():
    # The primary comparison is a family of one: its p stays 0.04. The three secondary ones are adjusted among
    # themselves: .01, .03, .04 -> .03, .06, .06. Over all four together (.01, .03, .04, .04 -> ×4, ×3, ×2, ×1 =
    # .04, .09, .08, .04, made monotone: .04, .09, .09, .09) the primary would become 0.09.
    adjusted, sizes = holm_by_family([0.04, 0.01, 0.04, 0.03], ["primary", "secondary", "secondary", "secondary"])
    assert adjusted == pytest.approx([0.04, 0.03, 0.06, 0.06]) and sizes == [1, 3, 3, 3]
    assert holm([0.04, 0.01, 0.04, 0.03])[0] == pytest.approx(0.09)


def constructed_case():
    """Four two-candidate pools. e0 and e2 have labels (2, 1) — informative; e1 (1, 1) and e3 (2, 2) are constant.
    value_aware shows c0 first everywhere; embedding shows c1 first on e0 only; random run 0 shows c0 first and
    run 1 c1 first everywhere. Personas: e0, e1 -> pA; e2, e3 -> pB."""
    grades = {"e0": (2, 1), "e1": (1, 1), "e2": (2, 1), "e3": (2, 2)}
    first_c1 = {("embedding", 0): {"e0"}, ("value_aware", 0): set(), ("random", 0): set(),
                ("random", 1): set(grades)}
    rankings = pd.DataFrame([{"ranker": m, "run": run, "entry_id": e, "rank": rank, "candidate_id": f"{e}/{c}"}
                             for (m, run), swapped in first_c1.items() for e in grades
                             for rank, c in enumerate(["c1", "c0"] if e in swapped else ["c0", "c1"], start=1)])
    labels = pd.DataFrame([{"entry_id": e, "candidate_id": f"{e}/c{i}", "label": g}
                           for e, gs in grades.items() for i, g in enumerate(gs)]).astype({"label": "Int64"})
    personas = {"e0": "pA", "e1": "pA", "e2": "pB", "e3": "pB"}
    return rankings, labels, personas


def test_measure_status_drops_measures_without_informative_entries():
    rankings, labels, _ = constructed_case()
    status = measure_status(per_entry(rankings, labels), labels)
    # no candidate is labelled 0, so Hit@k (g≥1) is 1 under every order; two candidates always fit in a top 3
    assert status.tested.to_dict() == {"Hit@1 (g≥1)": False, "Hit@3 (g≥1)": False, "Hit@1 (g=2)": True,
                                       "Hit@3 (g=2)": False, "NDCG@3": True, "NDCG@5": True}
    assert status.loc["NDCG@3", "entries_informative"] == 2 and status.loc["NDCG@3", "entries_scored"] == 4
    assert "0 labelled candidates graded below its threshold g ≥ 1" in status.loc["Hit@1 (g≥1)", "reason"]
    # grades 2, 1, 1, 1, 2, 1, 2, 2: every candidate meets g ≥ 1, half meet g = 2
    assert status.relevant_share.to_dict() == {"Hit@1 (g≥1)": 1.0, "Hit@3 (g≥1)": 1.0, "Hit@1 (g=2)": 0.5,
                                               "Hit@3 (g=2)": 0.5, "NDCG@3": 1.0, "NDCG@5": 1.0}


def test_measure_status_drops_a_measure_on_which_every_method_scores_the_same():
    rankings, labels, _ = constructed_case()
    same = rankings[rankings.ranker == "value_aware"]
    both = pd.concat([same, same.assign(ranker="embedding")])  # two rankers, identical rankings
    status = measure_status(per_entry(both, labels), labels)
    assert not status.loc["NDCG@3", "tested"]
    assert status.loc["NDCG@3", "reason"] == "every ranker scores the same on every entry"


def test_compare_to_baselines_on_the_constructed_case():
    rankings, labels, personas = constructed_case()
    values = per_entry(rankings, labels)
    table = compare_to_baselines(values, labels, personas, "value_aware", "embedding", "NDCG@3", seed=0,
                                 n_resamples=2000)
    assert list(table.columns) == list(COMPARISON_COLUMNS) == list(tables.SCHEMAS["ndcg_comparisons"])
    # tested measures × baselines in RANKER_ORDER (random, embedding); the primary comparison first
    assert list(zip(table.measure, table.baseline, strict=True)) == [
        ("NDCG@3", "embedding"), ("Hit@1 (g=2)", "random"), ("Hit@1 (g=2)", "embedding"), ("NDCG@3", "random"),
        ("NDCG@5", "random"), ("NDCG@5", "embedding")]
    assert table.primary.tolist() == [True] + [False] * 5 and table.family_size.tolist() == [1] + [5] * 5
    primary = table.iloc[0]
    assert (primary.n_entries, primary.n_informative, primary.n_personas) == (4, 2, 2)
    assert (primary.wins, primary.losses, primary.ties) == (1, 0, 1)
    # one non-zero difference 1 − SWAPPED on e0; on the scale of the ranker means (over 4 entries): /4
    assert primary.mean_diff == pytest.approx((1 - SWAPPED) / 4)
    summary = ranker_summary(values, seed=0).set_index(["measure", "ranker"])["mean"]
    assert primary.mean_diff == pytest.approx(summary["NDCG@3", "value_aware"] - summary["NDCG@3", "embedding"])
    assert primary.p_permutation == 1.0 and primary.p_holm == 1.0 and primary.min_p == 1.0 and not primary.significant
    # one non-tied entry: the smallest attainable p is 1, so no effect of any size is detectable and no MDE is given
    assert np.isnan(primary.mde)
    random = table[(table.measure == "NDCG@3") & (table.baseline == "random")].iloc[0]
    # random averages its two runs: (1 + SWAPPED)/2 on e0 and e2 -> two wins of (1 − SWAPPED)/2
    assert (random.wins, random.losses, random.ties) == (2, 0, 0)
    assert random.mean_diff == pytest.approx(2 * (1 - SWAPPED) / 2 / 4)
    assert random.mde == pytest.approx(float("nan"), nan_ok=True)  # the two differences are equal: no spread


def test_compare_to_baselines_refuses_an_undeclared_primary():
    rankings, labels, personas = constructed_case()
    values = per_entry(rankings, labels)
    with pytest.raises(ValueError, match="primary baseline 'category' is not among the rankers"):
        compare_to_baselines(values, labels, personas, "value_aware", "category", "NDCG@3", seed=0)
    with pytest.raises(ValueError, match="not registered"):
        compare_to_baselines(values, labels, personas, "value_aware", "embedding", "NDCG@7", seed=0)
    with pytest.raises(ValueError, match="no persona"):
        compare_to_baselines(values, labels, {"e0": "pA"}, "value_aware", "embedding", "NDCG@3", seed=0)


def test_summary_sd_is_over_runs_for_a_method_with_several_runs():
    rankings, labels, _ = constructed_case()
    summary = ranker_summary(per_entry(rankings, labels), seed=0).set_index(["measure", "ranker"])
    random = summary.loc[("NDCG@3", "random")]
    # run 0 scores 1 everywhere; run 1 scores SWAPPED on e0 and e2, 1 on e1 and e3
    run_means = [1.0, (2 + 2 * SWAPPED) / 4]
    assert (random.runs, random.entries, random.sd_over) == (2, 4, "runs")
    assert random["mean"] == pytest.approx(np.mean(run_means)) and random.sd == pytest.approx(np.std(run_means, ddof=1))
    embedding = summary.loc[("NDCG@3", "embedding")]
    assert embedding.sd_over == "entries" and embedding.sd == pytest.approx(np.std([SWAPPED, 1, 1, 1], ddof=1))


def test_results_table_labels_n_runs_and_puts_the_expected_row_after_random():
    summary = pd.DataFrame([{"measure": "NDCG@3", "ranker": m, "runs": runs, "entries": 2, "mean": 0.5, "sd": 0.1,
                             "ci_low": 0.4, "ci_high": 0.6} for m, runs in (("value_aware", 1), ("random", 10))])
    expected = pd.DataFrame([{"measure": "NDCG@3", "ranker": "random (expected)", "entries": 2, "mean": 0.25}])
    table = results_table(summary, expected, ranker_order=("random", "embedding", "value_aware"))
    assert table.index.tolist() == ["random (10 runs; ± sd over runs)", "random (expected)", "value_aware"]
    assert table["NDCG@3 (n = 2 entries)"].tolist() == ["0.500 ± 0.100 [0.400, 0.600]", "0.250",
                                                        "0.500 ± 0.100 [0.400, 0.600]"]
    assert table["NDCG@5"].isna().all()  # every registered measure is a column
    assert table.index.name.startswith("mean ± sd over entries")


def test_paired_differences_keep_only_informative_entries_with_labels():
    rankings, labels, _ = constructed_case()
    values = per_entry(rankings, labels)
    everything = paired_differences(values, "value_aware")
    informative = paired_differences(values, "value_aware", labels)
    assert set(everything[everything.measure == "NDCG@3"].entry_id) == {"e0", "e1", "e2", "e3"}
    assert set(informative[informative.measure == "NDCG@3"].entry_id) == {"e0", "e2"}
    assert informative[informative.measure == "Hit@1 (g≥1)"].empty


def test_one_sided_tests_go_both_ways_and_holm_adjust_within_each_family():
    rows = pd.DataFrame({"measure": ["NDCG@3", "NDCG@3", "NDCG@5"], "baseline": ["base", "rand", "rand"],
                         "primary": [True, False, False]})
    worse = [-0.3, -0.1, -0.2, 0.1, -0.4, 1e-13]  # the last is a tie (within TIE_TOLERANCE)
    better = [0.3, 0.1, 0.2, 0.4, 0.2]
    differences = pd.concat([pd.DataFrame({"measure": m, "baseline": b, "difference": d})
                             for m, b, d in (("NDCG@3", "base", worse), ("NDCG@3", "rand", better),
                                             ("NDCG@5", "rand", worse))], ignore_index=True)
    table = one_sided_tests(differences, rows, seed=0)
    primary = table.iloc[0]
    # |d| = 3, 1, 2, 1, 4 (×0.1), sum −0.9: T* ≥ −0.9 unless every sign is negative (31 of 32 assignments);
    # T* ≤ −0.9 when the negative ones sum to 1.0 or 1.1 (3 of 32: all, or all but one of the two 0.1s)
    assert (primary.nonzero, primary.family_size) == (5, 1)
    # both directions of the one comparison in one Holm family: the smaller p (3/32) doubled
    assert primary.p == pytest.approx(31 / 32) and primary.p_against == pytest.approx(6 / 32)
    assert primary.test == ("exact sign-flip, one-sided (greater), 5 non-zero; Holm over both directions of "
                            "1 comparison")
    secondary = table.iloc[1:]
    assert secondary.p_unadjusted.tolist() == pytest.approx([1 / 32, 31 / 32])
    # Holm over both directions of the 2 secondary comparisons (4 p-values, sorted 1/32, 3/32, 31/32, 1):
    # 4 × 1/32, then 3 × 3/32, then 2 × 31/32 capped at 1
    assert secondary.p.tolist() == pytest.approx([4 / 32, 1.0])
    assert secondary.p_against.tolist() == pytest.approx([1.0, 9 / 32])
    assert secondary.test.str.endswith("; Holm over both directions of 2 comparisons").all()
    assert sign_flip_test(worse, 0, alternative="less").p == pytest.approx(3 / 32)
    with pytest.raises(ValueError, match="declared direction"):
        one_sided_tests(differences, rows, seed=0, alternative="two-sided")


def test_above_random_subtracts_each_pools_random_expectation():
    rankings, labels, _ = constructed_case()
    values = per_entry(rankings, labels)
    table = above_random(values, labels, ["NDCG@3"], seed=0, n_resamples=200).set_index("ranker")
    assert table.index.tolist() == ["random", "embedding", "value_aware"]
    # a two-candidate pool (2, 1): E[random NDCG@3] = (1 + SWAPPED) / 2; the constant pools score 1 under any order
    expected = (1 + SWAPPED) / 2
    assert table.at["value_aware", "mean"] == pytest.approx(2 * (1 - expected) / 4)
    assert table.at["embedding", "mean"] == pytest.approx(((SWAPPED - expected) + (1 - expected)) / 4)
    assert table.at["random", "mean"] == pytest.approx(0.0)  # its two runs are the two orders
    assert np.isnan(table.at["random", "ci_low"]) and table.at["random", "ci_over"] == "4 entries"
    assert MEASURES["NDCG@3"].random_expectation([2.0, 1.0]) == pytest.approx(expected)
