"""The item universe: ReDial's movies with OpenDialKG's languages, their concepts, indexes and ``recommend``.

Items are the 6,583 movies of ReDial's iEvaLM-CRS file (:func:`lib.data.load_redial_movies`): title (with year
for most), genre, plot, director, writer, actors. OpenDialKG's movies (:func:`lib.data.load_opendialkg_movies`)
add a language where they match: the join key is the normalised title (:func:`lib.crs.concepts.normalise`,
OpenDialKG's trailing disambiguation such as "(Drama Film)" dropped) together with the year, so an item
without a year never matches. :class:`JoinCoverage` reports how many items matched and why the others did not.

Fields and their concepts (:mod:`lib.crs.concepts`): ``genre`` (ReDial's IMDb genres), ``actor`` (ReDial's
``star``), ``director``, ``writer``, ``language`` (from the join; unknown for unmatched items), ``year`` (from
the title), ``name`` (the title with its year) and ``plot`` (keywords of the controlled vocabulary
:data:`lib.crs.concepts.PLOT_VOCABULARY` found in the plot outline).

Indexes: title → item (:meth:`ItemUniverse.find_title`), concept → items (:attr:`ItemUniverse.postings`, the
field → value → titles index), item → concepts, concept → display text, and the gazetteer for E(x).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from lib.crs.concepts import (
    FIELDS,
    GENRE_ALIASES,
    LANGUAGE_ALIASES,
    PERSON_FIELDS,
    PLOT_VOCABULARY,
    Gazetteer,
    canonical,
    concept,
    concept_field,
    content_words,
    normalise,
    plot_keywords,
    split_concept,
    tokens,
)

TITLE_YEAR = re.compile(r"^(?P<title>.*\S)\s*\((?P<year>\d{4})\)\s*$")
DISAMBIGUATION = re.compile(r"\s*\([^)]*\)\s*$")
# Canonical value lists per field, plus the plot outline and the raw person names (for display texts).
ITEM_COLUMNS = ["item_id", "name", "title", "year", "genre", "actor", "director", "writer", "language", "plot",
                "plot_text", "actor_raw", "director_raw", "writer_raw"]


def split_title(name: str) -> tuple[str, str | None]:
    """(bare title, year or None) of a ReDial name such as "Heat (1995)"."""
    match = TITLE_YEAR.match(name)
    return (match["title"], match["year"]) if match else (name.strip(), None)


@dataclass(frozen=True)
class JoinCoverage:
    """How far OpenDialKG's languages reach ReDial's items (join on normalised title + year)."""

    redial_items: int
    redial_without_year: int    # cannot match: the key needs a year
    opendialkg_items: int
    matched: int                # ReDial items with an OpenDialKG item of the same title and year
    with_language: int          # of those, items that got at least one language
    title_other_year: int       # unmatched items whose title exists in OpenDialKG only with another (or no) year

    def as_frame(self) -> pd.DataFrame:
        """One row per count, with its share of the ReDial items."""
        counts = asdict(self)
        return pd.DataFrame({"count": counts, "share_of_redial": {k: v / self.redial_items for k, v in counts.items()}})


@dataclass(frozen=True)
class Recommendation:
    """Items ranked by :meth:`ItemUniverse.recommend`: ``exact`` when they meet every constraint (intersection),
    else the ranked union; ``met[i]`` are the constraints item i meets."""

    item_ids: tuple[str, ...]
    exact: bool
    met: tuple[frozenset[str], ...]


def join_languages(redial: pd.DataFrame, opendialkg: pd.DataFrame) -> tuple[list[list[str]], JoinCoverage]:
    """Canonical languages of each ReDial row (empty where no OpenDialKG item matches) and the join coverage."""
    by_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    titles: set[str] = set()
    for name, year, languages in zip(opendialkg["name"], opendialkg["year"], opendialkg["language"], strict=True):
        title = normalise(DISAMBIGUATION.sub("", name))
        titles.add(title)
        if year is not None:
            by_key[(title, year)].extend(languages or [])
    languages_of: list[list[str]] = []
    no_year = matched = with_language = other_year = 0
    for name in redial["name"]:
        title, year = split_title(name)
        normal = normalise(title)
        found = by_key.get((normal, year)) if year is not None else None
        no_year += year is None
        matched += found is not None
        other_year += year is not None and found is None and normal in titles
        values = sorted({canonical("language", raw) for raw in found or []})
        with_language += bool(values)
        languages_of.append(values)
    return languages_of, JoinCoverage(len(redial), no_year, len(opendialkg), matched, with_language, other_year)


class ItemUniverse:
    """The items (``items``: one row per movie, list columns of canonical values) with their indexes."""

    def __init__(self, items: pd.DataFrame, coverage: JoinCoverage) -> None:
        self.items = items.reset_index(drop=True)
        self.coverage = coverage
        self.item_ids: tuple[str, ...] = tuple(self.items["item_id"])
        self.position = {item: i for i, item in enumerate(self.item_ids)}
        self.names: dict[str, str] = dict(zip(self.items["item_id"], self.items["name"], strict=True))
        self.concepts_of: dict[str, frozenset[str]] = {}
        postings: dict[str, set[str]] = defaultdict(set)
        self.display: dict[str, str] = {}
        titles: dict[tuple[str, ...], str] = {}
        bare_titles: dict[str, list[str]] = defaultdict(list)
        for row in self.items.itertuples(index=False):
            own = set()
            name_value = normalise(row.name)
            own.add(concept("name", name_value))
            self.display.setdefault(concept("name", name_value), row.name)
            bare_titles[normalise(row.title)].append(row.item_id)
            if row.year is not None or len(content_words(tokens(row.title))) >= 2:
                titles[tuple(name_value.split())] = concept("name", name_value)
            for field in ("genre", *PERSON_FIELDS, "language", "plot"):
                for value in getattr(row, field):
                    own.add(concept(field, value))
            if row.year is not None:
                own.add(concept("year", row.year))
            self.concepts_of[row.item_id] = frozenset(own)
            for c in own:
                postings[c].add(row.item_id)
        self.postings: dict[str, frozenset[str]] = {c: frozenset(ids) for c, ids in postings.items()}
        self.bare_titles = {title: tuple(ids) for title, ids in bare_titles.items()}
        self._add_display_texts()
        self.gazetteer = Gazetteer(titles, self._value_surfaces(), self.values("year"))
        n = len(self.items)
        # Smooth IDF (as scikit-learn's TfidfVectorizer, smooth_idf=True): ln((1 + N) / (1 + df)) + 1.
        self._idf_unseen = float(np.log(1 + n) + 1)
        self.idf_of = {c: float(np.log((1 + n) / (1 + len(ids))) + 1) for c, ids in self.postings.items()}

    @property
    def index(self) -> dict[str, dict[str, frozenset[str]]]:
        """field → value → item ids (the postings, grouped by field)."""
        grouped: dict[str, dict[str, frozenset[str]]] = defaultdict(dict)
        for c, ids in self.postings.items():
            field, value = split_concept(c)
            grouped[field][value] = ids
        return dict(grouped)

    def values(self, field: str) -> list[str]:
        """The canonical values of ``field`` in the universe, sorted."""
        return sorted(split_concept(c)[1] for c in self.postings if concept_field(c) == field)

    def _add_display_texts(self) -> None:
        """How each concept is written in templates: a person as first spelled in the data, a language
        capitalised, a plot keyword by its first surface form."""
        for row in self.items.itertuples(index=False):
            for field in PERSON_FIELDS:
                for raw in getattr(row, f"{field}_raw"):
                    self.display.setdefault(concept(field, canonical(field, raw)), raw.strip())
        for c in self.postings:
            field, value = split_concept(c)
            if field == "language":
                self.display[c] = value.title()
            elif field == "plot":
                self.display[c] = PLOT_VOCABULARY[value][0]
            else:
                self.display.setdefault(c, value)

    def _value_surfaces(self) -> dict[tuple[str, ...], list[str]]:
        """Surface forms of every non-title concept: canonical values, aliases, plot forms; persons with two or
        more tokens, their fields ordered by number of titles (then actor, director, writer)."""
        surfaces: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for field, aliases in (("genre", GENRE_ALIASES), ("language", LANGUAGE_ALIASES)):
            present = set(self.values(field))
            forms = [(value, value) for value in present] + [(a, v) for a, v in aliases.items() if v in present]
            for form, value in sorted(forms):
                if concept(field, value) not in surfaces[tuple(tokens(form))]:
                    surfaces[tuple(tokens(form))].append(concept(field, value))
        for keyword in self.values("plot"):
            for form in PLOT_VOCABULARY[keyword]:
                surfaces[tuple(form.split())].append(concept("plot", keyword))
        people: dict[str, list[str]] = defaultdict(list)
        for field in PERSON_FIELDS:
            for value in self.values(field):
                if len(value.split()) >= 2:
                    people[value].append(field)
        for value, fields in sorted(people.items()):
            fields.sort(key=lambda f: (-len(self.postings[concept(f, value)]), PERSON_FIELDS.index(f)))
            surfaces[tuple(value.split())].extend(concept(f, value) for f in fields)
        return dict(surfaces)

    def idf(self, c: str) -> float:
        """Smooth IDF of concept ``c`` over the items: ln((1 + N) / (1 + df(c))) + 1, df = items carrying it."""
        return self.idf_of.get(c, self._idf_unseen)

    def extract(self, text: str) -> frozenset[str]:
        """E(x) over this universe (:meth:`lib.crs.concepts.Gazetteer.extract`)."""
        return self.gazetteer.extract(text)

    def items_named(self, name_concept: str) -> frozenset[str]:
        return self.postings.get(name_concept, frozenset())

    def find_title(self, text: str, prefer: Iterable[str] = ()) -> str | None:
        """The item a title string names: its normalised "title year", else its bare title (an item of
        ``prefer`` first, else the first item in universe order); None when no item has that title."""
        preferred = list(prefer)
        value = normalise(text)
        ids = self.postings.get(concept("name", value)) or frozenset(self.bare_titles.get(value, ()))
        if not ids:
            return None
        return next((i for i in preferred if i in ids), None) or min(ids, key=self.position.__getitem__)

    def recommend(self, constraints: Iterable[str], k: int = 3, seed: int = 0) -> Recommendation:
        """Up to ``k`` items for a set of constraint concepts.

        Intersection first: the items that carry every constraint, in a seeded random order. If there is
        none, the ranked union: items carrying at least one constraint, ranked by Σ idf(c) over the
        constraints c they carry (rare constraints weigh more), ties in a seeded random order. No
        constraint gives no item."""
        wanted = sorted(set(constraints))
        if not wanted:
            return Recommendation((), False, ())
        sets = [self.postings.get(c, frozenset()) for c in wanted]
        exact_ids = frozenset.intersection(*sets)
        pool = sorted(exact_ids) if exact_ids else sorted(frozenset.union(*sets))
        if not pool:
            return Recommendation((), False, ())
        met = [frozenset(c for c, ids in zip(wanted, sets, strict=True) if item in ids) for item in pool]
        # Sorted: a float sum in set order could differ in the last bit between processes and break a tie.
        score = np.array([sum(self.idf(c) for c in sorted(m)) for m in met])
        tie = np.random.default_rng(seed).random(len(pool))
        order = np.lexsort((tie, -score))[:k]
        return Recommendation(tuple(pool[i] for i in order), bool(exact_ids), tuple(met[i] for i in order))


def build_universe(redial: pd.DataFrame, opendialkg: pd.DataFrame) -> ItemUniverse:
    """The universe from frames shaped like :func:`lib.data.load_redial_movies` and
    :func:`lib.data.load_opendialkg_movies` output."""
    languages, coverage = join_languages(redial, opendialkg)

    def canonical_list(field: str, raw: list[str]) -> list[str]:
        return list(dict.fromkeys(v for v in (canonical(field, r) for r in raw) if v))

    rows = []
    for record, language in zip(redial.to_dict("records"), languages, strict=True):
        title, year = split_title(record["name"])
        rows.append({"item_id": record["item_id"], "name": record["name"], "title": title, "year": year,
                     "genre": canonical_list("genre", record["genre"]),
                     "actor": canonical_list("actor", record["star"]),
                     "director": canonical_list("director", record["director"]),
                     "writer": canonical_list("writer", record["writer"]), "language": language,
                     "plot": plot_keywords(record["plot"]), "plot_text": record["plot"],
                     "actor_raw": record["star"], "director_raw": record["director"], "writer_raw": record["writer"]})
    # object dtype keeps None for a missing year (pandas would otherwise infer a string column with NaN).
    return ItemUniverse(pd.DataFrame(rows, columns=ITEM_COLUMNS, dtype=object), coverage)


@lru_cache(maxsize=1)
def load_universe() -> ItemUniverse:
    """The study's universe from the committed ReDial and OpenDialKG files (built once per process)."""
    from lib.data import load_opendialkg_movies, load_redial_movies

    return build_universe(load_redial_movies(), load_opendialkg_movies())


def field_coverage(universe: ItemUniverse) -> pd.DataFrame:
    """Per field: items with at least one value, their share of the universe, and distinct values."""
    n = len(universe.item_ids)
    rows = []
    for field in FIELDS:
        items = sum(any(concept_field(c) == field for c in universe.concepts_of[i]) for i in universe.item_ids)
        rows.append({"field": field, "items": items, "share": items / n,
                     "distinct_values": len(universe.values(field))})
    return pd.DataFrame(rows)
