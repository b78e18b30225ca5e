"""The CRS item universe: canonical values, the title + year join, E(x), indexes and recommend()."""
from __future__ import annotations

import math

import pytest

from lib.crs.concepts import GENRE_ALIASES, PLOT_VOCABULARY, canonical, normalise, plot_keywords, split_concept
from tests.crs_tiny import tiny_universe


@pytest.fixture(scope="module")
def universe():
    return tiny_universe()


@pytest.mark.parametrize("field, raw, expected", [
    ("genre", "Romance Film", "romance"), ("genre", "Science Fiction", "sci-fi"), ("genre", "Sci-Fi", "sci-fi"),
    ("genre", "Crime Fiction", "crime"), ("genre", "Action Film", "action"), ("genre", "comedies", "comedy"),
    ("language", "French Language", "french"), ("language", "English", "english"),
    ("language", "Standard Chinese", "mandarin"), ("actor", "Michael J. Fox", "michael j fox"),
    ("actor", "  Audrey   TAUTOU ", "audrey tautou"), ("director", "Jean-Pierre Jeunet", "jean pierre jeunet"),
])
def test_canonical_values(field, raw, expected):
    assert canonical(field, raw) == expected


def test_normalise_strips_accents_case_and_punctuation():
    assert normalise("Amélie & Co. (2001)!") == "amelie and co 2001"


def test_concept_strings_are_checked():
    assert split_concept("actor=tom hanks") == ("actor", "tom hanks")
    with pytest.raises(ValueError, match="not a concept"):
        split_concept("mood=happy")


def test_plot_keywords_come_from_the_controlled_vocabulary():
    assert plot_keywords("Two detectives chase a serial killer through a haunted prison.") == \
        ["serial killer", "detective", "prison", "ghost"]  # in vocabulary order
    assert plot_keywords("A quiet drama.") == []


def test_plot_vocabulary_says_its_keywords_and_shares_no_surface_with_genres():
    genre_surfaces = set(GENRE_ALIASES) | {normalise(g) for g in GENRE_ALIASES.values()}
    # The keyword itself and its spoken form ("plot vampires", "about vampires") are read back as the keyword.
    assert all(keyword in plot_keywords(keyword) and keyword in plot_keywords(forms[0])
               for keyword, forms in PLOT_VOCABULARY.items())
    assert not {form for forms in PLOT_VOCABULARY.values() for form in forms} & genre_surfaces


def test_join_on_title_and_year_and_its_coverage(universe):
    coverage = universe.coverage
    assert (coverage.redial_items, coverage.redial_without_year, coverage.opendialkg_items) == (12, 1, 4)
    # Amélie (accent), Heat, and Splash (disambiguation dropped) join; Big exists only with another year.
    assert (coverage.matched, coverage.with_language, coverage.title_other_year) == (3, 3, 1)
    languages = dict(zip(universe.items["name"], universe.items["language"], strict=True))
    assert languages["Amélie (2001)"] == ["french"] and languages["Heat (1995)"] == ["english", "spanish"]
    assert languages["Big (1988)"] == [] and languages["The Time Machine"] == []
    assert coverage.as_frame().loc["matched", "share_of_redial"] == pytest.approx(3 / 12)


def test_indexes_and_idf(universe):
    assert universe.index["actor"]["tom hanks"] == {"2", "3", "4", "9"}
    assert universe.concepts_of["5"] >= {"name=amelie 2001", "year=2001", "language=french", "genre=comedy"}
    assert "plot=vampire" in universe.concepts_of["7"] and "plot=detective" in universe.concepts_of["1"]
    assert universe.idf("actor=tom hanks") == pytest.approx(math.log(13 / 5) + 1)
    assert universe.idf("genre=musical") == pytest.approx(math.log(13) + 1)  # unseen: df = 0


def test_extraction_finds_fields_aliases_and_years(universe):
    assert universe.extract("I want a funny film with Tom Hanks and Meg Ryan from 1993") == \
        {"genre=comedy", "actor=tom hanks", "actor=meg ryan", "year=1993"}
    assert universe.extract("something scary in French about vampires") == \
        {"genre=horror", "language=french", "plot=vampire"}
    assert universe.extract("a 1950 movie") == set()  # no item of 1950: not a concept of this universe


def test_person_field_follows_cues_then_primary_field(universe):
    assert universe.extract("directed by Clint Eastwood") == {"director=clint eastwood"}
    assert universe.extract("starring Clint Eastwood") == {"actor=clint eastwood"}
    # Two titles each: the tie goes to actor, then director, then writer.
    assert universe.extract("Clint Eastwood") == {"actor=clint eastwood"}
    assert universe.extract("Nora Ephron") == {"director=nora ephron"}
    # A name joined by "and" takes the field of the name before it.
    assert universe.extract("directed by Nora Ephron and Clint Eastwood") == \
        {"director=nora ephron", "director=clint eastwood"}


def test_titles_are_read_first_and_hide_their_words(universe):
    assert universe.extract("How about Heat (1995) or Amelie (2001)?") == {"name=heat 1995", "name=amelie 2001"}
    # An item without a year is read by its bare title (two words that are not stop words), before plot words.
    assert universe.extract("The Time Machine is a classic") == {"name=the time machine"}
    assert universe.extract("a story with a time machine") == {"plot=time travel"}
    assert universe.extract("I felt the heat") == set()  # a title with a year needs its year
    assert universe.gazetteer.masked_tokens("Try Heat (1995) with Al Pacino") == ["try", "<name>", "with", "<actor>"]


def test_a_text_read_again_gives_the_same_mentions_and_a_caller_cannot_change_them(universe):
    text = "Try Heat (1995) with Al Pacino"
    first = universe.gazetteer.mentions(text)
    first.clear()
    assert [m.concept for m in universe.gazetteer.mentions(text)] == ["name=heat 1995", "actor=al pacino"]


def test_find_title(universe):
    assert universe.find_title("Heat (1995)") == "1"
    assert universe.find_title("heat") == "1"
    assert universe.find_title("The Time Machine") == "8"
    assert universe.find_title("Made Up Movie (1999)") is None


def test_recommend_intersection_in_a_seeded_order(universe):
    found = universe.recommend(["genre=comedy", "actor=tom hanks"], k=5, seed=3)
    assert found.exact and set(found.item_ids) == {"2", "3", "4"}
    assert universe.recommend(["genre=comedy", "actor=tom hanks"], k=5, seed=3) == found
    assert all(m == {"genre=comedy", "actor=tom hanks"} for m in found.met)
    assert len(universe.recommend(["genre=comedy", "actor=tom hanks"], k=2).item_ids) == 2


def test_recommend_falls_back_to_the_idf_ranked_union(universe):
    found = universe.recommend(["genre=western", "actor=tom hanks"], k=5)
    assert not found.exact
    # Unforgiven is the only western (df 1): it outranks the four Tom Hanks films (df 4).
    assert found.item_ids[0] == "10" and set(found.item_ids[1:]) == {"2", "3", "4", "9"}
    assert found.met[0] == {"genre=western"}


def test_recommend_without_constraints_or_matches(universe):
    assert universe.recommend([]).item_ids == ()
    assert universe.recommend(["genre=musical"]).item_ids == ()
