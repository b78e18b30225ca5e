"""Concepts: grounded ``field=value`` strings, their canonical values, and the extraction E(x) from text.

A *concept* is one field of the item universe with one canonical value, written ``"<field>=<value>"``
(``genre=comedy``, ``actor=tom hanks``, ``year=1995``, ``plot=vampire``, ``name=heat 1995``). Values are
canonical (:func:`canonical`): accents stripped, lower case, ``&`` read as "and", punctuation dropped, a field's
suffix words removed ("Romance Film" → romance, "French Language" → french) and aliases mapped ("science
fiction" → sci-fi, "funny" → comedy). Two spellings of one value are one concept.

E(x) (:meth:`Gazetteer.extract`) finds the concepts a text names, by looking its canonical tokens up in a
gazetteer of every canonical value and alias of the universe (greedy, leftmost-longest, non-overlapping):

* a *title* is recognised with its year ("Heat (1995)" → ``name=heat 1995``); an item the data give no year is
  recognised by its bare title when that has at least two words that are not stop words. Title spans are
  taken first, so the words and year inside a title ("Scary Movie (2000)") are not read as genre or year;
* a *person* needs at least two name tokens (a one-word name such as "Prince" is too often a plain word). A
  name listed under several fields takes the field of the nearest cue word among the three tokens before it
  ("directed by", "starring", "written by", …; a name joined by "and"/"or" to a person mention takes that
  mention's field); without a cue it takes its *primary field*, the field with most titles (ties: actor,
  director, writer);
* a *year* is a four-digit token that is the year of some item;
* genres, languages and plot keywords are matched through their surface forms (:data:`GENRE_ALIASES`,
  :data:`LANGUAGE_ALIASES`, :data:`PLOT_VOCABULARY`).

Only values of the universe are found, so every extracted concept is grounded in at least one item.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

FieldName = Literal["genre", "actor", "director", "writer", "language", "year", "name", "plot"]
FIELDS: tuple[str, ...] = get_args(FieldName)
# The fields a user states preferences on; ``name`` (the title) is never a preference (the target is hidden).
PREFERENCE_FIELDS: tuple[str, ...] = tuple(f for f in FIELDS if f != "name")
PERSON_FIELDS: tuple[str, ...] = ("actor", "director", "writer")
CONCEPT_PATTERN = rf"^({'|'.join(FIELDS)})=[a-z0-9][a-z0-9 -]*$"

# Words that end a field's raw values in the data and carry nothing ("Action Film", "English Language").
FIELD_SUFFIXES: dict[str, tuple[str, ...]] = {"genre": ("film", "films", "movie", "movies", "fiction"),
                                              "language": ("language",)}
# Normalised surface form → canonical genre (ReDial's IMDb labels are the canonical values).
GENRE_ALIASES: dict[str, str] = {
    "sci fi": "sci-fi", "scifi": "sci-fi", "science fiction": "sci-fi", "film noir": "film-noir",
    "noir": "film-noir", "talk show": "talk-show", "reality tv": "reality-tv", "game show": "game-show",
    "romantic": "romance", "romances": "romance", "comedies": "comedy",
    "funny": "comedy", "dramas": "drama", "dramatic": "drama", "thrillers": "thriller", "suspense": "thriller",
    "scary": "horror", "horrors": "horror", "animated": "animation", "cartoon": "animation",
    "cartoons": "animation", "documentaries": "documentary", "biopic": "biography", "biographical": "biography",
    "historical": "history", "musicals": "musical", "westerns": "western", "mysteries": "mystery",
    "sports": "sport", "adventures": "adventure", "fantasies": "fantasy",
}
# Normalised surface form → canonical language.
LANGUAGE_ALIASES: dict[str, str] = {"standard chinese": "mandarin", "mandarin chinese": "mandarin",
                                    "chinese": "mandarin", "yue chinese": "cantonese",
                                    "american english": "english", "british english": "english"}
# The controlled plot vocabulary: canonical keyword → surface forms (normalised). The first form is how the
# keyword is said ("about vampires", "plot vampires"). Chosen by reading ReDial plot outlines: themes users ask
# for, each in at least ten outlines, none a genre word (war, family, music, crime, … are genres, so not plot
# keywords).
PLOT_VOCABULARY: dict[str, tuple[str, ...]] = {
    "vampire": ("vampires", "vampire"), "zombie": ("zombies", "zombie"),
    "alien": ("aliens", "alien", "extraterrestrial", "extraterrestrials"), "robot": ("robots", "robot", "android"),
    "heist": ("heists", "heist", "robbery", "bank robbery", "robbers"),
    "murder": ("murder", "murders", "murdered", "murderer"), "serial killer": ("serial killers", "serial killer"),
    "detective": ("detectives", "detective", "investigator"),
    "outer space": ("outer space", "spaceship", "astronaut", "astronauts"),
    "revenge": ("revenge", "vengeance", "avenge"), "prison": ("prison", "jail", "inmate", "inmates", "prisoner"),
    "superhero": ("superheroes", "superhero", "super hero"), "ghost": ("ghosts", "ghost", "haunted", "haunting"),
    "witch": ("witches", "witch", "witchcraft"), "wedding": ("weddings", "wedding"),
    "christmas": ("christmas",), "dog": ("dogs", "dog"), "police": ("police", "cop", "cops", "policeman"),
    "spy": ("spies", "spy", "espionage"), "pirate": ("pirates", "pirate"), "dinosaur": ("dinosaurs", "dinosaur"),
    "monster": ("monsters", "monster"), "drugs": ("drugs", "drug", "cocaine", "heroin"),
    "kidnapping": ("kidnapping", "kidnap", "kidnapped", "abducted", "abduction"),
    "apocalypse": ("apocalypse", "apocalyptic", "end of the world"),
    "college": ("college", "university"), "high school": ("high school",), "boxing": ("boxing", "boxer"),
    "football": ("football",), "baseball": ("baseball",), "basketball": ("basketball",),
    "mafia": ("mafia", "mob", "mobster", "mobsters", "gangster", "gangsters"),
    "lawyer": ("lawyers", "lawyer", "attorney"), "princess": ("princesses", "princess"),
    "terrorism": ("terrorists", "terrorist", "terrorism"), "hacker": ("hackers", "hacker", "hacking"),
    "assassin": ("assassins", "assassin", "hitman", "hit man"),
    "time travel": ("time travel", "time machine", "time traveling", "time travelling"),
    "treasure": ("treasure",), "magic": ("magic", "wizard", "wizards", "sorcerer"), "dragon": ("dragons", "dragon"),
    "shark": ("sharks", "shark"), "soldier": ("soldiers", "soldier"),
    "journalist": ("journalists", "journalist", "reporter"),
    "teenager": ("teenagers", "teenager", "teenage", "teen", "teens"), "friendship": ("friendship",),
    "marriage": ("marriage", "married couple"), "divorce": ("divorce", "divorced"), "cancer": ("cancer",),
    "island": ("islands", "island"), "road trip": ("road trips", "road trip"),
    "dance": ("dancing", "dance", "dancer", "dancers"),
    "singer": ("singers", "singer"), "fbi": ("fbi",), "cia": ("cia",),
}
# Cue words before a person's name that say which field the name is mentioned in.
PERSON_CUES: dict[str, str] = {
    "directed": "director", "director": "director", "directors": "director", "filmmaker": "director",
    "written": "writer", "writer": "writer", "writers": "writer", "screenplay": "writer", "scripted": "writer",
    "starring": "actor", "stars": "actor", "star": "actor", "actor": "actor", "actress": "actor",
    "featuring": "actor", "with": "actor", "cast": "actor",
}
CUE_WINDOW = 3
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)
YEAR_TOKEN = re.compile(r"^(19|20)\d\d$")
TOKEN = re.compile(r"[a-z0-9]+")


def normalise(text: str) -> str:
    """Canonical token string: NFKD with accents dropped, lower case, "&" as "and", tokens ``[a-z0-9]+`` joined
    by single spaces ("Amélie & Co." → "amelie and co")."""
    if text.isascii():  # most texts: NFKD leaves ASCII as it is, and there is no accent to drop
        plain = text.lower().replace("&", " and ")
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower().replace("&", " and ")
    return " ".join(TOKEN.findall(plain))


def tokens(text: str) -> list[str]:
    """The tokens of :func:`normalise`."""
    return normalise(text).split()


def canonical(field: str, raw: str) -> str:
    """Canonical value of ``raw`` on ``field``: :func:`normalise`; then, for genre and language, the alias table
    (:data:`GENRE_ALIASES`, :data:`LANGUAGE_ALIASES`) is applied to the whole value, else to the value without
    the field's suffix words (while a word is left). A genre's canonical form keeps ReDial's hyphen (sci-fi)."""
    value = normalise(raw)
    aliases = {"genre": GENRE_ALIASES, "language": LANGUAGE_ALIASES}.get(field)
    if aliases is None:
        return value
    if value in aliases:
        return aliases[value]
    words = value.split()
    while len(words) > 1 and words[-1] in FIELD_SUFFIXES[field]:
        words.pop()
    value = " ".join(words)
    return aliases.get(value, value)


def concept(field: str, value: str) -> str:
    """The concept string ``field=value`` (``value`` already canonical)."""
    if field not in FIELDS:
        raise ValueError(f"unknown field {field!r}; fields are {FIELDS}")
    return f"{field}={value}"


def split_concept(text: str) -> tuple[str, str]:
    """(field, value) of a concept string."""
    field, _, value = text.partition("=")
    if field not in FIELDS or not value:
        raise ValueError(f"not a concept: {text!r} (expected '<field>=<value>', field one of {FIELDS})")
    return field, value


def concept_field(text: str) -> str:
    return split_concept(text)[0]


def preference_concepts(concepts: Iterable[str]) -> frozenset[str]:
    """The concepts on preference fields (every field but ``name``)."""
    return frozenset(c for c in concepts if concept_field(c) != "name")


def plot_keywords(plot: str) -> list[str]:
    """Keywords of :data:`PLOT_VOCABULARY` whose surface forms occur (as whole token sequences) in ``plot``,
    in vocabulary order."""
    padded = f" {normalise(plot)} "
    return [keyword for keyword, forms in PLOT_VOCABULARY.items() if any(f" {form} " in padded for form in forms)]


def content_words(words: Sequence[str]) -> list[str]:
    return [w for w in words if w not in STOP_WORDS]


@dataclass(frozen=True)
class Mention:
    """A concept found in a text: token span [start, end) of the normalised text and the concept."""

    start: int
    end: int
    concept: str


class Gazetteer:
    """The surface forms of a universe's concepts and E(x) over them (see the module docstring for the rules).

    ``titles``: token tuple → the ``name`` concept it spells; ``values``: token tuple → its candidate concepts
    on the other fields (several only for a person listed under several fields, primary field first);
    ``years``: the year values of the universe."""

    def __init__(self, titles: Mapping[tuple[str, ...], str], values: Mapping[tuple[str, ...], Sequence[str]],
                 years: Iterable[str]) -> None:
        self.titles = {key: (name,) for key, name in titles.items()}
        self.values = {key: tuple(candidates) for key, candidates in values.items()}
        self.years = frozenset(years)
        # each table with its longest surface form in tokens, the widest span a match can take
        self._tables = [(table, max((len(key) for key in table), default=0)) for table in (self.titles, self.values)]
        # E(x) of a text is asked for again by every metric reading the same turn (extract, masked_tokens)
        self._found: dict[str, tuple[Mention, ...]] = {}

    def mentions(self, text: str) -> list[Mention]:
        """Non-overlapping mentions in token order: titles first (leftmost-longest), then, in the words left,
        the other values (leftmost-longest) and years. Each text is read once per gazetteer."""
        if text not in self._found:
            self._found[text] = tuple(self._read(text))
        return list(self._found[text])

    def _read(self, text: str) -> list[Mention]:
        words = tokens(text)
        taken = [False] * len(words)
        found: list[Mention] = []
        for table, longest in self._tables:
            i = 0
            while i < len(words):
                end = next((e for e in range(min(len(words), i + longest), i, -1)
                            if not any(taken[i:e]) and tuple(words[i:e]) in table), None)
                if end is not None:
                    found.append(Mention(i, end, self._resolve(words, found, i, table[tuple(words[i:end])])))
                elif table is self.values and not taken[i] and YEAR_TOKEN.match(words[i]) and words[i] in self.years:
                    found.append(Mention(i, i + 1, concept("year", words[i])))
                    end = i + 1
                else:
                    i += 1
                    continue
                taken[i:end] = [True] * (end - i)
                i = end
        return sorted(found, key=lambda m: m.start)

    @staticmethod
    def _resolve(words: list[str], found: list[Mention], start: int, candidates: tuple[str, ...]) -> str:
        """The candidate named by a cue word before the mention, else the first (primary) candidate."""
        if len(candidates) == 1:
            return candidates[0]
        by_field = {concept_field(c): c for c in candidates}
        previous = max((m for m in found if m.end <= start), key=lambda m: m.end, default=None)
        if previous is not None and previous.end == start - 1 and words[start - 1] in ("and", "or") \
                and concept_field(previous.concept) in by_field:
            return by_field[concept_field(previous.concept)]
        for position in range(start - 1, max(-1, start - 1 - CUE_WINDOW), -1):
            field = PERSON_CUES.get(words[position])
            if field in by_field:
                return by_field[field]
        return candidates[0]

    def extract(self, text: str) -> frozenset[str]:
        """E(x): the set of concepts ``text`` names."""
        return frozenset(m.concept for m in self.mentions(text))

    def masked_tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` with each mention replaced by one placeholder token ``<field>``, so that counting
        copied n-grams does not count naming the same concept as copying."""
        words = tokens(text)
        out: list[str] = []
        mentions = {m.start: m for m in self.mentions(text)}
        i = 0
        while i < len(words):
            if i in mentions:
                out.append(f"<{concept_field(mentions[i].concept)}>")
                i = mentions[i].end
            else:
                out.append(words[i])
                i += 1
        return out
