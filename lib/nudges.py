"""Nudge candidate generation: personas with value profiles, nudge categories, one LLM call per entry.

A *nudge* is one short sentence a journaling assistant shows after the user writes an entry. For each entry
the generator asks the LLM for ``n`` candidates at once (``nudge_text``, ``reasoning``, ``confidence``);
notebook 02 ranks each pool and notebook 03 judges it.

Personas are design inputs of the study (not data): each has a self-description and weights over
Schwartz's ten basic values (Schwartz 1992; definitions after Schwartz 2012, "An Overview of the Schwartz
Theory of Basic Values", Online Readings in Psychology and Culture 2(1)).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, create_model

from lib import paths
from lib.embeddings import embed
from lib.llm.gateway import Gateway, LLMResult

SCHWARTZ_VALUES: dict[str, str] = {
    "self_direction": "independent thought and action: choosing, creating, exploring",
    "stimulation": "excitement, novelty and challenge in life",
    "hedonism": "pleasure and sensuous gratification for oneself",
    "achievement": "personal success through demonstrating competence by social standards",
    "power": "social status and prestige, control or dominance over people and resources",
    "security": "safety, harmony and stability of society, of relationships and of self",
    "conformity": "restraint of actions likely to upset or harm others and violate social norms",
    "tradition": "respect for and acceptance of the customs and ideas of one's culture or religion",
    "benevolence": "preserving and enhancing the welfare of those with whom one is in frequent contact",
    "universalism": "understanding, tolerance and protection for the welfare of all people and nature",
}


@dataclass(frozen=True)
class Persona:
    persona_id: str
    description: str
    values: dict[str, float]  # weights over SCHWARTZ_VALUES, summing to 1

    def top_values(self, k: int = 3) -> list[str]:
        return [v for v, _ in sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


PERSONAS: tuple[Persona, ...] = (
    Persona("caregiver", "a nurse in her forties who looks after her parents and two teenagers",
            {"benevolence": 0.35, "security": 0.25, "tradition": 0.15, "conformity": 0.15, "universalism": 0.10}),
    Persona("striver", "a junior software engineer who wants to be promoted within two years",
            {"achievement": 0.40, "power": 0.20, "self_direction": 0.20, "stimulation": 0.10, "security": 0.10}),
    Persona("explorer", "a freelance photographer who moves cities every few years",
            {"self_direction": 0.35, "stimulation": 0.30, "hedonism": 0.15, "universalism": 0.20}),
    Persona("steward", "a retired teacher who volunteers at a community garden",
            {"universalism": 0.35, "benevolence": 0.30, "tradition": 0.20, "security": 0.15}),
    Persona("provider", "a first-generation immigrant who runs a small shop and sends money home",
            {"security": 0.30, "tradition": 0.25, "benevolence": 0.25, "achievement": 0.20}),
)
PERSONAS_BY_ID = {p.persona_id: p for p in PERSONAS}

NUDGE_CATEGORIES: dict[str, str] = {
    "reflection": "invite the writer to notice and name what the moment means to them",
    "reframing": "offer a kinder or wider way to see what happened, without dismissing the feeling",
    "action": "suggest one small, concrete step the writer can take soon",
    "gratitude": "help the writer savour what went well and who or what helped",
    "support": "acknowledge the pain and remind the writer they need not carry it alone",
}

# Emotion -> category. Rule: positive emotions -> gratitude (savouring); anger, blame, shame and envy ->
# reframing (reappraisal); loss and fear -> support; future-directed or uncertain states -> action;
# memory, attachment and surprise -> reflection.
EMOTION_CATEGORY: dict[str, str] = {
    **dict.fromkeys(["excited", "proud", "grateful", "impressed", "joyful", "content"], "gratitude"),
    **dict.fromkeys(["annoyed", "angry", "disgusted", "disappointed", "guilty", "furious", "jealous",
                     "embarrassed", "ashamed"], "reframing"),
    **dict.fromkeys(["sad", "lonely", "afraid", "terrified", "devastated"], "support"),
    **dict.fromkeys(["confident", "hopeful", "anxious", "prepared", "anticipating", "apprehensive"], "action"),
    **dict.fromkeys(["surprised", "nostalgic", "sentimental", "caring", "trusting", "faithful"], "reflection"),
}

PROMPT_TEMPLATE = (paths.PROMPTS / "nudge_candidates.txt").read_text(encoding="utf-8")
SYSTEM_PROMPT, USER_TEMPLATE = (part.strip() for part in PROMPT_TEMPLATE.split("\n---\n", 1))

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
