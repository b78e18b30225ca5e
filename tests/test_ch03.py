"""Chapter 03's top-floor functions on small hand-made tables (no LLM)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import known_answers, tables
from lib.chapters import ch03


def judged_frame() -> pd.DataFrame:
    """12 entries: two real candidates (E[g] 1.6 and 1.4, argmax 2 and 1) and three distractors each; the tone
    distractor ties the better real candidate, the others score lower."""
    rows = []
    for e in range(12):
        for item, kind, expected, grade in (("c0", "real", 1.6, 2), ("c1", "real", 1.4, 1),
                                            ("off", "off_topic", 0.2, 0), ("mis", "value_mismatch", 1.3, 1),
                                            ("tone", "tone", 1.6, 2)):
            rows.append({"entry_id": f"e{e:02d}", "item_id": f"e{e:02d}/{item}", "kind": kind,
                         "expected_grade": expected, "grade": grade, "rounded_expected": round(expected)})
    return pd.DataFrame(rows)


def test_judged_items_put_each_entrys_distractors_after_its_candidates():
    candidates = pd.DataFrame({"entry_id": ["b", "b", "a"], "candidate_id": ["b/c0", "b/c1", "a/c0"],
                               "nudge_text": ["x", "y", "z"]})
    distractors = pd.DataFrame({"entry_id": ["a", "b", "gone"], "distractor_id": ["a/tone", "b/tone", "gone/tone"],
                                "kind": ["tone"] * 3, "nudge_text": ["t1", "t2", "t3"]})
    judged = ch03.judged_items(candidates, distractors)
    assert judged.item_id.tolist() == ["b/c0", "b/c1", "b/tone", "a/c0", "a/tone"]  # an entry without a pool: none
    assert judged.kind.tolist() == ["real", "real", "tone", "real", "tone"]


def test_reading_table_counts_constant_pools_per_reading():
    judged = judged_frame()
    judged.loc[judged.item_id.str.endswith("c1"), "grade"] = 2  # argmax: both real candidates 2 in every pool
    table = ch03.reading_table(judged)
    assert table.loc["grade", "constant pools"] == 12 and table.loc["grade", "modal value share"] == 1.0
    assert table.loc["expected_grade", "constant pools"] == 0 and table.loc["expected_grade", "distinct values"] == 2
    assert table.loc["grade", "unable to rank"] and not table.loc["expected_grade", "unable to rank"]


def test_reading_discrimination_and_the_label_rule_text():
    table = ch03.reading_discrimination(judged_frame(), seed=0, n_resamples=300)
    assert list(table.columns) == list(tables.SCHEMAS["judge_discrimination"])
    expected = table[table.reading == "expected_grade"].set_index("kind")
    # real (1.6, 1.4): off-topic 0.2 -> 1; mismatch 1.3 -> 1; tone 1.6 -> (½ + 0) / 2
    assert expected.auc.to_dict() == {"off_topic": 1.0, "value_mismatch": 1.0, "tone": 0.25}
    assert known_answers.sees(expected).to_dict() == {"off_topic": True, "value_mismatch": True, "tone": False}
    text = ch03.label_rule_text("expected_grade", table, ch03.reading_table(judged_frame()))
    assert "Kinds of distractor whose interval lies above 0.5 under it: off_topic, value_mismatch." in text
    assert "It can rank: 0 of 12 pools are constant" in text
    flat = judged_frame().assign(expected_grade=1.0)
    blind = ch03.reading_discrimination(flat, seed=0, n_resamples=300)
    assert "**It cannot rank these pools**" in ch03.label_rule_text("expected_grade", blind, ch03.reading_table(flat))


def test_layout_repeat_counts_changes_per_reading():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c"], "expected_grade": [1.5, 1.2, 1.0], "grade": [2, 1, 1],
                           "rounded_expected": [2, 1, 1]})
    repeat = pd.DataFrame({"candidate_id": ["a", "b"], "expected_grade": [1.4, 1.2], "grade": [1, 1],
                           "rounded_expected": [1, 1]})
    table = ch03.layout_repeat(labels, repeat)
    assert table.loc["expected_grade", "changed"] == 1 and table.loc["grade", "changed"] == 1
    assert table.loc["expected_grade", "mean |change|"] == pytest.approx(0.05)
    assert table.loc["expected_grade", "candidates"] == 2


def test_first_candidate_effect_by_hand():
    rows = []
    for e in range(10):  # the first candidate tops its pool in the even entries only
        first = 1.8 if e % 2 == 0 else 1.0
        rows += [{"entry_id": f"e{e}", "candidate_id": f"e{e}/c0", "label": first},
                 {"entry_id": f"e{e}", "candidate_id": f"e{e}/c1", "label": 1.4}]
    labels = pd.DataFrame([*rows, {"entry_id": "solo", "candidate_id": "solo/c0", "label": 1.0}])
    candidates = labels[["candidate_id"]].assign(position=[0, 1] * 10 + [0])
    figures, text = ch03.first_candidate_effect(labels, candidates, seed=0, n_resamples=300)
    assert figures["pools"] == 10 and figures["first has the top label"] == 5  # a one-candidate pool is left out
    assert figures["expected if blind to position"] == pytest.approx(5.0)
    assert figures["label(first) − mean of the others"] == pytest.approx((0.4 - 0.4) / 2)
    assert "in 5 of 10 pools" in text and "10 entries" in text


def test_tone_check_compares_each_source_with_its_rewrite():
    distractors = pd.DataFrame({"entry_id": [f"e{e}" for e in range(10)],
                                "distractor_id": [f"e{e}/tone" for e in range(10)], "kind": "tone",
                                "source_candidate_id": [f"e{e}/c0" for e in range(10)]})
    scores = pd.DataFrame({"candidate_id": [*distractors.source_candidate_id, *distractors.distractor_id],
                           "score": [4.0] * 10 + [2.0] * 8 + [4.0, np.nan]})
    figures, text = ch03.tone_check(scores, distractors, seed=0, n_resamples=300)
    assert (figures["entries"], figures["distractor lower"], figures["equal"]) == (9, 8, 1)
    assert figures["source − distractor"] == pytest.approx(16 / 9)
    assert "lower in 8 of 9 entries, equal in 1, higher in 0" in text


def test_guardrail_and_outcome_examples_have_a_row_each():
    table = ch03.guardrail_examples([("r1", "Put all your savings into crypto now."), ("r2", "Take a short walk.")])
    assert table.response.tolist() == ["r1", "r2"] and not table.blocked.iloc[1]
    success, effectiveness = ch03.outcome_examples()
    assert len(success) > 0 and {"InterventionSuccess", "stake"} <= set(success.columns)
    assert effectiveness.index.name == "stake type"
