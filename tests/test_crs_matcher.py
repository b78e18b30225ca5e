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


def read(matcher, text):
    items, covered = matcher.items(text)
    return matcher.concepts(text, items, covered), items


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
    # a title inside a longer one at the same place is part of it
    assert matcher.items("Beverly Hills Cop II (1987)")[0] == {item(universe, "Beverly Hills Cop II", "1987")}


def test_genre_aliases_of_its_own(matcher):
    assert read(matcher, "Something funny, or a scary one from 1995.")[0] == \
        {"genre=comedy", "genre=horror", "year=1995"}
    assert read(matcher, "Not too long or too short, please.")[0] == set()
    assert read(matcher, "A short film about vampires.")[0] == {"genre=short", "plot=vampire"}
    # plot keywords are whole words with at most three more letters
    assert read(matcher, "Christopher Nolan made a family-friendly one.")[0] >= {"genre=family"}
    assert not {c for c in read(matcher, "Christopher Nolan made a family-friendly one.")[0] if c.startswith("plot=")}


def test_the_words_of_a_title_are_not_read_again(universe, matcher):
    concepts, items = read(matcher, "Scary Movie (2000) it is.")
    assert items == {item(universe, "Scary Movie", "2000")} and concepts == set()


def test_persons_by_name_with_the_field_of_a_cue_word(matcher):
    assert read(matcher, "Starring Tom Hanks.")[0] == {"actor=tom hanks"}
    assert read(matcher, "Directed by Steven Spielberg.")[0] == {"director=steven spielberg"}
    # no cue and no named title: every field the universe lists the name under
    assert read(matcher, "Steven Spielberg, again.")[0] == matcher.persons["steven spielberg"]
    assert len(matcher.persons["steven spielberg"]) > 1
    # Frank Baum is L. Frank Baum without his initial, not Frank Joslyn Baum
    assert read(matcher, "Written by Frank Baum.")[0] == {"writer=l frank baum"}


def test_a_surname_alone_only_for_the_people_of_a_named_title(universe, matcher):
    assert read(matcher, "A Spielberg film would do.")[0] == set()
    concepts, items = read(matcher, "A Spielberg film: 1941 (1979).")
    assert items == {item(universe, "1941", "1979")} and "director=steven spielberg" in concepts
    assert read(matcher, "a spielberg film: 1941 (1979).")[0] & matcher.persons["steven spielberg"] == set()


def user(turn, text, stated, preference):
    return {"speaker": "USER", "text": text,
            "user_meta": {"turn": turn, "kind": "open" if turn == 0 else "refine", "focus": stated[0].split("=")[0],
                          "stated": stated, "preference": preference, "dropped": [], "shift": False,
                          "phrasing": "template", "target": "7", "liked": None, "quiet": False}}


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
    # Turn 0: both read {comedy}. Turn 1: the matcher reads the surname as Big's co-writer Anne Spielberg (a surname
    # said alone counts for the named titles' people); E(x) reads no surname alone.
    assert turns.loc[0, "concepts"] == grounded.loc[0, "concepts"] == ("genre=comedy",)
    assert set(turns.loc[1, "concepts"]) == {"writer=anne spielberg", "genre=comedy"}
    assert not any("spielberg" in c for c in grounded.loc[1, "concepts"])
    agreement = extractor_agreement(grounded, turns)
    assert agreement.loc["llm", "turns"] == 2 and agreement.loc["llm", "same_concepts"] == 0.5
    assert agreement.loc["llm", "tas_independent"] == pytest.approx(turns["tas"].mean())
    assert rows.loc[0, "tas"] == pytest.approx(turns["tas"].mean())
    means = mean_table(pd.DataFrame({"system": ["llm"], "session_id": ["s0"], "tas": [0.1]}), rows, ["tas"])
    assert means.loc["llm", ("tas", "E(x)")] == 0.1 and means.loc["llm", ("tas", "matcher")] == rows.loc[0, "tas"]
