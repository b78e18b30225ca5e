"""Judge validity: agreement tables, label choice, correlation protocol, consistency and repeatability."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.analysis import validity
from lib.analysis.stats import cohen_kappa, krippendorff_alpha, unit_bootstrap
from lib.tables import SCHEMAS


def test_agreement_summary():
    row = validity.agreement([0, 1, 2, 2], [0, 1, 2, 1])
    assert row["n"] == 4 and row["exact_agreement"] == 0.75
    assert row["kappa"] == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2]))
    assert row["weighted_kappa"] == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2], "quadratic"))


def judged_passages():
    return pd.DataFrame({
        "human_grade": [0, 1, 2, 2, 0],
        "grade": pd.array([0, 1, 2, 1, 1], dtype="Int64"),             # 3 of 5 agree
        "rounded_expected": pd.array([0, 1, 2, 2, 0], dtype="Int64"),  # all agree: κ_w = 1
        "listwise_grade": pd.array([0, None, 2, 0, 0], dtype="Int64"),  # one failed; 3 of 4 agree
        "expected_grade": [0.2, 0.9, np.nan, 1.8, 0.1],
        "qid": ["q1", "q1", "q2", "q2", "q3"],
    })


def test_label_validity_and_choice_by_weighted_kappa():
    table = validity.label_validity(judged_passages(), unit="qid")
    assert table.index.tolist() == list(validity.LABEL_DEFINITIONS)
    assert table.failed.tolist() == [0, 0, 1] and table.n.tolist() == [5, 5, 4]
    assert table.exact_agreement.tolist() == [0.6, 1.0, 0.75]
    # 3 queries: fewer than the 10 units an interval needs
    assert table.units.tolist() == [3, 3, 3] and table.kappa_ci_low.isna().all() and set(table.ci_over) == {"3 queries"}
    assert validity.choose_label(table) == "pointwise rounded E[g]"
    written = validity.judge_validity_table(table, "constructed", "judge-x")
    assert sorted(written.columns) == sorted(SCHEMAS["judge_validity"])
    assert written.chosen.tolist() == [False, True, False]
    assert written.column.tolist() == ["grade", "rounded_expected", "listwise_grade"]


def test_expected_grade_correlation_skips_missing_expected_grades():
    rho, n = validity.expected_grade_correlation(judged_passages())
    # present pairs (E[g], human): (.2, 0), (.9, 1), (1.8, 2), (.1, 0): ranks agree up to the human tie
    assert n == 4 and rho == pytest.approx(pd.Series([0.2, 0.9, 1.8, 0.1]).corr(pd.Series([0, 1, 2, 0]), "spearman"))


def test_grade_distribution_counts_each_definition():
    table = validity.grade_distribution(judged_passages())
    assert table.index.tolist() == [0, 1, 2]
    assert table["pointwise argmax"].tolist() == [1, 3, 1] and table["listwise argmax"].tolist() == [3, 0, 1]


def test_judge_consistency_compares_the_judge_with_itself():
    labels = pd.DataFrame({"grade": [2, 2, 1, 0], "rounded_expected": [2, 1, 1, 0],
                           "listwise_grade": [2, 1, 1, 0], "listwise_shuffled_grade": [2, 1, 0, None]})
    table = validity.judge_consistency(labels)
    assert table.loc["listwise: generator order vs shuffled (position bias)", "n"] == 3
    assert table.exact_agreement.tolist() == [pytest.approx(2 / 3), 0.75, 1.0]


def test_repeatability_pairs_by_candidate_and_disagreement_is_its_complement():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c", "d"], "label": pd.array([2, 1, 1, 0], dtype="Int64"),
                           "expected_grade": [1.8, 1.2, 0.9, 0.3]})
    # the repeat sample in another order; d's repeat call failed
    repeat = pd.DataFrame({"candidate_id": ["c", "a", "d", "b"], "label": pd.array([1, 2, None, 2], dtype="Int64"),
                           "expected_grade": [1.0, 1.7, np.nan, 1.6]})
    pairs = validity.repeat_pairs(labels, repeat)
    assert pairs.candidate_id.tolist() == ["c", "a", "d", "b"] and pairs.label_first.tolist() == [1, 2, 0, 1]
    rep = validity.repeatability(labels, repeat)
    # pairs with both grades: c (1, 1), a (2, 2), b (1, 2) -> 2 of 3 agree
    assert rep["n"] == 3 and rep["exact_agreement"] == pytest.approx(2 / 3)
    assert rep["alpha_expected_grade"] == pytest.approx(
        krippendorff_alpha([[0.9, 1.8, 0.3, 1.2], [1.0, 1.7, None, 1.6]], level="interval"))
    assert validity.repeat_disagreement(labels, repeat) == pytest.approx(1 / 3)


def correlation_frame():
    return pd.DataFrame({"doc": [1, 1, 1, 2, 2, 2, 3, 3, 3],
                         "human": [1, 2, 3, 1, 2, 3, 2, 2, 2],   # doc 3 constant -> skipped
                         "judge": [1, 2, 3, 3, 2, 1, 1, 2, 3],
                         "other": [1, 2, 3, 1, 3, 2, 3, 2, 1]})


def test_per_group_correlation_skips_constant_groups():
    frame = correlation_frame()
    assert validity.per_group_correlation(frame, "doc", "human", "judge") == (pytest.approx(0.0), 2)  # mean(1, -1)
    assert validity.per_group_correlation(frame, "doc", "human", "judge", "kendall") == (pytest.approx(0.0), 2)


def test_geval_correlations_table():
    table = validity.geval_correlations(correlation_frame(), "doc", "human", ["judge", "other"])
    # other: doc 1 ρ = 1, doc 2 ρ = 0.5 -> 0.75; Kendall τ: 1 and 1/3 -> 2/3
    assert table.loc["other", "spearman"] == pytest.approx(0.75)
    assert table.loc["other", "kendall"] == pytest.approx(2 / 3)
    assert table.documents_kept.tolist() == [2, 2]


def test_sample_ids_is_seeded_sorted_and_ordered_by_key():
    ids = ["10", "2", "33", "2", "4", "100"]
    chosen = validity.sample_ids(ids, 3, seed=0, key=int)
    assert chosen == sorted(chosen, key=int) and len(set(chosen)) == 3 and set(chosen) <= set(ids)
    assert chosen == validity.sample_ids(list(reversed(ids)), 3, seed=0, key=int)  # order of ids does not matter
    draw = np.random.default_rng(0).choice(["2", "4", "10", "33", "100"], size=3, replace=False)
    assert chosen == sorted(draw.tolist(), key=int) and all(type(c) is str for c in chosen)
    assert validity.sample_ids(range(10), 4, seed=1) == sorted(np.random.default_rng(1).choice(10, 4, replace=False))


def test_agreement_ci_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(3)
    human = rng.integers(0, 3, 60)
    judge = np.where(rng.random(60) < 0.7, human, rng.integers(0, 3, 60))  # 70% copied: κ well above 0
    queries: np.ndarray = np.repeat(np.arange(12), 5)
    ci = validity.agreement_ci(human, judge, queries, seed=1, n_resamples=500)
    point = validity.agreement(human, judge)
    assert ci["kappa_ci_low"] < point["kappa"] < ci["kappa_ci_high"]
    assert ci["weighted_kappa_ci_low"] < point["weighted_kappa"] < ci["weighted_kappa_ci_high"]
    assert ci == validity.agreement_ci(human, judge, queries, seed=1, n_resamples=500)
    assert (ci["units"], ci["ci_over"]) == (12, "12 queries")
    # the interval is the unit bootstrap of κ over the queries
    by_query = unit_bootstrap(lambda x, y: cohen_kappa(x, y, [0, 1, 2]), [human, judge], queries, "queries", 1, 500)
    assert (ci["kappa_ci_low"], ci["kappa_ci_high"]) == (by_query.low, by_query.high)
    # perfect agreement: every resample has κ = 1
    perfect = validity.agreement_ci([0, 1, 2] * 4, [0, 1, 2] * 4, range(12), seed=0, n_resamples=200)
    assert perfect["kappa_ci_low"] == perfect["kappa_ci_high"] == pytest.approx(1.0)
    # the same items as 4 queries: no interval
    few = validity.agreement_ci(human, judge, queries % 4, seed=1, n_resamples=500)
    assert np.isnan(few["kappa_ci_low"]) and (few["units"], few["ci_over"]) == (4, "4 queries")


def test_constant_baselines_score_the_share_of_each_grade():
    table = validity.constant_baselines([0, 0, 0, 1, 2])
    assert table.index.tolist() == ["always 0 (majority)", "always 1", "always 2"]
    assert table.exact_agreement.tolist() == [0.6, 0.2, 0.2]
    assert table.kappa.fillna(0).abs().max() == 0 and table.weighted_kappa.fillna(0).abs().max() == 0


def test_confusion_shows_every_grade_and_skips_missing():
    frame = pd.DataFrame({"human": [0, 0, 2, 1], "judge": pd.array([1, 1, 2, None], dtype="Int64")})
    table = validity.confusion(frame, "human", "judge")
    assert table.values.tolist() == [[0, 2, 0], [0, 0, 0], [0, 0, 1]]


def test_near_cut_counts_expected_grades_next_to_each_rounding_cut():
    counts = validity.near_cut(pd.Series([0.46, 0.5, 0.56, 1.46, 1.54, 1.2, np.nan]), width=0.05)
    assert counts == {"n": 6, "within ±0.05 of 0.5": 2, "within ±0.05 of 1.5": 2, "total": 4}


def test_first_position_rate_compares_the_first_shown_with_all():
    grades = pd.Series([2, 1, 1, 2, 0, 0], dtype="Int64")  # pools rows (0,1,2) and (3,4,5)
    rate = validity.first_position_rate(grades, first_rows=[0, 3])
    assert rate == {"pools": 2, "first_shown_top": 2, "first_shown_top_share": 1.0,
                    "all_items_top_share": pytest.approx(2 / 6)}


def test_cut_effect_compares_cut_full_and_human():
    frame = pd.DataFrame({"human": [0, 2, 2, 0], "cut": [0, 1, 2, 1], "full": [0, 2, 2, 1]})
    table = validity.cut_effect(frame, "human", "cut", "full")
    assert table.exact_agreement.tolist() == [0.75, 0.5, 0.75]


def test_label_by_group_gives_grade_shares_per_group():
    frame = pd.DataFrame({"length_ok": [True, True, False, False, False],
                          "label": pd.array([2, 1, 2, 2, None], dtype="Int64")})
    table = validity.label_by_group(frame, "length_ok")
    assert table.loc[True].tolist() == [0.0, 0.5, 0.5, 2] and table.loc[False].tolist() == [0.0, 0.0, 1.0, 2]


def test_reshuffled_agreement_skips_pools_shown_in_the_same_order():
    from lib.judges.items import JudgePool
    labels = pd.DataFrame({"listwise_grade": [2, 1, 2, 2], "listwise_shuffled_grade": [2, 1, 1, 2]})
    shown = [JudgePool("s", "", ("a", "b"), (0, 1)), JudgePool("s", "", ("c", "d"), (2, 3))]
    reshown = [JudgePool("s", "", ("a", "b"), (0, 1)), JudgePool("s", "", ("d", "c"), (3, 2))]
    result = validity.reshuffled_agreement(labels, shown, reshown)
    # only the second pool moved: rows 2 (2 vs 1) and 3 (2 vs 2) -> 1 of 2 agree
    assert (result["pools_reordered"], result["same_first_item"], result["n"]) == (1, 1, 2)
    assert result["exact_agreement"] == 0.5


def test_system_orders_show_ties_and_kendall_tau_b():
    frame = pd.DataFrame({"dataset": ["a"] * 6, "system": ["X", "X", "Y", "Y", "Z", "Z"],
                          "utility": [3, 3, 2, 2, 1, 1], "score": [0.9, 0.7, 0.5, 0.3, 0.4, 0.4],
                          "sparse": [0.2, np.nan, 0.2, np.nan, np.nan, np.nan]})
    table = validity.system_orders(frame, ["score", "sparse"], "utility", by="dataset")
    score = table.loc[("a", "score")]
    # means X 0.8, Y 0.4, Z 0.4 against utility 3, 2, 1: τ-b with one tie = 2 / sqrt(3 · 2) (scipy cross-check)
    assert score["order by score"] == "X > Y = Z" and score["order by utility"] == "X > Y > Z"
    assert score["kendall_tau"] == pytest.approx(2 / np.sqrt(6))
    sparse = table.loc[("a", "sparse")]
    assert sparse["systems scored"] == 2 and sparse["order by score"] == "X = Y" and np.isnan(sparse["kendall_tau"])


def test_grade_agreement_table_shows_the_grades_used_and_a_constant_judge():
    frame = pd.DataFrame({"human_grade": [0, 0, 0, 1, 2], "judge": [2, 2, 2, 2, 2]})
    table = validity.grade_agreement_table(frame, ["judge"], categories=(0, 1, 2), constant=0)
    assert table.loc["judge", "grades used"] == "2:5" and table.loc["judge", "exact_agreement"] == 0.2
    assert table.loc["always 0", "exact_agreement"] == 0.6 and table.loc["always 0", "grades used"] == "0:5"
    assert table.loc["judge", "kappa"] == pytest.approx(0.0)  # a constant judge: κ 0 by construction
