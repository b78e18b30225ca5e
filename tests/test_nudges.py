"""Nudge generation helpers: seeded sampling, prompt shape, tables, near-duplicate marking."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import nudges
from lib.analysis.stats import nested_sample
from lib.data import load_journal_entries
from lib.design import PERSONAS
from lib.llm.gateway import LLMResult
from lib.seeds import stable_int


def test_sampling_is_seeded_and_reproducible():
    entries = load_journal_entries("test")
    a, b = nudges.sample_entries(entries, 10, seed=3), nudges.sample_entries(entries, 10, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(nudges.sample_entries(entries, 10, seed=4))
    assert a.category.notna().all() and a.entry_id.is_unique


def test_prompt_puts_the_shared_instructions_first():
    persona = PERSONAS[0]
    one = nudges.build_messages("I lost my keys.", persona, "support", 5)
    two = nudges.build_messages("I won a prize.", PERSONAS[1], "gratitude", 5)
    assert one[0] == two[0] and one[0]["role"] == "system"
    assert "I lost my keys." in one[1]["content"] and "5 different candidate" in one[1]["content"]
    schema = nudges.candidate_set_schema(5).model_json_schema()
    assert schema["properties"]["candidates"]["minItems"] == schema["properties"]["candidates"]["maxItems"] == 5


def _result(texts):
    value = nudges.candidate_set_schema(len(texts)).model_validate(
        {"candidates": [{"nudge_text": t, "reasoning": "r", "confidence": 0.5} for t in texts]})
    return LLMResult(ok=True, value=value, text="")


def test_failed_generation_is_kept_as_failure_and_yields_no_candidates():
    sampled = pd.DataFrame({"entry_id": ["e1", "e2"], "persona_id": ["caregiver", "striver"],
                            "category": ["support", "action"], "text": ["t1", "t2"]})
    failed = LLMResult(ok=False, value=None, text="{", failure_kind="invalid_json", error="bad", attempts=3)
    entries, candidates = nudges.results_to_tables(
        sampled, [_result(["Take one slow breath before you answer them.", "Call her"]), failed], "m")
    assert entries.generation_ok.tolist() == [True, False] and entries.failure_kind.isna().tolist() == [True, False]
    assert entries.failure_kind.iloc[1] == "invalid_json" and entries.attempts.tolist() == [1, 3]
    assert candidates.entry_id.tolist() == ["e1", "e1"] and candidates.candidate_id.tolist() == ["e1/c0", "e1/c1"]
    assert candidates.word_count.tolist() == [8, 2] and candidates.length_ok.tolist() == [True, False]


def test_near_duplicates_and_diversity_match_a_hand_computation(monkeypatch):
    # Unit vectors: a and a' nearly equal (cos 0.96), b orthogonal to a; a second pool with one candidate.
    vectors = {"a": [1.0, 0.0], "a'": [0.96, 0.28], "b": [0.0, 1.0], "c": [1.0, 0.0]}
    monkeypatch.setattr(nudges, "embed", lambda texts: np.array([vectors[t] for t in texts]))
    table = pd.DataFrame({"entry_id": ["p", "p", "p", "q"], "candidate_id": ["p/c0", "p/c1", "p/c2", "q/c0"],
                          "nudge_text": ["a", "b", "a'", "c"]})
    marked, sims = nudges.mark_near_duplicates(table, threshold=0.9)
    assert marked.near_duplicate_of.fillna("-").tolist() == ["-", "-", "p/c0", "-"]
    assert marked.near_duplicate.tolist() == [False, False, True, False]
    # Pool p pairs: (a,b)=0, (a,a')=0.96, (b,a')=0.28 -> D = mean(1, 0.04, 0.72) = 0.586667
    assert marked.pool_diversity.iloc[0] == pytest.approx((1 + 0.04 + 0.72) / 3)
    assert np.isnan(marked.pool_diversity.iloc[3])
    assert sorted(np.round(sims, 6)) == [0.0, 0.28, 0.96]


def test_minilm_embeds_offline_and_ranks_a_paraphrase_closest():
    from lib.embeddings import embed

    v = embed(["I failed my driving test today.", "Today I did not pass my driving exam.", "The cat sleeps."])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > 0.7 > v[0] @ v[2]


def _fake_persona_embed(table):
    """Embed from a dict: persona descriptions and texts -> hand-chosen unit vectors."""
    return lambda texts: np.array([table[t] for t in texts], dtype=float)


PERSONA_VECTORS = {  # 3-d unit vectors per persona description, in PERSONAS order
    PERSONAS[0].description: [1.0, 0.0, 0.0], PERSONAS[1].description: [0.0, 1.0, 0.0],
    PERSONAS[2].description: [0.0, 0.0, 1.0], PERSONAS[3].description: [1.0, 0.0, 0.0],  # same as PERSONAS[0]
    PERSONAS[4].description: [0.0, -1.0, 0.0],
}


def test_most_similar_persona_by_hand_with_ties_to_the_first_listed():
    texts = {"nurse": [0.6, 0.8, 0.0], "code": [0.0, 0.6, 0.8], "shop": [0.0, -1.0, 0.0], "tie": [0.8, 0.0, 0.6]}
    sims = nudges.persona_similarities(list(texts), _fake_persona_embed({**PERSONA_VECTORS, **texts}))
    assert list(sims.columns) == [p.persona_id for p in PERSONAS]
    # nurse: cosines .6 .8 0 .6 −.8 -> PERSONAS[1]; code: 0 .6 .8 0 −.6 -> PERSONAS[2]; shop -> PERSONAS[4];
    # tie: .8 0 .6 .8 0 -> PERSONAS[0] and PERSONAS[3] tie at .8, the first listed wins
    assert sims.iloc[0].tolist() == pytest.approx([0.6, 0.8, 0.0, 0.6, -0.8])
    assert nudges.most_similar_persona(sims) == [PERSONAS[i].persona_id for i in (1, 2, 4, 0)]


def test_persona_rules_share_the_entry_sample_and_random_is_the_seeded_draw():
    entries = pd.DataFrame({"entry_id": [f"e{i}" for i in range(8)], "emotion": ["sad"] * 8,
                            "text": [f"t{i}" for i in range(8)]})
    vectors = {f"t{i}": [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]][i % 2] for i in range(8)}
    embedder = _fake_persona_embed({**PERSONA_VECTORS, **vectors})
    by_rule = {rule: nudges.sample_entries(entries, 5, seed=11, persona_rule=rule, embedder=embedder)
               for rule in nudges.PERSONA_RULES}
    # the nested draw: entries in the SHA-256 order of "seed:id", then one persona per entry from a generator
    # seeded by (seed, entry id), so an entry's persona does not depend on the sample size
    ids = [str(e) for e in nested_sample(entries.entry_id, 5, 11)]
    rows = [int(e[1:]) for e in ids]
    drawn = [PERSONAS[np.random.default_rng([11, stable_int(e)]).integers(len(PERSONAS))].persona_id for e in ids]
    assert by_rule["random"].entry_id.tolist() == by_rule["similarity"].entry_id.tolist() == ids
    assert by_rule["random"].persona_id.tolist() == drawn
    larger = nudges.sample_entries(entries, 7, seed=11, persona_rule="random", embedder=embedder)
    assert larger.entry_id.tolist()[:5] == ids and larger.persona_id.tolist()[:5] == drawn
    expected = [PERSONAS[0].persona_id if i % 2 == 0 else PERSONAS[2].persona_id for i in rows]
    assert by_rule["similarity"].persona_id.tolist() == expected
    assert by_rule["similarity"].persona_similarity.tolist() == pytest.approx([1.0] * 5)
    effect = nudges.persona_rule_effect(by_rule)
    assert effect.loc["similarity", "mean_cos"] == 1.0 and effect.loc["similarity", "entries"] == 5
    assert effect.loc["random", "persona_changed"] == int((np.array(drawn) != np.array(expected)).sum())
    assert effect.loc["random", [p.persona_id for p in PERSONAS]].sum() == 5
    with pytest.raises(ValueError, match="persona_rule must be one of"):
        # "nearest" is deliberately not a PersonaRule: the error path
        nudges.sample_entries(entries, 5, seed=11, persona_rule="nearest", embedder=embedder)  # type: ignore[arg-type]


def test_the_entries_earlier_runs_generated_for_come_first_and_stay():
    entries = load_journal_entries("test")
    first = ["ed-test-113", "ed-test-288", "ed-test-303"]
    fake = lambda texts: np.ones((len(texts), 2)) / np.sqrt(2)  # noqa: E731 — no embedding model needed here
    small = nudges.sample_entries(entries, 5, seed=20241122, first=first, embedder=fake)
    large = nudges.sample_entries(entries, 9, seed=20241122, first=first, embedder=fake)
    assert small.entry_id.tolist()[:3] == first and large.entry_id.tolist()[:5] == small.entry_id.tolist()
    with pytest.raises(ValueError, match="not among the ids"):
        nudges.sample_entries(entries, 5, seed=0, first=["ed-test-no-such-row"], embedder=fake)


POOL = pd.DataFrame({  # pool p: c1 is a copy of c0, c3 and c4 copies of c2 (three identical); pool q clean
    "entry_id": ["p"] * 5 + ["q"] * 2, "candidate_id": [f"p/c{i}" for i in range(5)] + ["q/c0", "q/c1"],
    "position": [0, 1, 2, 3, 4, 0, 1],
    "near_duplicate_of": [None, "p/c0", None, "p/c2", "p/c2", None, None],
})
POOL["near_duplicate"] = POOL.near_duplicate_of.notna()


def test_pool_candidates_drops_near_duplicates_and_keeps_the_earliest():
    kept = nudges.pool_candidates(POOL, "drop")
    assert kept.candidate_id.tolist() == ["p/c0", "p/c2", "q/c0", "q/c1"]
    assert list(kept.columns) == list(POOL.columns)
    pd.testing.assert_frame_equal(nudges.pool_candidates(POOL, "keep"), POOL)
    with pytest.raises(ValueError, match="near_duplicate_rule must be one of"):
        nudges.pool_candidates(POOL, "merge")  # type: ignore[arg-type]  # deliberately not a NearDuplicateRule
    sizes = nudges.pool_sizes(POOL, "drop")
    assert sizes.to_dict() == {"generated": {2: 1, 5: 1}, "after drop": {2: 2, 5: 0}}
