"""The RAG triad and the nuggetized RAG triad (``shared/specs/002_nuggetized_feedback.md``), and the known-answer
design chapter 05 decides them on.

*Traditional triad* (TruLens; Datta et al., "RAG triad"): **groundedness** — are the answer's statements stated in the
context — and **answer relevance** — does the answer help answer the query — each graded 0–3 by the judge in one call
(:func:`traditional`), read as E[g] = Σ p(g)·g from the grade tokens' logprobs and scaled to 0–1 (E[g] / 3).
*Nuggetized triad* (the specification's four steps): (1) nuggets are created from the answer
(:func:`lib.nuggets.create_nuggets`, one pass); (2) each is labelled vital or okay for the query; (3) each is scored on
its own for groundedness (does the context state it: support 1, partial 0.5, not 0, :func:`lib.nuggets.assign` with
the context as the text) and for relevance (relevant 1, partly 0.5, not 0, :func:`lib.nuggets.label_relevance`);
(4) the answer's score on each is the importance-weighted mean over its nuggets,
Σ_i w_i·v_i / Σ_i w_i with w = 1 for vital and :data:`OKAY_WEIGHT` for okay (:func:`weighted_score`).
Context relevance, the triad's third part, is the same for every answer to a query: the answer defects below cannot
move it, so chapter 05 does not test it.

Known answers (:func:`defective_answers`): each topic's clean answer, written from its notes, and two copies with
:data:`INJECTED` sentences appended — **unsupported**: the topic's own held-out NIST nuggets (facts about the
query that are not in the notes); **irrelevant**: held-out nuggets of another topic (facts about something else).
Both are worse by construction: an answer with unsupported sentences is less grounded, one with another topic's
facts less relevant (and less grounded); :func:`construction_scores` shows each with MiniLM before any judge.
The defective answers' nuggets are the clean answer's nuggets plus the injected sentences, each one nugget by how it
is made (a NIST nugget is one fact): creation runs once per topic on the clean answer, and every nugget of a topic is
labelled in one list, as nuggetizer labels a query's nugget pool.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from lib import nuggets
from lib.embeddings import Embed, similarity
from lib.judges.logprobs import weighted_fields
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

Defect = Literal["unsupported", "irrelevant"]
DEFECTS: tuple[Defect, ...] = ("unsupported", "irrelevant")
VARIANTS = ("clean", *DEFECTS)
INJECTED = 2  # sentences appended to make a defective answer (declared before the run, issue #35)
COMPONENTS = ("groundedness", "relevance")
TRIADS = ("traditional", "nuggetized")
# The component each defect is built to lower (the declared known answers); irrelevant facts are also not in the
# context, so groundedness may drop with them too: read, not tested.
DECLARED = {"unsupported": "groundedness", "irrelevant": "relevance"}
GRADES = [0, 1, 2, 3]
OKAY_WEIGHT = 0.5  # an okay nugget counts half a vital one in the combination
RELEVANCE_LABELS = ("relevant", "partly_relevant", "not_relevant")
RELEVANCE_VALUE = {"relevant": 1.0, "partly_relevant": 0.5, "not_relevant": 0.0}
MAX_NUGGETS = 8  # nuggets created from one answer of at most ~220 tokens


class TriadGrades(BaseModel):
    groundedness: Literal[0, 1, 2, 3]
    relevance: Literal[0, 1, 2, 3]


def as_sentence(text: str) -> str:
    """A nugget written as a sentence: first letter upper case, a full stop at the end."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def defective_answers(clean: pd.DataFrame, assessed: pd.DataFrame, n_context: int, n_injected: int = INJECTED
                      ) -> pd.DataFrame:
    """Each topic's clean answer (``clean``: qid, query, answer) and its two defective copies: columns qid, query,
    variant (:data:`VARIANTS`), answer, injected (the appended sentences). ``assessed``: the topics' sampled NIST
    nuggets with ``order`` (:func:`lib.rag.assessed_nuggets`); those at order ≥ ``n_context`` were not in the notes.
    Unsupported: the topic's first ``n_injected`` held-out nuggets; irrelevant: those of the next topic in ``clean``'s
    order (the last takes the first's). A topic whose clean answer failed, or with too few held-out nuggets, is left
    out."""
    held = {q: [as_sentence(n) for n in part.sort_values("order").nugget[part.order >= n_context].head(n_injected)]
            for q, part in assessed.groupby("qid")}
    kept = clean[clean.answer.notna() & clean.qid.map(lambda q: len(held.get(q, [])) == n_injected)]
    qids = kept.qid.tolist()
    rows = []
    for i, row in enumerate(kept.itertuples()):
        other = qids[(i + 1) % len(qids)]
        for variant, injected in (("clean", []), ("unsupported", held[row.qid]), ("irrelevant", held[other])):
            rows.append({"qid": row.qid, "query": row.query, "variant": variant,
                         "answer": " ".join([row.answer.strip(), *injected]), "injected": list(injected)})
    return pd.DataFrame(rows, columns=["qid", "query", "variant", "answer", "injected"])


def construction_scores(answers: pd.DataFrame, notes: dict[str, list[str]], embed: Embed) -> pd.DataFrame:
    """The defects shown without a judge, one row per sentence of each clean answer (kind "real") and per injected
    sentence (kind = its defect): ``cos_query`` (MiniLM cosine to the query) and ``cos_notes`` (the highest cosine to
    one of the topic's notes). An injected irrelevant sentence should be further from the query, an unsupported one
    further from every note, than the answer's own sentences. Columns entry_id (the topic), kind, cos_query,
    cos_notes."""
    rows = []
    for qid, part in answers.groupby("qid", sort=False):
        clean = part[part.variant == "clean"].iloc[0]
        items = [("real", s) for s in nuggets.sentences(clean.answer)]
        items += [(row.variant, s) for row in part[part.variant != "clean"].itertuples() for s in row.injected]
        texts = [t for _, t in items]
        vectors = embed(texts)
        cos_query = similarity(vectors, embed([clean.query]))[:, 0]
        cos_notes = similarity(vectors, embed(notes[qid])).max(axis=1)
        rows += [{"entry_id": qid, "kind": kind, "cos_query": float(q), "cos_notes": float(n)}
                 for (kind, _), q, n in zip(items, cos_query, cos_notes, strict=True)]
    return pd.DataFrame(rows, columns=["entry_id", "kind", "cos_query", "cos_notes"])


def triad_messages(query: str, context: Sequence[str], answer: str) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("rag_triad", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=query, context=nuggets.numbered(context)) + "\n"
             + tail.format(answer=answer)}]


def traditional(gateway: Gateway, answers: pd.DataFrame, notes: dict[str, list[str]]) -> pd.DataFrame:
    """The traditional triad's groundedness and answer relevance of each answer (``answers``: qid, query, variant,
    answer), one call each, the calls of a topic one after the other so they share its prefix: long rows (qid,
    variant, triad, component, score on 0–1, scored_by, failure_kind); a failed call gives NaN scores."""
    calls = [LLMCall(triad_messages(r.query, notes[r.qid], r.answer), TriadGrades,
                     call_label=f"triad:{r.qid}:{r.variant}", max_tokens=24, top_logprobs=5)
             for r in answers.itertuples()]
    rows = []
    for r, result in zip(answers.itertuples(), gateway.complete_many(calls, desc="traditional triad"), strict=True):
        if result.ok:
            grades, scored_by = weighted_fields(result.value, result.logprobs, COMPONENTS, GRADES)
        else:
            grades, scored_by = dict.fromkeys(COMPONENTS, float("nan")), None
        rows += [{"qid": r.qid, "variant": r.variant, "triad": "traditional", "component": c,
                  "score": grades[c] / GRADES[-1], "scored_by": scored_by, "failure_kind": result.failure_kind}
                 for c in COMPONENTS]
    return pd.DataFrame(rows)


def nugget_labels(gateway: Gateway, answers: pd.DataFrame, notes: dict[str, list[str]], embed: Embed,
                  max_nuggets: int = MAX_NUGGETS) -> pd.DataFrame:
    """Steps 1–3 of the nuggetized triad for every topic of ``answers`` (:func:`defective_answers`): nuggets created
    from the clean answer, the injected sentences of each defect as nuggets of their own, and every nugget of the
    topic labelled in one list for importance, groundedness against the notes and relevance to the query. Columns
    qid, nugget, origin ("answer" or a defect), importance, support, relevance (None: the label's call failed)."""
    rows = []
    for qid, part in answers.groupby("qid", sort=False):
        clean = part[part.variant == "clean"].iloc[0]
        label = f"triad:{qid}"
        created = nuggets.create_nuggets(gateway, clean.query, [clean.answer], max_nuggets=max_nuggets, max_passes=1,
                                         embed=embed, call_label=label)
        pool = [("answer", n) for n in created.nuggets]
        pool += [(row.variant, s) for row in part[part.variant != "clean"].itertuples() for s in row.injected]
        texts = [t for _, t in pool]
        window = max(len(texts), 1)
        importance = nuggets.label_importance(gateway, clean.query, texts, window=window, call_label=label).labels
        support, _ = nuggets.assign(gateway, clean.query, "\n".join(notes[qid]), texts, window=window,
                                    call_label=label)
        relevance, _ = nuggets.label_relevance(gateway, clean.query, texts, window=window, call_label=label)
        rows += [{"qid": qid, "nugget": t, "origin": o, "importance": i, "support": s, "relevance": r}
                 for (o, t), i, s, r in zip(pool, importance, support, relevance, strict=True)]
    return pd.DataFrame(rows, columns=["qid", "nugget", "origin", "importance", "support", "relevance"])


def creation_recall(labels: pd.DataFrame, answers: pd.DataFrame, notes: dict[str, list[str]], embed: Embed,
                    threshold: float) -> pd.DataFrame:
    """Step 1 on its own: the share of each topic's notes that some nugget created from its clean answer states
    (MiniLM cosine ≥ ``threshold``, the chapter's embedding match), beside the share the query alone reaches (a
    creator that only restated the query). Columns qid, created, notes, recall_created, recall_query."""
    rows = []
    for qid, part in answers[answers.variant == "clean"].groupby("qid", sort=False):
        created = labels[(labels.qid == qid) & (labels.origin == "answer")].nugget.tolist()
        note_vectors = embed(notes[qid])
        query_hits = similarity(embed([part["query"].iloc[0]]), note_vectors)[0] >= threshold
        hits = (similarity(embed(created), note_vectors) >= threshold).any(axis=0) if created else query_hits & False
        rows.append({"qid": qid, "created": len(created), "notes": len(notes[qid]),
                     "recall_created": float(hits.mean()), "recall_query": float(query_hits.mean())})
    return pd.DataFrame(rows, columns=["qid", "created", "notes", "recall_created", "recall_query"])


def weighted_score(importance: Sequence[str | None], values: Sequence[float | None]) -> float:
    """Σ_i w_i·v_i / Σ_i w_i over the nuggets with both labels (w: 1 vital, :data:`OKAY_WEIGHT` okay); NaN when
    none has both."""
    pairs = [(1.0 if i == "vital" else OKAY_WEIGHT, v) for i, v in zip(importance, values, strict=True)
             if i is not None and v is not None and not np.isnan(v)]
    if not pairs:
        return float("nan")
    weights, scores = np.array(pairs).T
    return float(weights @ scores / weights.sum())


def nuggetized(labels: pd.DataFrame) -> pd.DataFrame:
    """Step 4 of the nuggetized triad: each variant's groundedness and relevance, the importance-weighted mean over
    its nuggets (the clean answer's, plus the variant's injected ones), in :func:`traditional`'s long shape."""
    values = labels.assign(groundedness=labels.support.map(nuggets.SUPPORT_VALUE),
                           relevance_value=labels.relevance.map(RELEVANCE_VALUE))
    rows = []
    for qid, part in values.groupby("qid", sort=False):
        for variant in VARIANTS:
            own = part[part.origin.isin(["answer", variant])]
            for component, column in (("groundedness", "groundedness"), ("relevance", "relevance_value")):
                rows.append({"qid": qid, "variant": variant, "triad": "nuggetized", "component": component,
                             "score": weighted_score(own.importance.tolist(), own[column].tolist()),
                             "scored_by": "labels", "failure_kind": None})
    return pd.DataFrame(rows)


def drops(scores: pd.DataFrame) -> pd.DataFrame:
    """Per topic, triad, component and defect: the clean answer's score minus the defective one's (0–1 scale).
    Columns qid, triad, component, defect, clean, defective, drop; topics with a missing score are left out."""
    wide = scores.pivot_table(index=["qid", "triad", "component"], columns="variant", values="score",
                              aggfunc="first", dropna=False)
    rows = [{"qid": q, "triad": t, "component": c, "defect": d, "clean": row["clean"], "defective": row[d],
             "drop": row["clean"] - row[d]}
            for (q, t, c), row in wide.iterrows() for d in DEFECTS]
    return pd.DataFrame(rows).dropna(subset=["drop"]).reset_index(drop=True)
