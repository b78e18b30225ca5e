"""The independent concept matcher of chapter 06 (lib.crs.matcher) on hand-made replies over the real universe,
and its agreement tables on a hand-made conversation."""
from __future__ import annotations

import pandas as pd
import pytest

from lib.crs.config import MetricConfig
from lib.crs.matcher import AliasMatcher, extractor_agreement, fold, independent_rows, mean_table
from lib.crs.metrics import turn_table
from lib.crs.records import SessionLog
from lib.crs.universe import load_universe


@pytest.fixture(scope="module")
def universe():
    return load_universe()


@pytest.fixture(scope="module")
def matcher(universe):
    return AliasMatcher(universe)


def item(universe, title, year):
    rows = universe.items[(universe.items.title == title) & (universe.items.year == year)]
    return rows.item_id.iloc[0]


def read(matcher, text, candidates=()):
    items, covered = matcher.items(text)
    return matcher.concepts(text, frozenset(candidates), items, covered), items


def test_fold_strips_accents_case_and_punctuation():
    assert fold("Lázaro Ramos, L. Frank Baum!") == "lazaro ramos l frank baum"


def test_titles_with_and_without_a_year(universe, matcher):
    heat = item(universe, "Heat", "1995")
    assert matcher.items("Try Heat (1995) tonight.")[0] == {heat}
    assert matcher.items("I can stand the heat.")[0] == set()  # one word, no year: not a title
    oz = set(universe.items[universe.items.title == "The Wizard of Oz"].item_id)
    assert matcher.items("The Wizard of Oz is a classic.")[0] == oz and len(oz) == 4
    assert matcher.items("The Wizard of Oz (1925) is silent.")[0] == {item(universe, "The Wizard of Oz", "1925")}
    assert matcher.items("Wizard of Oz (1939)")[0] == {item(universe, "The Wizard of Oz", "1939")}  # no article


def test_genre_aliases_of_its_own(matcher):
    assert read(matcher, "Something funny, or a scary one from 1995.")[0] == \
        {"genre=comedy", "genre=horror", "year=1995"}
    assert read(matcher, "Not too long or too short, please.")[0] == set()
    assert read(matcher, "A short film about vampires.")[0] == {"genre=short", "plot=vampire"}


def test_the_words_of_a_title_are_not_read_again(universe, matcher):
    concepts, items = read(matcher, "Scary Movie (2000) it is.")
    assert items == {item(universe, "Scary Movie", "2000")} and concepts == set()


def test_persons_by_name_and_by_surname(matcher):
    candidates = {"director=steven spielberg", "writer=l frank baum"}
    assert read(matcher, "A Spielberg film would do.", candidates)[0] == {"director=steven spielberg"}
    assert read(matcher, "a spielberg film", candidates)[0] == set()  # a surname alone must be capitalised
    # Frank Baum is L. Frank Baum without his initial; Frank Joslyn Baum is not read from the surname.
    found = read(matcher, "Written by Frank Baum.", candidates | {"writer=frank joslyn baum"})[0]
    assert found == {"writer=l frank baum"}
    # A person who is neither a candidate nor in a named title is not found (by design).
    assert read(matcher, "Starring Tom Hanks.")[0] == set()


def test_a_name_under_several_fields_counts_under_the_wished_one(matcher):
    candidates = {"director=steven spielberg"}
    both = {"director=steven spielberg", "writer=steven spielberg"}
    assert read(matcher, "Steven Spielberg, again.", candidates)[0] == candidates
    assert read(matcher, "Steven Spielberg, again.", both)[0] == both


def user(turn, text, stated, preference):
    return {"speaker": "USER", "text": text,
            "user_meta": {"turn": turn, "kind": "open" if turn == 0 else "refine", "focus": stated[0].split("=")[0],
                          "stated": stated, "preference": preference, "dropped": [], "shift": False,
                          "phrasing": "template", "target": "7", "liked": None}}


def test_independent_scores_agree_on_a_template_reply_and_differ_on_a_surname(universe, matcher):
    conversation = [
        user(0, "I want a comedy.", ["genre=comedy"], ["genre=comedy"]),
        {"speaker": "SYSTEM", "text": "Matching genre comedy: Big (1988).", "constraints": ["genre=comedy"]},
        user(1, "Could it also be directed by Steven Spielberg?", ["director=steven spielberg"],
             ["director=steven spielberg", "genre=comedy"]),
        {"speaker": "SYSTEM", "text": "A funny Spielberg-like pick: Big (1988).", "constraints": []},
    ]
    log = SessionLog.model_validate({"session_id": "s0", "system": "llm", "true_genre": "comedy",
                                     "conversation": conversation, "shift_events": []})
    rows, turns = independent_rows([log], universe, MetricConfig(), matcher)
    grounded = turn_table(conversation, universe, MetricConfig()).assign(system="llm", session_id="s0")
    # Turn 0: both read {comedy}. Turn 1: the matcher reads "funny" and the surname, E(x) at least not the surname.
    assert turns.loc[0, "concepts"] == grounded.loc[0, "concepts"] == ("genre=comedy",)
    assert set(turns.loc[1, "concepts"]) == {"director=steven spielberg", "genre=comedy"}
    assert "director=steven spielberg" not in grounded.loc[1, "concepts"]
    agreement = extractor_agreement(grounded, turns)
    assert agreement.loc["llm", "turns"] == 2 and agreement.loc["llm", "same_concepts"] == 0.5
    assert agreement.loc["llm", "tas_independent"] == pytest.approx(turns["tas"].mean())
    assert rows.loc[0, "tas"] == pytest.approx(turns["tas"].mean())
    means = mean_table(pd.DataFrame({"system": ["llm"], "session_id": ["s0"], "tas": [0.1]}), rows, ["tas"])
    assert means.loc["llm", ("tas", "E(x)")] == 0.1 and means.loc["llm", ("tas", "matcher")] == rows.loc[0, "tas"]
