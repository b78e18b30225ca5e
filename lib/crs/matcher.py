"""A second concept extractor, for scoring replies independently of E(x).

E(x) (:class:`lib.crs.concepts.Gazetteer`) does everything in chapter 06: it picks what the simulator may say,
reads every user turn for the trackers, and scores the replies. The template systems write their replies in its
words ("Matching genre comedy, actor Tom Hanks: …"), so a metric scored by E(x) can agree with them by
construction. :class:`AliasMatcher` shares no code or vocabulary with it and scores the same replies, so that
agreement between the two says how much of a metric is the extractor (:func:`independent_rows`,
:func:`extractor_agreement`). It reads a reply against the concepts it could be scored on:

* **titles**: every item's title, folded (accents stripped, case folded, punctuation to spaces), as a whole-word
  phrase, also without a leading article; with a year right after it, only the item of that year; a title of
  one word besides articles counts only with its year ("Heat (1995)", "The Heat (2013)"), so that a common
  phrase is not a title; the words of a
  named title are not read again as genre, person or year;
* **persons**: the people among the concepts the reply is scored against (the user's current and abandoned
  wishes) and the people of the titles it names, by full name, by the name without its initials, and by the
  surname alone when it has at least 4 letters, is capitalised in the reply and does not end a longer
  capitalised name ("a Spielberg film", not "Frank Baum" for another Baum);
* **genres**: an alias lexicon of its own (:data:`GENRE_WORDS`); "short" only as "short film", so "not too
  short" is no genre;
* **years**: a four-digit number that is the year of some item;
* **plot keywords**: each word of the keyword by its stem (first five letters) at the start of a word;
* **languages**: the language's name.

What it cannot do, by design: a person who is neither wished for nor in a named title is not found (E(x) finds
every person of the universe), so an invented person counts for E(x) and not here.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
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
STEM_LETTERS = 5
MIN_SURNAME_LETTERS = 4
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
    _person_aliases: dict[str, tuple[tuple[str, ...], str | None]] = field(default_factory=dict, repr=False)

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
                stems = [re.escape(w[:STEM_LETTERS]) + r"\w*" for w in fold(value).split()]
                patterns.append((concept, re.compile(r"\b" + r"\s+".join(stems) + r"\b")))
            elif kind == "language":
                patterns.append((concept, re.compile(rf"\b{re.escape(fold(value))}\b")))
        return patterns

    def items(self, text: str) -> tuple[frozenset[str], frozenset[int]]:
        """The items whose titles the text names, and the positions of the tokens their titles (and years)
        cover."""
        tokens = fold(text).split()
        padded = f" {' '.join(tokens)} "
        found: set[str] = set()
        covered: set[int] = set()
        for item, title, year in self.titles:
            length = len(title.split())
            if year is not None and f" {title} {year} " in padded:
                starts, length = _occurrences(padded, f"{title} {year}"), length + 1
            elif len([w for w in title.split() if w not in ARTICLES]) > 1:
                # a title said without its year; not when another year follows it (another item)
                starts = [s for s in _occurrences(padded, title)
                          if s + length >= len(tokens) or tokens[s + length] not in self.years]
            else:
                starts = []
            for start in starts:
                found.add(item)
                covered.update(range(start, start + length))
        return frozenset(found), frozenset(covered)

    def _person(self, concept: str) -> tuple[tuple[str, ...], str | None]:
        """A person's folded aliases (full name, name without initials) and the folded surname that counts alone
        (None when it is shorter than :data:`MIN_SURNAME_LETTERS` or the name has one word)."""
        if concept not in self._person_aliases:
            words = fold(self.universe.display.get(concept, split_concept(concept)[1])).split()
            full, no_initials = " ".join(words), " ".join(w for w in words if len(w) > 1)
            surname = words[-1] if len(words) > 1 and len(words[-1]) >= MIN_SURNAME_LETTERS else None
            self._person_aliases[concept] = (tuple(sorted({full, no_initials} - {""})), surname)
        return self._person_aliases[concept]

    def concepts(self, text: str, candidates: frozenset[str], items: frozenset[str], covered: frozenset[int]
                 ) -> frozenset[str]:
        """The preference concepts the text names outside the ``covered`` title tokens: persons among
        ``candidates`` and the people of ``items``, genres, plot keywords, languages and years. A name listed under
        several fields, or a surname several people share, counts as those among ``candidates`` if any, else as
        all of them."""
        raw = raw_tokens(text)
        kept = [("#" if i in covered else t.lower()) for i, t in enumerate(raw)]
        folded = " ".join(kept)
        padded = f" {folded} "
        found = {c for c, pattern in self.fixed_patterns if pattern.search(folded)}
        found |= {f"year={y}" for y in YEAR.findall(folded) if y in self.years}
        people = {c for c in candidates if concept_field(c) in PERSON_FIELDS} | {
            c for i in items for c in self.universe.concepts_of[i] if concept_field(c) in PERSON_FIELDS}
        # People read by one key (a full name under several fields, or a surname said alone that several people
        # share) count as the wished ones among them if any, else all of them.
        by_key: dict[str, set[str]] = {}
        for person in people:
            aliases, surname = self._person(person)
            if any(f" {a} " in padded for a in aliases):
                by_key.setdefault(f"name:{split_concept(person)[1]}", set()).add(person)
            elif surname and any(word == surname and raw[i][:1].isupper() and not (i and _name_word(raw[i - 1]))
                                 for i, word in enumerate(kept)):
                by_key.setdefault(f"surname:{surname}", set()).add(person)
        for group in by_key.values():
            found |= (group & candidates) or group
        return frozenset(found)

    def system_concepts(self, text: str, relevant: frozenset[str], universe: ItemUniverse
                        ) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(S, every concept named, the items named), as :func:`lib.crs.metrics.system_concepts` gives them, from
        this matcher: S is the preference concepts named plus the concepts of ``relevant`` (P ∪ D) that a named
        item carries."""
        items, covered = self.items(text)
        named = self.concepts(text, relevant, items, covered)
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
    system, with a CI resampling the simulated users (:func:`lib.analysis.stats.correlation_ci`)."""
    from lib.analysis.stats import correlation_ci

    both = grounded.merge(independent, on=["system", "session_id"], suffixes=("", "_independent"), validate="1:1")
    out = []
    for metric in metrics:
        pair = both[["session_id", metric, f"{metric}_independent"]].dropna()
        out.append({"metric": metric, **correlation_ci(pair[metric].astype(float),
                                                       pair[f"{metric}_independent"].astype(float), "spearman",
                                                       seed=seed, n_resamples=n_resamples,
                                                       units=pair["session_id"], unit="users")})
    return pd.DataFrame(out).set_index("metric")


def mean_table(grounded: pd.DataFrame, independent: pd.DataFrame,
               metrics: Sequence[str] = ("tas", "cas", "recovery_rate", "interference")) -> pd.DataFrame:
    """Per system, the session means of ``metrics`` by E(x) and by the matcher, side by side."""
    means = {"E(x)": grounded.groupby("system", sort=False)[list(metrics)].mean(),
             "matcher": independent.groupby("system", sort=False)[list(metrics)].mean()}
    table = pd.concat(means, axis=1).swaplevel(axis=1)
    return table[[(m, e) for m in metrics for e in means]].astype(float)
