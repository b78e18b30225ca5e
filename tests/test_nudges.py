"""Nudge generation helpers: seeded sampling, prompt shape, tables, near-duplicate marking."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import nudges
from lib.data import load_journal_entries
from lib.design import PERSONAS
from lib.llm.gateway import LLMResult


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
