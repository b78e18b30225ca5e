"""Chapter 03 (judge labeling): the loops that build its tables and its generated text, and its front-page
headline. The notebook calls these; each function that needs no LLM is tested on small hand-made tables
(``tests/test_ch03.py``)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib import known_answers
from lib.analysis.ranking import unorderable_pools
from lib.analysis.stats import interval_text, krippendorff_alpha, unit_bootstrap
from lib.chapters.headline import Tables, headline
from lib.judges import geval
from lib.judges.examples import EXAMPLE_RECORDS, EXAMPLE_RESPONSES
from lib.judges.guardrails import financial_safety
from lib.judges.items import JudgeItem
from lib.judges.outcomes import intervention_success, stake_effectiveness
from lib.llm.gateway import Gateway

# The pointwise call's readings a label rule may name (columns of lib.judges.relevance.judgments_frame).
READINGS = {"expected_grade": "E[g] = Σ p(g)·g", "grade": "argmax grade", "rounded_expected": "rounded E[g]"}
TONE_RUBRIC = "ToneEmpathy"  # the G-Eval rubric the tone distractors test


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
    candidate above each kind of distractor, with intervals over entries (schema
    ``lib.tables.SCHEMAS['judge_discrimination']``)."""
    table = pd.concat([known_answers.discrimination(judged, reading, seed, n_resamples).assign(reading=reading)
                       for reading in READINGS], ignore_index=True)
    return table[["reading", *[c for c in table.columns if c != "reading"]]]


def label_rule_text(rule: str, discrimination: pd.DataFrame, readings: pd.DataFrame) -> str:
    """The declared label rule and what the known-answer check says of it: which kinds of distractor the gain
    sees, and whether it is a label that can rank (it must see one kind and leave some pool non-constant)."""
    seen = known_answers.sees(discrimination[discrimination.reading == rule].set_index("kind"))
    kinds = ", ".join(seen.index[seen]) or "none"
    can_rank = bool(seen.any()) and not readings.at[rule, "unable to rank"]
    others = "; ".join(f"{READINGS[r]}: {readings.at[r, 'modal value share']:.0%} of candidates share its most common "
                       f"value, {int(readings.at[r, 'constant pools'])} of {int(readings.at[r, 'pools'])} pools "
                       f"constant{' — unable to rank' if readings.at[r, 'unable to rank'] else ''}"
                       for r in READINGS if r != rule)
    return (f"The gain chapter 04 uses is **{READINGS[rule]}** (`label_rule = {rule}`, declared before these labels). "
            f"Kinds of distractor whose interval lies above 0.5 under it: {kinds}. "
            + ("It can rank: " if can_rank else "**It cannot rank these pools**: ")
            + f"{int(readings.at[rule, 'constant pools'])} of {int(readings.at[rule, 'pools'])} pools are constant "
              f"under it, and {readings.at[rule, 'modal value share']:.0%} of candidates share its most common value. "
              f"The other readings of the same calls: {others}.")


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


def first_candidate_effect(labels: pd.DataFrame, candidates: pd.DataFrame, seed: int, n_resamples: int
                           ) -> tuple[pd.Series, str]:
    """Does the label favour what the generator wrote first? Per pool of at least two labelled candidates: whether
    its first candidate (lowest position) has the pool's highest label, beside what a label blind to position gives
    (1/size of each pool, summed); and the mean over pools of label(first) − mean label of the others, with an
    interval over entries. Returns the figures and a sentence."""
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
    pools = pd.DataFrame(rows)
    interval = unit_bootstrap(np.mean, [pools.difference.to_numpy()], pools.entry_id.tolist(), "entries", seed,
                              n_resamples)
    figures = pd.Series({"pools": len(pools), "first has the top label": int(pools.first_top.sum()),
                         "expected if blind to position": float((pools.tied_top / pools["size"]).sum()),
                         "label(first) − mean of the others": interval.value,
                         "ci_low": interval.low, "ci_high": interval.high})
    text = (f"The first candidate the generator wrote has its pool's top label in "
            f"{int(figures['first has the top label'])} of {len(pools)} pools (a label blind to position: "
            f"{figures['expected if blind to position']:.1f} expected); its label minus the mean of the others' is "
            f"{interval.text(3, signed=True)}.")
    return figures, text


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


def tone_check(scores: pd.DataFrame, distractors: pd.DataFrame, seed: int, n_resamples: int) -> tuple[pd.Series, str]:
    """The tone check on G-Eval's scores (a ``geval_scores`` table of the :func:`tone_items`): per entry, the
    source candidate's score minus its tone distractor's, with an interval over entries, and in how many
    entries the distractor scores lower, equal, higher."""
    score = scores.set_index("candidate_id").score
    tone = distractors[distractors.kind == "tone"]
    pairs = pd.DataFrame({"entry_id": tone.entry_id.to_numpy(),
                          "difference": score.reindex(tone.source_candidate_id).to_numpy()
                          - score.reindex(tone.distractor_id).to_numpy()}).dropna()
    interval = unit_bootstrap(np.mean, [pairs.difference.to_numpy()], pairs.entry_id.tolist(), "entries", seed,
                              n_resamples)
    figures = pd.Series({"entries": len(pairs), "distractor lower": int((pairs.difference > 0).sum()),
                         "equal": int((pairs.difference == 0).sum()),
                         "distractor higher": int((pairs.difference < 0).sum()),
                         "source − distractor": interval.value, "ci_low": interval.low, "ci_high": interval.high})
    text = (f"{TONE_RUBRIC} (1–5) of the real candidate minus its dismissive rewrite: {interval.text(2, signed=True)}; "
            f"the rewrite scores lower in {int(figures['distractor lower'])} of {len(pairs)} entries, equal in "
            f"{int(figures['equal'])}, higher in {int(figures['distractor higher'])}.")
    return figures, text


def tone_geval(gateway: Gateway, items: Sequence[JudgeItem], n_samples: int) -> dict[str, list[geval.GEvalResult]]:
    """G-Eval ToneEmpathy, with the study's evaluation steps, on the tone check's items."""
    rubric = geval.RUBRICS[TONE_RUBRIC]
    return {TONE_RUBRIC: geval.geval(gateway, items, rubric, geval.evaluation_steps(rubric, "study"),
                                     n_samples=n_samples)}


def guardrail_examples(responses: Sequence[tuple[str, str]] = EXAMPLE_RESPONSES) -> pd.DataFrame:
    """The FinancialSafety guardrail on the worked example responses."""
    rows = []
    for rid, text in responses:
        verdict = financial_safety(text)
        rows.append({"response": rid, "score": verdict.score, "blocked": verdict.blocked,
                     "violations": "; ".join(verdict.violations), "text": text})
    return pd.DataFrame(rows)


def outcome_examples() -> tuple[pd.DataFrame, pd.DataFrame]:
    """InterventionSuccess per worked example record ("no data" where it is undefined), and effectiveness by stake."""
    success = pd.DataFrame([{"record": r.record_id, "stake": r.stake_type, "action": r.action,
                             "InterventionSuccess": "no data" if intervention_success(r) is None
                             else intervention_success(r)}
                            for r in EXAMPLE_RECORDS])
    return success, pd.DataFrame(stake_effectiveness(EXAMPLE_RECORDS)).T.rename_axis("stake type")


@headline("03_judge_labeling", "labels", "judge_discrimination")
def known_answer_headline(tables: Tables) -> str:
    """The gain chapter 04 uses and how often it puts a real candidate above each kind of distractor."""
    source = tables["labels"].label_source.iloc[0]
    table = tables["judge_discrimination"]
    table = table[table.reading == source]
    kinds = "; ".join(f"{row.kind.replace('_', ' ')} {row.auc:.2f} ({interval_text(row.ci_low, row.ci_high)}, "
                      f"{row.ci_over})" for row in table.itertuples())
    return (f"The judge's gain ({READINGS.get(source, source)}) puts a real candidate above a distractor of known "
            f"lower quality with probability: {kinds}; 0.5 is a coin.")
