"""Known-answer checks for the nudge judge, where no human labels exist: distractors whose inferiority is known by
construction, added to each entry's pool for the judge only (never to the rankers' pools unless that is the
declared test), and how often the judge scores a real candidate above them.

Three kinds of distractor per entry, each worse than the entry's real candidates for a reason that holds by how it
is made:

* ``off_topic`` — a real candidate written for another entry, of another nudge category: about something else;
* ``value_mismatch`` — a nudge written for this entry's text but for the persona whose values are furthest from the
  entry's persona (:func:`contrasting_persona`): right topic, wrong person (the generation call is the caller's,
  :func:`value_mismatch_messages` builds it);
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

from lib import design, nudges
from lib.analysis.stats import unit_bootstrap

DistractorKind = Literal["off_topic", "value_mismatch", "tone"]
DISTRACTOR_KINDS: tuple[DistractorKind, ...] = ("off_topic", "value_mismatch", "tone")
DISMISSIVE_OPENER = "Honestly, this is not a big deal and you are overreacting."


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


def value_mismatch_messages(entry_text: str, persona_id: str, category: str) -> list[dict[str, str]]:
    """The generation messages of the value-mismatch distractor: one nudge for ``entry_text`` and its category,
    written for :func:`contrasting_persona` of the entry's persona (the study's generation prompt, n = 1)."""
    return nudges.build_messages(entry_text, contrasting_persona(persona_id), category, 1)


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


def tone_distractors(candidates: pd.DataFrame) -> pd.DataFrame:
    """One tone distractor per entry: its first real candidate (lowest position) rewritten by
    :func:`dismissive_rewrite`. Same columns as :func:`off_topic_distractors`."""
    first = candidates.sort_values(["entry_id", "position"]).groupby("entry_id", sort=True).head(1)
    return pd.DataFrame({"entry_id": first.entry_id, "kind": "tone", "source_candidate_id": first.candidate_id,
                         "nudge_text": [dismissive_rewrite(t) for t in first.nudge_text]}).reset_index(drop=True)


def entry_auc(real: Sequence[float], distractors: Sequence[float]) -> float:
    """P(a real candidate's score > a distractor's) + ½ P(equal), over every (real, distractor) pair of one entry;
    NaN when either side is empty."""
    r, d = np.asarray(real, dtype=float), np.asarray(distractors, dtype=float)
    if not len(r) or not len(d):
        return float("nan")
    return float(((r[:, None] > d[None, :]) + 0.5 * (r[:, None] == d[None, :])).mean())


def discrimination(scores: pd.DataFrame, score: str, seed: int, n_resamples: int = 2000) -> pd.DataFrame:
    """Per distractor kind, how often ``score`` puts a real candidate above a distractor: the mean over entries
    of :func:`entry_auc`, with its 95% interval over entries. ``scores`` has columns entry_id, kind ("real" or
    a :data:`DistractorKind`) and ``score``; rows with a missing score (a failed call) are left out. Columns kind,
    entries, auc, ci_low, ci_high, ci_over."""
    kept = scores.dropna(subset=[score])
    rows = []
    for kind in [k for k in DISTRACTOR_KINDS if k in set(kept.kind)]:
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
