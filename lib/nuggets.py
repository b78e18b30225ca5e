"""Nugget evaluation of RAG answers, after AutoNuggetizer (Pradeep et al., "Initial Nugget Evaluation Results
for the TREC 2024 RAG Track with the AutoNuggetizer Framework", 2024; castorini/nuggetizer).

Three LLM steps, each schema-constrained JSON (nuggetizer parses a Python list with ``ast.literal_eval``):

1. **Creation** (:func:`create_nuggets`), as AutoNuggetizer does it: sources are read in windows of ``window``
   (nuggetizer: 10); each call sees the query, the window's texts and the current list, and returns the whole
   list *updated* (kept, edited, merged, dropped or added nuggets of 1–12 words, most important first), at most
   ``max_nuggets`` (nuggetizer: 30). Two guards the paper's prompt asks of the model are also enforced: after each
   call, a nugget whose MiniLM cosine to an earlier one of the list reaches ``merge_threshold`` is merged into it
   (dropped), and a nugget whose best cosine to any source sentence that is not a refusal (:data:`REFUSALS`) is
   below ``support_threshold`` is dropped as not taken from a stated fact, so a refusal yields no nuggets, whether
   the model copies it or invents a fact. Empty sources are never sent.
   nuggetizer makes one pass; here passes repeat while a pass changes the list and it is not full, up to
   ``max_passes``. Nugget length is asked for, not cut (as in nuggetizer): a nugget over 12 words is kept
   whole and counted.
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
The five scores are metrics of the study (kind ``nugget``, :mod:`lib.metrics`): ``score(gateway, items)`` on
:class:`NuggetItem` runs the assignment step and gives the score or why there is none.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, StringConstraints, create_model

from lib import embeddings, metrics
from lib.embeddings import Embed, similarity
from lib.judges.logprobs import label_distributions
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

WINDOW = 10          # nuggetizer's creator, scorer and assigner window
MAX_NUGGETS = 30     # nuggetizer's creator_max_nuggets
MAX_NUGGET_WORDS = 12
MAX_PASSES = 3          # this study's bound on passes over the windows (nuggetizer makes one)
MERGE_THRESHOLD = 0.8   # MiniLM cosine at which a nugget is a near-duplicate of an earlier one
SUPPORT_THRESHOLD = 0.5  # least MiniLM cosine of a nugget to some source sentence (below: not from the sources)
IMPORTANCE = ("vital", "okay")
IMPORTANCE_TOP_LOGPROBS = 5  # alternatives read at each importance label's token (p(vital), :func:`label_importance`)
REFUSAL_THRESHOLD = 0.7  # MiniLM cosine of a source sentence to a refusal template at which it is a refusal
REFUSALS = (  # sentences that state no fact about the query, whatever their wording (ALCE's systems write these)
    "There are no search results that provide an answer to the question.",
    "The search results do not contain any information relevant to the question.",
    "I cannot answer this question based on the provided documents.",
    "I'm sorry, I don't know the answer to this question.",
)
CREATION_TOKENS_PER_NUGGET = 40  # room for a copied sentence per nugget
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
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
# no length cut: a cut would end a copied sentence mid-clause; the 1–12 words are asked for, and counted
NuggetText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


@cache
def nugget_list_schema(max_nuggets: int) -> type[BaseModel]:
    """``{"nuggets": [str, ...]}``: the whole updated list, at most ``max_nuggets`` non-empty nuggets (no length
    cut: a cut would end a copied sentence mid-clause)."""
    return create_model(f"NuggetList{max_nuggets}", nuggets=(Annotated[list[NuggetText], Field(max_length=max_nuggets)],
                                                              ...))


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
    """Nuggets created for one query, most important first, and how creation went: why it stopped (``no_sources``: every
    source was empty or a refusal, nothing was sent; ``cap``: the list is full; ``unchanged``: a whole pass left the
    list as it was; ``pass_limit``: ``max_passes`` passes changed it every time), the calls and passes made, the
    nuggets merged into an earlier near-duplicate and dropped as not taken from the sources (over all calls), and
    the failed calls."""

    nuggets: list[str]
    stopped: str
    calls: int
    passes: int = 0
    merged: int = 0
    unsupported: int = 0
    failures: list[BatchFailure] = field(default_factory=list)

    @property
    def over_length(self) -> int:
        """Nuggets longer than the 12 words asked for (kept whole)."""
        return sum(len(n.split()) > MAX_NUGGET_WORDS for n in self.nuggets)


def numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(texts, start=1))


def _normal(text: str) -> str:
    return " ".join(text.lower().strip(" .").split())


def sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after . ! ? followed by space and a capital, digit, quote or bracket."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def creation_messages(query: str, sources: Sequence[str], current: Sequence[str], max_nuggets: int
                      ) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("nugget_creation", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query, sources=numbered(sources)) + "\n"
             + tail.format(n_current=len(current), current=numbered(current) if current else "(empty)",
                           max_nuggets=max_nuggets)}]


def merge_near_duplicates(nuggets: Sequence[str], vectors: np.ndarray, threshold: float) -> list[int]:
    """Positions of the nuggets kept when each nugget whose cosine to an earlier *kept* one reaches ``threshold``
    is merged into it (the earlier one is the more important: the list is ordered by importance)."""
    kept: list[int] = []
    for i in range(len(nuggets)):
        if not kept or similarity(vectors[i:i + 1], vectors[kept]).max() < threshold:
            kept.append(i)
    return kept


def clean_list(nuggets: Sequence[str], source_vectors: np.ndarray, embed: Embed, merge_threshold: float,
               support_threshold: float) -> tuple[list[str], int, int]:
    """One call's list after the two guards (module docstring), with ``source_vectors`` the embedded sentences of
    the sources that state something (refusals left out: :func:`fact_sentences`): (kept nuggets in order, merged,
    unsupported). Exact repeats (ignoring case, spaces and a final period) are merged without embedding."""
    first_of_each: dict[str, str] = {}
    for nugget in nuggets:
        first_of_each.setdefault(_normal(nugget), nugget)
    unique = list(first_of_each.values())
    if not unique:
        return [], len(nuggets), 0
    vectors = embed(unique)
    best = similarity(vectors, source_vectors).max(axis=1) if len(source_vectors) else np.zeros(len(unique))
    supported = [i for i in range(len(unique)) if best[i] >= support_threshold]
    kept = [supported[k] for k in merge_near_duplicates([unique[i] for i in supported], vectors[supported],
                                                        merge_threshold)]
    merged = len(nuggets) - len(unique) + len(supported) - len(kept)
    return [unique[i] for i in kept], merged, len(unique) - len(supported)


def fact_sentences(texts: Sequence[str], embed: Embed, refusal_threshold: float = REFUSAL_THRESHOLD
                   ) -> tuple[list[str], np.ndarray]:
    """The sentences of ``texts`` that are not refusals (MiniLM cosine to one of :data:`REFUSALS` below
    ``refusal_threshold``), with their vectors: what a nugget may be taken from. A nugget whose closest sentence is
    a refusal ("There are no search results...") states no fact about the query."""
    found = [sentence for text in texts for sentence in sentences(text)]
    if not found:
        return [], np.zeros((0, 0))
    vectors = embed(found)
    refusal = similarity(vectors, embed(list(REFUSALS))).max(axis=1) >= refusal_threshold
    keep = np.flatnonzero(~refusal)
    return [found[i] for i in keep], vectors[keep]


def create_nuggets(gateway: Gateway, query: str, sources: Sequence[str], *, max_nuggets: int = MAX_NUGGETS,
                   window: int = WINDOW, max_passes: int = MAX_PASSES, merge_threshold: float = MERGE_THRESHOLD,
                   support_threshold: float = SUPPORT_THRESHOLD, embed: Embed = embeddings.embed,
                   call_label: str = "nuggets") -> Creation:
    """The nugget list of ``query`` from ``sources`` (module docstring): each call returns the whole list updated
    with one window of ``window`` non-empty sources, then near-duplicates are merged and nuggets stated in no
    source sentence dropped. A pass reads every window once; passes repeat until the list is full (``cap``), a
    pass leaves its set of nuggets unchanged (``unchanged``) or ``max_passes`` are made (``pass_limit``). A
    failed call is recorded and leaves the list as it was."""
    texts = [s.strip() for s in sources if s.strip()]
    if not texts:
        return Creation([], "no_sources", 0)
    facts, source_vectors = fact_sentences(texts, embed)
    if not facts:  # only refusals: nothing to take a nugget from
        return Creation([], "no_sources", 0)
    windows = [(start, texts[start:start + window]) for start in range(0, len(texts), window)]
    nuggets: list[str] = []
    failures: list[BatchFailure] = []
    calls = merged = unsupported = 0
    for passes in range(1, max_passes + 1):
        before = sorted(map(_normal, nuggets))
        for start, texts_in_window in windows:
            calls += 1
            result = gateway.complete(creation_messages(query, texts_in_window, nuggets, max_nuggets),
                                      nugget_list_schema(max_nuggets), call_label=f"{call_label}:create:{calls}",
                                      max_tokens=CREATION_TOKENS_PER_NUGGET * max_nuggets)
            if not result.ok:
                failures.append(BatchFailure("create", tuple(range(start, start + len(texts_in_window))),
                                             result.failure_kind or "unknown", result.error))
                continue
            nuggets, merged_now, unsupported_now = clean_list(result.value.nuggets, source_vectors, embed,
                                                              merge_threshold, support_threshold)
            merged, unsupported = merged + merged_now, unsupported + unsupported_now
        if len(nuggets) >= max_nuggets:
            return Creation(nuggets, "cap", calls, passes, merged, unsupported, failures)
        if sorted(map(_normal, nuggets)) == before:
            return Creation(nuggets, "unchanged", calls, passes, merged, unsupported, failures)
    return Creation(nuggets, "pass_limit", calls, max_passes, merged, unsupported, failures)


@dataclass
class Labelled:
    """The labels of ``n`` items from batched calls: a label per item (None for the items of a failed batch), the
    failed batches, and, when the calls asked for logprobs, p(label) per item read at its label's token
    (:func:`lib.judges.logprobs.label_distributions`; None where it could not be read)."""

    labels: list[str | None]
    failures: list[BatchFailure]
    distributions: list[dict[str, float] | None] | None = None

    def probability(self, label: str) -> list[float | None]:
        """p(``label``) per item (None where there is no distribution)."""
        if self.distributions is None:
            raise ValueError("these labels were asked without logprobs")
        return [None if d is None else d[label] for d in self.distributions]


def _labelled_batches(gateway: Gateway, n_items: int, messages_for, labels: tuple[str, ...], step: str,
                      call_label: str, window: int, top_logprobs: int | None = None) -> Labelled:
    """Label ``n_items`` in batches of ``window`` with ``messages_for(start, stop)``; a failed batch leaves its
    items None and is recorded. With ``top_logprobs``, each label's distribution is read from the same answer."""
    return _labelled_lists(gateway, [(n_items, messages_for, call_label)], labels, step, window, top_logprobs)[0]


def _labelled_lists(gateway: Gateway, lists: Sequence[tuple[int, Any, str]], labels: tuple[str, ...], step: str,
                    window: int, top_logprobs: int | None = None) -> list[Labelled]:
    """:func:`_labelled_batches` for several lists ``(n_items, messages_for, call_label)`` at once: their calls go
    to the endpoint together, so independent lists keep every slot busy; each list's labels come back on their own."""
    jobs = [(k, s, min(s + window, n)) for k, (n, _, _) in enumerate(lists) for s in range(0, n, window)]
    calls = [LLMCall(lists[k][1](s, e), labels_schema(labels, e - s), call_label=f"{lists[k][2]}:{step}:{s}",
                     max_tokens=12 + 8 * (e - s), top_logprobs=top_logprobs) for k, s, e in jobs]
    out: list[list[str | None]] = [[None] * n for n, _, _ in lists]
    distributions: list[list[dict[str, float] | None]] = [[None] * n for n, _, _ in lists]
    failures: list[list[BatchFailure]] = [[] for _ in lists]
    desc = f"{lists[0][2]} {step}" if len(lists) == 1 else f"{step} of {len(lists)} lists"
    for (k, s, e), result in zip(jobs, gateway.complete_many(calls, desc=desc), strict=True):
        if result.ok:
            written = list(result.value.labels)
            out[k][s:e] = written
            distributions[k][s:e] = label_distributions(result.logprobs, labels, written)
        else:
            failures[k].append(BatchFailure(step, tuple(range(s, e)), result.failure_kind or "unknown", result.error))
    return [Labelled(out[k], failures[k], distributions[k] if top_logprobs else None) for k in range(len(lists))]


def query_list_messages(prompt: str, query: str, nuggets: Sequence[str]) -> list[dict[str, str]]:
    """The messages of a prompt that labels a numbered list of nuggets against the query (``nugget_importance``,
    ``nugget_relevance``): the query first, so the calls of one query share that prefix."""
    system, shared, tail = prompt_parts(prompt, 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query) + "\n"
             + tail.format(nuggets=numbered(nuggets), n=len(nuggets))}]


def label_importance(gateway: Gateway, query: str, nuggets: Sequence[str], *, window: int = WINDOW,
                     call_label: str = "nuggets") -> Labelled:
    """``vital`` / ``okay`` per nugget (None for the nuggets of a failed batch), the failed batches, and p(vital)
    read from the same answers' logprobs (:meth:`Labelled.probability`): the written label is one reading, a
    threshold on p(vital) another (the written one calls almost every nugget okay)."""
    return label_importance_many(gateway, [(query, nuggets, call_label)], window=window)[0]


def label_importance_many(gateway: Gateway, lists: Sequence[tuple[str, Sequence[str], str]], *,
                          window: int = WINDOW) -> list[Labelled]:
    """:func:`label_importance` of several ``(query, nuggets, call_label)`` lists, their calls sent together (the
    same requests as one list at a time, so the same cache entries)."""
    def messages_for(query: str, nuggets: Sequence[str]):
        return lambda s, e: query_list_messages("nugget_importance", query, nuggets[s:e])

    return _labelled_lists(gateway, [(len(n), messages_for(q, n), label) for q, n, label in lists], IMPORTANCE,
                           "importance", window, top_logprobs=IMPORTANCE_TOP_LOGPROBS)


def label_relevance(gateway: Gateway, query: str, nuggets: Sequence[str], *, window: int = WINDOW,
                    call_label: str = "nuggets") -> tuple[list[str | None], list[BatchFailure]]:
    """``relevant`` / ``partly_relevant`` / ``not_relevant`` to ``query`` per nugget (None for the nuggets of a failed
    batch): the nuggetized RAG triad's answer relevance of each nugget (:mod:`lib.triads`)."""
    found = _labelled_batches(gateway, len(nuggets),
                              lambda s, e: query_list_messages("nugget_relevance", query, nuggets[s:e]),
                              ("relevant", "partly_relevant", "not_relevant"), "relevance", call_label, window)
    return found.labels, found.failures


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
    found = _labelled_batches(gateway, len(nuggets),
                              lambda s, e: assignment_messages(query, answer, nuggets[s:e], grades),
                              ASSIGNMENT_LABELS[grades], f"assign{grades}", call_label, window)
    return found.labels, found.failures


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


@dataclass(frozen=True)
class NuggetItem:
    """One answer to score: its query, the answer, the query's nuggets and their importance (None: unlabelled)."""

    query: str
    answer: str
    nuggets: tuple[str, ...]
    importance: tuple[str | None, ...]


def score_answers(gateway: Gateway, items: Sequence[NuggetItem], *, grades: int = 3, window: int = WINDOW,
                  call_label: str = "nuggets") -> list[dict[str, metrics.Result]]:
    """Per item, each of the five scores (:func:`answer_scores`) as a result after :func:`assign`: a failed
    assignment batch fails every score with the batch's kind; a score :func:`answer_scores` leaves undefined
    (no nuggets, an importance missing, no vital nugget) is a failure of kind ``undefined``."""
    out = []
    for i, item in enumerate(items):
        labels, failures = assign(gateway, item.query, item.answer, item.nuggets, grades=grades, window=window,
                                  call_label=f"{call_label}:{i}")
        if failures:
            out.append(dict.fromkeys(SCORES, metrics.Result.failure(failures[0].failure_kind)))
            continue
        scores = answer_scores(labels, item.importance)
        out.append({name: metrics.Result.of(value) for name, value in scores.items()})
    return out


def _score_metric(name: str, title: str, construct: str, formula: str) -> metrics.FunctionMetric:
    def call(gateway: Gateway | None, items: Sequence[NuggetItem], **options: Any) -> list[metrics.Result]:
        return [scores[name] for scores in score_answers(metrics.judge_gateway(gateway, title), items, **options)]

    return metrics.FunctionMetric(
        name=title, kind="nugget", construct=construct, scale=metrics.Scale(0, 1), description=formula, call=call,
        citation="Pradeep et al. 2024, AutoNuggetizer" if name != "weighted" else "this study, after AutoNuggetizer",
        aliases=(f"nuggets.{name}",))


NUGGET_METRICS = tuple(metrics.register(_score_metric(*spec)) for spec in (
    ("strict_vital", "nugget vital (strict)", "share of the query's vital facts the answer states fully",
     "|{n ∈ V : support}| / |V|"),
    ("vital", "nugget vital", "share of the query's vital facts the answer states, partial support half",
     "Σ_{n∈V} s(n) / |V|"),
    ("strict_all", "nugget all (strict)", "share of the query's facts the answer states fully",
     "|{n ∈ N : support}| / |N|"),
    ("all", "nugget all", "share of the query's facts the answer states, partial support half", "Σ_{n∈N} s(n) / |N|"),
    ("weighted", "nugget weighted", "share of the query's facts the answer states, vital ones counting double",
     "Σ_n w(n)·s(n) / Σ_n w(n), w(vital) = 1, w(okay) = 0.5")))
