"""Ranking measures: ir_measures cross-checked by an independent implementation and hand-computed cases."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from lib.analysis.ranking import (
    MEASURES,
    NDCG,
    Hit,
    coverage,
    per_entry,
    random_expected_rows,
    rankers_in,
    register,
    unorderable_pools,
    value_range,
)


def ref_ndcg(gains_in_rank_order, k):
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains_in_rank_order[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains_in_rank_order, reverse=True)[:k]))
    return dcg / ideal


def ref_hit(gains_in_rank_order, k, t):
    return float(any(g >= t for g in gains_in_rank_order[:k]))


def reference(gains, name):
    measure = MEASURES[name]
    if isinstance(measure, Hit):
        return ref_hit(gains, measure.cutoff, measure.min_grade)
    assert isinstance(measure, NDCG)
    return ref_ndcg(gains, measure.cutoff)


def tables_for(pools, dtype="Int64"):
    """pools: {entry: [label of rank 1, rank 2, ...]} -> (rankings, labels), labels of ``dtype``."""
    rankings, labels = [], []
    for entry, gains in pools.items():
        for rank, gain in enumerate(gains, start=1):
            cid = f"{entry}/c{rank}"
            rankings.append({"ranker": "m", "run": 0, "entry_id": entry, "rank": rank, "candidate_id": cid})
            labels.append({"entry_id": entry, "candidate_id": cid, "label": gain})
    return pd.DataFrame(rankings), pd.DataFrame(labels).astype({"label": dtype})


def test_registry_names_and_types():
    assert list(MEASURES) == ["Hit@1 (g≥1)", "Hit@3 (g≥1)", "Hit@1 (g=2)", "Hit@3 (g=2)", "NDCG@3", "NDCG@5"]
    assert MEASURES["Hit@3 (g=2)"] == Hit(cutoff=3, min_grade=2) and MEASURES["NDCG@5"] == NDCG(cutoff=5)
    with pytest.raises(ValueError, match="already registered"):
        register(NDCG(3))


def test_hand_computed_ndcg_and_hits():
    rankings, labels = tables_for({"e": [0, 1, 2, 0, 1]})
    values = per_entry(rankings, labels).set_index("measure").value
    # DCG@3 = 0 + 1/log2(3) + 2/log2(4) = 1.630930; IDCG@3 = 2 + 1/log2(3) + 1/log2(4) = 3.130930
    assert values["NDCG@3"] == pytest.approx((1 / math.log2(3) + 1) / (2 + 1 / math.log2(3) + 0.5), abs=1e-12)
    assert (values["Hit@1 (g≥1)"], values["Hit@3 (g≥1)"], values["Hit@1 (g=2)"], values["Hit@3 (g=2)"]) == (0, 1, 0, 1)


def test_library_agrees_with_reference_on_all_orders_of_a_pool():
    pools = {f"p{i}": list(order) for i, order in enumerate(set(itertools.permutations([2, 1, 1, 0, 0])))}
    rankings, labels = tables_for(pools)
    values = per_entry(rankings, labels)
    for row in values.itertuples():
        assert row.value == pytest.approx(reference(pools[row.entry_id], row.measure), abs=1e-9)
    assert len(values) == len(pools) * len(MEASURES)


def test_graded_gains_such_as_expected_grades_agree_with_the_reference():
    # E[g] gains reach ir_measures in millionths: NDCG and Hit must equal the reference on the raw gains
    pools = {f"p{i}": list(order) for i, order in enumerate(itertools.permutations([1.72, 1.15, 1.5, 0.31]))}
    rankings, labels = tables_for(pools, dtype=float)
    values = per_entry(rankings, labels)
    for row in values.itertuples():
        assert row.value == pytest.approx(reference(pools[row.entry_id], row.measure), abs=1e-6)
    # Hit@k (g=2) needs a gain of 2: no pool reaches it, so those measures score no entry
    assert set(values.measure) == set(MEASURES) - {"Hit@1 (g=2)", "Hit@3 (g=2)"}


def test_entries_without_relevant_candidates_are_excluded_not_zero():
    rankings, labels = tables_for({"none": [0, 0, 0], "only1": [0, 1, 1], "has2": [2, 0, 1]})
    values = per_entry(rankings, labels)
    assert set(values[values.measure == "NDCG@3"].entry_id) == {"only1", "has2"}
    assert set(values[values.measure == "Hit@1 (g=2)"].entry_id) == {"has2"}
    table = coverage(rankings, labels)
    # columns: threshold, scored, excluded, informative, labelled candidates below the threshold
    assert table.loc["NDCG@3"].tolist() == ["g ≥ 1", 2, 1, 2, 5]
    assert table.loc["Hit@3 (g=2)"].tolist() == ["g ≥ 2", 1, 2, 0, 8]  # has2's top 3 always hold its 2


def test_unlabelled_candidates_are_dropped_from_the_ranking():
    rankings, labels = tables_for({"e": [0, 2, 1, 0]})
    labels.loc[0, "label"] = pd.NA  # the judge failed on the rank-1 candidate: the condensed list is 2, 1, 0
    values = per_entry(rankings, labels).set_index("measure").value
    assert values["Hit@1 (g=2)"] == 1.0 and values["NDCG@3"] == pytest.approx(1.0)
    labels.loc[1, "label"] = 0  # condensed list 0, 1, 0: NDCG@3 = (1/log2 3) / 1, not the uncondensed 1/log2 4
    values = per_entry(rankings, labels).set_index("measure").value
    assert values["NDCG@3"] == pytest.approx(1 / math.log2(3)) and values["Hit@1 (g≥1)"] == 0.0


@pytest.mark.parametrize("gains", [[2, 1, 1, 0, 0], [1, 0, 0, 0, 0], [2, 2, 0], [1], [0, 0]])
@pytest.mark.parametrize("name", sorted(MEASURES))
def test_random_expectation_equals_the_mean_over_all_orders(gains, name):
    measure = MEASURES[name]
    if not any(g >= measure.min_grade for g in gains):
        # no candidate can be relevant: Hit is 0 for every order; NDCG is undefined (IDCG = 0)
        value = measure.random_expectation(gains)
        assert math.isnan(value) if isinstance(measure, NDCG) else value == 0.0
        return
    orders = list(itertools.permutations(gains))
    exact = np.mean([reference(list(o), name) for o in orders])
    assert measure.random_expectation(gains) == pytest.approx(exact, abs=1e-12)


def test_random_expectation_by_hand():
    # 5 candidates, 2 relevant: P(top 1 holds one) = 2/5; P(top 3 holds one) = 1 − C(3,3)/C(5,3) = 9/10
    assert Hit(1, 1).random_expectation([1, 1, 0, 0, 0]) == pytest.approx(0.4)
    assert Hit(3, 1).random_expectation([1, 1, 0, 0, 0]) == pytest.approx(0.9)
    # gains 2, 0: E[DCG@3] = 1·(1 + 1/log2 3), IDCG@3 = 2
    assert NDCG(3).random_expectation([2, 0]) == pytest.approx((1 + 1 / math.log2(3)) / 2)


def test_random_expected_rows_average_over_scoreable_entries():
    _, labels = tables_for({"a": [2, 0], "b": [1, 0], "c": [0, 0]})
    rows = random_expected_rows(labels).set_index("measure")
    assert rows.loc["Hit@1 (g≥1)", "entries"] == 2 and rows.loc["Hit@1 (g≥1)", "mean"] == 0.5
    assert rows.loc["Hit@1 (g=2)", "entries"] == 1 and rows.loc["Hit@1 (g=2)", "mean"] == 0.5
    assert set(rows.ranker) == {"random (expected)"}


def test_value_range_marks_the_entries_whose_order_matters():
    _, labels = tables_for({"flat2": [2, 2, 2], "flat1": [1, 1, 1, 1], "one0": [1, 1, 0], "mixed": [2, 1, 1, 1, 1],
                            "low": [1, 0, 0, 0, 0]})
    table = value_range(labels).set_index(["measure", "entry_id"])
    # constant labels: every order scores the same under every measure
    for entry in ("flat2", "flat1"):
        assert not table.xs(entry, level="entry_id").informative.any()
    # one0 (1, 1, 0): Hit@1 (g≥1) worst order puts the 0 first -> 0 vs 1; Hit@3 (g≥1) always hits (3 candidates)
    assert table.loc[("Hit@1 (g≥1)", "one0")].tolist()[:2] == [1.0, 0.0]
    assert table.loc[("Hit@1 (g≥1)", "one0"), "informative"]
    assert not table.loc[("Hit@3 (g≥1)", "one0"), "informative"]
    # mixed (2, 1, 1, 1, 1): best NDCG@3 = 1; worst order 1, 1, 1 -> (1 + 1/log2 3 + 1/2) / (2 + 1/log2 3 + 1/2)
    worst = (1 + 1 / math.log2(3) + 0.5) / (2 + 1 / math.log2(3) + 0.5)
    assert table.loc[("NDCG@3", "mixed"), "worst"] == pytest.approx(worst)
    assert not table.loc[("Hit@3 (g≥1)", "mixed"), "informative"]  # no candidate below 1
    # low (1, 0, 0, 0, 0): four candidates below 1, so a top 3 can miss the only relevant one
    assert table.loc[("Hit@3 (g≥1)", "low"), "informative"]
    # entries a measure does not score are absent (no candidate of grade 2 in flat1, one0, low)
    assert set(table.xs("Hit@1 (g=2)", level="measure").index) == {"flat2", "mixed"}
    ndcg = table.xs("NDCG@3", level="measure")
    assert set(ndcg.index[ndcg.informative]) == {"one0", "mixed", "low"}


def test_every_order_scores_between_the_worst_and_the_best():
    gains = [2, 1, 1, 0, 0]
    pools = {f"p{i}": list(order) for i, order in enumerate(sorted(set(itertools.permutations(gains))))}
    rankings, labels = tables_for(pools)
    values = per_entry(rankings, labels).merge(value_range(labels), on=["measure", "entry_id"])
    assert (values.value >= values.worst - 1e-12).all() and (values.value <= values.best + 1e-12).all()
    extremes = values.groupby("measure").agg(low=("value", "min"), high=("value", "max"), worst=("worst", "first"),
                                             best=("best", "first"))
    assert np.allclose(extremes.low, extremes.worst) and np.allclose(extremes.high, extremes.best)


def test_rankers_in_follows_ranker_order_and_keeps_unknown_methods():
    rankings = pd.DataFrame({"ranker": ["value_aware", "zz_new", "random", "embedding", "aa_new"]})
    assert rankers_in(rankings, order=("random", "embedding", "value_aware")) == [
        "random", "embedding", "value_aware", "aa_new", "zz_new"]


def test_unorderable_pools_count_single_and_constant_pools_apart():
    labels = pd.DataFrame({"entry_id": ["one", "flat", "flat", "mixed", "mixed", "failed", "failed"],
                           "label": [1.0, 1.5, 1.5, 1.5, 1.2, 1.0, None]})
    # "failed" keeps one labelled candidate: it counts as a pool of one
    assert unorderable_pools(labels) == (2, 1, 4)
