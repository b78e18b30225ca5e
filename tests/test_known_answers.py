"""Known-answer distractors: how each is made, that a larger sample keeps earlier entries' distractors, and the
per-entry AUC of real over distractor against hand counts."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import design, known_answers


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
