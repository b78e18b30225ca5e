"""Nudge candidate generation: entry sample and persona matching, one LLM call per entry, near-duplicates
and the pools later chapters work on.

A *nudge* is one short sentence a journaling assistant shows after the user writes an entry. For each entry
the generator asks the LLM for ``n`` candidates at once (``nudge_text``, ``reasoning``, ``confidence``);
notebook 02 ranks each pool and notebook 03 judges it. Personas, values and categories are design inputs
(:mod:`lib.design`).

Two rules decide what the later chapters see, each a parameter with a documented default:

* ``persona_rule`` (:func:`sample_entries`): which persona writes an entry. ``"similarity"`` (default): the
  persona whose description is closest to the entry text by MiniLM cosine, so a rubric asking whether a nudge
  fits the writer judges a plausible writer; ``"random"``: a seeded uniform draw, the study's first design,
  which pairs entries with writers at random (e.g. the nurse who cares for her parents given an entry about
  lying to one's parents as a child).
* ``near_duplicate_rule`` (:func:`pool_candidates`): whether near-duplicates stay in a pool. ``"drop"``
  (default) removes them before ranking and judging, so a pool with three copies of one nudge does not
  give that nudge three chances to be ranked first and three labels; ``"keep"`` leaves the pool whole.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Literal, get_args

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, create_model

from lib import prompts
from lib.analysis.stats import nested_sample
from lib.design import EMOTION_CATEGORY, NUDGE_CATEGORIES, PERSONAS, PERSONAS_BY_ID, SCHWARTZ_VALUES, Persona
from lib.embeddings import Embed, embed, similarity
from lib.llm.gateway import Gateway, LLMCall, LLMResult
from lib.seeds import stable_int

PersonaRule = Literal["similarity", "random"]
NearDuplicateRule = Literal["drop", "keep"]
PERSONA_RULES: tuple[PersonaRule, ...] = get_args(PersonaRule)
NEAR_DUPLICATE_RULES: tuple[str, ...] = ("drop", "keep")

SYSTEM_PROMPT, USER_TEMPLATE = prompts.parts("nudge_candidates", 2)

NUDGE_MIN_WORDS, NUDGE_MAX_WORDS = 5, 12


class NudgeCandidate(BaseModel):
    # Length caps are part of the JSON schema, so constrained decoding also keeps a small model brief.
    nudge_text: str = Field(min_length=1, max_length=100)
    reasoning: str = Field(min_length=1, max_length=160)
    confidence: float = Field(ge=0.0, le=1.0)


@cache
def candidate_set_schema(n: int) -> type[BaseModel]:
    """Response schema: exactly ``n`` candidates (the JSON schema's minItems/maxItems constrain decoding)."""
    return create_model(
        f"NudgeCandidates{n}",
        candidates=(Annotated[list[NudgeCandidate], Field(min_length=n, max_length=n)], ...),
    )


def persona_similarities(texts: Sequence[str], embedder: Embed | None = None) -> pd.DataFrame:
    """cos(e_text, e_description(p)) for every text and persona p: one row per text, one column per persona in
    ``lib.design.PERSONAS`` order. Embeddings are unit vectors (``embedder``, MiniLM by default), so the cosine
    is u·v, rounded by :func:`lib.embeddings.similarity`."""
    embedder = embedder or embed
    cosines = similarity(embedder(list(texts)), embedder([p.description for p in PERSONAS]))
    return pd.DataFrame(cosines, columns=[p.persona_id for p in PERSONAS])


def most_similar_persona(similarities: pd.DataFrame) -> list[str]:
    """argmax_p of each row of :func:`persona_similarities`; a tie goes to the persona listed first in
    ``lib.design.PERSONAS`` (``numpy.argmax`` returns the first maximum)."""
    return [similarities.columns[i] for i in np.argmax(similarities.to_numpy(), axis=1)]


def sample_entries(entries: pd.DataFrame, n_entries: int, seed: int, persona_rule: PersonaRule = "similarity",
                   first: Sequence[str] = (), embedder: Embed | None = None) -> pd.DataFrame:
    """Seeded sample of entries, each with a persona (``persona_rule``), its cosine with the persona's
    description (``persona_similarity``) and the category of its emotion (``lib.design.EMOTION_CATEGORY``).

    The entries are :func:`lib.analysis.stats.nested_sample` of the entry ids with ``seed``, the ``first`` ids
    (entries earlier runs generated for) kept first, in draw order: raising ``n_entries`` adds entries and keeps
    the earlier ones. ``persona_rule="random"`` gives each entry a persona drawn uniformly by a generator seeded
    by (``seed``, the entry id), so an entry's draw does not depend on the sample size; ``"similarity"`` gives it
    :func:`most_similar_persona`. Both rules see the same entries.
    """
    if persona_rule not in PERSONA_RULES:
        raise ValueError(f"persona_rule must be one of {PERSONA_RULES}, not {persona_rule!r}")
    ids = [str(entry_id) for entry_id in nested_sample(entries["entry_id"], n_entries, seed, first=first)]
    chosen = entries.set_index("entry_id").loc[ids].reset_index()
    similarities = persona_similarities(chosen["text"].tolist(), embedder)
    drawn = [PERSONAS[np.random.default_rng([seed, stable_int(entry_id)]).integers(len(PERSONAS))].persona_id
             for entry_id in ids]
    chosen["persona_id"] = drawn if persona_rule == "random" else most_similar_persona(similarities)
    chosen["persona_similarity"] = [float(similarities.at[i, pid]) for i, pid in enumerate(chosen["persona_id"])]
    chosen["category"] = chosen["emotion"].map(EMOTION_CATEGORY)
    return chosen


def persona_rule_effect(sampled_by_rule: Mapping[PersonaRule, pd.DataFrame]) -> pd.DataFrame:
    """One row per persona rule: entries per persona, and the mean and sd (ddof 1) over entries of
    cos(entry, assigned persona's description) (``persona_similarity``). The samples must hold the same
    entries (:func:`sample_entries` with the same seed); ``persona_changed`` counts entries whose persona
    differs from the first rule's."""
    first = next(iter(sampled_by_rule.values()))
    rows = []
    for rule, sampled in sampled_by_rule.items():
        if sampled["entry_id"].tolist() != first["entry_id"].tolist():
            raise ValueError(f"rule {rule!r}: a different entry sample than {next(iter(sampled_by_rule))!r}")
        counts = sampled["persona_id"].value_counts().reindex([p.persona_id for p in PERSONAS], fill_value=0)
        rows.append({"persona_rule": rule, "entries": len(sampled),
                     "mean_cos": float(sampled["persona_similarity"].mean()),
                     "sd_cos": float(sampled["persona_similarity"].std(ddof=1)),
                     "persona_changed": int((sampled["persona_id"] != first["persona_id"]).sum()),
                     **counts.to_dict()})
    return pd.DataFrame(rows).set_index("persona_rule")


def build_messages(text: str, persona: Persona, category: str, n: int) -> list[dict[str, str]]:
    """System prompt shared by every call (prefix-cache friendly), then persona, category and entry."""
    user = USER_TEMPLATE.format(
        persona=persona.description,
        values="; ".join(f"{v.replace('_', ' ')} ({SCHWARTZ_VALUES[v]})" for v in persona.top_values()),
        category=category, category_definition=NUDGE_CATEGORIES[category], entry=text, n=n,
        min_words=NUDGE_MIN_WORDS, max_words=NUDGE_MAX_WORDS,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def generation_call(entry_id: str, text: str, persona: Persona, category: str, n: int, kind: str = "candidates",
                    max_tokens_per_candidate: int = 110) -> LLMCall:
    """The generation call of ``n`` nudges for one entry written for ``persona``, labelled "<kind>:<entry_id>"."""
    return LLMCall(build_messages(text, persona, category, n), candidate_set_schema(n),
                   call_label=f"{kind}:{entry_id}", max_tokens=max_tokens_per_candidate * n)


def generate_candidates(gateway: Gateway, sampled: pd.DataFrame, n_candidates: int) -> list[LLMResult]:
    """One LLM call per sampled entry, in entry order."""
    calls = [generation_call(row.entry_id, row.text, PERSONAS_BY_ID[row.persona_id], row.category, n_candidates)
             for row in sampled.itertuples()]
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
    for row, result in zip(sampled.itertuples(), results, strict=True):
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
    """Flag near-duplicates within each pool by MiniLM cosine similarity (:func:`lib.embeddings.similarity`).

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
        sims = similarity(vectors[idx], vectors[idx])
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


def pool_candidates(candidates: pd.DataFrame, near_duplicate_rule: NearDuplicateRule) -> pd.DataFrame:
    """The candidates that make up the pools chapters 02 (ranking) and 03 (judging) work on.

    ``"drop"``: every candidate flagged ``near_duplicate`` by :func:`mark_near_duplicates` is removed, i.e.
    a candidate whose MiniLM cosine with an *earlier* candidate of its pool reaches the threshold. Of a group
    of copies the earliest (lowest ``position``) stays. In a chain a ≈ b ≈ c where a and c are not close, b
    and c both go (each has a close earlier candidate): the rule is deliberately conservative.
    ``"keep"``: all candidates. Row order and columns are unchanged; the candidates table itself always keeps
    every row with its flag.
    """
    if near_duplicate_rule not in NEAR_DUPLICATE_RULES:
        raise ValueError(f"near_duplicate_rule must be one of {NEAR_DUPLICATE_RULES}, not {near_duplicate_rule!r}")
    if near_duplicate_rule == "keep":
        return candidates.copy()
    return candidates[~candidates["near_duplicate"].astype(bool)].copy()


def pool_sizes(candidates: pd.DataFrame, near_duplicate_rule: NearDuplicateRule) -> pd.DataFrame:
    """Number of pools of each size before and after :func:`pool_candidates` (rows: pool size, in candidates;
    columns ``generated`` and ``after <rule>``). Pools are counted by entry; a pool cannot become empty
    (its first candidate always stays)."""
    before = candidates.groupby("entry_id").size().value_counts()
    after = pool_candidates(candidates, near_duplicate_rule).groupby("entry_id").size().value_counts()
    table = pd.DataFrame({"generated": before, f"after {near_duplicate_rule}": after}).fillna(0).astype(int)
    return table.sort_index().rename_axis("pool size (candidates)")
