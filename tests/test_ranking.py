"""Ranking metrics: ir_measures cross-checked by an independent implementation and hand-computed cases."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from lib.metrics import METRICS, per_entry, random_expectation


def ref_ndcg(gains_in_rank_order, k):
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains_in_rank_order[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains_in_rank_order, reverse=True)[:k]))
    return dcg / ideal


def ref_hit(gains_in_rank_order, k, t):
    return float(any(g >= t for g in gains_in_rank_order[:k]))


def reference(gains, name):
    metric = METRICS[name]
    return ref_hit(gains, metric.cutoff, metric.min_grade) if name.startswith("Hit") else ref_ndcg(gains, metric.cutoff)


def tables_for(pools):
    """pools: {entry: [label of rank 1, rank 2, ...]} -> (rankings, labels)."""
    rankings, labels = [], []
    for entry, gains in pools.items():
        for rank, gain in enumerate(gains, start=1):
            cid = f"{entry}/c{rank}"
            rankings.append({"method": "m", "run": 0, "entry_id": entry, "rank": rank, "candidate_id": cid})
            labels.append({"entry_id": entry, "candidate_id": cid, "label": gain})
    return pd.DataFrame(rankings), pd.DataFrame(labels).astype({"label": "Int64"})


def test_hand_computed_ndcg_and_hits():
    rankings, labels = tables_for({"e": [0, 1, 2, 0, 1]})
    values = per_entry(rankings, labels).set_index("metric").value
    # DCG@3 = 0 + 1/log2(3) + 2/log2(4) = 1.630930; IDCG@3 = 2 + 1/log2(3) + 1/log2(4) = 3.130930
    assert values["NDCG@3"] == pytest.approx((1 / math.log2(3) + 1) / (2 + 1 / math.log2(3) + 0.5), abs=1e-12)
    assert (values["Hit@1 (g≥1)"], values["Hit@3 (g≥1)"], values["Hit@1 (g=2)"], values["Hit@3 (g=2)"]) == (0, 1, 0, 1)


def test_library_agrees_with_reference_on_all_orders_of_a_pool():
    pools = {f"p{i}": list(order) for i, order in enumerate(set(itertools.permutations([2, 1, 1, 0, 0])))}
    rankings, labels = tables_for(pools)
    values = per_entry(rankings, labels)
    for row in values.itertuples():
        assert row.value == pytest.approx(reference(pools[row.entry_id], row.metric), abs=1e-9)
    assert len(values) == len(pools) * len(METRICS)


def test_entries_without_relevant_candidates_are_excluded_not_zero():
    rankings, labels = tables_for({"none": [0, 0, 0], "only1": [0, 1, 1], "has2": [2, 0, 1]})
    values = per_entry(rankings, labels)
    assert set(values[values.metric == "NDCG@3"].entry_id) == {"only1", "has2"}
    assert set(values[values.metric == "Hit@1 (g=2)"].entry_id) == {"has2"}


def test_unlabelled_candidates_are_dropped_from_the_ranking():
    rankings, labels = tables_for({"e": [0, 2, 1]})
    labels.loc[0, "label"] = pd.NA  # the judge failed on the rank-1 candidate
    values = per_entry(rankings, labels).set_index("metric").value
    assert values["Hit@1 (g=2)"] == 1.0 and values["NDCG@3"] == pytest.approx(1.0)


@pytest.mark.parametrize("gains", [[2, 1, 1, 0, 0], [1, 0, 0, 0, 0], [2, 2, 0], [1], [0, 0]])
@pytest.mark.parametrize("name", sorted(METRICS))
def test_random_expectation_equals_the_mean_over_all_orders(gains, name):
    metric = METRICS[name]
    if not any(g >= metric.min_grade for g in gains):
        # no candidate can be relevant: Hit is 0 for every order; NDCG is undefined (IDCG = 0)
        value = random_expectation(gains, metric)
        assert math.isnan(value) if name.startswith("NDCG") else value == 0.0
        return
    orders = list(itertools.permutations(gains))
    exact = np.mean([reference(list(o), name) for o in orders])
    assert random_expectation(gains, metric) == pytest.approx(exact, abs=1e-12)


def test_flip_labels_changes_exactly_the_fraction():
    from lib.metrics import flip_labels

    labels = pd.DataFrame({"entry_id": ["e"] * 10, "candidate_id": [f"c{i}" for i in range(10)],
                           "label": pd.array([0, 1, 2, 0, 1, 2, 0, 1, None, 2], dtype="Int64")})
    flipped = flip_labels(labels, 0.33, seed=1)
    changed = (flipped.label != labels.label).fillna(False)
    assert changed.sum() == 3 and flipped.label.isna().sum() == 1
    assert flipped.equals(flip_labels(labels, 0.33, seed=1))


def test_summary_and_comparisons_on_a_constructed_case():
    from lib.metrics import compare_to_baselines, method_summary

    values = pd.DataFrame(
        [{"method": "sys", "run": 0, "entry_id": f"e{i}", "metric": "NDCG@3", "value": 1.0} for i in range(6)]
        + [{"method": "rand", "run": r, "entry_id": f"e{i}", "metric": "NDCG@3", "value": float(r == 0)}
           for i in range(6) for r in range(2)])
    summary = method_summary(values, seed=0).set_index("method")
    assert summary.loc["rand", "mean"] == 0.5 and summary.loc["rand", "entries"] == 6  # averaged over runs
    comparison = compare_to_baselines(values, "sys", seed=0).iloc[0]
    assert comparison["baseline"] == "rand" and comparison["mean diff"] == 0.5 and comparison["n"] == 6


def test_random_expected_rows_average_over_scoreable_entries():
    from lib.metrics import random_expected_rows

    _, labels = tables_for({"a": [2, 0], "b": [1, 0], "c": [0, 0]})
    rows = random_expected_rows(labels).set_index("metric")
    assert rows.loc["Hit@1 (g≥1)", "entries"] == 2 and rows.loc["Hit@1 (g≥1)", "mean"] == 0.5
    assert rows.loc["Hit@1 (g=2)", "entries"] == 1 and rows.loc["Hit@1 (g=2)", "mean"] == 0.5
