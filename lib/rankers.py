"""Rankers of a candidate pool: one interface, pool + context -> scores -> ordered candidate ids.

Every ranker gives each candidate a score (higher is better); :func:`order` turns scores into a ranking
with one documented tie rule: equal scores keep the generator's order (lower ``position`` first). A
*failed* candidate (empty or missing ``nudge_text``) scores −∞ and goes last, so a ranking is always a
permutation of the whole pool.

Embeddings are MiniLM unit vectors (:mod:`lib.embeddings`), so cos(u, v) = u·v.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from lib.design import NUDGE_CATEGORIES, PERSONAS_BY_ID, SCHWARTZ_VALUES, Persona

# The study's methods in the order of every table and figure: baselines from chance to strongest idea, then
# the system under test.
METHOD_ORDER: tuple[str, ...] = ("random", "embedding", "category", "self_confidence", "value_aware")

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit vectors, one row per text (lib.embeddings.embed)


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
    name: str

    def scores(self, pool: Pool) -> np.ndarray:
        """One score per candidate, higher is better."""


def order(pool: Pool, scores: np.ndarray) -> pd.DataFrame:
    """Ranking table of a pool: ``candidate_id``, ``rank`` (1 = best) and ``score``.

    Sort key: (−score, position); failed candidates get score −∞ and therefore the last ranks.
    """
    scores = np.where(pool.failed, -np.inf, np.asarray(scores, dtype=float))
    positions = pool.candidates["position"].to_numpy()
    idx = np.lexsort((positions, -scores))
    return pd.DataFrame({"candidate_id": pool.candidates["candidate_id"].to_numpy()[idx],
                         "rank": np.arange(1, len(idx) + 1), "score": scores[idx]})


def _stable_int(text: str) -> int:
    """Process-independent integer from a string (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


@dataclass(frozen=True)
class RandomRanker:
    """Uniform random order, seeded by (seed, entry): independent of the order pools are processed in.
    Expected Hit@1 with r relevant among n candidates is r/n."""

    seed: int
    name: str = "random"

    def scores(self, pool: Pool) -> np.ndarray:
        return np.random.default_rng([self.seed, _stable_int(pool.entry_id)]).random(len(pool.candidates))


@dataclass(frozen=True)
class EmbeddingSimilarityRanker:
    """score = cos(e_entry, e_candidate): the candidate that talks most about what the entry says first."""

    name: str = "embedding"

    def scores(self, pool: Pool) -> np.ndarray:
        return pool.vectors @ pool.entry_vector


def category_vectors(embed: Embed) -> tuple[list[str], np.ndarray]:
    """Embeddings of the category definitions (``lib.design.NUDGE_CATEGORIES``), in a fixed order."""
    names = sorted(NUDGE_CATEGORIES)
    return names, embed([f"{name}: {NUDGE_CATEGORIES[name]}" for name in names])


def classify_categories(vectors: np.ndarray, names: list[str], definition_vectors: np.ndarray) -> list[str]:
    """Zero-shot category of each candidate: argmax_c cos(e_candidate, e_definition(c))."""
    return [names[i] for i in np.argmax(vectors @ definition_vectors.T, axis=1)]


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
        sims = pool.vectors @ self.definition_vectors.T
        target = self.names.index(pool.category)
        match = np.argmax(sims, axis=1) == target
        return 3.0 * match + sims[:, target]


@dataclass(frozen=True)
class SelfConfidenceRanker:
    """score = the generator's self-reported confidence (0–1); missing confidence ranks last."""

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
        values = pool.vectors @ self.persona_vectors[pool.persona.persona_id]
        return (1 - self.alpha) * (pool.vectors @ pool.entry_vector) + self.alpha * values


def build_pools(entries: pd.DataFrame, candidates: pd.DataFrame, embed: Embed) -> list[Pool]:
    """Pools of the entries that have candidates (entries whose generation failed have no pool)."""
    with_pool = entries[entries.entry_id.isin(candidates.entry_id)]
    entry_vectors = embed(with_pool["text"].tolist())
    candidate_vectors = embed(candidates["nudge_text"].fillna("").tolist())
    groups = candidates.groupby("entry_id", sort=False).indices
    return [
        Pool(entry_id=row.entry_id, entry_vector=entry_vectors[i], category=row.category,
             persona=PERSONAS_BY_ID[row.persona_id], candidates=candidates.iloc[groups[row.entry_id]].reset_index(drop=True),
             vectors=candidate_vectors[groups[row.entry_id]])
        for i, row in enumerate(with_pool.itertuples())
    ]


def rank_all(pools: list[Pool], rankers: list[tuple[Ranker, int]]) -> pd.DataFrame:
    """Long rankings table (schema ``lib.tables.SCHEMAS['rankings']``) of every (ranker, run) on every pool."""
    frames = [order(pool, ranker.scores(pool)).assign(method=ranker.name, run=run, entry_id=pool.entry_id)
              for ranker, run in rankers for pool in pools]
    columns = ["method", "run", "entry_id", "rank", "candidate_id", "score"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def mean_kendall_tau(rankings: pd.DataFrame, method_a: str, method_b: str, run_a: int = 0, run_b: int = 0
                     ) -> tuple[float, int]:
    """Mean over pools (of ≥ 2 candidates) of Kendall's τ-b between two (method, run) rankings of the same
    pool; returns (τ̄, number of pools)."""
    from scipy.stats import kendalltau

    a = rankings[(rankings.method == method_a) & (rankings.run == run_a)]
    b = rankings[(rankings.method == method_b) & (rankings.run == run_b)]
    merged = a.merge(b, on=["entry_id", "candidate_id"], suffixes=("_a", "_b"))
    taus = [kendalltau(g.rank_a, g.rank_b).statistic for _, g in merged.groupby("entry_id") if len(g) >= 2]
    return (float(np.mean(taus)) if taus else float("nan")), len(taus)


def kendall_tau_matrix(rankings: pd.DataFrame, methods: Sequence[str] = METHOD_ORDER) -> pd.DataFrame:
    """:func:`mean_kendall_tau` (run 0 of each) for every pair of ``methods``."""
    return pd.DataFrame([[mean_kendall_tau(rankings, a, b)[0] for b in methods] for a in methods],
                        index=list(methods), columns=list(methods), dtype=float)


def study_rankers(pools: list[Pool], embed: Embed, n_random_seeds: int, alpha: float) -> list[tuple[Ranker, int]]:
    """The study's methods as (ranker, run) in ``METHOD_ORDER``: ``n_random_seeds`` random runs, then one run
    of each other method."""
    names, definitions = category_vectors(embed)
    personas = {pool.persona.persona_id: pool.persona for pool in pools}
    persona_vectors = {pid: value_profile_vector(p, embed) for pid, p in sorted(personas.items())}
    return ([(RandomRanker(seed=s), s) for s in range(n_random_seeds)]
            + [(EmbeddingSimilarityRanker(), 0), (CategoryOnlyRanker(tuple(names), definitions), 0),
               (SelfConfidenceRanker(), 0), (ValueAwareRanker(persona_vectors, alpha=alpha), 0)])


def describe(ranker: Ranker) -> str:
    """The ranker's docstring as one line (the method description shown in notebook 02)."""
    return " ".join((type(ranker).__doc__ or "").split())
