"""Chapter 01 (nudge candidate generation): its bookkeeping sentence, and the check that each kind of known-answer
distractor is worse by construction, shown by a rule or an embedding before chapter 03 asks the judge (the study's
rule: a known answer must be worse by construction, and that must be visible without the judge).

The verdicts (:meth:`Findings.verdicts`), one per distractor kind, key ``01.construction.<kind>``; the system is
the distractor's construction, the estimate the AUC over entries of the real candidates over the distractor on a
score that needs no LLM (:data:`CONSTRUCTION_SCORES`), against chance 0.5 ± the declared margin:

* ``off_topic`` — MiniLM cosine to the entry: the nudge was written for another entry, so it should be further
  from this one than the entry's own candidates (not guaranteed: another entry can be about the same thing);
* ``value_mismatch`` — the *value lean*: cosine to the entry persona's description minus cosine to the contrasting
  persona's (the one the distractor was written for; ``lib.known_answers.contrasting_persona``). A real candidate
  should lean towards its own persona more than the distractor does. If it does not, the embedding cannot show
  that the distractor was written for someone else, and the known answer itself is in doubt. On 40 entries it did
  not (:data:`BEFORE_THE_CUTS`), so the default size writes none (``value_mismatch_entries``: 0) and the row is
  undetermined with no entry;
* ``value_contrast`` — a rule: the text carries the sentence against the entry persona's most weighted value
  (:data:`lib.known_answers.VALUE_DISMISSALS`), so it flags the distractor by how it is built (``by_construction``)
  and shows that no real candidate argues against that value in those words;
* ``tone`` — a rule (:data:`DISMISSIVE_PHRASES`): the distractor opens with a dismissive sentence, so the rule
  flags it by how it is built (``by_construction``); it also shows that no real candidate says the same.

None is confirmatory: the checks were declared in issue #33 (value_contrast in #35), after the other distractors and
the judge's labels existed.

The chapter also writes chapter 05's RAG25 inputs: the answers, and the judge's importance labels of NIST's nuggets
(:func:`nugget_importance`). Neither has a verdict here; chapter 05 decides what they can see.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lib import design, known_answers, nudges, verdicts
from lib import nuggets as nug
from lib.embeddings import Embed, similarity
from lib.llm.gateway import Gateway
from lib.verdicts import Claim, Verdict

# A rule for a dismissive reply (it flags lib.known_answers.DISMISSIVE_OPENER by how that opener is written).
DISMISSIVE_PHRASES = ("not a big deal", "overreacting", "get over it", "calm down")
_DISMISSIVE = re.compile("|".join(re.escape(p) for p in DISMISSIVE_PHRASES), re.IGNORECASE)

# The score each kind's construction check reads (a column of construction_scores), and what it shows.
CONSTRUCTION_SCORES = {"off_topic": "cos_entry", "value_mismatch": "value_lean",
                       "value_contrast": "not_against_values", "tone": "not_dismissive"}
RULE_KINDS = ("value_contrast", "tone")  # kinds whose declared score is a rule that flags them by construction
CONSTRUCTS = {
    "off_topic": "is about something else than the entry: the real candidates' MiniLM cosine to the entry is higher",
    "value_mismatch": "is written for the other persona: the real candidates lean more towards the entry's persona "
                      "(MiniLM cosine to its description minus to the contrasting persona's)",
    "value_contrast": "argues against the value the entry's persona weights most: a rule flags that sentence and "
                      "not the real candidates",
    "tone": "dismisses the writer's feeling: a dismissive-phrase rule flags it and not the real candidates",
}
_STATISTIC = {"cos_entry": "AUC (real over distractor, cos to entry)",
              "value_lean": "AUC (real over distractor, value lean)",
              "not_against_values": "AUC (real over distractor, rule: not against the top value)",
              "not_dismissive": "AUC (real over distractor, rule: not dismissive)"}

# Chapter 01 stated no verdict at commit cd3530b (outputs/notebooks/01_nudge_candidates.ipynb there).
EARLIER: dict[str, str] = {}

# What commit 5e38d9d (the last run that wrote value-mismatch nudges, for 40 entries, before issue #35's budget cut
# them: a known answer not shown worse by construction is not put to the judge) decided of their construction.
BEFORE_THE_CUTS: dict[str, str] = {
    "01.construction.value_mismatch": "undetermined",  # value lean AUC 0.593 (0.463 to 0.714), 40 entries
}


def bookkeeping(tables: Mapping[str, pd.DataFrame]) -> str:
    """How many candidates there are and how often generation gave a schema-valid answer (tables ``entries``,
    ``candidates``): the front page's line for a chapter without a primary verdict."""
    entries, candidates = tables["entries"], tables["candidates"]
    valid = int(entries["generation_ok"].sum())
    return (f"{len(candidates)} candidate nudges for {len(entries)} journal entries: {valid} of {len(entries)} "
            f"generation calls ({valid / len(entries):.0%}) returned a schema-valid answer, and "
            f"{int(candidates['near_duplicate'].sum())} candidates are near-duplicates of an earlier one.")


def dismissive(text: str) -> bool:
    """The rule: the text contains one of :data:`DISMISSIVE_PHRASES` (case-insensitive)."""
    return bool(_DISMISSIVE.search(text))


def against_values(text: str, persona_id: str) -> bool:
    """The rule: the text carries the :data:`lib.known_answers.VALUE_DISMISSALS` sentence of the value the persona
    weights most."""
    top = design.PERSONAS_BY_ID[persona_id].top_values(1)[0]
    return known_answers.VALUE_DISMISSALS[top] in text


def construction_scores(entries: pd.DataFrame, pools: pd.DataFrame, distractors: pd.DataFrame, embed: Embed
                        ) -> pd.DataFrame:
    """One row per item chapter 03 judges — each entry's pooled real candidates (kind "real") and its distractors —
    with the scores that show a distractor worse without the judge: ``cos_entry`` (MiniLM cosine to the entry
    text), ``cos_persona`` / ``cos_contrasting`` (to the description of the entry's persona / of its contrasting
    persona, :func:`lib.nudges.persona_similarities`), ``value_lean`` = cos_persona − cos_contrasting, and
    ``not_against_values`` (1 unless :func:`against_values` flags the text for the entry's persona) and
    ``not_dismissive`` (1 unless :func:`dismissive` flags the text). ``entries``: entry_id, text, persona_id."""
    real = pools.assign(kind="real", item_id=pools.candidate_id)
    fake = distractors[distractors.entry_id.isin(pools.entry_id)].assign(item_id=lambda d: d.distractor_id)
    items = pd.concat([real, fake], ignore_index=True)[["entry_id", "item_id", "kind", "nudge_text"]]
    by_entry = entries.set_index("entry_id").loc[list(dict.fromkeys(items.entry_id))]
    texts = items.nudge_text.tolist()
    rows = np.arange(len(items))
    cosines = similarity(embed(texts), embed(by_entry.text.tolist()))
    cos_entry = cosines[rows, by_entry.index.get_indexer(items.entry_id)]
    personas = nudges.persona_similarities(texts, embed)
    own = by_entry.persona_id.reindex(items.entry_id).to_numpy()
    contrasting = [known_answers.contrasting_persona(p).persona_id for p in own]
    cos_persona = personas.to_numpy()[rows, personas.columns.get_indexer(own)]
    cos_contrasting = personas.to_numpy()[rows, personas.columns.get_indexer(contrasting)]
    return items.assign(cos_entry=cos_entry, cos_persona=cos_persona, cos_contrasting=cos_contrasting,
                        value_lean=cos_persona - cos_contrasting,
                        not_against_values=[0.0 if against_values(t, p) else 1.0
                                            for t, p in zip(texts, own, strict=True)],
                        not_dismissive=[0.0 if dismissive(t) else 1.0 for t in texts]).drop(columns="nudge_text")


def construction_table(scores: pd.DataFrame, seed: int, n_resamples: int) -> pd.DataFrame:
    """:func:`lib.known_answers.discrimination` of every score of :func:`construction_scores` for every kind:
    how often a real candidate comes out above the distractor on it (a row per score and kind, every kind of
    :data:`lib.known_answers.DISTRACTOR_KINDS`, with 0 entries where a run wrote none; over entries). The score each
    kind's verdict reads is marked ``declared``."""
    columns = ["cos_entry", "cos_persona", "cos_contrasting", "value_lean", "not_against_values", "not_dismissive"]
    table = pd.concat([known_answers.discrimination(scores, c, seed, n_resamples, known_answers.DISTRACTOR_KINDS)
                       .assign(score=c) for c in columns], ignore_index=True)
    table["declared"] = [CONSTRUCTION_SCORES[k] == s for k, s in zip(table.kind, table.score, strict=True)]
    return table[["score", "kind", "declared", "entries", "auc", "ci_low", "ci_high", "ci_over"]]


@dataclass(frozen=True)
class Findings:
    """What chapter 01 concludes about its distractors: one verdict per kind (``construction``), with the table of
    every score × kind it was read from (``table``, :func:`construction_table`)."""

    construction: tuple[Verdict, ...]
    table: pd.DataFrame

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict the chapter states."""
        return self.construction


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Chapter 01's findings from ``construction_scores`` (:func:`construction_scores`) and its parameters
    ``known_answer_margin``, ``seed``, ``bootstrap_resamples``: per distractor kind, the AUC of the real candidates
    over the distractor on the kind's declared score (:data:`CONSTRUCTION_SCORES`), intervals over entries."""
    table = construction_table(tables["construction_scores"], int(params["seed"]),
                               int(params["bootstrap_resamples"]))
    claim = Claim("known answer", 0.5, "higher", float(params["known_answer_margin"]))
    declared = table[table.declared].set_index("kind")
    out = [verdicts.verdict("01", f"construction.{kind}", f"{kind.replace('_', '-')} distractor (construction)",
                            CONSTRUCTS[kind], claim, _STATISTIC[CONSTRUCTION_SCORES[kind]], row.auc, row.ci_low,
                            row.ci_high, "entries", int(row.entries),
                            "distractors, candidates (ch01.construction_scores)", by_construction=kind in RULE_KINDS)
           for kind, row in declared.iterrows()]
    return Findings(construction=tuple(out), table=table)


# What a verdict on a distractor's construction means for chapter 03's known answer of that kind.
_MEANING = {
    "sees": "shown worse without the judge: a judge that cannot tell it apart misses a difference that is there",
    "blind": "not separable without the judge: the known answer of this kind is itself in doubt",
    "undetermined": "not shown worse without the judge: the known answer of this kind is itself in doubt",
    "fails": "the rule or embedding puts it above the real candidates: the known answer of this kind is in doubt",
}


def construction_text(f: Findings, kinds: Sequence[str] = known_answers.DISTRACTOR_KINDS) -> str:
    """One line per kind: the verdict on its construction and what it means for the judge's known answer (a kind
    with no entry was not written in this run)."""
    by_kind = {v.key.rsplit(".", 1)[1]: v for v in f.construction}
    return "\n".join(f"* {verdicts.sentence(by_kind[k])} The {k.replace('_', '-')} distractor is "
                     f"{_MEANING[by_kind[k].verdict] if by_kind[k].units else 'not written in this run'}."
                     for k in kinds if k in by_kind)


def nugget_importance(judge: Gateway, nuggets: pd.DataFrame, narrative: Mapping[str, str]) -> pd.DataFrame:
    """Chapter 05's importance set (:meth:`lib.rag.StudyDraw.importance_nuggets`) labelled by the judge, one call a
    topic, all topics' calls sent together (:func:`lib.nuggets.label_importance_many`). Columns qid, nugget, ``nist``
    (1: NIST calls it vital), ``argmax`` (1: the judge wrote vital; missing for a failed call) and ``p_vital`` (read
    from the same answer's logprobs; missing where it could not be read)."""
    topics = list(nuggets.groupby("qid", sort=False))
    found = nug.label_importance_many(judge, [(narrative[q], topic.nugget.tolist(), f"rag25-importance:{q}")
                                             for q, topic in topics])
    rows = [{"qid": q, "nugget": n, "nist": int(i == "vital"), "argmax": None if w is None else int(w == "vital"),
             "p_vital": p}
            for (q, topic), labelled in zip(topics, found, strict=True)
            for n, i, w, p in zip(topic.nugget, topic.importance, labelled.labels, labelled.probability("vital"),
                                  strict=True)]
    return pd.DataFrame(rows).astype({"argmax": "Int64", "p_vital": float})
