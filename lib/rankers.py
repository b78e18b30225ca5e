"""Rankers of a candidate pool: one interface, pool + context -> scores -> ordered candidate ids.

Every ranker gives each candidate a score (higher is better); :func:`order` turns scores into a ranking
with one documented tie rule: equal scores are ordered by a seeded random permutation (:func:`tie_order`,
seeded by ``tie_seed``, the ranker and the entry). Ties used to keep the generator's order; since the
generator's confidence mostly counts down along its answer, that rule pushed ``self_confidence`` (whose
scores tie often: a handful of distinct values) still closer to generator order. Generator order is now its
own ranker (``generator_order``), and no other ranker inherits it through ties. A *failed*
candidate (empty or missing ``nudge_text``) scores −∞ and goes last, so a ranking is always a permutation of
the whole pool.

Embeddings are MiniLM unit vectors (:mod:`lib.embeddings`), so cos(u, v) = u·v; every cosine is rounded by
:func:`lib.embeddings.similarity`, and an exact tie that rounding makes is broken by the same seeded rule.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from lib.analysis.stats import kendall_tau_b
from lib.design import NUDGE_CATEGORIES, PERSONAS_BY_ID, SCHWARTZ_VALUES, Persona
from lib.embeddings import Embed, similarity
from lib.seeds import stable_int

# The study's rankers in the order of every table and figure: baselines from chance to strongest idea, then
# the system under test.
RANKER_ORDER: tuple[str, ...] = ("random", "generator_order", "embedding", "category", "self_confidence",
                                  "value_aware")



@dataclass(frozen=True)
class Pool:
    """One entry's candidates. ``vectors`` are the candidates' embeddings, row-aligned with ``candidates``
    (columns ``candidate_id``, ``position``, ``nudge_text``, ``confidence``)."""

    entry_id: str
    entry_vector: np.ndarray
    category: str
    persona: Persona
    candidates: pd.DataFrame
    vectors: np.ndarray

    @property
    def failed(self) -> np.ndarray:
        text = self.candidates["nudge_text"]
        return (text.isna() | (text.fillna("").str.strip() == "")).to_numpy()


class Ranker(Protocol):
    @property
    def name(self) -> str:
        """The ranker's name in tables and figures."""

    def scores(self, pool: Pool) -> np.ndarray:
        """One score per candidate, higher is better."""


def tie_order(entry_id: str, n: int, tie_seed: int, ranker: str) -> np.ndarray:
    """The secondary sort key of :func:`order`: a uniformly random permutation of 0..n−1, seeded by
    (``tie_seed``, ranker, entry). It depends neither on the order pools are processed in nor on the
    candidates' positions; the ranker name is part of the seed so two rankers that tie on the same candidates
    do not agree by construction (which would inflate their Kendall τ)."""
    return np.random.default_rng([tie_seed, stable_int(f"ties:{ranker}"), stable_int(entry_id)]).permutation(n)


def order(pool: Pool, scores: np.ndarray, tie_seed: int, ranker: str = "") -> pd.DataFrame:
    """Ranking table of a pool: ``candidate_id``, ``rank`` (1 = best) and ``score``.

    Sort key: (−score, :func:`tie_order`), i.e. candidates with equal scores come in a seeded random order;
    failed candidates get score −∞ and therefore the last ranks (in a seeded random order among themselves).
    """
    scores = np.where(pool.failed, -np.inf, np.asarray(scores, dtype=float))
    ties = tie_order(pool.entry_id, len(scores), tie_seed, ranker)
    idx = np.lexsort((ties, -scores))
    return pd.DataFrame({"candidate_id": pool.candidates["candidate_id"].to_numpy()[idx],
                         "rank": np.arange(1, len(idx) + 1), "score": scores[idx]})


@dataclass(frozen=True)
class RandomRanker:
    """Uniform random order, seeded by (seed, entry): independent of the order pools are processed in.
    Expected Hit@1 with r relevant among n candidates is r/n."""

    seed: int
    name: str = "random"

    def scores(self, pool: Pool) -> np.ndarray:
        return np.random.default_rng([self.seed, stable_int(pool.entry_id)]).random(len(pool.candidates))


@dataclass(frozen=True)
class GeneratorOrderRanker:
    """score = −position: the candidates in the order the generator wrote them (rank = position + 1). The
    baseline that any ranker reading the generator's own output (self_confidence) has to beat."""

    name: str = "generator_order"

    def scores(self, pool: Pool) -> np.ndarray:
        return -pool.candidates["position"].to_numpy(dtype=float)


@dataclass(frozen=True)
class EmbeddingSimilarityRanker:
    """score = cos(e_entry, e_candidate): the candidate that talks most about what the entry says first."""

    name: str = "embedding"

    def scores(self, pool: Pool) -> np.ndarray:
        return similarity(pool.vectors, pool.entry_vector)


def category_vectors(embed: Embed) -> tuple[list[str], np.ndarray]:
    """Embeddings of the category definitions (``lib.design.NUDGE_CATEGORIES``), in a fixed order."""
    names = sorted(NUDGE_CATEGORIES)
    return names, embed([f"{name}: {NUDGE_CATEGORIES[name]}" for name in names])


def classify_categories(vectors: np.ndarray, names: list[str], definition_vectors: np.ndarray) -> list[str]:
    """Zero-shot category of each candidate: argmax_c cos(e_candidate, e_definition(c)); a tie goes to the category
    first in ``names``."""
    return [names[i] for i in np.argmax(similarity(vectors, definition_vectors), axis=1)]


def zero_shot_categories(pools: list[Pool], embed: Embed) -> pd.DataFrame:
    """Every pool's candidates with the category the generator was asked for (``asked``) and the candidate's
    zero-shot category (``zero_shot``, :func:`classify_categories`)."""
    names, definition_vectors = category_vectors(embed)
    table = pd.concat([p.candidates.assign(asked=p.category) for p in pools], ignore_index=True)
    table["zero_shot"] = classify_categories(np.vstack([p.vectors for p in pools]), names, definition_vectors)
    return table


@dataclass(frozen=True)
class CategoryOnlyRanker:
    """Candidates whose zero-shot category equals the entry's category first; within each group, higher
    cos(e_candidate, e_definition(entry category)) first. No persona information is used.

    score = 3·1[category(c) = category(entry)] + cos(e_c, e_def(entry category)); cosines span at most 2 < 3,
    so the indicator always dominates and the cosine only orders candidates within a group.
    """

    names: tuple[str, ...]
    definition_vectors: np.ndarray
    name: str = "category"

    def scores(self, pool: Pool) -> np.ndarray:
        sims = similarity(pool.vectors, self.definition_vectors)
        target = self.names.index(pool.category)
        match = np.argmax(sims, axis=1) == target
        return 3.0 * match + sims[:, target]


@dataclass(frozen=True)
class SelfConfidenceRanker:
    """score = the generator's self-reported confidence (0–1); missing confidence ranks last. Confidences take
    few distinct values, so ties are common; they are broken at random (:func:`tie_order`), not by position."""

    name: str = "self_confidence"

    def scores(self, pool: Pool) -> np.ndarray:
        return pool.candidates["confidence"].astype(float).fillna(-np.inf).to_numpy()


def value_profile_vector(persona: Persona, embed: Embed) -> np.ndarray:
    """Unit vector of the persona's weighted value descriptions: v = Σ_k w_k e(value_k) / ‖Σ_k w_k e(value_k)‖."""
    names = list(persona.values)
    vectors = embed([f"{n.replace('_', ' ')}: {SCHWARTZ_VALUES[n]}" for n in names])
    weighted = np.asarray([persona.values[n] for n in names]) @ vectors
    return weighted / np.linalg.norm(weighted)


@dataclass(frozen=True)
class ValueAwareRanker:
    """The system under test: score = (1 − α)·cos(e_entry, e_c) + α·cos(v_persona, e_c), where v_persona is
    :func:`value_profile_vector`. α is a declared parameter (not tuned on judge labels)."""

    persona_vectors: dict[str, np.ndarray]
    alpha: float = 0.5
    name: str = "value_aware"

    def scores(self, pool: Pool) -> np.ndarray:
        values = similarity(pool.vectors, self.persona_vectors[pool.persona.persona_id])
        return (1 - self.alpha) * similarity(pool.vectors, pool.entry_vector) + self.alpha * values


def build_pools(entries: pd.DataFrame, candidates: pd.DataFrame, embed: Embed) -> list[Pool]:
    """Pools of the entries that have candidates (entries whose generation failed have no pool)."""
    with_pool = entries[entries.entry_id.isin(candidates.entry_id)]
    entry_vectors = embed(with_pool["text"].tolist())
    candidate_vectors = embed(candidates["nudge_text"].fillna("").tolist())
    groups = candidates.groupby("entry_id", sort=False).indices
    return [
        Pool(entry_id=row.entry_id, entry_vector=entry_vectors[i], category=row.category,
             persona=PERSONAS_BY_ID[row.persona_id],
             candidates=candidates.iloc[groups[row.entry_id]].reset_index(drop=True),
             vectors=candidate_vectors[groups[row.entry_id]])
        for i, row in enumerate(with_pool.itertuples())
    ]


def rank_all(pools: list[Pool], rankers: list[tuple[Ranker, int]], tie_seed: int) -> pd.DataFrame:
    """Long rankings table (schema ``lib.tables.SCHEMAS['rankings']``) of every (ranker, run) on every pool;
    ties broken by :func:`tie_order` with ``tie_seed``."""
    frames = [order(pool, ranker.scores(pool), tie_seed=tie_seed, ranker=ranker.name)
              .assign(ranker=ranker.name, run=run, entry_id=pool.entry_id)
              for ranker, run in rankers for pool in pools]
    columns = ["ranker", "run", "entry_id", "rank", "candidate_id", "score"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


@dataclass(frozen=True)
class PoolRanks:
    """Every (ranker, run) of a rankings table as one array: ``ranks[k, p, s]`` is the rank run ``runs[(ranker,
    run)] = k`` gives the candidate in slot s of pool p (pools in entry-id order, a pool's candidates in the order
    they first appear), ``present`` marks the slots that run ranked."""

    runs: dict[tuple[str, int], int]
    ranks: np.ndarray
    present: np.ndarray

    @classmethod
    def of(cls, rankings: pd.DataFrame) -> PoolRanks:
        if rankings.duplicated(["ranker", "run", "entry_id", "candidate_id"]).any():
            raise ValueError("a run ranks a candidate twice")
        pool, _ = pd.factorize(rankings.entry_id, sort=True)
        candidate, candidates = pd.factorize(pd.MultiIndex.from_arrays([rankings.entry_id, rankings.candidate_id]))
        slot_of = pd.Series(candidates.get_level_values(0)).groupby(candidates.get_level_values(0)).cumcount()
        slot = slot_of.to_numpy()[candidate]
        run, runs = pd.factorize(pd.MultiIndex.from_arrays([rankings.ranker, rankings.run]))
        shape = (len(runs), pool.max(initial=-1) + 1, slot.max(initial=-1) + 1)
        ranks, present = np.full(shape, np.nan), np.zeros(shape, dtype=bool)
        ranks[run, pool, slot] = rankings["rank"].to_numpy(dtype=float)
        present[run, pool, slot] = True
        return cls({(r, int(n)): k for k, (r, n) in enumerate(runs)}, ranks, present)

    def taus(self, a: tuple[str, int], b: tuple[str, int]) -> np.ndarray:
        """:func:`kendall_tau_b` of runs a and b on each pool where both rank ≥ 2 of the same candidates, in
        entry-id order (empty when either run is missing)."""
        if a not in self.runs or b not in self.runs:
            return np.zeros(0)
        present = self.present[self.runs[a]] & self.present[self.runs[b]]
        kept = present.sum(axis=1) >= 2
        return kendall_tau_b(self.ranks[self.runs[a]][kept], self.ranks[self.runs[b]][kept], present[kept])


def pool_taus(rankings: pd.DataFrame, ranker_a: str, ranker_b: str, run_a: int = 0, run_b: int = 0) -> np.ndarray:
    """Kendall's τ-b (:func:`kendall_tau_b`) between two (ranker, run) rankings of the same pool, one value per
    pool where both rank ≥ 2 of the same candidates (in entry-id order)."""
    return PoolRanks.of(rankings).taus((ranker_a, run_a), (ranker_b, run_b))


def _mean_over_pools(taus: np.ndarray) -> tuple[float, int]:
    return (float(np.mean(taus)) if taus.size else float("nan")), int(taus.size)


def mean_kendall_tau(rankings: pd.DataFrame, ranker_a: str, ranker_b: str, run_a: int = 0, run_b: int = 0
                     ) -> tuple[float, int]:
    """Mean over pools of :func:`pool_taus`; returns (τ̄, number of pools)."""
    return _mean_over_pools(pool_taus(rankings, ranker_a, ranker_b, run_a, run_b))


def kendall_tau_table(rankings: pd.DataFrame, rankers: Sequence[str] = RANKER_ORDER) -> pd.DataFrame:
    """Agreement of every pair of ``rankers`` over all their runs: one row per (ranker_a, ranker_b) with

    * ``tau`` — mean over run pairs of the mean τ-b over pools (:func:`mean_kendall_tau`). The run pairs of a
      ranker with k runs (random: one per seed) against a one-run ranker are its k runs; of a ranker with
      itself, its k(k−1)/2 pairs of *distinct* runs (random vs random: chance agreement, expected 0), or the
      single run with itself (τ = 1);
    * ``sd_over_runs`` — sample sd (ddof 1) of the per-run-pair means, i.e. the spread over seeds, not over
      seed averages; NaN for a single run pair;
    * ``run_pairs`` and ``pools`` (pools per run pair).

    The rankings are laid out once (:class:`PoolRanks`) and each run pair's τ-b computed over all pools at once.
    """
    laid_out = PoolRanks.of(rankings[rankings.ranker.isin(rankers)])
    runs = {m: sorted(n for r, n in laid_out.runs if r == m) for m in rankers}
    rows = []
    for a in rankers:
        for b in rankers:
            if a == b and len(runs[a]) > 1:
                pairs = [(r, s) for i, r in enumerate(runs[a]) for s in runs[a][i + 1:]]
            else:
                pairs = [(r, s) for r in runs[a] for s in runs[b]]
            means = [_mean_over_pools(laid_out.taus((a, r), (b, s))) for r, s in pairs]
            values = np.array([m for m, _ in means])
            rows.append({"ranker_a": a, "ranker_b": b, "tau": float(values.mean()) if values.size else np.nan,
                         "sd_over_runs": float(values.std(ddof=1)) if values.size > 1 else np.nan,
                         "run_pairs": len(pairs), "pools": max((n for _, n in means), default=0)})
    return pd.DataFrame(rows)


def kendall_tau_matrix(rankings: pd.DataFrame, rankers: Sequence[str] = RANKER_ORDER) -> pd.DataFrame:
    """The ``tau`` column of :func:`kendall_tau_table` as a rankers × rankers matrix (random averaged over all
    its seeds; its diagonal is the mean agreement of two distinct seeds)."""
    table = kendall_tau_table(rankings, rankers)
    return (table.pivot(index="ranker_a", columns="ranker_b", values="tau")
            .reindex(index=list(rankers), columns=list(rankers)).rename_axis(index=None, columns=None).astype(float))


def confidence_vs_generator_order(candidates: pd.DataFrame) -> pd.DataFrame:
    """How far the generator's self-reported confidence restates its own order, one row per pool:

    * ``tau_b`` — Kendall's τ-b between ``confidence`` and −``position`` (1: confidence never rises along the
      answer and every pair is strictly ordered; ties in confidence lower |τ-b|); NaN for a pool of one
      candidate or with a single confidence value;
    * ``first_is_top`` — the first candidate's confidence equals the pool's maximum (ties allowed);
    * ``first_is_sole_top`` — it is strictly higher than every other candidate's;
    * ``countdown`` — confidence strictly decreases with position;
    * ``distinct`` — number of distinct confidence values; ``candidates`` — pool size.
    """
    from scipy.stats import kendalltau

    rows = []
    for entry_id, g in candidates.sort_values(["entry_id", "position"]).groupby("entry_id", sort=False):
        conf = g["confidence"].to_numpy(dtype=float)
        tau = kendalltau(conf, -g["position"].to_numpy()).statistic if len(g) > 1 else np.nan
        rows.append({"entry_id": entry_id, "candidates": len(g), "distinct": len(np.unique(conf)),
                     "tau_b": float(tau), "first_is_top": bool(conf[0] == conf.max()),
                     "first_is_sole_top": bool(len(conf) > 1 and conf[0] > conf[1:].max()),
                     "countdown": bool(len(conf) > 1 and np.all(np.diff(conf) < 0))})
    return pd.DataFrame(rows)


def length_outside_limits(rankings: pd.DataFrame, candidates: pd.DataFrame, ks: Sequence[int] = (1, 3),
                          min_words: int = 5, max_words: int = 12) -> pd.DataFrame:
    """Share of the nudges a ranker shows in its top k whose length breaks the asked limit, per ranker and k:

    share_k(run) = |{top-k candidates c of every pool : word_count(c) ∉ [min_words, max_words]}| / |top-k candidates|

    (word_count: whitespace-separated words, ``candidates.word_count``; the generator was asked for 5–12
    words, ``lib.nudges.NUDGE_MIN_WORDS``/``NUDGE_MAX_WORDS``). For a ranker with several runs (random),
    ``share`` is the mean of share_k over runs and ``sd_over_runs`` its sample sd over runs (ddof 1; NaN for one
    run). ``nudges`` is the number of top-k nudges per run; a pool smaller than k contributes all its
    candidates. A last row, ``all candidates``, gives the share in the whole ranked pools, the value every
    ranker would have if length played no part in its order.
    """
    outside = candidates.set_index("candidate_id")["word_count"].pipe(lambda w: (w < min_words) | (w > max_words))
    known = rankings.candidate_id.isin(outside.index)
    if not known.all():
        raise ValueError(f"{int((~known).sum())} ranked candidates are missing from the candidates table")
    ranked = rankings.assign(outside=rankings.candidate_id.map(outside))
    present = list(dict.fromkeys(ranked.ranker))
    rows = []
    for ranker in [m for m in RANKER_ORDER if m in present] + [m for m in present if m not in RANKER_ORDER]:
        group = ranked[ranked.ranker == ranker]
        for k in ks:
            per_run = group[group["rank"] <= k].groupby("run")["outside"].agg(["mean", "size"])
            rows.append({"ranker": ranker, "k": k, "runs": len(per_run), "nudges": int(per_run["size"].iloc[0]),
                         "share": float(per_run["mean"].mean()),
                         "sd_over_runs": float(per_run["mean"].std(ddof=1)) if len(per_run) > 1 else np.nan})
    pooled = ranked.drop_duplicates("candidate_id")
    rows.append({"ranker": "all candidates", "k": None, "runs": 1, "nudges": len(pooled),
                 "share": float(pooled.outside.mean()), "sd_over_runs": np.nan})
    return pd.DataFrame(rows).astype({"k": "Int64"})


def study_rankers(pools: list[Pool], embed: Embed, n_random_seeds: int, alpha: float) -> list[tuple[Ranker, int]]:
    """The study's rankers as (ranker, run) in ``RANKER_ORDER``: ``n_random_seeds`` random runs, then one run
    of each other ranker."""
    names, definitions = category_vectors(embed)
    personas = {pool.persona.persona_id: pool.persona for pool in pools}
    persona_vectors = {pid: value_profile_vector(p, embed) for pid, p in sorted(personas.items())}
    return ([(RandomRanker(seed=s), s) for s in range(n_random_seeds)]
            + [(GeneratorOrderRanker(), 0), (EmbeddingSimilarityRanker(), 0),
               (CategoryOnlyRanker(tuple(names), definitions), 0), (SelfConfidenceRanker(), 0),
               (ValueAwareRanker(persona_vectors, alpha=alpha), 0)])


def describe(ranker: Ranker) -> str:
    """The ranker's docstring as one line (the ranker description shown in notebook 02)."""
    return " ".join((type(ranker).__doc__ or "").split())
