"""The RAG triad (TruLens: context relevance, groundedness, answer relevance), traditional and nuggetized.

Every leg is an LLM score on 0–3 per statement (:func:`score_statements`: one call scores up to ``WINDOW``
statements against one reference, schema-constrained to exactly one integer per statement), normalised to
0–1 by /3.

* **Traditional** (:func:`traditional_triad`): context relevance = mean over the retrieved context passages of
  their score against the query; groundedness = mean over the answer's sentences (:func:`sentences`) of their
  score against the context; answer relevance = the score of the whole answer against the query.
* **Nuggetized** (:func:`nuggetized_triad`): nuggets are extracted from the answer (the creation step of
  :mod:`lib.nuggets`, the answer as the only source), labelled vital/okay, and groundedness and answer relevance
  are scored per nugget, then combined as Σ w·s / Σ w with w(vital) = 2, w(okay) = 1. Context relevance does
  not involve the answer and is the traditional one.

An empty answer states nothing: its answer relevance is 0 in both triads and its groundedness is None (no
claim to ground), decided without a call — a judge shown an empty statement may rate it anything.

A leg whose scores are incomplete (a failed call, a nugget without importance) is None, never 0. A leg that
needs a context is None when no context is given (``context=None``), e.g. for ALCE, whose retrieved passages
are not in this study's data.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Literal, get_args

import pandas as pd
from pydantic import BaseModel, Field, create_model

from lib import nuggets as nug
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

Score = Literal[0, 1, 2, 3]
SCALE: tuple[int, ...] = get_args(Score)
WINDOW = 10
NUGGET_WEIGHT: dict[str, float] = {"vital": 2.0, "okay": 1.0}
CRITERIA: dict[str, tuple[str, str]] = {
    # leg -> (criterion shown to the judge, name of the reference the statements are rated against)
    "context_relevance": ("how relevant each statement (a retrieved passage) is to the search query.", "Search query"),
    "groundedness": ("how well the retrieved context supports each statement.", "Retrieved context"),
    "answer_relevance": ("how relevant each statement is to the search query.", "Search query"),
}
LEGS = tuple(CRITERIA)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


@cache
def scores_schema(n: int) -> type[BaseModel]:
    return create_model(f"Scores{n}", scores=(Annotated[list[Score], Field(min_length=n, max_length=n)], ...))


def sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after . ! ? followed by space and a capital, digit, quote or bracket."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def scoring_messages(leg: str, reference: str, statements: Sequence[str]) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("triad_scoring", 3)
    criterion, reference_name = CRITERIA[leg]
    return [{"role": "system", "content": system.format(criterion=criterion)},
            {"role": "user", "content": shared.format(reference_name=reference_name, reference=reference) + "\n"
             + tail.format(items=nug.numbered(statements), n=len(statements))}]


def score_statements(gateway: Gateway, leg: str, reference: str, statements: Sequence[str],
                     call_label: str = "triad") -> list[int | None]:
    """0–3 score of each statement on ``leg`` against ``reference`` (None for a failed batch's statements)."""
    batches = [(s, min(s + WINDOW, len(statements))) for s in range(0, len(statements), WINDOW)]
    calls = [LLMCall(scoring_messages(leg, reference, statements[s:e]), scores_schema(e - s),
                     call_label=f"{call_label}:{leg}:{s}", max_tokens=10 + 4 * (e - s)) for s, e in batches]
    out: list[int | None] = [None] * len(statements)
    for (s, e), result in zip(batches, gateway.complete_many(calls, desc=f"{call_label} {leg}"), strict=True):
        if result.ok:
            out[s:e] = list(result.value.scores)
    return out


def _mean01(scores: Sequence[int | None], weights: Sequence[float] | None = None) -> float | None:
    """Σ w·s / (3·Σ w), or None when there is no score or any score is missing."""
    known = [s for s in scores if s is not None]
    if not scores or len(known) < len(scores):
        return None
    weights = list(weights) if weights is not None else [1.0] * len(scores)
    return sum(w * s for w, s in zip(weights, known, strict=True)) / (max(SCALE) * sum(weights))


def context_text(context: Sequence[str]) -> str:
    return nug.numbered(context)


@dataclass
class NuggetBreakdown:
    """The nuggetized legs of one answer, nugget by nugget."""

    nuggets: list[str]
    importance: list[str | None]
    groundedness: list[int | None] = field(default_factory=list)
    answer_relevance: list[int | None] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        n = len(self.nuggets)
        return pd.DataFrame({"nugget": self.nuggets, "importance": self.importance,
                             "weight": [NUGGET_WEIGHT.get(i) if i else None for i in self.importance],
                             "groundedness": self.groundedness or [None] * n,
                             "answer_relevance": self.answer_relevance or [None] * n})


def traditional_triad(gateway: Gateway, query: str, answer: str, context: Sequence[str] | None,
                      call_label: str = "triad") -> dict[str, float | None]:
    """The three traditional legs of one answer on 0–1 (module docstring); context legs None without context."""
    out: dict[str, float | None] = dict.fromkeys(LEGS)
    if context:
        out["context_relevance"] = _mean01(score_statements(gateway, "context_relevance", query, list(context),
                                                            call_label))
    if not answer.strip():
        out["answer_relevance"] = 0.0
        return out
    out["answer_relevance"] = _mean01(score_statements(gateway, "answer_relevance", query, [answer], call_label))
    if context:
        out["groundedness"] = _mean01(score_statements(gateway, "groundedness", context_text(context),
                                                       sentences(answer), call_label))
    return out


def nuggetized_triad(gateway: Gateway, query: str, answer: str, context: Sequence[str] | None, *,
                     max_nuggets: int = nug.MAX_NUGGETS, context_relevance: float | None = None,
                     call_label: str = "triad") -> tuple[dict[str, float | None], NuggetBreakdown]:
    """The nuggetized legs of one answer on 0–1 (module docstring) and the per-nugget breakdown; context
    relevance is passed in (it is the traditional leg)."""
    if not answer.strip():
        return {"context_relevance": context_relevance, "groundedness": None, "answer_relevance": 0.0}, \
            NuggetBreakdown([], [])
    created = nug.create_nuggets(gateway, query, [answer], max_nuggets=max_nuggets, call_label=f"{call_label}:answer")
    importance, _ = nug.label_importance(gateway, query, created.nuggets, call_label=call_label)
    breakdown = NuggetBreakdown(created.nuggets, importance)
    known = [i for i in importance if i is not None]
    weights = [NUGGET_WEIGHT[i] for i in known] if len(known) == len(importance) else None
    out: dict[str, float | None] = {"context_relevance": context_relevance, "groundedness": None,
                                    "answer_relevance": None}
    if not created.nuggets:
        return out, breakdown
    breakdown.answer_relevance = score_statements(gateway, "answer_relevance", query, created.nuggets, call_label)
    if weights is not None:
        out["answer_relevance"] = _mean01(breakdown.answer_relevance, weights)
    if context:
        breakdown.groundedness = score_statements(gateway, "groundedness", context_text(context), created.nuggets,
                                                  call_label)
        if weights is not None:
            out["groundedness"] = _mean01(breakdown.groundedness, weights)
    return out, breakdown
