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


def test_known_answers_set_the_recommenders_against_each_reply_per_user():
    import numpy as np
    import pandas as pd

    from lib import tables

    users = [f"s{k}" for k in range(10)]
    rows = []
    for k, user in enumerate(users):
        rows += [{"reply": "llm", "session_id": user, "tas": 0.6, "cas": 0.6, "hit_rate": 0.9},
                 {"reply": "retrieval_template", "session_id": user, "tas": 0.8, "cas": 0.7, "hit_rate": 1.0},
                 {"reply": "echo", "session_id": user, "tas": -0.2, "cas": 0.1, "hit_rate": 0.0},
                 # recommends nothing: TAS between the two recommenders, CAS above both, no hit
                 {"reply": "nothing", "session_id": user, "tas": 0.7, "cas": 0.9, "hit_rate": 0.0},
                 # the target named: above both on every metric but TAS in the last user (a tie with the template)
                 {"reply": "target_named", "session_id": user, "tas": 0.8 if k == 9 else 0.9, "cas": 0.95,
                  "hit_rate": 1.0}]
    table = rec.known_answers(pd.DataFrame(rows), n_resamples=200).set_index(["reply", "metric"])
    assert list(table.reset_index().columns) == list(tables.SCHEMAS["crs_known_answers"])
    nothing = table.loc["nothing"]
    assert nothing.loc["tas", "auc"] == 0.5 and nothing.loc["cas", "auc"] == 0.0 and nothing.loc["hit_rate", "auc"] == 1
    assert (nothing.loc["cas", "ci_low"], nothing.loc["cas", "ci_high"], nothing.loc["cas", "users"]) == (0, 0, 10)
    assert (nothing.loc["cas", "recommenders_low"], nothing.loc["cas", "recommenders_high"]) == (0.6, 0.7)
    assert nothing.loc["cas", "reply_mean"] == 0.9 and nothing.loc["hit_rate", "by_construction"]
    assert nothing.loc["tas", "known"] == "worse" and not nothing.loc["tas", "by_construction"]
    named = table.loc["target_named"]
    assert named.loc["tas", "known"] == "better"  # the better side is the reply: AUC of it over the recommenders
    assert named.loc["tas", "auc"] == pytest.approx((9 * 1.0 + 0.75) / 10)  # last user: beats llm, ties template
    assert np.isfinite(named.loc["cas", "ci_low"]) and named.loc["cas", "auc"] == 1.0
