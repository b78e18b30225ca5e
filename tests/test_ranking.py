"""Ranking measures: the kernels checked against ir_measures (pytrec_eval, the reference), an independent
implementation and hand-computed cases."""
from __future__ import annotations

import itertools
import math

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import Qrel, ScoredDoc

from lib import paths
from lib.analysis.ranking import (
    GAIN_SCALE,
    MEASURES,
    NDCG,
    Hit,
    coverage,
    per_entry,
    random_expected_rows,
    rankers_in,
    register,
    scoreable_entries,
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


def ir_measure(measure):
    """The ir_measures (pytrec_eval) measure a registered measure reproduces: gains in millionths, judged only."""
    if isinstance(measure, Hit):
        return ir_measures.Success(rel=measure.min_grade * GAIN_SCALE, judged_only=True) @ measure.cutoff
    assert isinstance(measure, NDCG)
    return ir_measures.nDCG(judged_only=True) @ measure.cutoff


def ir_values(labelled, runs):
    """{(run key, entry, measure): value} by ir_measures; ``runs``: {key: [ScoredDoc]}; the entries of each
    (run key, measure) in the order ir_measures returns them, under "order"."""
    qrels = [Qrel(r.entry_id, r.candidate_id, round(float(r.label) * GAIN_SCALE)) for r in labelled.itertuples()]
    names = {str(ir_measure(m)): name for name, m in MEASURES.items()}
    values: dict[tuple, float] = {}
    order: dict[tuple, list[str]] = {}
    for key, run in runs.items():
        for m in ir_measures.iter_calc([ir_measure(m) for m in MEASURES.values()], qrels, run):
            if m.query_id in scoreable_entries(labelled, MEASURES[names[str(m.measure)]]):
                values[key, m.query_id, names[str(m.measure)]] = m.value
                order.setdefault((key, names[str(m.measure)]), []).append(m.query_id)
    return values, order


def assert_per_entry_equals_ir_measures(rankings, labels):
    """per_entry gives ir_measures' rows, values (to 1e-12) and, per (ranker, run, measure), its entry order;
    returns the largest difference."""
    labelled = labels.dropna(subset=["label"])
    runs = {key: [ScoredDoc(r.entry_id, r.candidate_id, -float(r.rank)) for r in group.itertuples()]
            for key, group in rankings.groupby(["ranker", "run"], sort=False)}
    expected, expected_order = ir_values(labelled, runs)
    values = per_entry(rankings, labels)
    got = {((r.ranker, r.run), r.entry_id, r.measure): r.value for r in values.itertuples()}
    assert got.keys() == expected.keys() and len(values) == len(got)
    order = {key: part.entry_id.tolist() for key, part in values.groupby(
        [values.ranker, values.run, values.measure], sort=False)}
    assert {((k[0], k[1]), k[2]): v for k, v in order.items()} == expected_order
    gap = max((abs(got[k] - expected[k]) for k in expected), default=0.0)
    assert gap <= 1e-12
    return gap


def random_run(seed, n_entries=40, rankers=3):
    """Random pools of 1–8 candidates with grades, float gains or both, about 15% unjudged, and rankings with
    ties in rank (several candidates share a rank)."""
    rng = np.random.default_rng(seed)
    rankings, labels = [], []
    for e in range(n_entries):
        pool = [f"e{e}/c{i}" for i in range(int(rng.integers(1, 9)))]
        kind = rng.choice(["grade", "float", "mixed"])
        for c in pool:
            gain = (float(rng.integers(0, 3)) if kind == "grade" or (kind == "mixed" and rng.random() < 0.5)
                    else float(rng.choice([rng.uniform(0, 2), round(rng.uniform(0, 2), 1), 2.0])))
            labels.append({"entry_id": f"e{e}", "candidate_id": c, "label": None if rng.random() < 0.15 else gain})
        for ranker in range(rankers):
            ranks = rng.integers(1, len(pool) + 1, size=len(pool))  # duplicates are ties
            rankings += [{"ranker": f"m{ranker}", "run": 0, "entry_id": f"e{e}", "rank": int(r), "candidate_id": c}
                         for r, c in zip(ranks, rng.permutation(pool), strict=True)]
    return pd.DataFrame(rankings), pd.DataFrame(labels, columns=["entry_id", "candidate_id", "label"])


@pytest.mark.parametrize("seed", range(5))
def test_kernels_equal_ir_measures_on_random_pools_with_ties_and_unjudged_candidates(seed):
    rankings, labels = random_run(seed)
    assert_per_entry_equals_ir_measures(rankings, labels)


def test_kernels_equal_ir_measures_on_the_committed_run():
    if not (paths.TABLES / "rankings.parquet").exists():
        pytest.skip("no committed run (chapter 02/03 outputs)")
    rankings = pd.read_parquet(paths.TABLES / "rankings.parquet")
    labels = pd.read_parquet(paths.TABLES / "labels.parquet")
    assert assert_per_entry_equals_ir_measures(rankings, labels) == 0.0  # to the bit


def test_value_range_equals_ir_measures_on_random_pools():
    _, labels = random_run(11)
    labelled = labels.dropna(subset=["label"])
    runs = {end: [ScoredDoc(r.entry_id, r.candidate_id, sign * float(r.label)) for r in labelled.itertuples()]
            for end, sign in (("best", 1.0), ("worst", -1.0))}
    expected, _ = ir_values(labelled, runs)
    table = value_range(labels)
    for end in ("best", "worst"):
        got = {(end, r.entry_id, r.measure): getattr(r, end) for r in table.itertuples()}
        assert got.keys() == {k for k in expected if k[0] == end}
        assert max(abs(got[k] - expected[k]) for k in got) <= 1e-12


def test_tied_ranks_are_ordered_by_candidate_id_descending_as_in_trec_eval():
    # a and b share rank 1: trec_eval shows b (the greater id) first, so Hit@1 (g≥1) = 1 and NDCG@3 = 1
    rankings = pd.DataFrame({"ranker": "m", "run": 0, "entry_id": "e", "rank": [1, 1, 2],
                             "candidate_id": ["a", "b", "c"]})
    labels = pd.DataFrame({"entry_id": "e", "candidate_id": ["a", "b", "c"], "label": [0.0, 1.0, 0.0]})
    values = per_entry(rankings, labels).set_index("measure").value
    assert values["Hit@1 (g≥1)"] == 1.0 and values["NDCG@3"] == 1.0
    swapped = per_entry(rankings, labels.assign(label=[1.0, 0.0, 0.0])).set_index("measure").value
    assert swapped["Hit@1 (g≥1)"] == 0.0 and swapped["NDCG@3"] == pytest.approx(1 / math.log2(3))
    assert_per_entry_equals_ir_measures(rankings, labels)


def test_a_ranking_with_no_judged_candidate_scores_zero_and_gains_resolve_to_millionths():
    rankings = pd.DataFrame({"ranker": "m", "run": 0, "entry_id": ["e", "e", "f", "f"], "rank": [1, 2, 1, 2],
                             "candidate_id": ["x", "y", "g", "h"]})
    # e's judged candidate is not ranked (x, y unjudged): 0, as trec_eval -J; f's 0.9999996 is 1 in millionths
    labels = pd.DataFrame({"entry_id": ["e", "e", "f", "f"], "candidate_id": ["a", "x", "g", "h"],
                           "label": [1.0, None, 0.9999996, 1.5]})
    values = per_entry(rankings, labels).set_index(["entry_id", "measure"]).value
    assert values["e", "NDCG@3"] == 0.0 and values["e", "Hit@3 (g≥1)"] == 0.0
    assert values["f", "Hit@1 (g≥1)"] == 1.0  # the entry is scoreable by h's 1.5; g counts as 1.000000
    assert_per_entry_equals_ir_measures(rankings, labels)


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
