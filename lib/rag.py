"""RAG answers for chapter 05: TREC RAG 2025 dev topics answered by the LLM with and without a short context.

There is no retrieval corpus in this study's data, so the context is built from the topic's own NIST nuggets:
:func:`assessed_nuggets` draws a seeded sample of a topic's nuggets, and :func:`context_notes` takes the first
``n_context`` of them as the notes shown to the generator — an *oracle* context whose facts are known. The
other sampled nuggets are held out, so an evaluation can compare the support of shown and held-out nuggets
in the same answer (the shown ones should be supported more often by the answer that saw them).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

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
