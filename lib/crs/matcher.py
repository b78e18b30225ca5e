"""A second concept extractor, for scoring replies independently of E(x).

E(x) (:class:`lib.crs.concepts.Gazetteer`) does everything in chapter 06: it picks what the simulator may say,
reads every user turn for the trackers, and scores the replies. The template systems write their replies in its
words ("Matching genre comedy, actor Tom Hanks: …"), so a metric scored by E(x) can agree with them by
construction. :class:`AliasMatcher` shares no matching code with it and does not see the simulator's state; it
uses what any extractor of this universe must name: the items' titles and years, the canonical concept values and
their display names, and the plot keyword list. It scores the same replies by the same formulas, so that
agreement between the two says how much of a metric is the extractor (:func:`independent_rows`,
:func:`extractor_agreement`). It reads:

* **titles**: every item's title, folded (accents stripped, case folded, punctuation to spaces), as a whole-word
  phrase, also without a leading article; with a year right after it, only the item of that year; a title of
  one word besides articles counts only with its year ("Heat (1995)", "The Heat (2013)"), so that a common
  phrase is not a title; a title inside a longer title found at the same place is not read ("Beverly Hills Cop"
  in "Beverly Hills Cop II"); the words of a named title are not read again as genre, person or year;
* **persons**: every person of the universe by full name or by the name without its initials (at least two
  words), longest first; the field from a cue word among the three words before the name ("directed",
  "starring", "written", …), else the fields under which the named titles list the person, else every field the
  universe lists the name under; a surname said alone only for the people of the named titles, when it has at
  least 4 letters, is capitalised and does not end a longer capitalised name ("a Spielberg film");
* **genres**: an alias lexicon of its own (:data:`GENRE_WORDS`); "short" only as "short film", so "not too
  short" is no genre;
* **years**: a four-digit number that is the year of some item;
* **plot keywords**: each word of the keyword whole, with at most three more letters ("vampires", not
  "Christopher" for christmas);
* **languages**: the language's name.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from lib.crs.concepts import PERSON_FIELDS, concept_field, split_concept
from lib.crs.config import MetricConfig
from lib.crs.metrics import jaccard, session_summary, shift_table, turn_table
from lib.crs.records import SessionLog
from lib.crs.universe import ItemUniverse

# Canonical genre → the words and phrases (folded) that name it, written for this matcher.
GENRE_WORDS: dict[str, tuple[str, ...]] = {
    "action": ("action", "action packed"), "adventure": ("adventure", "adventures", "adventurous"),
    "animation": ("animation", "animated", "cartoon", "cartoons"),
    "biography": ("biography", "biopic", "biographical"), "comedy": ("comedy", "comedies", "comedic", "funny",
                                                                     "humorous", "hilarious", "romcom"),
    "crime": ("crime", "crimes", "criminal", "gangster", "gangsters"), "documentary": ("documentary", "documentaries"),
    "drama": ("drama", "dramas", "dramatic"), "family": ("family", "families", "kids", "children"),
    "fantasy": ("fantasy", "fantasies", "magical"), "film-noir": ("film noir", "noir"), "game-show": ("game show",),
    "history": ("history", "historical"), "horror": ("horror", "horrors", "scary", "frightening", "terrifying"),
    "music": ("music",), "musical": ("musical", "musicals"), "mystery": ("mystery", "mysteries", "whodunit"),
    "news": ("news",), "reality-tv": ("reality tv", "reality show"),
    "romance": ("romance", "romances", "romantic", "love story", "romcom"), "sci-fi": ("sci fi", "scifi",
                                                                                     "science fiction"),
    "short": ("short film", "short films"), "sport": ("sport", "sports", "sporting"), "talk-show": ("talk show",),
    "thriller": ("thriller", "thrillers", "suspense", "suspenseful"), "war": ("war", "wars", "wartime"),
    "western": ("western", "westerns", "cowboy", "cowboys"),
}
ARTICLES = ("the", "a", "an")
SUFFIX_LETTERS = 3
MIN_SURNAME_LETTERS = 4
MAX_NAME_WORDS = 6
CUE_WORDS: dict[str, tuple[str, ...]] = {
    "director": ("directed", "director", "directors", "dir", "filmmaker"),
    "writer": ("written", "writer", "writers", "screenplay", "script", "scripted", "penned"),
    "actor": ("starring", "stars", "star", "actor", "actress", "actors", "cast", "featuring", "with"),
}
YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def _unaccented(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def raw_tokens(text: str) -> list[str]:
    """The runs of ASCII letters and digits of the text with its accents stripped, case kept."""
    return re.findall(r"[0-9A-Za-z]+", _unaccented(text))


def fold(text: str) -> str:
    """Accents stripped, case folded, every run of characters that are not ASCII letters or digits one space."""
    return " ".join(t.lower() for t in raw_tokens(text))


def _name_word(token: str) -> bool:
    """A capitalised token that is not a stop word ("Frank", not "A" or "The"): it may be part of a name."""
    return token[:1].isupper() and token.lower() not in ENGLISH_STOP_WORDS


def _occurrences(padded: str, phrase: str) -> list[int]:
    """Token positions where the phrase starts in ``padded`` (folded tokens joined by single spaces, padded)."""
    starts, at = [], padded.find(f" {phrase} ")
    while at >= 0:
        starts.append(padded[:at + 1].count(" ") - 1)
        at = padded.find(f" {phrase} ", at + 1)
    return starts


@dataclass
class AliasMatcher:
    """The matcher over one universe (indexes built once, on first use)."""

    universe: ItemUniverse

    @cached_property
    def titles(self) -> list[tuple[str, str, str | None]]:
        """(item, folded title phrase, year or None) for every item and every alias of its title."""
        out: list[tuple[str, str, str | None]] = []
        for row in self.universe.items.itertuples(index=False):
            year = None if row.year is None or pd.isna(row.year) else str(int(row.year))
            folded = fold(str(row.title))
            words = folded.split()
            aliases = {folded} | ({" ".join(words[1:])} if len(words) > 1 and words[0] in ARTICLES else set())
            out.extend((row.item_id, alias, year) for alias in aliases if alias)
        return out

    @cached_property
    def titles_by_first_word(self) -> dict[str, list[tuple[str, str, str | None, int, bool]]]:
        """:attr:`titles` by the first word of the phrase, each with its length in words and whether it has more
        than one word besides articles: a text can name only titles whose first word it has."""
        out: dict[str, list[tuple[str, str, str | None, int, bool]]] = {}
        for item, title, year in self.titles:
            words = title.split()
            out.setdefault(words[0], []).append(
                (item, title, year, len(words), len([w for w in words if w not in ARTICLES]) > 1))
        return out

    @cached_property
    def persons(self) -> dict[str, frozenset[str]]:
        """Folded name (full, and without initials when that leaves two words) → the person concepts of every field
        the universe lists it under."""
        names: dict[str, set[str]] = {}
        for concept in self.universe.postings:
            if concept_field(concept) in PERSON_FIELDS:
                words = fold(self.universe.display.get(concept, split_concept(concept)[1])).split()
                for alias in {" ".join(words), " ".join(w for w in words if len(w) > 1)}:
                    if len(alias.split()) >= 2:
                        names.setdefault(alias, set()).add(concept)
        return {name: frozenset(concepts) for name, concepts in names.items()}

    @cached_property
    def years(self) -> frozenset[str]:
        return frozenset(split_concept(c)[1] for c in self.universe.postings if concept_field(c) == "year")

    @cached_property
    def fixed_patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        """(concept, pattern on folded text) for genres, plot keywords and languages."""
        patterns = []
        for concept in sorted(self.universe.postings):
            kind, value = split_concept(concept)
            if kind == "genre":
                phrases = GENRE_WORDS.get(value, (fold(value),))
                patterns.append((concept, re.compile("|".join(rf"\b{re.escape(p)}\b" for p in phrases))))
            elif kind == "plot":
                words = [re.escape(w) + rf"\w{{0,{SUFFIX_LETTERS}}}" for w in fold(value).split()]
                patterns.append((concept, re.compile(r"\b" + r"\s+".join(words) + r"\b")))
            elif kind == "language":
                patterns.append((concept, re.compile(rf"\b{re.escape(fold(value))}\b")))
        return patterns

    def items(self, text: str) -> tuple[frozenset[str], frozenset[int]]:
        """The items whose titles the text names, and the positions of the tokens their titles (and years)
        cover."""
        tokens = fold(text).split()
        padded = f" {' '.join(tokens)} "
        spans: list[tuple[int, int, str]] = []
        candidates = (entry for word in set(tokens) for entry in self.titles_by_first_word.get(word, ()))
        for item, title, year, length, several_words in candidates:
            if year is not None and f" {title} {year} " in padded:
                starts, length = _occurrences(padded, f"{title} {year}"), length + 1
            elif several_words:
                # a title said without its year; not when another year follows it (another item)
                starts = [s for s in _occurrences(padded, title)
                          if s + length >= len(tokens) or tokens[s + length] not in self.years]
            else:
                starts = []
            spans.extend((start, start + length, item) for start in starts)
        # a title inside a longer title found around it is part of that title
        kept = [(a, b, item) for a, b, item in spans
                if not any(c <= a and b <= d and d - c > b - a for c, d, _ in spans)]
        return frozenset(item for _, _, item in kept), frozenset(t for a, b, _ in kept for t in range(a, b))

    def concepts(self, text: str, items: frozenset[str], covered: frozenset[int]) -> frozenset[str]:
        """The preference concepts the text names outside the ``covered`` title tokens: persons, genres, plot
        keywords, languages and years (the module docstring gives the rules); ``items`` are the titles it names."""
        raw = raw_tokens(text)
        kept = [("#" if i in covered else t.lower()) for i, t in enumerate(raw)]
        folded = " ".join(kept)
        found = {c for c, pattern in self.fixed_patterns if pattern.search(folded)}
        found |= {f"year={y}" for y in YEAR.findall(folded) if y in self.years}
        titled = {c for i in items for c in self.universe.concepts_of[i] if concept_field(c) in PERSON_FIELDS}
        position = 0
        while position < len(kept):
            for n in range(min(MAX_NAME_WORDS, len(kept) - position), 1, -1):
                people = self.persons.get(" ".join(kept[position:position + n]))
                if people is not None:
                    found |= self._fields(people, kept[max(0, position - 3):position], titled)
                    position += n
                    break
            else:
                word = kept[position]
                surname = {c for c in titled if len(word) >= MIN_SURNAME_LETTERS
                           and fold(self.universe.display.get(c, split_concept(c)[1])).split()[-1] == word}
                if surname and raw[position][:1].isupper() and not (position and _name_word(raw[position - 1])):
                    found |= self._fields(frozenset(surname), kept[max(0, position - 3):position], titled)
                position += 1
        return frozenset(found)

    @staticmethod
    def _fields(people: frozenset[str], before: Sequence[str], titled: set[str]) -> frozenset[str]:
        """Of one name's person concepts: the field of the nearest cue word before it, else those the named titles
        list, else all."""
        for word in reversed(before):
            cued = frozenset(c for c in people for f, cues in CUE_WORDS.items() if word in cues
                             and concept_field(c) == f)
            if cued:
                return cued
        return frozenset(people & titled) or people

    def system_concepts(self, text: str, relevant: frozenset[str], universe: ItemUniverse
                        ) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(S, every concept named, the items named), as :func:`lib.crs.metrics.system_concepts` gives them, from
        this matcher: S is the preference concepts named plus the concepts of ``relevant`` (P ∪ D) that a named
        item carries (the metric's definition of S, as for E(x); the matching itself does not see ``relevant``)."""
        items, covered = self.items(text)
        named = self.concepts(text, items, covered)
        grounded = frozenset(c for c in relevant if any(c in universe.concepts_of[i] for i in items))
        names = frozenset(f"name={fold(universe.names[i])}" for i in items)
        return named | grounded, named | names, items


def independent_rows(logs: Sequence[SessionLog], universe: ItemUniverse, config: MetricConfig = MetricConfig(),
                     matcher: AliasMatcher | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every log scored with :class:`AliasMatcher` in place of E(x), by the same formulas
    (:func:`lib.crs.metrics.turn_table`, ``shift_table``, ``session_summary``): one row per session (system,
    session_id and the session metrics) and the per-turn table (with system and session_id)."""
    matcher = matcher or AliasMatcher(universe)
    rows, frames = [], []
    for log in logs:
        record = log.record()
        turns = turn_table(record["conversation"], universe, config, concepts=matcher.system_concepts)
        summary = session_summary(turns, shift_table(turns, record["shift_events"], config), config)
        rows.append({"system": log.system, "session_id": log.session_id, **summary})
        frames.append(turns.assign(system=log.system, session_id=log.session_id))
    return pd.DataFrame(rows), pd.concat(frames, ignore_index=True)


def extractor_agreement(grounded_turns: pd.DataFrame, independent_turns: pd.DataFrame) -> pd.DataFrame:
    """Per system, over the scored turns: turns, the share where both extractors give the same S (the reply's
    preference concepts) and the same named titles, the mean Jaccard index of the two S (1 where both are empty),
    and the mean TAS(t) by each."""
    keys = ["system", "session_id", "turn"]
    both = grounded_turns[grounded_turns["scored"]].merge(independent_turns[[*keys, "concepts", "titles", "tas"]],
                                                          on=keys, suffixes=("", "_independent"), validate="1:1")
    both["same_concepts"] = [set(a) == set(b) for a, b in zip(both["concepts"], both["concepts_independent"],
                                                              strict=True)]
    both["same_titles"] = [set(a) == set(b) for a, b in zip(both["titles"], both["titles_independent"], strict=True)]
    both["concept_jaccard"] = [1.0 if not (a or b) else jaccard(frozenset(a), frozenset(b))
                               for a, b in zip(both["concepts"], both["concepts_independent"], strict=True)]
    grouped = both.groupby("system", sort=False)
    return pd.DataFrame({"turns": grouped.size(), "same_concepts": grouped["same_concepts"].mean(),
                         "same_titles": grouped["same_titles"].mean(),
                         "concept_jaccard": grouped["concept_jaccard"].mean(), "tas": grouped["tas"].mean(),
                         "tas_independent": grouped["tas_independent"].mean()})


def session_agreement(grounded: pd.DataFrame, independent: pd.DataFrame, metrics: Sequence[str] = ("tas", "cas"),
                      seed: int = 0, n_resamples: int = 2000) -> pd.DataFrame:
    """Per metric, Spearman's ρ between the session values by E(x) and by the matcher, over every session of every
    system, with a CI resampling the simulated users (:func:`lib.crs.summaries.user_correlation`: no p over
    sessions nested in users)."""
    from lib.crs.summaries import user_correlation

    both = grounded.merge(independent, on=["system", "session_id"], suffixes=("", "_independent"), validate="1:1")
    out = []
    for metric in metrics:
        pair = both[["session_id", metric, f"{metric}_independent"]].dropna()
        out.append({"metric": metric, **user_correlation(pair[metric].astype(float),
                                                         pair[f"{metric}_independent"].astype(float),
                                                         pair["session_id"], "users", seed, n_resamples)})
    return pd.DataFrame(out).set_index("metric")


def mean_table(grounded: pd.DataFrame, independent: pd.DataFrame,
               metrics: Sequence[str] = ("tas", "cas", "recovery_rate", "interference")) -> pd.DataFrame:
    """Per system, the session means of ``metrics`` by E(x) and by the matcher, side by side."""
    means = {"E(x)": grounded.groupby("system", sort=False)[list(metrics)].mean(),
             "matcher": independent.groupby("system", sort=False)[list(metrics)].mean()}
    table = pd.concat(means, axis=1).swaplevel(axis=1)
    return table[[(m, e) for m in metrics for e in means]].astype(float)
