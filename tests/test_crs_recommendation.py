"""Recommendation-level checks and counterfactual replies on the hand-made universe (counts by hand)."""
from __future__ import annotations

import pytest

from lib.crs import recommendation as rec
from lib.crs.records import SessionLog
from tests.crs_tiny import tiny_universe
from tests.test_crs_metrics import EVENTS, scripted_shift


@pytest.fixture(scope="module")
def universe():
    return tiny_universe()


def scripted_log() -> SessionLog:
    return SessionLog.model_validate({"session_id": "s0", "system": "template", "true_genre": "horror",
                                      "conversation": scripted_shift(), "shift_events": EVENTS})


def test_matching_items_carry_every_concept_of_the_preference(universe):
    assert rec.matching_items(["actor=tom hanks", "genre=comedy"], universe) == {"2", "3", "4"}
    assert rec.matching_items(["genre=horror", "director=f w murnau"], universe) == {"7"}
    assert rec.matching_items([], universe) == frozenset()


def test_hits_success_and_target_by_hand(universe):
    # replies: Big (comedy: hit), Splash (Hanks comedy: hit), Big after the shift to horror (no hit),
    # Nosferatu (horror, Murnau: hit, and the hidden target "7")
    turns = rec.turn_recommendations(scripted_log().record(), universe)
    assert turns.hit.tolist() == [True, True, False, True] and turns.named.tolist() == [1, 1, 1, 1]
    assert turns.target_named.tolist() == [False, False, False, True]
    assert rec.session_recommendations(turns) == {"hit_rate": 0.75, "success": True, "target_success": True}


def test_a_liked_movie_recommended_back_is_no_hit(universe):
    record = scripted_log().record()
    record["conversation"][0]["user_meta"]["liked"] = universe.find_title("Big (1988)")
    assert rec.turn_recommendations(record, universe).hit.tolist() == [False, True, False, True]


def test_counterfactual_replies_keep_the_user_turns_and_recommend_as_their_rule_says(universe):
    log = scripted_log()
    nothing = rec.counterfactual_log(log, "nothing", universe)
    assert nothing["conversation"][0] == log.record()["conversation"][0] and nothing["system"] == "nothing"
    assert nothing["conversation"][1]["text"] == "Noted, you want comedy."
    assert rec.session_recommendations(rec.turn_recommendations(nothing, universe)) == {
        "hit_rate": 0.0, "success": False, "target_success": False}
    named = rec.turn_recommendations(rec.counterfactual_log(log, "target_named", universe), universe)
    assert named.hit.tolist() == [False, False, True, True]  # Nosferatu fits only the horror segment
    random_titles = rec.counterfactual_log(log, "nothing_random_titles", universe)
    turns = rec.turn_recommendations(random_titles, universe)
    assert turns.named.tolist() == [2, 2, 2, 2] and not turns.hit.any()  # two titles carrying no wish
    restated = rec.counterfactual_log(log, "preference_restated", universe)
    assert restated["conversation"][3]["text"] == "So you want Tom Hanks, comedy."


def test_metric_check_scores_every_reply_on_the_same_sessions(universe):
    check = rec.metric_check([scripted_log()], universe)
    assert check.reply.tolist() == ["template", *rec.COUNTERFACTUALS]
    table = rec.metric_check_table(check)
    assert table.index.tolist() == ["template", *rec.COUNTERFACTUALS] and (table.sessions == 1).all()
    assert table.loc["nothing", "hit_rate"] == 0.0 and table.loc["template", "hit_rate"] == 0.75
    assert table.loc["nothing", "by_construction"] == "no title, so no hit"
    # the restated preference is the whole preference: CC = 1 on every turn
    assert table.loc["preference_restated", "cc"] == 1.0


def test_metric_check_text_says_which_metric_a_reply_that_recommends_nothing_fools():
    import pandas as pd

    from lib.chapters import ch06
    table = pd.DataFrame({"tas": [0.6, 0.8, 0.7, 0.69, 0.75, 0.88], "cas": [0.7, 0.82, 0.6, 0.79, 0.85, 0.94],
                          "hit_rate": [0.94, 0.96, 0.0, 0.0, 0.0, 1.0], "target_success": [1.0] * 6},
                         index=["llm", "retrieval_template", *rec.COUNTERFACTUALS])
    text = ch06.metric_check_text(table)
    assert text.startswith("A reply that only notes the user's last wish and recommends nothing scores TAS 0.70 and "
                           "CAS 0.60, against 0.60–0.80 and 0.70–0.82")
    assert "TAS scores it within or above the recommenders' range." in text
    assert "is 0.00 for it" in text and "0.94–0.96" in text
    assert "both score it below them" in ch06.metric_check_text(table.assign(tas=[0.6, 0.8, 0.5, 0.5, 0.5, 0.9]))
    assert ("CAS orders them retrieval_template > llm and the hit rate retrieval_template > llm (Kendall τ 1.00 over "
            "2 systems, no interval). Target success, iEvaLM's criterion, is 1 in every session of each of the 2 "
            "systems that ever name the target (llm, retrieval_template)") in text
    swapped = ch06.system_order_text(table.assign(cas=[0.9, 0.8, 0.6, 0.79, 0.85, 0.94], target_success=0.5))
    assert "CAS orders them llm > retrieval_template" in swapped and "τ -1.00" in swapped
    assert "Target success" not in swapped
