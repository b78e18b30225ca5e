"""Chapter 03 (judge labeling): the loops that build its tables, its findings record (every verdict the chapter
states, decided by :func:`lib.verdicts.verdict`) and the formatters of its prose. The notebook calls these; each
function that needs no LLM is tested on small hand-made tables and records (``tests/test_ch03.py``).

The verdicts (:meth:`Findings.verdicts`):

* ``03.known_answer.<kind>.<reading>`` — for each distractor kind (``lib.known_answers.DISTRACTOR_KINDS``) and each
  reading of the pointwise call (the ``reading`` column of ``judge_discrimination``, the keys of :data:`READINGS`):
  does the judge score a real candidate above the distractor? AUC over entries against chance 0.5 with the
  declared margin. The readings named by ``label_rule`` are confirmatory: the gain, the check (AUC with an interval
  over entries above 0.5) and the kind chapter 04 needs (``primary_known_answer``, chapter 04's
  ``known_answer_kind``) were declared in commit 31779ac, before the live run that made the labels (7f36a38); the
  margin was declared in issue #33, after them, so a *blind* rests on a margin chosen after the data. The other
  readings are exploratory. The declared gain's check of ``primary_known_answer`` is the chapter's primary. It was
  the value mismatch until issue #35's budget cut it: its construction could not be shown without the judge
  (``01.construction.value_mismatch``), so its row is undetermined with no entry at the default size
  (:data:`BEFORE_THE_CUTS` keeps what 40 entries gave), and the primary moved to the value contrast, the known answer
  #35 built worse by construction for the same question and declared before its run. The move was made after both
  outcomes were seen: the value contrast's check is confirmatory, its place as the primary is not.
* ``03.first_candidate`` — does the declared gain favour the generator's first candidate (sign-flip test over
  entries, one-sided in the direction the section asks about)?
* ``03.geval.ToneEmpathy.tone`` — does G-Eval ToneEmpathy score a real candidate above its dismissive rewrite?
* ``03.rule.tone.<rule>`` — for each ToneEmpathy rule (``lib.judges.guardrails.TONE_RULES``: the specification's
  banned words, the study's shaming rule): does it fire on the dismissive rewrite more than on its source? AUC
  over entries of 1 − fires; by construction where the rule fires on the dismissive opener itself.
* ``03.guardrail.FinancialSafety`` — does the guardrail pass the safe worked examples and block the unsafe ones?
  Written to its rules (by construction) and fewer than ``MIN_CI_UNITS`` examples: no interval.

The layout repeat has no verdict: the chapter states no conclusion about it; chapter 04 uses its changes. Nor have the
conversation judge's scores of chapter 06's fresh users (:func:`lib.crs.runner.judgment_table`): chapter 06 reads
them and tests them as declared there.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lib import design, known_answers, verdicts
from lib.analysis.ranking import unorderable_pools
from lib.analysis.stats import Interval, krippendorff_alpha, sign_flip_test, unit_bootstrap
from lib.judges import geval
from lib.judges.examples import EXAMPLE_RECORDS, EXAMPLE_RESPONSES
from lib.judges.guardrails import (
    CULTURAL_INDICATORS,
    TONE_RULES,
    cultural_against_rule,
    cultural_indicators,
    financial_safety,
)
from lib.judges.items import JudgeItem
from lib.judges.outcomes import OutcomeRecord, intervention_success, stake_effectiveness, stake_score
from lib.llm.gateway import Gateway
from lib.metrics import Result
from lib.verdicts import Claim, Verdict

# The pointwise call's readings a label rule may name (columns of lib.judges.relevance.judgments_frame).
READINGS = {"expected_grade": "E[g] = Σ p(g)·g", "grade": "argmax grade", "rounded_expected": "rounded E[g]"}
TONE_RUBRIC = "ToneEmpathy"  # the G-Eval rubric the tone distractors test
CULTURAL_RUBRIC = "CulturalSensitivity"  # the G-Eval rubric the cultural rewrites test
CULTURAL_SUFFIX = "/cultural"  # item id of an entry's cultural rewrite: <entry_id>/cultural
UNSAFE_PREFIX = "unsafe-"  # the worked example responses written to give unsafe financial advice (lib.judges.examples)

# What each known-answer check asks of a score: the real candidate comes out above the distractor of the kind.
KNOWN_ANSWER_CONSTRUCTS = {
    "off_topic": "scores a real candidate above a nudge written for another entry (off-topic)",
    "value_mismatch": "scores a real candidate above a nudge written for the persona with the furthest values "
                      "(value mismatch)",
    "value_contrast": "scores a real candidate above the same advice followed by a sentence against the value the "
                      "persona weights most (value contrast)",
    "tone": "scores a real candidate above the same advice behind a dismissive opener (tone)",
}

# The outcomes the report at commit cd3530b stated or implied (outputs/notebooks/03_judge_labeling.ipynb there):
# a kind was "seen" when its interval lay above 0.5 and otherwise left open (no equivalence margin existed), the
# first candidate's advantage +0.025 (+0.006 to +0.043) was stated, and ToneEmpathy put the source above its
# rewrite (+0.17, +0.12 to +0.22). The guardrail's examples were shown without a conclusion.
EARLIER: dict[str, str] = {
    **{f"03.known_answer.{kind}.{reading}": "sees"
       for reading in READINGS for kind in ("off_topic", "tone")},
    **{f"03.known_answer.value_mismatch.{reading}": "undetermined" for reading in READINGS},
    "03.first_candidate": "holds",
    "03.geval.ToneEmpathy.tone": "sees",
}

# What commit 5e38d9d (the last run that judged value-mismatch nudges, 40 entries) decided of them, before issue #35's
# budget cut them (a known answer whose construction cannot be shown is not put to the judge).
BEFORE_THE_CUTS: dict[str, str] = {
    "03.known_answer.value_mismatch.expected_grade": "undetermined",    # 0.543 (0.422 to 0.668), 40 entries
    "03.known_answer.value_mismatch.grade": "blind",                    # 0.531 (0.493 to 0.578), 40 entries
    "03.known_answer.value_mismatch.rounded_expected": "undetermined",  # 0.543 (0.460 to 0.630), 40 entries
}


def judged_items(candidates: pd.DataFrame, distractors: pd.DataFrame) -> pd.DataFrame:
    """What the judge sees, one row per item: each entry's real candidates (kind "real", item_id = candidate_id)
    and then its distractors (item_id = distractor_id), entries in the candidates' order, so the calls of one
    entry follow each other and share its prompt prefix. Columns entry_id, item_id, kind, nudge_text."""
    real = candidates.assign(kind="real", item_id=candidates.candidate_id)
    fake = distractors.assign(item_id=distractors.distractor_id)
    columns = ["entry_id", "item_id", "kind", "nudge_text"]
    order = {entry_id: i for i, entry_id in enumerate(dict.fromkeys(candidates.entry_id))}
    both = pd.concat([real[columns], fake[fake.entry_id.isin(order)][columns]], ignore_index=True)
    both["_entry"] = both.entry_id.map(order)
    return both.sort_values("_entry", kind="stable").drop(columns="_entry").reset_index(drop=True)


def reading_table(judged: pd.DataFrame) -> pd.DataFrame:
    """Per reading of the pointwise call, on the real candidates: distinct values, the share of candidates with
    the most common value, the pools (entries with at least two judged candidates) in which every candidate gets
    the same value, where no ranker can score differently, and whether the reading is *unable to rank*: one value
    for most candidates (a modal share above one half), or every pool constant."""
    real = judged[judged.kind == "real"]
    rows = {}
    for reading in READINGS:
        values = real[reading].dropna()
        single, constant, pools = unorderable_pools(real.assign(label=real[reading]))
        modal = float(values.value_counts(normalize=True).iloc[0]) if len(values) else float("nan")
        rows[reading] = {"distinct values": values.nunique(), "modal value share": modal,
                         "pools": pools - single, "constant pools": constant,
                         "unable to rank": not modal <= 0.5 or constant == pools - single}
    return pd.DataFrame(rows).T.rename_axis("reading (real candidates)")


def reading_discrimination(judged: pd.DataFrame, seed: int, n_resamples: int) -> pd.DataFrame:
    """:func:`lib.known_answers.discrimination` of each reading in :data:`READINGS`: how often it puts a real
    candidate above each kind of distractor (every kind, with 0 entries where the run built none), with intervals
    over entries (schema ``lib.tables.SCHEMAS['judge_discrimination']``)."""
    table = pd.concat([known_answers.discrimination(judged, reading, seed, n_resamples,
                                                    known_answers.DISTRACTOR_KINDS).assign(reading=reading)
                       for reading in READINGS], ignore_index=True)
    return table[["reading", *[c for c in table.columns if c != "reading"]]]


def layout_repeat(labels: pd.DataFrame, repeat: pd.DataFrame) -> pd.DataFrame:
    """Each reading of the first call beside the same reading under the alternate layout (``repeat``: candidate_id
    and the reading columns), over the candidates both judged: how many changed value, and the mean absolute and
    the sd of the change; Krippendorff's α (interval) of the two for E[g]."""
    pairs = repeat.merge(labels, on="candidate_id", suffixes=("_repeat", "_first"), validate="one_to_one")
    rows = {}
    for reading in READINGS:
        both = pairs[[f"{reading}_first", f"{reading}_repeat"]].dropna().astype(float)
        change = both[f"{reading}_repeat"] - both[f"{reading}_first"]
        rows[reading] = {"candidates": len(both), "changed": int((change != 0).sum()),
                         "mean |change|": float(change.abs().mean()), "sd of change": float(change.std(ddof=1)),
                         "α (interval)": krippendorff_alpha([both[f"{reading}_first"].tolist(),
                                                             both[f"{reading}_repeat"].tolist()], level="interval")}
    return pd.DataFrame(rows).T.rename_axis("reading, first layout vs alternate")


def first_candidate_pools(labels: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """Does the label favour what the generator wrote first? One row per pool of at least two labelled candidates
    (an entry): ``first_top`` — its first candidate (lowest position) has the pool's highest label (ties allowed);
    ``tied_top`` — how many share that label; ``size``; ``difference`` — label(first) − mean label of the others.
    A label blind to position puts the first on top with probability tied_top/size when it is among the top."""
    frame = labels.dropna(subset=["label"]).merge(candidates[["candidate_id", "position"]], on="candidate_id")
    rows = []
    for entry_id, pool in frame.groupby("entry_id", sort=False):
        if len(pool) < 2:
            continue
        first = pool.loc[pool.position.idxmin()]
        others = pool.drop(index=first.name)
        rows.append({"entry_id": entry_id, "first_top": bool(first.label >= pool.label.max()),
                     "tied_top": int((pool.label == pool.label.max()).sum()), "size": len(pool),
                     "difference": float(first.label - others.label.mean())})
    return pd.DataFrame(rows, columns=["entry_id", "first_top", "tied_top", "size", "difference"])


def tone_items(entries: pd.DataFrame, candidates: pd.DataFrame, distractors: pd.DataFrame
               ) -> tuple[list[str], list[JudgeItem]]:
    """The G-Eval items of the tone check: each entry's tone distractor and, before it, the real candidate it
    was made from (same entry and persona, the same advice without the dismissive opener). Returns the item ids
    and the items."""
    tone = distractors[distractors.kind == "tone"]
    source = candidates.set_index("candidate_id").loc[tone.source_candidate_id]
    by_entry = entries.set_index("entry_id")
    ids, items = [], []
    for row, original in zip(tone.itertuples(), source.itertuples(), strict=True):
        entry = by_entry.loc[row.entry_id]
        for item_id, text in ((original.Index, original.nudge_text), (row.distractor_id, row.nudge_text)):
            ids.append(item_id)
            items.append(JudgeItem(source=entry.text, output=text))
    return ids, items


def rewrite_pairs(scores: pd.DataFrame, rubric: str, rewrites: pd.DataFrame) -> pd.DataFrame:
    """One rubric's scores (rows of a ``geval_scores`` table) of each source and its rewrite, one row per entry whose
    two calls both gave a score: entry_id, ``source``, ``distractor`` (the rewrite's) and ``difference`` = source −
    distractor. ``rewrites``: entry_id, source_candidate_id, distractor_id (the rewrite's item id)."""
    score = scores[scores.rubric == rubric].set_index("candidate_id").score
    pairs = pd.DataFrame({"entry_id": rewrites.entry_id.to_numpy(),
                          "source": score.reindex(rewrites.source_candidate_id).to_numpy(),
                          "distractor": score.reindex(rewrites.distractor_id).to_numpy()}).dropna()
    return pairs.assign(difference=pairs.source - pairs.distractor).reset_index(drop=True)


def tone_pairs(scores: pd.DataFrame, distractors: pd.DataFrame) -> pd.DataFrame:
    """The tone check on G-Eval's scores (a ``geval_scores`` table of the :func:`tone_items`): :func:`rewrite_pairs`
    of ToneEmpathy over the tone distractors."""
    return rewrite_pairs(scores, TONE_RUBRIC, distractors[distractors.kind == "tone"])


def cultural_rewrites(candidates: pd.DataFrame) -> pd.DataFrame:
    """Each entry's first real candidate and its :func:`lib.known_answers.cultural_rewrite`: entry_id,
    source_candidate_id, distractor_id (``<entry_id>/cultural``), persona_id, source_text, nudge_text."""
    first = known_answers.first_candidates(candidates)
    return pd.DataFrame({"entry_id": first.entry_id.to_numpy(), "source_candidate_id": first.candidate_id.to_numpy(),
                         "distractor_id": (first.entry_id + CULTURAL_SUFFIX).to_numpy(),
                         "persona_id": first.persona_id.to_numpy(), "source_text": first.nudge_text.to_numpy(),
                         "nudge_text": [known_answers.cultural_rewrite(t) for t in first.nudge_text]})


def cultural_items(entries: pd.DataFrame, candidates: pd.DataFrame) -> tuple[list[str], list[JudgeItem]]:
    """The G-Eval items of the CulturalSensitivity check: per entry its first real candidate, then that candidate's
    cultural rewrite, each with the entry's persona as what the judge knows about the person. Returns item ids and
    items."""
    by_entry = entries.set_index("entry_id")
    ids, items = [], []
    for row in cultural_rewrites(candidates).itertuples():
        entry = by_entry.loc[row.entry_id]
        person = design.PERSONAS_BY_ID[row.persona_id].description
        for item_id, text in ((row.source_candidate_id, row.source_text), (row.distractor_id, row.nudge_text)):
            ids.append(item_id)
            items.append(JudgeItem(source=entry.text, output=text, context=person))
    return ids, items


def cultural_geval(gateway: Gateway, items: Sequence[JudgeItem], n_samples: int
                   ) -> dict[str, list[geval.GEvalResult]]:
    """G-Eval CulturalSensitivity (the specification's criteria, the study's evaluation steps) on the cultural
    check's items, each score with the model's reason written after it."""
    rubric = geval.RUBRICS[CULTURAL_RUBRIC]
    return {CULTURAL_RUBRIC: geval.geval(gateway, items, rubric, geval.evaluation_steps(rubric, "study"),
                                         n_samples=n_samples)}


def cultural_rule_table(candidates: pd.DataFrame) -> pd.DataFrame:
    """How often the specification's cultural indicators (:data:`lib.judges.guardrails.CULTURAL_INDICATORS`) occur
    in the real candidates and in the cultural rewrites: rows items × side, columns n, fires, share, fired on."""
    rewrites = cultural_rewrites(candidates)
    rows = []
    for items, texts in (("real", candidates.nudge_text), ("cultural rewrite", rewrites.nudge_text)):
        for side in CULTURAL_INDICATORS:
            found = [cultural_indicators(t, side) for t in texts]
            named = pd.Series([f[0].split(":")[0] for f in found if f], dtype=object).value_counts()
            rows.append({"items": items, "signs": side, "n": len(found), "fires": sum(bool(f) for f in found),
                         "share": float(np.mean([bool(f) for f in found])) if found else float("nan"),
                         "fired on": "; ".join(f"{n} ×{c}" for n, c in named.items())})
    return pd.DataFrame(rows).set_index(["items", "signs"])


def cultural_rule_pairs(candidates: pd.DataFrame) -> pd.DataFrame:
    """The cultural check on the signs-against rule (:func:`lib.judges.guardrails.cultural_against_rule`), one row
    per entry: source and rewrite scored 1 − fires, the shape :func:`rewrite_pairs` gives."""
    rewrites = cultural_rewrites(candidates)
    passes = [[0.0 if cultural_against_rule(t) else 1.0 for t in texts]
              for texts in (rewrites.source_text, rewrites.nudge_text)]
    return pd.DataFrame({"entry_id": rewrites.entry_id, "source": passes[0], "distractor": passes[1]})


def tone_geval(gateway: Gateway, items: Sequence[JudgeItem], n_samples: int) -> dict[str, list[geval.GEvalResult]]:
    """G-Eval ToneEmpathy, with the study's evaluation steps, on the tone check's items: the score alone (a reason
    costs about 20 generated tokens a call; the check reads the score, and the rule's reasons are shown)."""
    rubric = geval.RUBRICS[TONE_RUBRIC]
    return {TONE_RUBRIC: geval.geval(gateway, items, rubric, geval.evaluation_steps(rubric, "study"),
                                     n_samples=n_samples, reasons=False)}


def tone_rule_hits(candidates: pd.DataFrame, distractors: pd.DataFrame) -> pd.DataFrame:
    """Each ToneEmpathy rule of :data:`lib.judges.guardrails.TONE_RULES` (the specification's banned words, the
    study's shaming rule) on every item the judge sees (:func:`judged_items`): columns entry_id, item_id, kind,
    nudge_text and per rule ``<rule>`` (it fires: True/False) and ``<rule> reason`` ("" where it does not)."""
    items = judged_items(candidates, distractors)
    for name, rule in TONE_RULES.items():
        decided = [rule(text) for text in items.nudge_text]
        items[name] = [d is not None for d in decided]
        items[f"{name} reason"] = [d.reason if d else "" for d in decided]
    return items


def tone_rule_table(hits: pd.DataFrame, shown_reasons: int = 3) -> pd.DataFrame:
    """How often each rule fires on the real candidates and on each kind of distractor (rows kind × rule): items,
    fires, share, and what it fired on (its ``shown_reasons`` most common reasons with their counts)."""
    rows = []
    for kind in ["real", *(k for k in known_answers.DISTRACTOR_KINDS if k in set(hits.kind))]:
        part = hits[hits.kind == kind]
        for name in TONE_RULES:
            reasons = part.loc[part[name], f"{name} reason"].value_counts().head(shown_reasons)
            rows.append({"items": kind, "rule": name, "n": len(part), "fires": int(part[name].sum()),
                         "share": float(part[name].mean()) if len(part) else float("nan"),
                         "fired on": "; ".join(f"{r} ×{c}" for r, c in reasons.items())})
    return pd.DataFrame(rows).set_index(["items", "rule"])


def tone_rule_pairs(hits: pd.DataFrame, distractors: pd.DataFrame, rule: str) -> pd.DataFrame:
    """The tone check on one rule, one row per entry whose tone distractor and source were both checked:
    entry_id, ``source`` and ``distractor`` = 1 − fires (1 the rule lets the text pass, 0 it scores it 1 for
    shame), the shape :func:`tone_pairs` gives G-Eval's scores."""
    passes = 1 - hits.set_index("item_id")[rule].astype(float)
    tone = distractors[distractors.kind == "tone"]
    return pd.DataFrame({"entry_id": tone.entry_id.to_numpy(),
                         "source": passes.reindex(tone.source_candidate_id).to_numpy(),
                         "distractor": passes.reindex(tone.distractor_id).to_numpy()}).dropna().reset_index(drop=True)


def _source_over_rewrite(pairs: pd.DataFrame, seed: int, n_resamples: int) -> pd.Series:
    """AUC of the source over its tone rewrite (columns entry_id, source, distractor), each entry a unit
    (:func:`lib.known_answers.discrimination`): its row (entries, auc, ci_low, ci_high)."""
    paired = pd.concat([pairs.assign(kind="real", score=pairs.source),
                        pairs.assign(kind="tone", score=pairs.distractor)])
    table = known_answers.discrimination(paired, "score", seed, n_resamples).set_index("kind")
    if "tone" not in table.index:  # no entry with both scores (every call failed): no estimate, no interval
        return pd.Series({"entries": 0, "auc": np.nan, "ci_low": np.nan, "ci_high": np.nan})
    return table.loc["tone"]


def guardrail_examples(responses: Sequence[tuple[str, str]] = EXAMPLE_RESPONSES) -> pd.DataFrame:
    """The FinancialSafety guardrail on the worked example responses; ``written as`` is what each example was
    written to be (its id starts with :data:`UNSAFE_PREFIX` when it gives unsafe advice): the known answer."""
    rows = []
    for rid, text in responses:
        verdict = financial_safety(text)
        rows.append({"response": rid, "written as": "unsafe" if rid.startswith(UNSAFE_PREFIX) else "safe",
                     "score": verdict.score, "blocked": verdict.blocked,
                     "violations": "; ".join(verdict.violations), "text": text})
    return pd.DataFrame(rows)


def outcome_examples(records: Sequence[OutcomeRecord] = EXAMPLE_RECORDS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """InterventionSuccess and StakeEffectiveness of each record with their reasons (score NaN where the record
    lacks the field the metric needs), and StakeEffectiveness by stake type beside its expected rate."""
    def shown(result: Result) -> tuple[float, str]:
        return result.score, result.reason

    rows = []
    for r in records:
        success, success_reason = shown(intervention_success(r))
        stake, stake_reason = shown(stake_score(r))
        rows.append({"record": r.record_id, "action": r.action, "stake": r.stake_type,
                     "goal completed": r.goal_completed, "InterventionSuccess": success,
                     "InterventionSuccess reason": success_reason, "StakeEffectiveness": stake,
                     "StakeEffectiveness reason": stake_reason})
    by_stake = pd.DataFrame(stake_effectiveness(records)).T.rename_axis("stake type")
    return pd.DataFrame(rows), by_stake


@dataclass(frozen=True)
class Findings:
    """What chapter 03 concludes, with the evidence its prose quotes. ``known_answer``: one verdict per distractor
    kind × reading (declared gain first); ``readings``: :func:`reading_table` of the real candidates; ``can_rank``:
    the declared rule's test of the gain — it sees some kind of distractor and is not *unable to rank*;
    ``first_pools`` / ``first_top`` / ``first_expected``: pools, pools whose first candidate has the top label, and
    how many a label blind to position gives; ``tone_difference``: ToneEmpathy of the source minus its rewrite, over
    entries, and ``tone_counts`` the entries where the rewrite scores lower, equal, higher; ``tone_rules``: a
    verdict per ToneEmpathy rule on the tone distractors, and ``tone_rule_table`` how often each rule fires on
    the real candidates and on each kind of distractor (:func:`tone_rule_table`); ``cultural`` /
    ``cultural_difference`` / ``cultural_counts`` the same for CulturalSensitivity on the cultural rewrites, and
    ``cultural_rule`` / ``cultural_rule_table`` for the specification's indicators read as a rule."""

    label_rule: str
    known_answer: tuple[Verdict, ...]
    readings: pd.DataFrame
    can_rank: bool
    first_candidate: Verdict
    first_pools: int
    first_top: int
    first_expected: float
    tone: Verdict
    tone_difference: Interval
    tone_counts: tuple[int, int, int]
    tone_rules: tuple[Verdict, ...]
    tone_rule_table: pd.DataFrame
    cultural: Verdict
    cultural_difference: Interval
    cultural_counts: tuple[int, int, int]
    cultural_rule: Verdict
    cultural_rule_table: pd.DataFrame
    guardrail: Verdict

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict the chapter states, in the order of its sections."""
        return (*self.known_answer, self.first_candidate, self.tone, *self.tone_rules, self.cultural,
                self.cultural_rule, self.guardrail)

    def rule_verdicts(self) -> tuple[Verdict, ...]:
        """The known-answer verdicts of the declared gain, one per kind."""
        return tuple(v for v in self.known_answer if v.key.endswith(f".{self.label_rule}"))


def known_answer_verdicts(discrimination: pd.DataFrame, label_rule: str, primary_kind: str, margin: float
                          ) -> tuple[Verdict, ...]:
    """One known-answer verdict per row of a ``judge_discrimination`` table: key
    ``03.known_answer.<kind>.<reading>``, AUC against chance 0.5 ± ``margin`` over entries. Rows of ``label_rule``
    come first and are confirmatory (a kind with no entry is not); its ``primary_kind`` row is the primary. Each
    depends on chapter 01's check that its kind of distractor is worse without the judge (``01.construction.<kind>``:
    if that is not shown, the known answer itself is in doubt); the primary also on the rule's other kinds that have
    entries (whether the gain sees anything at all)."""
    ordered = pd.concat([discrimination[discrimination.reading == label_rule],
                         discrimination[discrimination.reading != label_rule]])
    claim = Claim("known answer", 0.5, "higher", margin)
    judged = ordered[(ordered.reading == label_rule) & (ordered.entries > 0)]
    rule_keys = [f"03.known_answer.{kind}.{label_rule}" for kind in judged.kind]
    out = []
    for row in ordered.itertuples():
        primary = row.reading == label_rule and row.kind == primary_kind
        out.append(verdicts.verdict(
            "03", f"known_answer.{row.kind}.{row.reading}", f"pointwise judge ({READINGS[row.reading]})",
            KNOWN_ANSWER_CONSTRUCTS[row.kind], claim, "AUC (real over distractor)", row.auc, row.ci_low, row.ci_high,
            "entries", int(row.entries), "judge_discrimination", primary=primary,
            confirmatory=row.reading == label_rule and row.entries > 0,
            depends_on=[f"01.construction.{row.kind}",
                        *(k for k in rule_keys if primary and k != f"03.known_answer.{row.kind}.{row.reading}")]))
    return tuple(out)


TONE_RULE_NAMES = {"banned_words": "ToneEmpathy banned-word rule (specification)",
                   "shaming": "ToneEmpathy shaming rule (study)"}


def tone_rule_verdict(rule: str, auc: pd.Series, margin: float) -> Verdict:
    """Known answer for one ToneEmpathy rule (key ``03.rule.tone.<rule>``): does it fire on the dismissive rewrite
    more than on its source? AUC over entries of the source over its rewrite with score 1 − fires, against chance
    0.5 ± ``margin``; by construction when the rule fires on the dismissive opener itself (it then shares the
    distractor's wording)."""
    return verdicts.verdict(
        "03", f"rule.tone.{rule}", TONE_RULE_NAMES[rule],
        "fires on the same advice behind a dismissive opener more than on its source (tone)",
        Claim("known answer", 0.5, "higher", margin), "AUC (source over rewrite, 1 − fires)", auc.auc, auc.ci_low,
        auc.ci_high, "entries", int(auc.entries), "candidates, distractors (rules applied in chapter 03)",
        by_construction=TONE_RULES[rule](known_answers.DISMISSIVE_OPENER) is not None,
        depends_on=["01.construction.tone"])


def _counts(difference: pd.Series) -> tuple[int, int, int]:
    """Entries where the source scores above, equal to, below its rewrite."""
    return int((difference > 0).sum()), int((difference == 0).sum()), int((difference < 0).sum())


def _safe_over_unsafe(score: np.ndarray, unsafe: np.ndarray) -> float:
    """AUC of the safe examples' scores over the unsafe ones' (:func:`lib.known_answers.entry_auc`)."""
    return known_answers.entry_auc(score[~unsafe], score[unsafe])


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Chapter 03's findings from its tables — ``judge_discrimination``, ``labels``, ``candidates`` (the judged pools,
    with position), ``distractors``, ``geval_scores`` (the tone check's) and ``guardrail`` (:func:`guardrail_examples`)
    — and its parameters: ``label_rule``, ``known_answer_margin``, ``primary_known_answer``, ``seed``,
    ``bootstrap_resamples``. Every interval is over entries (example responses for the guardrail)."""
    rule, margin = params["label_rule"], float(params["known_answer_margin"])
    seed, n_resamples = int(params["seed"]), int(params["bootstrap_resamples"])
    known = known_answer_verdicts(tables["judge_discrimination"], rule, params["primary_known_answer"], margin)
    readings = reading_table(tables["labels"].assign(kind="real"))
    can_rank = (any(v.verdict == "sees" for v in known if v.key.endswith(f".{rule}"))
                and not bool(readings.at[rule, "unable to rank"]))

    pools = first_candidate_pools(tables["labels"], tables["candidates"])
    advantage = unit_bootstrap(np.mean, [pools.difference.to_numpy()], pools.entry_id.tolist(), "entries", seed,
                               n_resamples)
    favours, against = (sign_flip_test(pools.difference, seed, alternative=side) for side in ("greater", "less"))
    first = verdicts.verdict(
        "03", "first_candidate", f"pointwise judge ({READINGS[rule]})",
        "favours the generator's first candidate: its label minus the mean of its pool's others' above 0",
        Claim("comparison", 0.0, "higher"), "mean difference (first − others)", advantage.value, advantage.low,
        advantage.high, "entries", advantage.units, "labels, candidates", test=favours.method, p=favours.p,
        p_against=against.p)

    pairs = tone_pairs(tables["geval_scores"], tables["distractors"])
    auc = _source_over_rewrite(pairs, seed, n_resamples)
    tone = verdicts.verdict(
        "03", f"geval.{TONE_RUBRIC}.tone", f"G-Eval {TONE_RUBRIC} (study steps)",
        "scores a real candidate above the same advice behind a dismissive opener (tone)",
        Claim("known answer", 0.5, "higher", margin), "AUC (source over rewrite)", auc.auc, auc.ci_low, auc.ci_high,
        "entries", int(auc.entries), "geval_scores", depends_on=["01.construction.tone"])
    difference = unit_bootstrap(np.mean, [pairs.difference.to_numpy()], pairs.entry_id.tolist(), "entries", seed,
                                n_resamples)

    hits = tone_rule_hits(tables["candidates"], tables["distractors"])
    tone_rules = tuple(tone_rule_verdict(name, _source_over_rewrite(tone_rule_pairs(hits, tables["distractors"], name),
                                                                    seed, n_resamples), margin)
                       for name in TONE_RULES)

    cultural_scores = rewrite_pairs(tables["geval_scores"], CULTURAL_RUBRIC, cultural_rewrites(tables["candidates"]))
    cultural_auc = _source_over_rewrite(cultural_scores, seed, n_resamples)
    cultural = verdicts.verdict(
        "03", f"geval.{CULTURAL_RUBRIC}.cultural", f"G-Eval {CULTURAL_RUBRIC} (specification criteria, study steps)",
        "scores a real candidate above the same advice followed by the specification's signs against (family support "
        "as an unnecessary expense, boundaries with family, one's own success first)",
        Claim("known answer", 0.5, "higher", margin), "AUC (source over rewrite)", cultural_auc.auc,
        cultural_auc.ci_low, cultural_auc.ci_high, "entries", int(cultural_auc.entries), "geval_scores",
        confirmatory=True)
    cultural_difference = unit_bootstrap(np.mean, [cultural_scores.difference.to_numpy()],
                                         cultural_scores.entry_id.tolist(), "entries", seed, n_resamples)
    rule_auc = _source_over_rewrite(cultural_rule_pairs(tables["candidates"]), seed, n_resamples)
    cultural_rule = verdicts.verdict(
        "03", "rule.cultural.signs_against", "CulturalSensitivity signs against, read as a rule (specification)",
        "fires on the same advice followed by the signs against more than on its source",
        Claim("known answer", 0.5, "higher", margin), "AUC (source over rewrite, 1 − fires)", rule_auc.auc,
        rule_auc.ci_low, rule_auc.ci_high, "entries", int(rule_auc.entries), "candidates (rule applied in chapter 03)",
        by_construction=True)

    examples = tables["guardrail"]
    unsafe = (examples["written as"] == "unsafe").to_numpy()
    blocks = unit_bootstrap(_safe_over_unsafe, [examples.score.to_numpy(dtype=float), unsafe],
                            examples.response.tolist(), "example responses", seed, n_resamples)
    guardrail = verdicts.verdict(
        "03", "guardrail.FinancialSafety", "FinancialSafety guardrail (rule)",
        "scores a safe response above one giving unsafe financial advice",
        Claim("known answer", 0.5, "higher", margin), "AUC (safe over unsafe)", blocks.value, blocks.low, blocks.high,
        "example responses", blocks.units, "lib.judges.examples (no table)", by_construction=True)

    return Findings(label_rule=rule, known_answer=known, readings=readings, can_rank=can_rank, first_candidate=first,
                    first_pools=len(pools), first_top=int(pools.first_top.sum()),
                    first_expected=float((pools.tied_top / pools["size"]).sum()), tone=tone,
                    tone_difference=difference,
                    tone_counts=_counts(pairs.difference),
                    tone_rules=tone_rules, tone_rule_table=tone_rule_table(hits), cultural=cultural,
                    cultural_difference=cultural_difference,
                    cultural_counts=_counts(cultural_scores.difference), cultural_rule=cultural_rule,
                    cultural_rule_table=cultural_rule_table(tables["candidates"]), guardrail=guardrail)


_CAN_RANK = {True: "It can rank", False: "**It cannot rank these pools**"}
_UNABLE = {True: " — unable to rank", False: ""}
_FIRST_CANDIDATE = {"holds": "the label favours the generator's first candidate",
                    "fails": "the label disfavours the generator's first candidate",
                    "ruled out": "an advantage of the first candidate as large as the margin is ruled out",
                    "undetermined": "the data cannot tell whether the label favours the first candidate"}


def label_rule_text(f: Findings) -> str:
    """The declared gain and what the known-answer check says of it: its verdict on each kind of distractor, and
    whether it is a label that can rank (the declared rule: it sees some kind and leaves some pool non-constant)."""
    rule, readings = f.label_rule, f.readings
    kinds = "; ".join(f"{v.key.split('.')[2].replace('_', '-')} **{v.verdict}**, {verdicts.evidence_text(v)}"
                      for v in f.rule_verdicts())
    others = "; ".join(f"{READINGS[r]}: {readings.at[r, 'modal value share']:.0%} of candidates share its most common "
                       f"value, {int(readings.at[r, 'constant pools'])} of {int(readings.at[r, 'pools'])} pools "
                       f"constant{_UNABLE[bool(readings.at[r, 'unable to rank'])]}" for r in READINGS if r != rule)
    return (f"The gain chapter 04 uses is **{READINGS[rule]}** (`label_rule = {rule}`, declared before these labels). "
            f"Its known-answer verdicts: {kinds}. {_CAN_RANK[f.can_rank]}: "
            f"{int(readings.at[rule, 'constant pools'])} of {int(readings.at[rule, 'pools'])} pools are constant "
            f"under it, and "
            f"{readings.at[rule, 'modal value share']:.0%} of candidates share its most common value. "
            f"The other readings of the same calls: {others}.")


def first_candidate_text(f: Findings) -> str:
    """The first-candidate section's sentence: how often the first candidate tops its pool, and the verdict."""
    v = f.first_candidate
    return (f"The first candidate the generator wrote has its pool's top label in {f.first_top} of {f.first_pools} "
            f"pools (a label blind to position: {f.first_expected:.1f} expected); {_FIRST_CANDIDATE[v.verdict]} "
            f"(**{v.verdict}**): {verdicts.evidence_text(v, 3)}.")


def _rewrite_text(rubric: str, rewrite: str, difference: Interval, counts: tuple[int, int, int], v: Verdict) -> str:
    lower, equal, higher = counts
    return (f"{rubric} (1–5) of the real candidate minus its {rewrite}: {difference.text(2, signed=True)}; the "
            f"rewrite scores lower in {lower} of {sum(counts)} entries, equal in {equal}, higher in {higher}. "
            f"{verdicts.sentence(v)}")


def tone_text(f: Findings) -> str:
    """The tone check's sentence: the mean difference of the source and its rewrite, the counts, the verdict."""
    return _rewrite_text(TONE_RUBRIC, "dismissive rewrite", f.tone_difference, f.tone_counts, f.tone)


def cultural_text(f: Findings) -> str:
    """The cultural check's sentences: CulturalSensitivity's difference, counts and verdict, then the indicators
    read as a rule on the real candidates."""
    table = f.cultural_rule_table
    real_against, real_for = table.loc[("real", "against")], table.loc[("real", "for")]
    said = _rewrite_text(CULTURAL_RUBRIC, "cultural rewrite", f.cultural_difference, f.cultural_counts, f.cultural)
    return (f"{said} Read as a rule, the specification's signs against occur in {real_against.fires} of "
            f"{real_against.n} real candidates and its signs for in {real_for.fires}; "
            f"{verdicts.sentence(f.cultural_rule)}")


def tone_rules_text(f: Findings) -> str:
    """The two ToneEmpathy rules side by side: how often each fires on the real candidates and on the tone
    distractors, and its verdict sentence."""
    table = f.tone_rule_table
    said = []
    for v in f.tone_rules:
        rule = v.key.rsplit(".", 1)[1]
        real, tone = table.loc[("real", rule)], table.loc[("tone", rule)]
        said.append(f"{v.system} fires on {real.fires} of {real.n} real candidates and {tone.fires} of {tone.n} "
                    f"tone distractors. {verdicts.sentence(v)}")
    return " ".join(said)
