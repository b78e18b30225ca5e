"""RAG answers for chapter 05: TREC RAG 2025 dev topics answered by the LLM with and without a short context.

There is no retrieval corpus in this study's data, so the context is built from the topic's own NIST nuggets:
:func:`assessed_nuggets` draws a seeded sample of a topic's nuggets, and :func:`context_notes` takes the first
``n_context`` of them as the notes shown to the generator — an *oracle* context whose facts are known. The
other sampled nuggets are held out, so an evaluation can compare the support of shown and held-out nuggets
in the same answer (the shown ones should be supported more often by the answer that saw them).

:func:`study_draw` is the one nested draw of topics and nuggets behind chapter 05: chapter 01 answers its topics
and has the judge label the importance of its nuggets, and chapter 05 evaluates both; each of them draws it from the
same parameters, and chapter 05 checks that what it reads is what its own draw asks for
(:func:`lib.tables.check_upstream`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.analysis import validity
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

ANSWER_MAX_TOKENS = 220


def assessed_nuggets(nuggets: pd.DataFrame, qids: Sequence[str], per_topic: int, seed: int) -> pd.DataFrame:
    """Per topic in ``qids``, a seeded sample of ``per_topic`` NIST nuggets (all when fewer), in sampled order,
    with ``order`` (0-based position in the sample)."""
    rng = np.random.default_rng(seed)
    parts = []
    for qid in qids:
        topic = nuggets[nuggets.qid == qid].sort_values("nugget_index")
        picked = topic.iloc[rng.permutation(len(topic))[:per_topic]].copy()
        picked["order"] = range(len(picked))
        parts.append(picked)
    return pd.concat(parts, ignore_index=True)


def context_notes(assessed: pd.DataFrame, qid: str, n_context: int) -> list[str]:
    """The notes shown to the generator for ``qid``: the texts of its first ``n_context`` assessed nuggets."""
    topic = assessed[assessed.qid == qid].sort_values("order")
    return topic.nugget.head(n_context).tolist()


def answer_messages(query: str, notes: Sequence[str] | None) -> list[dict[str, str]]:
    system, user = prompt_parts("rag_answer", 2)
    notes_block = ("\nNotes you may use:\n" + "\n".join(f"- {n}" for n in notes)) if notes else ""
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(query=query, notes_block=notes_block)}]


def generate_answers(gateway: Gateway, requests: pd.DataFrame) -> pd.DataFrame:
    """Answer each row of ``requests`` (columns qid, variant, query, notes: list or None). Returns the rows with
    ``answer`` (None when the call failed), ``failure_kind`` and ``completion_tokens``."""
    calls = [LLMCall(answer_messages(r.query, r.notes), None, call_label=f"rag-answer:{r.qid}:{r.variant}",
                     max_tokens=ANSWER_MAX_TOKENS) for r in requests.itertuples()]
    results = gateway.complete_many(calls, desc="answers")
    out = requests.copy()
    out["answer"] = [r.text.strip() if r.ok else None for r in results]
    out["failure_kind"] = [r.failure_kind for r in results]
    out["completion_tokens"] = [r.completion_tokens for r in results]
    return out


@dataclass(frozen=True)
class LogDesign:
    """The simulated query log's calendar: the sampled topics fill ``per_day`` queries a day; the topics of the
    degraded day (``nugget_qids``) are also answered without the notes, and come back on the recheck day after the
    fix."""
    topics: list[str]
    days: list[str]
    per_day: int
    degraded: str
    recheck: str
    nugget_qids: list[str]


def log_design(topics: Sequence[str], start_day: str, log_days: int, degraded_day: int) -> LogDesign:
    """Days from ``start_day``; day ``degraded_day`` (1-based) serves the broken release; the recheck is the day
    after the last one."""
    days = [(pd.Timestamp(start_day) + pd.Timedelta(days=d)).date().isoformat() for d in range(log_days)]
    per_day = len(topics) // log_days
    recheck = (pd.Timestamp(days[-1]) + pd.Timedelta(days=1)).date().isoformat()
    nugget_qids = list(topics[(degraded_day - 1) * per_day:degraded_day * per_day])
    return LogDesign(list(topics), days, per_day, days[degraded_day - 1], recheck, nugget_qids)


def nested_topic_ids(all_qids: Sequence[str], first: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` topics nested on the ones already used: ``first`` in their order, then a seeded draw
    (:func:`lib.analysis.validity.sample_ids`) of the other topics up to ``n`` (all of them when n ≤ len(first))."""
    rest = sorted(set(all_qids) - set(first), key=int)
    extra = validity.sample_ids(rest, max(0, n - len(first)), seed, key=int) if n > len(first) else []
    return [*first, *extra]


def extend_assessed(human: pd.DataFrame, assessed: pd.DataFrame, qids: Sequence[str], per_topic: int, seed: int
                    ) -> pd.DataFrame:
    """The sampled NIST nuggets of topics ``qids``: the topics ``assessed`` already holds keep their draw, the others
    are drawn the same way (:func:`assessed_nuggets`) with its own generator, so an earlier draw never changes when
    topics are added."""
    kept = assessed[assessed.qid.isin(qids)].drop(columns="in_context", errors="ignore")
    extra = [q for q in qids if q not in set(kept.qid)]
    parts = [kept, assessed_nuggets(human, extra, per_topic, seed)] if extra else [kept]
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class StudyDraw:
    """Chapter 05's RAG25 units: the log's topics (``log.topics``), then the triad check's up to ``triad_qids``, then
    the importance set's up to ``importance_qids`` (each list begins with the one before); ``assessed`` holds each
    topic's seeded sample of NIST nuggets (``order`` 0, 1, …), drawn for the log's topics first, so the log's topics
    keep their nuggets whatever the other sizes. The topics beyond the log's are a seeded draw per size
    (:func:`nested_topic_ids`): raising ``triad_topics`` or ``importance_topics`` redraws them. The first
    ``context_nuggets`` of a topic are the notes its answer is written from, the first ``importance_per_topic`` the
    nuggets whose importance the judge labels."""
    log: LogDesign
    triad_qids: list[str]
    importance_qids: list[str]
    assessed: pd.DataFrame
    context_nuggets: int
    importance_per_topic: int

    def notes(self, qid: str) -> list[str]:
        """The notes the generator is shown for topic ``qid``."""
        return context_notes(self.assessed, qid, self.context_nuggets)

    def nuggets_of(self, qids: Sequence[str]) -> pd.DataFrame:
        """The sampled nuggets of topics ``qids``, with ``in_context`` (the nugget is one of the notes)."""
        picked = self.assessed[self.assessed.qid.isin(qids)].reset_index(drop=True)
        return picked.assign(in_context=picked.order < self.context_nuggets)

    def answer_requests(self, narrative: Mapping[str, str]) -> pd.DataFrame:
        """The answers chapter 05 evaluates: one with the notes per triad topic (the log's first), and one without
        notes per topic of the log's degraded day."""
        return pd.DataFrame([{"qid": q, "variant": "with_context", "query": narrative[q], "notes": self.notes(q)}
                             for q in self.triad_qids]
                            + [{"qid": q, "variant": "no_context", "query": narrative[q], "notes": None}
                               for q in self.log.nugget_qids])

    def importance_nuggets(self) -> pd.DataFrame:
        """The importance set: per topic of ``importance_qids``, the first ``importance_per_topic`` of its sampled
        nuggets (``order`` below it, so the set grows by nesting)."""
        picked = self.assessed[self.assessed.qid.isin(self.importance_qids)
                               & (self.assessed.order < self.importance_per_topic)]
        return picked.reset_index(drop=True)


def study_draw(topics: pd.DataFrame, human: pd.DataFrame, *, topic_sample: int, topic_seed: int, triad_topics: int,
               importance_topics: int, importance_per_topic: int, assessed_per_topic: int, context_nuggets: int,
               nugget_seed: int, start_day: str, log_days: int, degraded_day: int) -> StudyDraw:
    """The one draw of :class:`StudyDraw` from the RAG25 ``topics`` and NIST nuggets ``human``: ``topic_sample``
    topics seeded by ``topic_seed`` fill the log (:func:`log_design`), the triad and importance topics extend them
    (:func:`nested_topic_ids`), and each topic's nuggets are sampled with ``nugget_seed`` (:func:`extend_assessed`)."""
    log = log_design(validity.sample_ids(topics.qid, topic_sample, topic_seed, key=int), start_day, log_days,
                     degraded_day)
    triad_qids = nested_topic_ids(topics.qid, log.topics, triad_topics, topic_seed)
    importance_qids = nested_topic_ids(topics.qid, triad_qids, importance_topics, topic_seed)
    first = assessed_nuggets(human, log.topics, assessed_per_topic, nugget_seed)
    return StudyDraw(log, triad_qids, importance_qids,  # importance_qids holds every topic, the triad's first
                     extend_assessed(human, first, importance_qids, assessed_per_topic, nugget_seed), context_nuggets,
                     importance_per_topic)
