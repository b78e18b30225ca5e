"""Known-answer distractors: how each is made, that a larger sample keeps earlier entries' distractors, and the
per-entry AUC of real over distractor against hand counts."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from lib import design, known_answers, nudges, tables
from lib.llm.gateway import LLMResult


def candidates(entries: int) -> pd.DataFrame:
    rows = []
    for e in range(entries):
        category = list(design.NUDGE_CATEGORIES)[e % 2]
        for position in range(3):
            rows.append({"entry_id": f"e{e:02d}", "candidate_id": f"e{e:02d}/c{position}", "position": position,
                         "category": category, "nudge_text": f"nudge {position} for entry {e}"})
    return pd.DataFrame(rows)


def test_the_contrasting_persona_holds_the_opposite_values():
    # Schwartz's circle: benevolence/security/conformity against self-direction/stimulation
    assert known_answers.contrasting_persona("caregiver").persona_id == "explorer"
    assert all(known_answers.contrasting_persona(p.persona_id).persona_id != p.persona_id for p in design.PERSONAS)


def test_off_topic_distractors_come_from_another_category_and_repeat_with_the_seed():
    drawn = known_answers.off_topic_distractors(candidates(10), seed=0)
    cats = candidates(10).set_index("candidate_id").category
    by_entry = candidates(10).groupby("entry_id").category.first()
    assert list(drawn.entry_id) == [f"e{e:02d}" for e in range(10)] and set(drawn.kind) == {"off_topic"}
    assert all(cats[s] != by_entry[e] for e, s in zip(drawn.entry_id, drawn.source_candidate_id, strict=True))
    assert drawn.equals(known_answers.off_topic_distractors(candidates(10), seed=0))
    assert not drawn.equals(known_answers.off_topic_distractors(candidates(10), seed=1))
    one_category = candidates(4).assign(category="insight")
    assert known_answers.off_topic_distractors(one_category, seed=0).empty  # nothing of another category


def test_the_tone_distractor_rewrites_the_first_candidate():
    tone = known_answers.tone_distractors(candidates(2))
    assert tone.source_candidate_id.tolist() == ["e00/c0", "e01/c0"]
    assert tone.nudge_text.iloc[0] == f"{known_answers.DISMISSIVE_OPENER} nudge 0 for entry 0"


def test_entry_auc_by_hand():
    # real (3, 2) against distractors (2, 1): pairs 3>2, 3>1, 2=2 (½), 2>1 → 3.5 / 4
    assert known_answers.entry_auc([3, 2], [2, 1]) == pytest.approx(0.875)
    assert known_answers.entry_auc([1], [1]) == 0.5 and np.isnan(known_answers.entry_auc([], [1]))


def test_discrimination_averages_entries_with_an_interval_over_them():
    rows = []
    for e in range(12):
        rows += [{"entry_id": f"e{e}", "kind": "real", "score": 2.0}, {"entry_id": f"e{e}", "kind": "real",
                                                                        "score": np.nan},  # a failed call
                 {"entry_id": f"e{e}", "kind": "tone", "score": 1.0 if e % 2 else 2.0},
                 {"entry_id": f"e{e}", "kind": "off_topic", "score": 0.0}]
    table = known_answers.discrimination(pd.DataFrame(rows), "score", seed=0, n_resamples=500).set_index("kind")
    assert table.loc["off_topic", "auc"] == 1.0 and table.loc["off_topic", "ci_over"] == "12 entries"
    assert table.loc["tone", "auc"] == pytest.approx(0.75)  # half the entries 1, half ½
    assert table.loc["tone", "ci_low"] < 0.75 < table.loc["tone", "ci_high"]
    assert "value_mismatch" not in table.index
    few = known_answers.discrimination(pd.DataFrame(rows[:4 * 5]), "score", seed=0)
    assert np.isnan(few.ci_low).all() and few.ci_over.tolist() == ["5 entries", "5 entries"]


def sampled(entries: int) -> pd.DataFrame:
    return pd.DataFrame({"entry_id": [f"e{e:02d}" for e in range(entries)],
                         "text": [f"entry {e}" for e in range(entries)],
                         "persona_id": ["caregiver"] * entries,
                         "category": [list(design.NUDGE_CATEGORIES)[e % 2] for e in range(entries)]})


def test_value_mismatch_calls_ask_for_one_nudge_for_the_contrasting_persona():
    calls = known_answers.value_mismatch_calls(sampled(2))
    assert [c.call_label for c in calls] == ["value-mismatch:e00", "value-mismatch:e01"]
    user = calls[0].messages[-1]["content"]
    assert design.PERSONAS_BY_ID["explorer"].description in user
    assert design.PERSONAS_BY_ID["caregiver"].description not in user
    assert calls[0].schema is nudges.candidate_set_schema(1)


def test_distractors_table_has_four_kinds_per_entry_and_drops_a_failed_generation():
    pool = candidates(3).assign(persona_id="caregiver", confidence=[0.9, 0.8, 0.7] * 3)
    schema = nudges.candidate_set_schema(1)
    answer = schema(candidates=[{"nudge_text": " written for others ", "reasoning": "r", "confidence": 0.6}])
    results = [LLMResult(ok=True, value=answer, text=""), LLMResult(ok=False, value=None, text="{"),
               LLMResult(ok=True, value=answer, text="")]
    table = known_answers.distractors_table(sampled(3), results, pool, seed=0)
    assert list(table.columns) == list(tables.SCHEMAS["distractors"])
    assert table.kind.value_counts().to_dict() == {"off_topic": 3, "value_contrast": 3, "tone": 3, "value_mismatch": 2}
    assert table.distractor_id.tolist()[:4] == ["e00/off_topic", "e00/value_mismatch", "e00/value_contrast",
                                                "e00/tone"]
    contrast = table[table.kind == "value_contrast"].iloc[0]
    assert contrast.nudge_text.endswith(known_answers.VALUE_DISMISSALS["benevolence"])  # the caregiver's top value
    assert (contrast.source_candidate_id, contrast.position, contrast.confidence) == ("e00/c0", 0, 0.9)
    mismatch = table[table.kind == "value_mismatch"].iloc[0]
    assert (mismatch.nudge_text, mismatch.persona_id, mismatch.confidence) == ("written for others", "explorer", 0.6)
    tone = table[table.kind == "tone"].iloc[0]
    assert (tone.source_candidate_id, tone.position, tone.confidence) == ("e00/c0", 0, 0.9)


def test_value_mismatch_nudges_of_a_nested_prefix_go_to_its_entries():
    pool = candidates(3).assign(persona_id="caregiver", confidence=0.5)
    answer = nudges.candidate_set_schema(1)(candidates=[{"nudge_text": "n", "reasoning": "r", "confidence": 0.6}])
    table = known_answers.distractors_table(sampled(3), [LLMResult(ok=True, value=answer, text="")], pool, seed=0)
    assert table[table.kind == "value_mismatch"].entry_id.tolist() == ["e00"]
    assert "value_mismatch" not in set(known_answers.distractors_table(sampled(3), [], pool, seed=0).kind)
    with pytest.raises(ValueError):  # more answers than entries: not a prefix
        known_answers.distractors_table(sampled(1), [LLMResult(ok=True, value=answer, text="")] * 2, pool, seed=0)


def test_ranker_scores_score_distractors_beside_the_pool_without_changing_it():
    from lib import rankers

    def embed(texts):  # a nudge about the entry points along x, anything else along y
        return np.array([[1.0, 0.0] if "entry 0" in t else [0.0, 1.0] for t in texts])

    pool = candidates(1).assign(persona_id="caregiver", confidence=0.5)
    entry = rankers.Pool("e00", np.array([1.0, 0.0]), "insight", design.PERSONAS_BY_ID["caregiver"],
                         pool[["candidate_id", "position", "nudge_text", "confidence"]].reset_index(drop=True),
                         embed(pool.nudge_text.tolist()))
    distractors = pd.DataFrame({"entry_id": ["e00"], "distractor_id": ["e00/off_topic"], "kind": ["off_topic"],
                                "persona_id": ["caregiver"], "source_candidate_id": ["e09/c0"],
                                "nudge_text": ["about something else"], "position": [0], "confidence": [0.5]})
    scores = known_answers.ranker_scores([entry], distractors, [(rankers.EmbeddingSimilarityRanker(), 0)], embed)
    assert scores.kind.tolist() == ["real"] * 3 + ["off_topic"]
    assert scores.score.tolist() == [1.0, 1.0, 1.0, 0.0]
    table = known_answers.ranker_discrimination(scores, seed=0, n_resamples=200)
    assert table[["ranker", "kind", "auc", "ci_over"]].values.tolist() == [["embedding", "off_topic", 1.0, "1 entries"]]


def test_ranker_scores_embed_the_distractors_of_every_pool_in_one_call():
    from lib import rankers

    calls = []

    def embed(texts):  # a text about entry 0 points along x, anything else along y
        calls.append(list(texts))
        return np.array([[1.0, 0.0] if "entry 0" in t else [0.0, 1.0] for t in texts])

    pool = candidates(3).assign(confidence=0.5)
    pools = [rankers.Pool(e, np.array([1.0, 0.0]), "insight", design.PERSONAS_BY_ID["caregiver"],
                          g[["candidate_id", "position", "nudge_text", "confidence"]].reset_index(drop=True),
                          embed(g.nudge_text.tolist()))
             for e, g in pool.groupby("entry_id")]
    # e00 has two distractors, e01 none, e02 one; e09 has no pool, so its distractor is not embedded
    distractors = pd.DataFrame({"entry_id": ["e00", "e09", "e02", "e00"],
                                "distractor_id": ["e00/off_topic", "e09/tone", "e02/tone", "e00/tone"],
                                "kind": ["off_topic", "tone", "tone", "tone"], "persona_id": "caregiver",
                                "source_candidate_id": ["e02/c0", "e09/c0", "e02/c0", "e00/c0"],
                                "nudge_text": ["about entry 2", "about entry 9", "no, entry 2", "no, entry 0"],
                                "position": 0, "confidence": 0.5})
    runs: list[tuple[rankers.Ranker, int]] = [(rankers.EmbeddingSimilarityRanker(), 0),
                                              (rankers.RandomRanker(seed=3), 3)]
    calls.clear()
    scores = known_answers.ranker_scores(pools, distractors, runs, embed)
    assert calls == [["about entry 2", "no, entry 2", "no, entry 0"]]
    per_pool = pd.concat([known_answers.ranker_scores([p], distractors, runs, embed) for p in pools],
                         ignore_index=True)
    pd.testing.assert_frame_equal(scores, per_pool, check_exact=True)
    e00 = scores[(scores.entry_id == "e00") & (scores.ranker == "embedding")]
    assert e00.item_id.tolist() == ["e00/c0", "e00/c1", "e00/c2", "e00/off_topic", "e00/tone"]
    assert e00.score.tolist() == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert scores[scores.entry_id == "e01"].kind.eq("real").all() and len(scores) == 2 * (5 + 3 + 4)
    assert scores.run.tolist()[:5] == [0] * 5 and scores.run.tolist()[5:10] == [3] * 5
    assert known_answers.ranker_scores(pools, distractors, [], embed).empty


def test_one_batched_call_scores_the_committed_entries_as_one_call_per_entry_does_with_real_minilm():
    """The committed run's pools and distractors with the real MiniLM: the batch moves the distractors' vectors in
    their last bits only (far below the 1e-5 rounding of every cosine), and the known-answer scores are the same
    bytes as with one embedding call per entry (the former way)."""
    from lib import rankers
    from lib.embeddings import embed

    calls: list[tuple[list[str], np.ndarray]] = []

    def recorded(texts):
        vectors = embed(texts)
        calls.append((list(texts), vectors))
        return vectors

    entries = tables.read_table("entries")
    pools = rankers.build_pools(entries, nudges.pool_candidates(tables.read_table("candidates"), "drop"), embed)
    runs = rankers.study_rankers(pools, embed, n_random_seeds=2, alpha=0.5)
    distractors = tables.read_table("distractors")
    batched = known_answers.ranker_scores(pools, distractors, runs, recorded)
    per_entry = pd.concat([known_answers.ranker_scores([p], distractors, runs, recorded) for p in pools],
                          ignore_index=True)
    assert len(calls) == 1 + len(pools) and len(calls[0][0]) == len(distractors) > len(calls[1][0])
    batch_vectors = dict(zip(calls[0][0], calls[0][1], strict=True))
    moved = max(float(np.abs(batch_vectors[t] - v).max()) for texts, vectors in calls[1:]
                for t, v in zip(texts, vectors, strict=True))
    assert moved < 1e-12
    buffers = []
    for frame in (batched, per_entry):
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        buffers.append(buffer.getvalue())
    assert buffers[0] == buffers[1]


def test_the_value_component_is_recovered_from_the_system_and_embedding_scores():
    rows = []
    for item, kind, entry, values in (("e0/c0", "real", 0.31416, 0.27183), ("e0/value_mismatch", "value_mismatch",
                                                                          0.5, 0.1), ("e0/c1", "real", -0.2, 0.33333)):
        rows += [{"ranker": "embedding", "run": 0, "entry_id": "e0", "item_id": item, "kind": kind, "score": entry},
                 {"ranker": "value_aware", "run": 0, "entry_id": "e0", "item_id": item, "kind": kind,
                  "score": 0.7 * entry + 0.3 * values}]
    scores = pd.DataFrame(rows)
    both = known_answers.with_value_component(scores, alpha=0.3)
    component = both[both.ranker == known_answers.VALUE_COMPONENT]
    assert component.score.tolist() == [0.27183, 0.1, 0.33333] and component.kind.tolist() == ["real",
                                                                                               "value_mismatch", "real"]
    assert len(both) == len(scores) + 3
    with pytest.raises(ValueError, match="mixing weight chapter 02 used"):
        known_answers.with_value_component(scores, alpha=0.5)
    table = known_answers.ranker_discrimination(both, seed=0, n_resamples=100)
    assert table.ranker.tolist() == ["embedding", "value_aware", known_answers.VALUE_COMPONENT]
    # the entry similarity outweighs the value component: the mix ranks the distractor first, the component last
    assert table.set_index("ranker").auc.tolist() == [0.0, 0.0, 1.0]


def test_the_manipulation_check_is_not_listed_as_holding_by_construction():
    assert ("value_aware", "value_mismatch") not in known_answers.BY_CONSTRUCTION
    assert ("generator_order", "value_mismatch") in known_answers.BY_CONSTRUCTION
