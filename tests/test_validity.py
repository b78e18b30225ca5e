"""Judge validity: agreement tables, label choice, correlation protocol, consistency and repeatability."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.analysis import validity
from lib.analysis.stats import cohen_kappa, unit_bootstrap


def test_agreement_summary():
    row = validity.agreement([0, 1, 2, 2], [0, 1, 2, 1])
    assert row["n"] == 4 and row["exact_agreement"] == 0.75
    assert row["kappa"] == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2]))
    assert row["weighted_kappa"] == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 2, 1], [0, 1, 2], "quadratic"))


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


def test_confusion_shows_every_grade_and_skips_missing():
    frame = pd.DataFrame({"human": [0, 0, 2, 1], "judge": pd.array([1, 1, 2, None], dtype="Int64")})
    table = validity.confusion(frame, "human", "judge")
    assert table.values.tolist() == [[0, 2, 0], [0, 0, 0], [0, 0, 1]]


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


def test_repeat_pairs_keep_the_repeat_order_beside_the_first_judgment():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c", "d"], "label": pd.array([2, 1, 1, 0], dtype="Int64"),
                           "expected_grade": [1.8, 1.2, 0.9, 0.3]})
    # the repeat sample in another order; d's repeat call failed
    repeat = pd.DataFrame({"candidate_id": ["c", "a", "d", "b"], "label": pd.array([1, 2, None, 2], dtype="Int64"),
                           "expected_grade": [1.0, 1.7, np.nan, 1.6]})
    pairs = validity.repeat_pairs(labels, repeat)
    assert pairs.candidate_id.tolist() == ["c", "a", "d", "b"] and pairs.label_first.tolist() == [1, 2, 0, 1]
    assert pairs.expected_grade_repeat.tolist()[:2] == [1.0, 1.7] and pd.isna(pairs.label_repeat.iloc[2])

