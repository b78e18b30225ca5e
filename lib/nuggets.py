"""Nugget evaluation of RAG answers, after AutoNuggetizer (Pradeep et al., "Initial Nugget Evaluation Results
for the TREC 2024 RAG Track with the AutoNuggetizer Framework", 2024; castorini/nuggetizer).

Three LLM steps, each schema-constrained JSON (nuggetizer parses a Python list with ``ast.literal_eval``):

1. **Creation** (:func:`create_nuggets`): sources are read in windows of ``window`` (nuggetizer: 10); each call
   sees the query, the window's texts and the nuggets listed so far, and writes only *new* nuggets of 1–12
   words, most important first. Passes over the windows repeat until one adds no new nugget or the list
   reaches ``max_nuggets`` (nuggetizer: 30). (nuggetizer makes one pass and rewrites the whole list in each
   window; asking for the new nuggets only keeps a small model's answers short, and repeating the pass lets a
   model that writes few nuggets per call grow the list.)
2. **Importance** (:func:`label_importance`): ``vital`` or ``okay``, ``window`` nuggets per call.
3. **Assignment** (:func:`assign`): for one answer, each nugget ``support`` / ``partial_support`` /
   ``not_support`` (``grades=3``) or ``support`` / ``not_support`` (``grades=2``), ``window`` per call.

A batch whose answer is not a list of exactly one valid label per nugget is a recorded failure (the schema asks
for exactly that length, and the gateway validates it). Unlike nuggetizer, an unlabelled nugget is never
"okay" and a failed assignment batch is never counted as "not_support": the nuggets of a failed importance
batch have no importance, and an answer with a failed assignment batch has no score (:func:`answer_scores`).

Scores of one answer (:func:`answer_scores`), with s(support) = 1, s(partial_support) = 0.5 (0 in the strict
variants), s(not_support) = 0, over the answer's query's nuggets N and vital nuggets V:

* strict_vital = |{n ∈ V : support}| / |V|        * vital = Σ_{n∈V} s(n) / |V|
* strict_all   = |{n ∈ N : support}| / |N|        * all   = Σ_{n∈N} s(n) / |N|
* weighted     = Σ_n w(n)·s(n) / Σ_n w(n), w(vital) = 1, w(okay) = 0.5 — this study's addition.

A query without vital nuggets has no vital scores (None), not 0. A system's score is the macro-average over
its queries of the answers that have one (:func:`system_means`), with the left-out answers counted beside it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, StringConstraints, create_model

from lib.embeddings import similarity
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

WINDOW = 10          # nuggetizer's creator, scorer and assigner window
MAX_NUGGETS = 30     # nuggetizer's creator_max_nuggets
MAX_NUGGET_WORDS = 12
Importance = Literal["vital", "okay"]
IMPORTANCE_WEIGHT: dict[str, float] = {"vital": 1.0, "okay": 0.5}
ASSIGNMENT_LABELS: dict[int, tuple[str, ...]] = {3: ("support", "partial_support", "not_support"),
                                                 2: ("support", "not_support")}
SUPPORT_VALUE: dict[str, float] = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
SCORES = ("strict_vital", "vital", "strict_all", "all", "weighted")
_LABEL_DEFINITIONS = {
    3: '"support" if the answer states it fully, "partial_support" if the answer states part of it, '
       '"not_support" if the answer does not state it.',
    2: '"support" if the answer states it, "not_support" if it does not.',
}
_EXAMPLE_LABELS = {3: '["support", "not_support"]', 2: '["support", "not_support"]'}
NuggetText = Annotated[str, StringConstraints(min_length=1, max_length=120)]


@cache
def new_nuggets_schema(room: int) -> type[BaseModel]:
    """``{"nuggets": [str, ...]}`` with at most ``room`` nuggets of 1–120 characters."""
    return create_model(f"NewNuggets{room}", nuggets=(Annotated[list[NuggetText], Field(max_length=room)], ...))


@cache
def labels_schema(labels: tuple[str, ...], n: int) -> type[BaseModel]:
    """``{"labels": [...]}`` with exactly ``n`` labels from ``labels``."""
    # ``labels`` are known only at run time, so no static type names this Literal
    label_list = Annotated[list[Literal[labels]], Field(min_length=n, max_length=n)]  # type: ignore[valid-type]
    return create_model(f"Labels{len(labels)}x{n}", labels=(label_list, ...))


@dataclass(frozen=True)
class BatchFailure:
    """A call whose answer could not be used: which step, which items (positions) it covered, and why."""

    step: str
    positions: tuple[int, ...]
    failure_kind: str
    error: str | None = None


@dataclass
class Creation:
    """Nuggets created for one query: texts in order of creation, why creation stopped (``cap``: the list is
    full; ``no_new``: a whole pass over the sources added nothing), how many calls were made and which failed."""

    nuggets: list[str]
    stopped: str
    calls: int
    failures: list[BatchFailure] = field(default_factory=list)


def numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(texts, start=1))


def _normal(text: str) -> str:
    return " ".join(text.lower().strip(" .").split())


def creation_messages(query: str, sources: Sequence[str], known: Sequence[str], room: int) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("nugget_creation", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query, sources=numbered(sources)) + "\n"
             + tail.format(n_known=len(known), known=numbered(known) if known else "(none)", room=room)}]


def create_nuggets(gateway: Gateway, query: str, sources: Sequence[str], *, max_nuggets: int = MAX_NUGGETS,
                   window: int = WINDOW, call_label: str = "nuggets") -> Creation:
    """Grow the nugget list of ``query`` from ``sources`` (see the module docstring): pass over the windows of
    ``window`` sources, each call adding new nuggets to the list, and pass again while a pass added any; stop
    at ``max_nuggets`` (``cap``) or after a pass that added nothing (``no_new``). A nugget that repeats a listed
    one (ignoring case, spaces and a final period) is not added. A failed call is recorded and counts as adding
    nothing. A window is not asked again while the list is unchanged since it was last asked."""
    nuggets: list[str] = []
    failures: list[BatchFailure] = []
    calls = 0
    starts = list(range(0, len(sources), window))
    asked_at: dict[int, int] = {}  # window start -> list length when it was last asked
    while starts:
        added_in_pass = 0
        for start in starts:
            room = max_nuggets - len(nuggets)
            if room <= 0:
                return Creation(nuggets, "cap", calls, failures)
            if asked_at.get(start) == len(nuggets):
                continue  # same window, same list: the (temperature 0) answer would be the same
            asked_at[start] = len(nuggets)
            calls += 1
            result = gateway.complete(creation_messages(query, sources[start:start + window], nuggets, room),
                                      new_nuggets_schema(room), call_label=f"{call_label}:create:{calls}",
                                      max_tokens=40 + 25 * room)
            if not result.ok:
                failures.append(BatchFailure("create", tuple(range(start, min(start + window, len(sources)))),
                                             result.failure_kind or "unknown", result.error))
                continue
            seen = {_normal(n) for n in nuggets}
            for text in result.value.nuggets:
                if text.strip() and _normal(text) not in seen:
                    nuggets.append(text.strip())
                    seen.add(_normal(text))
                    added_in_pass += 1
        if added_in_pass == 0:
            break
    stopped = "cap" if len(nuggets) >= max_nuggets else "no_new"
    return Creation(nuggets, stopped, calls, failures)


def _labelled_batches(gateway: Gateway, n_items: int, messages_for, labels: tuple[str, ...], step: str,
                      call_label: str, window: int) -> tuple[list[str | None], list[BatchFailure]]:
    """Label ``n_items`` in batches of ``window`` with ``messages_for(start, stop)``; a failed batch leaves its
    items None and is recorded."""
    batches = [(s, min(s + window, n_items)) for s in range(0, n_items, window)]
    calls = [LLMCall(messages_for(s, e), labels_schema(labels, e - s), call_label=f"{call_label}:{step}:{s}",
                     max_tokens=12 + 8 * (e - s)) for s, e in batches]
    out: list[str | None] = [None] * n_items
    failures: list[BatchFailure] = []
    for (s, e), result in zip(batches, gateway.complete_many(calls, desc=f"{call_label} {step}"), strict=True):
        if result.ok:
            out[s:e] = list(result.value.labels)
        else:
            failures.append(BatchFailure(step, tuple(range(s, e)), result.failure_kind or "unknown", result.error))
    return out, failures


def importance_messages(query: str, nuggets: Sequence[str]) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("nugget_importance", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query) + "\n"
             + tail.format(nuggets=numbered(nuggets), n=len(nuggets))}]


def label_importance(gateway: Gateway, query: str, nuggets: Sequence[str], *, window: int = WINDOW,
                     call_label: str = "nuggets") -> tuple[list[str | None], list[BatchFailure]]:
    """``vital`` / ``okay`` per nugget (None for the nuggets of a failed batch) and the failed batches."""
    return _labelled_batches(gateway, len(nuggets), lambda s, e: importance_messages(query, nuggets[s:e]),
                             ("vital", "okay"), "importance", call_label, window)


def assignment_messages(query: str, answer: str, nuggets: Sequence[str], grades: int = 3) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("nugget_assignment", 3)
    return [{"role": "system", "content": system.format(label_definitions=_LABEL_DEFINITIONS[grades],
                                                        example=_EXAMPLE_LABELS[grades])},
            {"role": "user", "content": shared.format(query=query, answer=answer or "(empty answer)") + "\n"
             + tail.format(nuggets=numbered(nuggets), n=len(nuggets))}]


def assign(gateway: Gateway, query: str, answer: str, nuggets: Sequence[str], *, grades: int = 3,
           window: int = WINDOW, call_label: str = "nuggets") -> tuple[list[str | None], list[BatchFailure]]:
    """Support label of each nugget in ``answer`` (None for the nuggets of a failed batch) and the failures.
    An empty answer supports no nugget: every label is ``not_support`` without a call."""
    if not answer.strip():
        return ["not_support"] * len(nuggets), []
    return _labelled_batches(gateway, len(nuggets),
                             lambda s, e: assignment_messages(query, answer, nuggets[s:e], grades),
                             ASSIGNMENT_LABELS[grades], f"assign{grades}", call_label, window)


def match_messages(query: str, automatic: Sequence[str], reference: Sequence[str]) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("nugget_match", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query, automatic=numbered(automatic)) + "\n"
             + tail.format(reference=numbered(reference), n=len(reference))}]


def llm_match(gateway: Gateway, query: str, automatic: Sequence[str], reference: Sequence[str], *,
              window: int = WINDOW, call_label: str = "nuggets") -> tuple[list[bool | None], list[BatchFailure]]:
    """Whether each reference nugget is stated by some automatic nugget, judged by the LLM (None: failed batch)."""
    labels, failures = _labelled_batches(gateway, len(reference),
                                         lambda s, e: match_messages(query, automatic, reference[s:e]),
                                         ("covered", "not_covered"), "match", call_label, window)
    return [None if label is None else label == "covered" for label in labels], failures


def embedding_match(automatic: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """For each reference nugget (row of unit vectors ``reference``), the highest cosine similarity to any
    automatic nugget (rows of ``automatic``); 0 when there are no automatic nuggets. A reference nugget counts
    as recalled at threshold t when this value is ≥ t. Cosines are rounded by :func:`lib.embeddings.similarity`."""
    if len(automatic) == 0:
        return np.zeros(len(reference))
    return similarity(reference, automatic).max(axis=1)


def answer_scores(assignment: Sequence[str | None], importance: Sequence[str | None]) -> dict[str, float | None]:
    """The five scores of one answer (module docstring) from its nuggets' support labels and importance.

    All scores are None when any label is missing (a failed assignment batch) or there are no nuggets; the
    vital and weighted scores are None when any importance is missing, and the vital ones when no nugget is
    vital."""
    if len(assignment) != len(importance):
        raise ValueError(f"{len(assignment)} support labels for {len(importance)} nuggets")
    scores: dict[str, float | None] = dict.fromkeys(SCORES)
    labels = [label for label in assignment if label is not None]
    if not assignment or len(labels) < len(assignment):
        return scores
    value = np.array([SUPPORT_VALUE[label] for label in labels])
    strict = (value == 1.0).astype(float)
    scores["strict_all"], scores["all"] = float(strict.mean()), float(value.mean())
    importances = [i for i in importance if i is not None]
    if len(importances) < len(importance):
        return scores
    vital = np.array([i == "vital" for i in importances])
    weight = np.array([IMPORTANCE_WEIGHT[i] for i in importances])
    scores["weighted"] = float((weight * value).sum() / weight.sum())
    if vital.any():
        scores["strict_vital"], scores["vital"] = float(strict[vital].mean()), float(value[vital].mean())
    return scores


def system_means(scores: pd.DataFrame, by: Sequence[str] = ("system",)) -> pd.DataFrame:
    """Macro-average of each score over the queries of each group in ``by`` (one answer per query and system),
    from a frame with a ``qid`` column and the :data:`SCORES` columns (None/NaN = no score). Beside each mean,
    ``n_<score>``: answers with that score; ``answers``: all answers of the group."""
    grouped = scores.groupby(list(by), sort=False)
    out = grouped[list(SCORES)].mean()
    for name in SCORES:
        out[f"n_{name}"] = grouped[name].count()
    out["answers"] = grouped.size()
    return out
