"""Rankers: permutations, determinism, tie rule, failed candidates, and hand-checked orderings."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import rankers
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


TINY = dict(vectors=[[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]], confidence=[0.9, 0.2, 0.5])
CATEGORY = rankers.CategoryOnlyRanker(names=("action", "support"), definition_vectors=np.eye(2))
ALL = [rankers.RandomRanker(seed=1), rankers.EmbeddingSimilarityRanker(), CATEGORY, rankers.SelfConfidenceRanker(),
       rankers.ValueAwareRanker({PERSONA.persona_id: np.array([0.0, 1.0])}, alpha=0.5)]


def ranked_ids(ranker, pool):
    return rankers.order(pool, ranker.scores(pool)).candidate_id.str[-2:].tolist()


@pytest.mark.parametrize("ranker, expected", [
    (rankers.EmbeddingSimilarityRanker(), ["c1", "c2", "c0"]),      # cos with entry: 0, 1, .6
    (rankers.SelfConfidenceRanker(), ["c0", "c2", "c1"]),            # .9, .2, .5
    # 0.5·cos(entry) + 0.5·cos(values): c0 .5, c1 .5, c2 .7 -> c2 first, then the tie c0/c1 in generator order
    (ALL[4], ["c2", "c0", "c1"]),
    # support-definition cosine 1, 0, .8; c0 and c2 are classified 'support' (match), c1 'action'
    (CATEGORY, ["c0", "c2", "c1"]),
])
def test_hand_checked_orderings(ranker, expected):
    assert ranked_ids(ranker, make_pool(**TINY)) == expected


@pytest.mark.parametrize("ranker", ALL, ids=lambda r: r.name)
def test_every_ranker_returns_a_permutation_and_handles_edge_pools(ranker):
    table = rankers.order(make_pool(**TINY), ranker.scores(make_pool(**TINY)))
    assert sorted(table.candidate_id) == ["e/c0", "e/c1", "e/c2"] and table["rank"].tolist() == [1, 2, 3]
    single = make_pool(vectors=[[0.6, 0.8]], confidence=[0.3])
    assert rankers.order(single, ranker.scores(single)).candidate_id.tolist() == ["e/c0"]
    failed = make_pool(**TINY, texts=["a nudge", None, "  "])
    ranked = rankers.order(failed, ranker.scores(failed))
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
    table = rankers.rank_all(pools, [(emb, 0), (conf, 0)])
    assert len(table) == 18 and list(table.columns) == ["method", "run", "entry_id", "rank", "candidate_id", "score"]
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
    candidates = pd.DataFrame({"entry_id": ["e3", "e1", "e1", "e3"], "candidate_id": ["e3/c0", "e1/c0", "e1/c1", "e3/c1"],
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


def test_study_rankers_follow_the_method_order():
    pool = make_pool(**TINY)

    def embed(texts):
        return np.tile([1.0, 0.0], (len(texts), 1))

    methods = rankers.study_rankers([pool], embed, n_random_seeds=3, alpha=0.5)
    assert [(r.name, run) for r, run in methods][:3] == [("random", 0), ("random", 1), ("random", 2)]
    assert list(dict.fromkeys(r.name for r, _ in methods)) == list(rankers.METHOD_ORDER)


def test_zero_shot_categories_and_tau_matrix():
    def embed(texts):  # category definitions: 'action' -> (0, 1), 'support' -> (1, 0), the rest far away
        return np.array([[0.0, 1.0] if t.startswith("action") else [1.0, 0.0] if t.startswith("support")
                         else [-1.0, 0.0] for t in texts])

    table = rankers.zero_shot_categories([make_pool(**TINY)], embed)
    assert table.asked.tolist() == ["support"] * 3 and table.zero_shot.tolist() == ["action", "support", "action"]
    pools = [make_pool(**TINY, entry_id=f"e{i}") for i in range(2)]
    table = rankers.rank_all(pools, [(rankers.EmbeddingSimilarityRanker(), 0), (rankers.SelfConfidenceRanker(), 0)])
    tau = rankers.kendall_tau_matrix(table, ("embedding", "self_confidence"))
    assert tau.to_numpy().tolist() == [[1.0, -1.0], [-1.0, 1.0]]
