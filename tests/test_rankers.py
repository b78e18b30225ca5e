"""Rankers: permutations, determinism, seeded tie rule, failed candidates, hand-checked orderings, agreement
(Kendall τ over runs), confidence vs generator order, and nudge length in the top k."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import rankers
from lib.analysis.stats import kendall_tau_b
from lib.design import PERSONAS, PERSONAS_BY_ID

PERSONA = PERSONAS[0]


def make_pool(vectors, confidence, texts=None, entry_id="e", entry_vector=(1.0, 0.0), category="support"):
    n = len(vectors)
    candidates = pd.DataFrame({
        "candidate_id": [f"{entry_id}/c{i}" for i in range(n)], "position": range(n),
        "nudge_text": texts if texts is not None else [f"text {i}" for i in range(n)],
        "confidence": confidence,
    })
    return rankers.Pool(entry_id, np.asarray(entry_vector), category, PERSONA, candidates, np.asarray(vectors, float))


TINY = {"vectors": [[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]], "confidence": [0.9, 0.2, 0.5]}
CATEGORY = rankers.CategoryOnlyRanker(names=("action", "support"), definition_vectors=np.eye(2))
VALUE_AWARE = rankers.ValueAwareRanker({PERSONA.persona_id: np.array([0.0, 1.0])}, alpha=0.5)
ALL = [rankers.RandomRanker(seed=1), rankers.GeneratorOrderRanker(), rankers.EmbeddingSimilarityRanker(), CATEGORY,
       rankers.SelfConfidenceRanker(), VALUE_AWARE]


def ranked_ids(ranker, pool, tie_seed=0):
    return rankers.order(pool, ranker.scores(pool), tie_seed, ranker.name).candidate_id.str[-2:].tolist()


@pytest.mark.parametrize("ranker, expected", [
    (rankers.EmbeddingSimilarityRanker(), ["c1", "c2", "c0"]),      # cos with entry: 0, 1, .6
    (rankers.SelfConfidenceRanker(), ["c0", "c2", "c1"]),            # .9, .2, .5
    (rankers.GeneratorOrderRanker(), ["c0", "c1", "c2"]),            # positions 0, 1, 2
    # support-definition cosine 1, 0, .8; c0 and c2 are classified 'support' (match), c1 'action'
    (CATEGORY, ["c0", "c2", "c1"]),
])
def test_hand_checked_orderings(ranker, expected):
    assert ranked_ids(ranker, make_pool(**TINY)) == expected


def test_value_aware_orders_a_tie_by_the_seeded_tie_order():
    # 0.5·cos(entry) + 0.5·cos(values): c0 .5, c1 .5, c2 .7 -> c2 first, then the tie c0/c1 in tie order
    ranker, pool = VALUE_AWARE, make_pool(**TINY)
    assert ranker.scores(pool) == pytest.approx([0.5, 0.5, 0.7])
    ties = rankers.tie_order("e", 3, 0, "value_aware")
    assert ranked_ids(ranker, pool) == ["c2"] + (["c0", "c1"] if ties[0] < ties[1] else ["c1", "c0"])


def test_generator_order_ranks_by_position_whatever_the_table_order():
    pool = make_pool(vectors=np.eye(4), confidence=[0.5] * 4)
    shuffled = rankers.Pool("e", pool.entry_vector, "support", PERSONA,
                            pool.candidates.assign(position=[2, 0, 3, 1]), pool.vectors)
    table = rankers.order(shuffled, rankers.GeneratorOrderRanker().scores(shuffled), tie_seed=5)
    assert table.candidate_id.tolist() == ["e/c1", "e/c3", "e/c0", "e/c2"]  # positions 0, 1, 2, 3
    assert (table["rank"] == table.candidate_id.map(dict(zip(shuffled.candidates.candidate_id,
                                                             shuffled.candidates.position, strict=True))) + 1).all()


def test_ties_are_broken_by_a_seeded_random_order():
    # Six candidates with one confidence: the order is the tie order alone.
    pools = [make_pool(vectors=np.eye(6), confidence=[0.5] * 6, entry_id=f"e{i}") for i in range(20)]
    conf = rankers.SelfConfidenceRanker()
    first = [ranked_ids(conf, p, tie_seed=3) for p in pools]
    assert first == [ranked_ids(conf, p, tie_seed=3) for p in pools]  # reproducible with the seed
    assert first != [ranked_ids(conf, p, tie_seed=4) for p in pools]  # another seed, another order
    assert len({tuple(o) for o in first}) > 10  # not the generator's order, and not the same in every pool
    assert sum(o == [f"c{i}" for i in range(6)] for o in first) <= 1
    # the ranker is part of the seed: two rankers tying on the same candidates do not agree by construction
    assert [rankers.tie_order(p.entry_id, 6, 3, "a").tolist() for p in pools] != \
           [rankers.tie_order(p.entry_id, 6, 3, "b").tolist() for p in pools]
    # ties only reorder equal scores: the strictly higher score stays first under every seed
    pool = make_pool(vectors=np.eye(3), confidence=[0.2, 0.9, 0.2])
    assert {ranked_ids(conf, pool, s)[0] for s in range(10)} == {"c1"}
    assert {tuple(ranked_ids(conf, pool, s)[1:]) for s in range(10)} == {("c0", "c2"), ("c2", "c0")}


@pytest.mark.parametrize("ranker", ALL, ids=lambda r: r.name)
def test_every_ranker_returns_a_permutation_and_handles_edge_pools(ranker):
    table = rankers.order(make_pool(**TINY), ranker.scores(make_pool(**TINY)), tie_seed=0)
    assert sorted(table.candidate_id) == ["e/c0", "e/c1", "e/c2"] and table["rank"].tolist() == [1, 2, 3]
    single = make_pool(vectors=[[0.6, 0.8]], confidence=[0.3])
    assert rankers.order(single, ranker.scores(single), tie_seed=0).candidate_id.tolist() == ["e/c0"]
    failed = make_pool(**TINY, texts=["a nudge", None, "  "])
    ranked = rankers.order(failed, ranker.scores(failed), tie_seed=0)
    assert ranked.candidate_id.tolist()[0] == "e/c0" and set(ranked.candidate_id[1:]) == {"e/c1", "e/c2"}
    assert np.isneginf(ranked.score.iloc[1:]).all()


def test_missing_confidence_ranks_last():
    pool = make_pool(**{**TINY, "confidence": [np.nan, 0.2, 0.5]})
    assert ranked_ids(rankers.SelfConfidenceRanker(), pool) == ["c2", "c1", "c0"]


def test_random_is_seeded_per_entry_and_varies_with_the_seed():
    pools = [make_pool(vectors=np.eye(6), confidence=[0.5] * 6, entry_id=f"e{i}") for i in range(20)]
    first = [ranked_ids(rankers.RandomRanker(seed=7), p) for p in pools]
    again = [ranked_ids(rankers.RandomRanker(seed=7), p) for p in reversed(pools)][::-1]
    other = [ranked_ids(rankers.RandomRanker(seed=8), p) for p in pools]
    assert first == again and first != other
    assert len({tuple(order) for order in first}) > 10  # different pools get different orders


def test_value_profile_vector_is_the_normalised_weighted_sum():
    fake = {"benevolence": [1.0, 0.0], "security": [0.0, 1.0], "tradition": [1.0, 0.0],
            "conformity": [0.0, 1.0], "universalism": [1.0, 0.0]}

    def embed(texts):
        return np.array([fake[t.split(":")[0].replace(" ", "_")] for t in texts])

    v = rankers.value_profile_vector(PERSONA, embed)  # weights .35 .25 .15 .15 .10 -> (.60, .40)
    assert v == pytest.approx(np.array([0.6, 0.4]) / np.hypot(0.6, 0.4))


def test_rank_all_and_kendall_tau():
    pools = [make_pool(**TINY, entry_id=f"e{i}") for i in range(3)]
    emb, conf = rankers.EmbeddingSimilarityRanker(), rankers.SelfConfidenceRanker()
    table = rankers.rank_all(pools, [(emb, 0), (conf, 0)], tie_seed=0)
    assert len(table) == 18 and list(table.columns) == ["ranker", "run", "entry_id", "rank", "candidate_id", "score"]
    assert rankers.mean_kendall_tau(table, "embedding", "embedding") == (1.0, 3)
    # embedding c1>c2>c0 vs confidence c0>c2>c1: every pair discordant -> τ = -1
    assert rankers.mean_kendall_tau(table, "embedding", "self_confidence") == (-1.0, 3)


def test_embedding_ranker_puts_an_exact_paraphrase_first_with_real_minilm():
    from lib.embeddings import embed

    entry = "I failed my driving test this morning and I feel stupid."
    texts = ["Maybe plan a fun trip with friends this summer.",
             "This morning you did not pass the driving test and feel dumb.",
             "Remember to drink water today."]
    pool = rankers.Pool("e", embed([entry])[0], "support", PERSONA,
                        pd.DataFrame({"candidate_id": ["e/c0", "e/c1", "e/c2"], "position": [0, 1, 2],
                                      "nudge_text": texts, "confidence": [0.5] * 3}), embed(texts))
    assert ranked_ids(rankers.EmbeddingSimilarityRanker(), pool)[0] == "c1"


def fake_embed(texts):
    """Deterministic 2-d 'embeddings': (characters + 1, words + 1), normalised."""
    vectors = np.array([[len(t) + 1, len(t.split()) + 1] for t in texts], dtype=float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_build_pools_by_hand():
    entries = pd.DataFrame({"entry_id": ["e1", "e2", "e3"], "text": ["one two", "failed", "a b c d"],
                            "category": ["support", "action", "gratitude"],
                            "persona_id": ["striver", "caregiver", "steward"]})
    # e2's generation failed (no candidates); e3's candidates are not contiguous in the table
    candidates = pd.DataFrame({"entry_id": ["e3", "e1", "e1", "e3"],
                               "candidate_id": ["e3/c0", "e1/c0", "e1/c1", "e3/c1"],
                               "position": [0, 0, 1, 1], "nudge_text": ["x", "yy yy", None, "zzz z z"],
                               "confidence": [0.1, 0.2, 0.3, 0.4]})
    pools = rankers.build_pools(entries, candidates, fake_embed)
    assert [p.entry_id for p in pools] == ["e1", "e3"]  # entries order; no pool without candidates
    e1, e3 = pools
    assert (e1.category, e1.persona.persona_id, e3.persona) == ("support", "striver", PERSONAS_BY_ID["steward"])
    assert e3.candidates.candidate_id.tolist() == ["e3/c0", "e3/c1"] and e3.candidates.index.tolist() == [0, 1]
    assert e1.entry_vector == pytest.approx(fake_embed(["one two"])[0])
    # a missing text is embedded as "" (and ranked last by every ranker, see test above)
    assert e1.vectors == pytest.approx(fake_embed(["yy yy", ""]))
    assert e3.vectors == pytest.approx(fake_embed(["x", "zzz z z"]))
    assert e1.failed.tolist() == [False, True]


def test_study_rankers_follow_the_ranker_order():
    pool = make_pool(**TINY)

    def embed(texts):
        return np.tile([1.0, 0.0], (len(texts), 1))

    ranker_runs = rankers.study_rankers([pool], embed, n_random_seeds=3, alpha=0.5)
    assert [(r.name, run) for r, run in ranker_runs][:3] == [("random", 0), ("random", 1), ("random", 2)]
    assert list(dict.fromkeys(r.name for r, _ in ranker_runs)) == list(rankers.RANKER_ORDER)


def test_zero_shot_categories_and_tau_matrix():
    def embed(texts):  # category definitions: 'action' -> (0, 1), 'support' -> (1, 0), the rest far away
        return np.array([[0.0, 1.0] if t.startswith("action") else [1.0, 0.0] if t.startswith("support")
                         else [-1.0, 0.0] for t in texts])

    table = rankers.zero_shot_categories([make_pool(**TINY)], embed)
    assert table.asked.tolist() == ["support"] * 3 and table.zero_shot.tolist() == ["action", "support", "action"]
    pools = [make_pool(**TINY, entry_id=f"e{i}") for i in range(2)]
    table = rankers.rank_all(pools, [(rankers.EmbeddingSimilarityRanker(), 0), (rankers.SelfConfidenceRanker(), 0)],
                             tie_seed=0)
    tau = rankers.kendall_tau_matrix(table, ("embedding", "self_confidence"))
    assert tau.to_numpy().tolist() == [[1.0, -1.0], [-1.0, 1.0]]


def _ranking(ranker, run, entry_id, order_):
    return pd.DataFrame({"ranker": ranker, "run": run, "entry_id": entry_id, "rank": range(1, len(order_) + 1),
                         "candidate_id": order_, "score": 0.0})


def test_kendall_tau_table_averages_over_all_random_seeds():
    # One pool a, b, c. generator_order: a b c. random seed 0: a b c (τ 1 with it), seed 1: c b a (τ −1),
    # seed 2: a c b (τ 1/3: pairs ab +, ac +, bc −).
    table = pd.concat([_ranking("generator_order", 0, "e", ["a", "b", "c"]),
                       _ranking("random", 0, "e", ["a", "b", "c"]),
                       _ranking("random", 1, "e", ["c", "b", "a"]), _ranking("random", 2, "e", ["a", "c", "b"])])
    taus = rankers.kendall_tau_table(table, ("random", "generator_order")).set_index(["ranker_a", "ranker_b"])
    row = taus.loc[("random", "generator_order")]
    assert row.tau == pytest.approx((1 - 1 + 1 / 3) / 3) and row.run_pairs == 3 and row.pools == 1
    assert row.sd_over_runs == pytest.approx(np.std([1, -1, 1 / 3], ddof=1))  # spread over seeds
    # random vs random: the 3 pairs of distinct seeds: (0,1) −1, (0,2) 1/3, (1,2) −1/3
    same = taus.loc[("random", "random")]
    assert same.tau == pytest.approx((-1 + 1 / 3 - 1 / 3) / 3) and same.run_pairs == 3
    assert taus.loc[("generator_order", "generator_order")].tau == 1.0
    assert np.isnan(taus.loc[("generator_order", "generator_order")].sd_over_runs)
    matrix = rankers.kendall_tau_matrix(table, ("random", "generator_order"))
    assert matrix.loc["generator_order", "random"] == pytest.approx(row.tau)


def _scipy_tau_b(x, y) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic)


def test_kendall_tau_b_divides_by_the_pairs_each_side_orders_not_by_all_pairs():
    # x 1 1 2, y 1 2 3: pairs (0,1) tied in x, (0,2) and (1,2) concordant -> C − D = 2 over 3 pairs.
    # τ-b = 2 / √(2·3) ≈ 0.816; τ-a (ties left in the denominator) would be 2/3.
    tau = kendall_tau_b(np.array([[1.0, 1.0, 2.0]]), np.array([[1.0, 2.0, 3.0]]), np.ones((1, 3), bool))
    assert tau[0] == pytest.approx(2 / np.sqrt(6)) and tau[0] != pytest.approx(2 / 3)
    assert tau[0] == _scipy_tau_b([1, 1, 2], [1, 2, 3])


def test_kendall_tau_b_equals_scipy_on_random_pools_with_ties():
    """Pools of 0–8 candidates padded to 8 slots, x from 2–4 levels (many ties, some pools all tied), y with fewer
    ties, −∞ (a failed candidate) in x and NaN in y; the padding holds junk that must be ignored."""
    rng = np.random.default_rng(0)
    pools, slots = 400, 8
    levels = rng.integers(2, 5, size=(pools, 1))
    x = rng.integers(0, 4, size=(pools, slots)) % levels
    y = rng.integers(0, 4, size=(pools, slots)) % levels + rng.random((pools, slots)).round(1)
    x, y = x.astype(float), y.astype(float)
    x[rng.random((pools, slots)) < 0.05] = -np.inf
    y[rng.random((pools, slots)) < 0.01] = np.nan
    sizes = rng.integers(0, slots + 1, size=pools)
    present = np.arange(slots)[None, :] < sizes[:, None]
    padded_x = np.where(present, x, rng.random((pools, slots)))
    taus = kendall_tau_b(padded_x, y, present)
    expected = np.array([_scipy_tau_b(x[i, :n], y[i, :n]) if n > 1 else np.nan for i, n in enumerate(sizes)])
    assert np.array_equal(np.isnan(taus), np.isnan(expected))
    assert np.isnan(expected).sum() > 10 and (np.isfinite(expected) & (np.abs(expected) < 1)).sum() > 200
    assert np.nanmax(np.abs(taus - expected)) <= 1e-12
    # The control: τ-a = (C − D) / (n(n−1)/2) differs from these values on most pools, so ties are exercised.
    def signs(v):
        return (v[:, None] > v[None, :]).astype(int) - (v[:, None] < v[None, :])

    tau_a = np.array([np.sum(signs(x[i, :n]) * signs(y[i, :n])) / (n * (n - 1)) if n > 1 else np.nan
                      for i, n in enumerate(sizes)])
    assert (np.abs(tau_a - expected) > 1e-6).sum() > 150


def _scipy_pool_taus(rankings, a, b):
    """The reference: merge two runs on (entry, candidate) and scipy's kendalltau per pool of ≥ 2 candidates."""
    merged = (rankings[(rankings.ranker == a[0]) & (rankings.run == a[1])]
              .merge(rankings[(rankings.ranker == b[0]) & (rankings.run == b[1])], on=["entry_id", "candidate_id"],
                     suffixes=("_a", "_b")))
    return np.array([_scipy_tau_b(g.rank_a, g.rank_b) for _, g in merged.groupby("entry_id") if len(g) >= 2])


def test_kendall_tau_table_equals_scipy_on_the_committed_run():
    from lib import tables

    committed = tables.read_table("rankings")
    laid_out = rankers.PoolRanks.of(committed)
    for a in laid_out.runs:
        for b in laid_out.runs:
            expected = _scipy_pool_taus(committed, a, b)
            assert laid_out.taus(a, b).shape == expected.shape
            assert np.max(np.abs(laid_out.taus(a, b) - expected), initial=0.0) <= 1e-12
    table = rankers.kendall_tau_table(committed).set_index(["ranker_a", "ranker_b"])
    seeds = sorted(n for r, n in laid_out.runs if r == "random")
    expected = np.mean([_scipy_pool_taus(committed, ("random", s), ("embedding", 0)).mean() for s in seeds])
    assert table.loc[("random", "embedding"), "tau"] == pytest.approx(expected, abs=1e-12)
    assert table.loc[("random", "embedding"), "run_pairs"] == len(seeds) > 1


def test_pool_ranks_compare_only_the_candidates_both_runs_ranked():
    # run b lacks candidate c of pool e and ranks pool f alone: e is compared on a, b (τ −1), f not at all
    table = pd.concat([_ranking("generator_order", 0, "e", ["a", "b", "c"]), _ranking("embedding", 0, "e", ["b", "a"]),
                       _ranking("generator_order", 0, "d", ["x"]), _ranking("embedding", 0, "f", ["y", "z"])])
    assert rankers.pool_taus(table, "generator_order", "embedding").tolist() == [-1.0]
    assert rankers.pool_taus(table, "generator_order", "self_confidence").size == 0
    with pytest.raises(ValueError, match="ranks a candidate twice"):
        rankers.PoolRanks.of(pd.concat([table, table]))


def test_confidence_vs_generator_order_by_hand():
    candidates = pd.DataFrame({
        "entry_id": ["p"] * 4 + ["q"] * 3 + ["r"],
        "position": [0, 1, 2, 3, 2, 0, 1, 0],          # q's rows are not in position order
        "confidence": [0.8, 0.7, 0.6, 0.5,             # p: a countdown -> τ-b 1
                       0.9, 0.8, 0.8,                  # q by position: .8, .8, .9 -> first tied, not top
                       0.5]})
    table = rankers.confidence_vs_generator_order(candidates).set_index("entry_id")
    assert table.loc["p"].tolist() == [4, 4, 1.0, True, True, True]
    # q, by position: confidence .8 .8 .9 vs −position 0 −1 −2: pairs (0,1) tie in confidence, (0,2) and
    # (1,2) discordant -> C 0, D 2, ties in x 1, none in y: τ-b = −2 / √(2·3)
    q = table.loc["q"]
    assert (q.tau_b == pytest.approx(-2 / np.sqrt(6))
            and (q.first_is_top, q.first_is_sole_top, q.countdown) == (False, False, False))
    assert np.isnan(table.loc["r"].tau_b) and table.loc["r"].candidates == 1


def test_length_outside_limits_by_hand():
    # word counts: a 3 (short), b 8, c 15 (long), d 6
    candidates = pd.DataFrame({"candidate_id": list("abcd"), "word_count": [3, 8, 15, 6]})
    table = pd.concat([_ranking("generator_order", 0, "e", ["a", "b", "c", "d"]),
                       _ranking("random", 0, "e", ["b", "a", "d", "c"]),
                       _ranking("random", 1, "e", ["c", "d", "b", "a"])])
    result = rankers.length_outside_limits(table, candidates, ks=(1, 3)).set_index(["ranker", "k"])
    assert result.loc[("generator_order", 1)].share == 1.0            # a
    assert result.loc[("generator_order", 3)].share == pytest.approx(2 / 3)  # a, b, c
    rnd1, rnd3 = result.loc[("random", 1)], result.loc[("random", 3)]
    assert (rnd1.share, rnd1.runs, rnd1.nudges) == (0.5, 2, 1)         # b inside, c outside
    assert rnd1.sd_over_runs == pytest.approx(np.std([0, 1], ddof=1))
    assert rnd3.share == pytest.approx((1 / 3 + 1 / 3) / 2)            # {b,a,d}: a; {c,d,b}: c
    assert list(dict.fromkeys(result.index.get_level_values(0))) == ["random", "generator_order", "all candidates"]
    pooled = result.reset_index().query("ranker == 'all candidates'")
    assert (pooled.share.item(), pooled.nudges.item(), pooled.k.isna().item()) == (0.5, 4, True)  # a, c of 4
    with pytest.raises(ValueError, match="3 ranked candidates are missing"):  # d, in 3 rankings
        rankers.length_outside_limits(table, candidates.iloc[:3])
