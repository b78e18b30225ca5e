"""Nudge candidate generation: one LLM call per entry, and near-duplicate marking.

A *nudge* is one short sentence a journaling assistant shows after the user writes an entry. For each entry
the generator asks the LLM for ``n`` candidates at once (``nudge_text``, ``reasoning``, ``confidence``);
notebook 02 ranks each pool and notebook 03 judges it. Personas, values and categories are design inputs
(:mod:`lib.design`).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, create_model

from lib import prompts
from lib.design import EMOTION_CATEGORY, NUDGE_CATEGORIES, PERSONAS, PERSONAS_BY_ID, SCHWARTZ_VALUES, Persona
from lib.embeddings import embed
from lib.llm.gateway import Gateway, LLMResult

SYSTEM_PROMPT, USER_TEMPLATE = prompts.parts("nudge_candidates", 2)

NUDGE_MIN_WORDS, NUDGE_MAX_WORDS = 5, 12


class NudgeCandidate(BaseModel):
    # Length caps are part of the JSON schema, so constrained decoding also keeps a small model brief.
    nudge_text: str = Field(min_length=1, max_length=100)
    reasoning: str = Field(min_length=1, max_length=160)
    confidence: float = Field(ge=0.0, le=1.0)


@lru_cache(maxsize=None)
def candidate_set_schema(n: int) -> type[BaseModel]:
    """Response schema: exactly ``n`` candidates (the JSON schema's minItems/maxItems constrain decoding)."""
    return create_model(
        f"NudgeCandidates{n}",
        candidates=(Annotated[list[NudgeCandidate], Field(min_length=n, max_length=n)], ...),
    )


def sample_entries(entries: pd.DataFrame, n_entries: int, seed: int) -> pd.DataFrame:
    """Seeded sample of entries, each with a seeded persona and the category of its emotion."""
    rng = np.random.default_rng(seed)
    chosen = entries.iloc[np.sort(rng.choice(len(entries), size=n_entries, replace=False))].copy()
    chosen["persona_id"] = rng.choice([p.persona_id for p in PERSONAS], size=n_entries)
    chosen["category"] = chosen["emotion"].map(EMOTION_CATEGORY)
    return chosen.reset_index(drop=True)


def build_messages(text: str, persona: Persona, category: str, n: int) -> list[dict[str, str]]:
    """System prompt shared by every call (prefix-cache friendly), then persona, category and entry."""
    user = USER_TEMPLATE.format(
        persona=persona.description,
        values="; ".join(f"{v.replace('_', ' ')} ({SCHWARTZ_VALUES[v]})" for v in persona.top_values()),
        category=category, category_definition=NUDGE_CATEGORIES[category], entry=text, n=n,
        min_words=NUDGE_MIN_WORDS, max_words=NUDGE_MAX_WORDS,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def generate_candidates(gateway: Gateway, sampled: pd.DataFrame, n_candidates: int,
                        max_tokens_per_candidate: int = 110) -> list[LLMResult]:
    """One LLM call per sampled entry, in entry order."""
    schema = candidate_set_schema(n_candidates)
    calls = [
        {"messages": build_messages(row.text, PERSONAS_BY_ID[row.persona_id], row.category, n_candidates),
         "schema": schema, "label": f"candidates:{row.entry_id}",
         "max_tokens": max_tokens_per_candidate * n_candidates}
        for row in sampled.itertuples()
    ]
    return gateway.complete_many(calls, desc="nudge candidates")


def results_to_tables(sampled: pd.DataFrame, results: list[LLMResult], model_identity: str
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(entries table with generation status, candidates table with one row per generated candidate)."""
    entries = sampled.assign(
        generation_ok=[r.ok for r in results],
        failure_kind=[r.failure_kind for r in results],
        failure_error=[r.error for r in results],
        attempts=[r.attempts for r in results],
        model=model_identity,
    )
    rows = []
    for row, result in zip(sampled.itertuples(), results):
        if not result.ok:
            continue
        for position, cand in enumerate(result.value.candidates):
            words = len(cand.nudge_text.split())
            rows.append({
                "entry_id": row.entry_id, "candidate_id": f"{row.entry_id}/c{position}", "position": position,
                "persona_id": row.persona_id, "category": row.category,
                "nudge_text": cand.nudge_text.strip(), "reasoning": cand.reasoning.strip(),
                "confidence": cand.confidence, "word_count": words,
                "length_ok": NUDGE_MIN_WORDS <= words <= NUDGE_MAX_WORDS, "model": model_identity,
            })
    return entries, pd.DataFrame(rows)


def mark_near_duplicates(candidates: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, np.ndarray]:
    """Flag near-duplicates within each pool by MiniLM cosine similarity.

    A candidate is a near-duplicate when its cosine with an earlier candidate of the same pool is
    ≥ ``threshold``; ``near_duplicate_of`` names the earliest such candidate. Also adds ``pool_diversity``,
    the pool's mean pairwise cosine distance  D = 2/(n(n-1)) Σ_{i<j} (1 − cos(e_i, e_j)).
    Returns the table and the array of all within-pool pairwise similarities (for a histogram).
    """
    vectors = embed(candidates["nudge_text"].tolist())
    dup_of: list[str | None] = [None] * len(candidates)
    diversity = np.full(len(candidates), np.nan)
    pair_sims: list[np.ndarray] = []
    for _, idx in candidates.groupby("entry_id", sort=False).indices.items():
        sims = vectors[idx] @ vectors[idx].T
        upper = sims[np.triu_indices(len(idx), k=1)]
        pair_sims.append(upper)
        diversity[idx] = float(np.mean(1.0 - upper)) if upper.size else np.nan
        for j in range(1, len(idx)):
            earlier = np.flatnonzero(sims[j, :j] >= threshold)
            if earlier.size:
                dup_of[idx[j]] = candidates["candidate_id"].iloc[idx[earlier[0]]]
    marked = candidates.assign(near_duplicate_of=dup_of, pool_diversity=diversity)
    marked["near_duplicate"] = marked["near_duplicate_of"].notna()
    return marked, np.concatenate(pair_sims) if pair_sims else np.zeros(0)
