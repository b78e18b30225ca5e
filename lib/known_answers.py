"""Known-answer checks for the nudge judge, where no human labels exist: distractors whose inferiority is known by
construction, added to each entry's pool for the judge only (never to the rankers' pools unless that is the
declared test), and how often the judge scores a real candidate above them.

Three kinds of distractor per entry, each worse than the entry's real candidates for a reason that holds by how it
is made:

* ``off_topic`` — a real candidate written for another entry, of another nudge category: about something else;
* ``value_mismatch`` — a nudge written for this entry's text but for the persona whose values are furthest from the
  entry's persona (:func:`contrasting_persona`): right topic, wrong person (:func:`value_mismatch_calls`). Chapter 01
  writes it for a nested prefix of its entries (``value_mismatch_entries``; none at the default size, because its
  construction could not be shown without the judge);
* ``value_contrast`` — a real candidate of the entry followed by a sentence that argues against the value its
  persona weights most (:func:`value_contrast_rewrite`): the same advice, set against this person's values. Unlike
  ``value_mismatch``, whose nudge may fit this persona as well as its own, it is worse for the person by how it is
  written (issue #35);
* ``tone`` — a real candidate of the entry with a dismissive opener (:func:`dismissive_rewrite`): the same advice,
  said in a way the ToneEmpathy criteria forbid.

Discrimination (:func:`discrimination`) is the per-entry probability that a real candidate outscores a distractor of
a kind (ties count one half: the Mann–Whitney AUC of real over distractor; Hanley & McNeil 1982), averaged over the
entries with a cluster-bootstrap interval over entries (:func:`lib.analysis.stats.unit_bootstrap`). 0.5 is a judge
that cannot tell them apart; a check a judge passes by construction (e.g. an embedding ranker against an off-topic
candidate it scores by similarity to the entry) says so in the chapter.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from lib import design, nudges, rankers
from lib.analysis.stats import unit_bootstrap
from lib.embeddings import DECIMALS, Embed
from lib.llm.gateway import LLMCall, LLMResult

DistractorKind = Literal["off_topic", "value_mismatch", "value_contrast", "tone"]
DISTRACTOR_KINDS: tuple[DistractorKind, ...] = ("off_topic", "value_mismatch", "value_contrast", "tone")
DISMISSIVE_OPENER = "Honestly, this is not a big deal and you are overreacting."

# A sentence against each of Schwartz's values (lib.design.SCHWARTZ_VALUES), each telling the reader to set that value
# aside: appended to a nudge for a persona who weights the value most, it makes the nudge argue against that person.
VALUE_DISMISSALS: dict[str, str] = {
    "self_direction": "Do not trust your own judgement here; just do what others expect of you.",
    "stimulation": "Avoid anything new or exciting; stick to your usual routine.",
    "hedonism": "Do not treat yourself; enjoying things is a waste of time.",
    "achievement": "Stop chasing success; being good at things does not matter.",
    "power": "Give up on status and influence; they are not worth having.",
    "security": "Forget about safety and stability; take the big risk and let things fall where they may.",
    "conformity": "Do not worry about upsetting people or breaking the rules.",
    "tradition": "Let go of the customs and beliefs you grew up with; they only hold you back.",
    "benevolence": "Stop putting the people close to you first; their wellbeing is not your job.",
    "universalism": "Stop worrying about other people and the wider world; look after yourself only.",
}

# The CulturalSensitivity known answer: the specification's negative indicators in one sentence (family support as an
# unnecessary expense, boundaries with family, an individual frame of success), appended to a real nudge.
CULTURAL_DISMISSAL = ("Sending money to family is an unnecessary expense; you need to set boundaries with them and "
                      "put your own success first.")


def contrasting_persona(persona_id: str) -> design.Persona:
    """The persona whose value weights are furthest from ``persona_id``'s: the lowest cosine between the two
    weight vectors over ``design.SCHWARTZ_VALUES`` (ties: the first in ``design.PERSONAS``)."""
    own = design.PERSONAS_BY_ID[persona_id]

    def vector(persona: design.Persona) -> np.ndarray:
        return np.array([persona.values.get(v, 0.0) for v in design.SCHWARTZ_VALUES])

    others = [p for p in design.PERSONAS if p.persona_id != persona_id]
    cosines = [float(vector(own) @ vector(p) / (np.linalg.norm(vector(own)) * np.linalg.norm(vector(p))))
               for p in others]
    return others[int(np.argmin(cosines))]


def value_mismatch_calls(sampled: pd.DataFrame) -> list[LLMCall]:
    """One generation call per sampled entry (columns entry_id, text, persona_id, category): one nudge for the
    entry's text and category, written for :func:`contrasting_persona` of its persona — the study's generation
    prompt (:func:`lib.nudges.generation_call`, n = 1), so it shares the candidates' cached system prefix."""
    return [nudges.generation_call(row.entry_id, row.text, contrasting_persona(row.persona_id), row.category, 1,
                                   kind="value-mismatch")
            for row in sampled.itertuples()]


def value_contrast_rewrite(nudge: str, persona: design.Persona) -> str:
    """The nudge followed by the :data:`VALUE_DISMISSALS` sentence of the value ``persona`` weights most."""
    return f"{nudge.strip()} {VALUE_DISMISSALS[persona.top_values(1)[0]]}"


def cultural_rewrite(nudge: str) -> str:
    """The nudge followed by :data:`CULTURAL_DISMISSAL`: the same advice, with the CulturalSensitivity
    specification's negative indicators added."""
    return f"{nudge.strip()} {CULTURAL_DISMISSAL}"


def dismissive_rewrite(nudge: str) -> str:
    """The nudge with :data:`DISMISSIVE_OPENER` before it: the same advice, dismissing the writer's feeling."""
    return f"{DISMISSIVE_OPENER} {nudge.strip()}"


def off_topic_distractors(candidates: pd.DataFrame, seed: int) -> pd.DataFrame:
    """One off-topic distractor per entry of ``candidates`` (columns entry_id, candidate_id, category,
    nudge_text): a real candidate of another entry of another category, drawn with a generator seeded by
    (``seed``, the entry's position in sorted entry order). The pool it is drawn from is every other entry's, so
    a larger sample can change an entry's distractor: the distractors belong to one run's sample. Columns
    entry_id, kind, source_candidate_id, nudge_text. An entry with no candidate of another category gets none."""
    rows = []
    for index, (entry_id, part) in enumerate(candidates.groupby("entry_id", sort=True)):
        pool = candidates[(candidates.entry_id != entry_id) & (~candidates.category.isin(part.category))]
        if pool.empty:
            continue
        chosen = pool.sort_values("candidate_id").iloc[np.random.default_rng([seed, index]).integers(len(pool))]
        rows.append({"entry_id": entry_id, "kind": "off_topic", "source_candidate_id": chosen.candidate_id,
                     "nudge_text": chosen.nudge_text})
    return pd.DataFrame(rows, columns=["entry_id", "kind", "source_candidate_id", "nudge_text"])


def first_candidates(candidates: pd.DataFrame) -> pd.DataFrame:
    """Each entry's first real candidate (lowest position), in entry order: the source of the rewritten kinds."""
    return candidates.sort_values(["entry_id", "position"]).groupby("entry_id", sort=True).head(1)


def tone_distractors(candidates: pd.DataFrame) -> pd.DataFrame:
    """One tone distractor per entry: its first real candidate (:func:`first_candidates`) rewritten by
    :func:`dismissive_rewrite`. Same columns as :func:`off_topic_distractors`."""
    first = first_candidates(candidates)
    return pd.DataFrame({"entry_id": first.entry_id, "kind": "tone", "source_candidate_id": first.candidate_id,
                         "nudge_text": [dismissive_rewrite(t) for t in first.nudge_text]}).reset_index(drop=True)


def value_contrast_distractors(candidates: pd.DataFrame) -> pd.DataFrame:
    """One value-contrast distractor per entry: its first real candidate rewritten by :func:`value_contrast_rewrite`
    for the candidate's persona (column persona_id). Same columns as :func:`off_topic_distractors`."""
    first = first_candidates(candidates)
    return pd.DataFrame({"entry_id": first.entry_id, "kind": "value_contrast",
                         "source_candidate_id": first.candidate_id,
                         "nudge_text": [value_contrast_rewrite(t, design.PERSONAS_BY_ID[p])
                                        for t, p in zip(first.nudge_text, first.persona_id, strict=True)]}
                        ).reset_index(drop=True)


def entry_auc(real: Sequence[float], distractors: Sequence[float]) -> float:
    """P(a real candidate's score > a distractor's) + ½ P(equal), over every (real, distractor) pair of one entry;
    NaN when either side is empty."""
    r, d = np.asarray(real, dtype=float), np.asarray(distractors, dtype=float)
    if not len(r) or not len(d):
        return float("nan")
    return float(((r[:, None] > d[None, :]) + 0.5 * (r[:, None] == d[None, :])).mean())


def discrimination(scores: pd.DataFrame, score: str, seed: int, n_resamples: int = 2000,
                   kinds: Sequence[DistractorKind] | None = None) -> pd.DataFrame:
    """Per distractor kind, how often ``score`` puts a real candidate above a distractor: the mean over entries
    of :func:`entry_auc`, with its 95% interval over entries. ``scores`` has columns entry_id, kind ("real" or
    a :data:`DistractorKind`) and ``score``; rows with a missing score (a failed call) are left out. ``kinds``: the
    kinds reported, each with a row (0 entries and no estimate for a kind not scored, such as one a run did not
    build); by default the kinds scored. Columns kind, entries, auc, ci_low, ci_high, ci_over."""
    kept = scores.dropna(subset=[score])
    rows = []
    for kind in [k for k in DISTRACTOR_KINDS if (k in kinds if kinds is not None else k in set(kept.kind))]:
        per_entry = []
        for entry_id, part in kept.groupby("entry_id", sort=True):
            auc = entry_auc(part.loc[part.kind == "real", score], part.loc[part.kind == kind, score])
            if np.isfinite(auc):
                per_entry.append((entry_id, auc))
        values = np.array([a for _, a in per_entry])
        interval = unit_bootstrap(np.mean, [values], [e for e, _ in per_entry], "entries", seed, n_resamples)
        rows.append({"kind": kind, "entries": interval.units, "auc": interval.value, "ci_low": interval.low,
                     "ci_high": interval.high, "ci_over": interval.ci_over})
    return pd.DataFrame(rows, columns=["kind", "entries", "auc", "ci_low", "ci_high", "ci_over"])


def sees(discrimination: pd.DataFrame) -> pd.Series:
    """Per row of a :func:`discrimination` table: its interval lies above 0.5 (real candidates come out above that
    kind of distractor more often than a coin would put them), False where there is no interval."""
    return discrimination.ci_low.gt(0.5).fillna(False).astype(bool)


DISTRACTOR_COLUMNS = ["entry_id", "distractor_id", "kind", "persona_id", "source_candidate_id", "nudge_text",
                      "position", "confidence"]


def distractors_table(sampled: pd.DataFrame, mismatch: Sequence[LLMResult], pools: pd.DataFrame, seed: int
                      ) -> pd.DataFrame:
    """Every entry's distractors (schema ``lib.tables.SCHEMAS['distractors']``): the value-mismatch nudge of each
    successful call in ``mismatch`` (row-aligned with the first ``len(mismatch)`` rows of ``sampled``, a nested
    prefix; a failed call gives no distractor), and the
    off-topic and tone distractors drawn from ``pools`` (the candidates later chapters judge, with position and
    confidence). ``persona_id`` is the persona a distractor was written for; ``position`` and ``confidence`` are
    its source candidate's (the value-mismatch nudge's own), so every ranker can score it."""
    rows = [{"entry_id": row.entry_id, "kind": "value_mismatch",
             "persona_id": contrasting_persona(row.persona_id).persona_id, "source_candidate_id": None,
             "nudge_text": result.value.candidates[0].nudge_text.strip(), "position": 0,
             "confidence": result.value.candidates[0].confidence}
            for row, result in zip(sampled.head(len(mismatch)).itertuples(), mismatch, strict=True) if result.ok]
    source = pools.set_index("candidate_id")
    for drawn in (off_topic_distractors(pools, seed), value_contrast_distractors(pools), tone_distractors(pools)):
        rows += [{**d, "persona_id": source.at[d["source_candidate_id"], "persona_id"],
                  "position": int(source.at[d["source_candidate_id"], "position"]),
                  "confidence": source.at[d["source_candidate_id"], "confidence"]}
                 for d in drawn.to_dict("records")]
    table = pd.DataFrame(rows, columns=[c for c in DISTRACTOR_COLUMNS if c != "distractor_id"])
    order = {entry_id: i for i, entry_id in enumerate(sampled.entry_id)}
    table = table.assign(_entry=table.entry_id.map(order), _kind=table.kind.map(DISTRACTOR_KINDS.index))
    table = table.sort_values(["_entry", "_kind"]).drop(columns=["_entry", "_kind"]).reset_index(drop=True)
    table.insert(1, "distractor_id", table.entry_id + "/" + table.kind)
    return table


# The rankers' known-answer checks that hold, or fail, by how ranker and distractor are built: read them as checks
# of the construction, not as evidence about the ranker. The value-aware ranker against the value-mismatch
# distractor is not one of them: whether its value component, cos(persona values, nudge), prefers the nudge written
# for the entry's values is its manipulation check, an empirical question about that system (at commit cd3530b it
# did not: AUC 0.455, its value component alone 0.478).
BY_CONSTRUCTION: dict[tuple[str, str], str] = {
    **{("random", kind): "a random score: 0.5 expected" for kind in DISTRACTOR_KINDS},
    ("embedding", "off_topic"): "scores similarity to the entry; the distractor was written for another entry",
    ("value_aware", "off_topic"): "half its score is similarity to the entry; the distractor was written for another "
                                  "entry",
    ("generator_order", "value_mismatch"): "the distractor is its call's only candidate, at position 0: it ties the "
                                           "first real candidate and outranks the rest",
    **{(ranker, kind): f"the distractor carries its source's {what}: it ties that candidate"
       for ranker, what in (("generator_order", "position"), ("self_confidence", "confidence"))
       for kind in ("value_contrast", "tone")},
}

VALUE_COMPONENT = "value_component"  # the ranker name of the value-aware ranker's value component in score tables


def ranker_scores(pools: Sequence[rankers.Pool], distractors: pd.DataFrame,
                  ranker_runs: Sequence[tuple[rankers.Ranker, int]], embed: Embed) -> pd.DataFrame:
    """Every ranker's score of each pool's real candidates and of its entry's distractors, scored together as one
    extended pool but never ranked (schema ``lib.tables.SCHEMAS['known_answer_scores']``). Each ranker scores a
    candidate from the candidate alone (with its entry and persona), so the distractors do not change the real
    candidates' scores, except the random ranker's draws.

    The distractors of all pools are embedded in one call and grouped by entry once: a batch moves a vector in its
    last bits only (padding changes the matrix shapes), far below the rounding of every cosine
    (:func:`lib.embeddings.similarity`), so the scores are the same bytes as with one call per pool."""
    columns = ["ranker", "run", "entry_id", "item_id", "kind", "score"]
    if not pools or not ranker_runs:
        return pd.DataFrame(columns=columns)
    scored_distractors = distractors[distractors.entry_id.isin({pool.entry_id for pool in pools})]
    scored_distractors = scored_distractors.rename(columns={"distractor_id": "candidate_id"}).reset_index(drop=True)
    vectors = embed(scored_distractors.nudge_text.tolist()) if len(scored_distractors) else np.zeros((0, 0))
    by_entry = scored_distractors.groupby("entry_id", sort=False).indices
    names = np.array([ranker.name for ranker, _ in ranker_runs], dtype=object)
    runs = np.array([run for _, run in ranker_runs], dtype=np.int64)
    frames = []
    for pool in pools:
        rows = by_entry.get(pool.entry_id, np.zeros(0, dtype=int))
        extended = pd.concat([pool.candidates.assign(kind="real"), scored_distractors.iloc[rows]], ignore_index=True)
        scored = rankers.Pool(pool.entry_id, pool.entry_vector, pool.category, pool.persona, extended,
                              np.vstack([pool.vectors, vectors[rows]]) if len(rows) else pool.vectors)
        items = len(extended)
        frames.append(pd.DataFrame({
            "ranker": np.repeat(names, items), "run": np.repeat(runs, items), "entry_id": pool.entry_id,
            "item_id": np.tile(extended.candidate_id.to_numpy(dtype=object), len(ranker_runs)),
            "kind": np.tile(extended.kind.to_numpy(dtype=object), len(ranker_runs)),
            "score": np.concatenate([np.asarray(ranker.scores(scored), dtype=float) for ranker, _ in ranker_runs])}))
    return pd.concat(frames, ignore_index=True)


def with_value_component(scores: pd.DataFrame, alpha: float, system: str = "value_aware",
                         similarity: str = "embedding") -> pd.DataFrame:
    """``scores`` (:func:`ranker_scores`) with the rows of the value-aware ranker's value component alone, ranker
    :data:`VALUE_COMPONENT`, recovered without embedding anything again: the system scores
    s = (1 − α)·cos(entry, c) + α·cos(persona values, c) (:class:`lib.rankers.ValueAwareRanker`) and the
    ``similarity`` ranker scores cos(entry, c), so cos(persona values, c) = (s − (1 − α)·cos(entry, c)) / α,
    rounded back to the cosines' ``lib.embeddings.DECIMALS``. Both cosines are rounded to that grid before they
    are mixed, so a recovered value off the grid means ``alpha`` is not the system's mixing weight: an error."""
    if not 0 < alpha <= 1:
        raise ValueError(f"the mixing weight must lie in (0, 1], got {alpha}")
    keys = ["entry_id", "item_id"]
    both = scores[scores.ranker == system].merge(scores[scores.ranker == similarity][[*keys, "score"]], on=keys,
                                                 suffixes=("", "_similarity"), validate="one_to_one")
    recovered = (both.score - (1 - alpha) * both.score_similarity) / alpha
    on_grid = recovered.round(DECIMALS)
    if len(both) and float((recovered - on_grid).abs().max()) > 1e-9:
        raise ValueError(f"{system}'s scores are not (1 − {alpha})·{similarity} + {alpha}·a rounded cosine: is "
                         f"{alpha} the mixing weight chapter 02 used?")
    component = both.drop(columns="score_similarity").assign(ranker=VALUE_COMPONENT, score=on_grid)
    return pd.concat([scores, component[scores.columns]], ignore_index=True)


def ranker_discrimination(scores: pd.DataFrame, seed: int, n_resamples: int = 2000,
                          kinds: Sequence[DistractorKind] | None = None) -> pd.DataFrame:
    """:func:`discrimination` of each ranker in ``scores`` (:func:`ranker_scores`; a ranker's runs pooled per
    entry) over ``kinds``, rankers in ``lib.rankers.RANKER_ORDER``, then any other (such as
    :data:`VALUE_COMPONENT`) in the order they appear. Columns ranker, then :func:`discrimination`'s."""
    present = [r for r in rankers.RANKER_ORDER if r in set(scores.ranker)]
    present += [r for r in dict.fromkeys(scores.ranker) if r not in present]
    return pd.concat([discrimination(scores[scores.ranker == r], "score", seed, n_resamples, kinds).assign(ranker=r)
                      for r in present], ignore_index=True)[["ranker", "kind", "entries", "auc", "ci_low", "ci_high",
                                                             "ci_over"]]
