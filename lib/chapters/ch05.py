"""Chapter 05 (nugget evaluation against ALCE utility and TREC RAG25 nuggets, nightly judge monitor): the loops that
build its tables, its findings (:func:`findings`: every verdict, decided from the tables) and the prose that formats
them. The notebook calls these; the functions that need no LLM are tested on small hand-made tables and records
(``tests/test_ch05.py``), the LLM steps they call on the fake endpoint (``tests/test_nuggets.py``,
``tests/test_monitor.py``).

Vocabulary: a *topic* is a TREC RAG25 query (``qid``), a *question* an ALCE one, a *variant* the answer written with
or without the notes; assignment uses 3 grades (support / partial / not).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from lib import known_answers, monitor, rag, tables, triads, verdicts
from lib import nuggets as nug
from lib.analysis import calibration, validity
from lib.analysis.comparisons import holm_both_directions
from lib.analysis.power import Plan, control_limit_power, items_for_control_limit, units_for_t_test
from lib.analysis.stats import MIN_CI_UNITS, Interval, correlation_ci, nested_sample, sign_flip_test, unit_bootstrap
from lib.analysis.text import count_text, interval_text, number_text
from lib.llm.gateway import Gateway
from lib.verdicts import Claim, Verdict, verdict


def answer_lengths(answers: pd.DataFrame) -> pd.DataFrame:
    """Per variant: answers, failed generations, mean and longest answer in words."""
    words = answers.answer.fillna("").str.split().str.len()
    return (answers.assign(words=words).groupby("variant")
            .agg(answers=("qid", "size"), failed=("answer", lambda s: int(s.isna().sum())),
                 mean_words=("words", "mean"), max_words=("words", "max")).round(1))


def answer_of(answers: pd.DataFrame, qid: str, variant: str) -> str | None:
    """The topic's answer of that variant (None: generation failed)."""
    return answers[(answers.qid == qid) & (answers.variant == variant)].answer.iloc[0]


def example_text(qid: str, narrative: Mapping[str, str], notes: Mapping[str, list[str]], answers: pd.DataFrame) -> str:
    """Markdown: one topic, its notes and its two answers."""
    return (f"**Topic {qid}.** {narrative[qid]}\n\n**Notes shown:** " + "; ".join(notes[qid])
            + f"\n\n**With notes:** {answer_of(answers, qid, 'with_context')}"
            + f"\n\n**Without notes:** {answer_of(answers, qid, 'no_context')}")


@dataclass(frozen=True)
class Creator:
    """The declared settings of AutoNuggetizer's creation step (:func:`lib.nuggets.create_nuggets`)."""
    max_nuggets: int = nug.MAX_NUGGETS
    max_passes: int = nug.MAX_PASSES
    merge_threshold: float = nug.MERGE_THRESHOLD
    support_threshold: float = nug.SUPPORT_THRESHOLD

    def create(self, judge: Gateway, query: str, sources: Sequence[str], call_label: str) -> nug.Creation:
        return nug.create_nuggets(judge, query, sources, max_nuggets=self.max_nuggets, max_passes=self.max_passes,
                                  merge_threshold=self.merge_threshold, support_threshold=self.support_threshold,
                                  call_label=call_label)


@dataclass(frozen=True)
class AutomaticNuggets:
    """One query's automatic nuggets with the judge's importance: the label it wrote (``importance``) and p(vital)
    from the same answer (``p_vital``)."""
    created: nug.Creation
    importance: list[str | None]
    p_vital: list[float | None]
    importance_failures: list[nug.BatchFailure]

    def importance_at(self, threshold: float) -> list[str | None]:
        """The threshold reading: vital where p(vital) ≥ ``threshold``, okay below, None where p(vital) is unknown."""
        return [None if p is None else "vital" if p >= threshold else "okay" for p in self.p_vital]


def nuggets_for(judge: Gateway, query: str, sources: Sequence[str], creator: Creator, call_label: str
                ) -> AutomaticNuggets:
    """Nuggets created from ``sources``, then labelled vital/okay (the label and p(vital))."""
    created = creator.create(judge, query, sources, call_label)
    found = nug.label_importance(judge, query, created.nuggets, call_label=call_label)
    return AutomaticNuggets(created, found.labels, found.probability("vital"), found.failures)


def creation_table(auto: Mapping[Any, AutomaticNuggets], key: str = "qid", threshold: float | None = None
                   ) -> pd.DataFrame:
    """Per query: how creation went (nuggets, why it stopped, calls, passes, nuggets merged as near-duplicates
    and dropped as not from the sources, failures, nuggets over the 12 words asked for) and the nuggets labelled
    vital: as written (``vital``) and, given ``threshold``, by p(vital) at it (``vital at the threshold``)."""
    return pd.DataFrame([{key: q, "automatic nuggets": len(a.created.nuggets), "stopped": a.created.stopped,
                          "calls": a.created.calls, "passes": a.created.passes, "merged": a.created.merged,
                          "not from the sources": a.created.unsupported,
                          "creation failures": len(a.created.failures), "over 12 words": a.created.over_length,
                          "vital": sum(i == "vital" for i in a.importance),
                          **({} if threshold is None
                             else {VITAL_AT: sum(i == "vital" for i in a.importance_at(threshold))}),
                          "importance failures": len(a.importance_failures)}
                         for q, a in auto.items()]).set_index(key)


VITAL_AT = "vital at the threshold"


# the two readings of the judge's importance, as the verdict rows name them
IMPORTANCE_READINGS = {"argmax": "as the judge wrote it", "threshold": "p(vital) at a threshold fit on NIST's labels"}


def importance_readings(labelled: pd.DataFrame, seed: int, n_resamples: int) -> pd.DataFrame:
    """Both readings of the judge's importance against NIST's labels on chapter 01's ``nugget_importance``
    (:func:`lib.chapters.ch01.nugget_importance`): ``argmax`` (the label written) and ``threshold`` (p(vital) at
    the cut that maximises κ, :func:`lib.analysis.calibration.fit_thresholds` on the 0/1 scale, cross-fitted by
    topic so that no topic is read with a cut fit on it). Per
    reading: Cohen's κ with a CI over topics, exact agreement, topics and nuggets read, the vital shares, and
    ``threshold``: the cut fit on every topic, the one applied to the ALCE nuggets (NaN for argmax)."""
    readable = labelled.dropna(subset=["p_vital"])
    out_of_fold = calibration.out_of_fold_grades(readable, "qid", "p_vital", "nist", [0, 1])
    cut = calibration.fit_thresholds(readable.p_vital, readable.nist, [0, 1])[0]
    rows = []
    for name, read in (("argmax", labelled.argmax), ("threshold", out_of_fold.reindex(labelled.index))):
        both = read.notna().to_numpy()
        nist, judge = labelled.nist[both].astype(int).tolist(), read[both].astype(int).tolist()
        agreement = {**validity.agreement(nist, judge, categories=[0, 1]),
                     **validity.agreement_ci(nist, judge, labelled.qid[both], seed=seed, n_resamples=n_resamples,
                                              categories=[0, 1], unit="topics")}
        rows.append({"reading": name, "kappa": agreement["kappa"], "kappa_ci_low": agreement["kappa_ci_low"],
                     "kappa_ci_high": agreement["kappa_ci_high"], "exact_agreement": agreement["exact_agreement"],
                     "topics": int(agreement["units"]), "nuggets": len(nist),
                     "judge_vital_share": float(np.mean(judge)), "nist_vital_share": float(np.mean(nist)),
                     "threshold": cut if name == "threshold" else np.nan})
    return pd.DataFrame(rows).set_index("reading")


def alce_sample(alce: pd.DataFrame, questions: int, seed: int, pilot_questions: int
                ) -> tuple[dict[str, list[str]], pd.DataFrame]:
    """(sampled question ids per dataset, the answers to them). The pilot's ``pilot_questions`` per dataset
    (its seeded draw) come first and the rest follow a seeded hash order (:func:`lib.analysis.stats.nested_sample`),
    so raising ``questions`` adds questions and never redraws the judged ones."""
    qids = {}
    for dataset in ("asqa", "eli5"):
        ids = alce[alce.dataset == dataset].qid
        pilot = validity.sample_ids(ids, pilot_questions, seed)
        qids[dataset] = [str(q) for q in nested_sample(ids, questions, seed, first=pilot)]
    sample = alce[[q in qids[d] for d, q in zip(alce.dataset, alce.qid, strict=True)]].reset_index(drop=True)
    return qids, sample


def alce_design_table(pilot_within_sd: Mapping[int | str, float], effect: float, alpha: float, power: float,
                      fixed_calls: int) -> pd.DataFrame:
    """The planner's questions and calls for each number of answers per question k: a paired t-test on the mean
    within-question ρ (:func:`lib.analysis.power.units_for_t_test`, effect ``effect``) with the pilot's SD of
    within-question ρ at k answers, and calls per question = ``fixed_calls`` (creation and importance, shared
    by the question's answers) + k (one assignment call per answer)."""
    rows = []
    for k, sd in sorted((int(k), sd) for k, sd in pilot_within_sd.items()):  # JSON parameters give "4" for 4
        questions = units_for_t_test(effect, sd, alpha, power)
        rows.append({"answers per question": k, "pilot SD of within-question ρ": sd, "questions needed": questions,
                     "calls per question": fixed_calls + k, "calls needed": questions * (fixed_calls + k)})
    return pd.DataFrame(rows).set_index("answers per question")


def alce_nugget_scores(judge: Gateway, sample: pd.DataFrame, creator: Creator, threshold: float
                       ) -> tuple[pd.DataFrame, dict[tuple[str, str], AutomaticNuggets]]:
    """Per question: nuggets created from its systems' answers (the data has no retrieved passages; an empty answer
    is no source) and labelled vital/okay, then assigned to every answer (3 grades; an empty answer supports no
    nugget, without a call): (one row of nugget scores per answer with its utility and length, the nuggets). The
    scores read importance at ``threshold`` on p(vital) (fit on the RAG25 NIST labels, :func:`importance_readings`);
    ``vital_argmax`` is the vital score with the labels as written."""
    rows, created_nuggets = [], {}
    for (dataset, qid), group in sample.groupby(["dataset", "qid"], sort=True):
        question = group.question.iloc[0]
        auto = nuggets_for(judge, question, group.answer.tolist(), creator, f"alce:{qid}")
        created_nuggets[(dataset, qid)] = auto
        for r in group.itertuples():
            labels, failed = nug.assign(judge, question, r.answer, auto.created.nuggets,
                                        call_label=f"alce:{qid}:{r.system}")
            rows.append({"dataset": dataset, "qid": qid, "system": r.system, "grades": 3, "utility": r.utility,
                         "words": len(r.answer.split()), "nuggets": len(auto.created.nuggets),
                         "failed_batches": len(failed), **nug.answer_scores(labels, auto.importance_at(threshold)),
                         "vital_argmax": nug.answer_scores(labels, auto.importance)["vital"]})
    return pd.DataFrame(rows), created_nuggets


def alce_scores_text(sample: pd.DataFrame, scores: pd.DataFrame, primary_score: str) -> str:
    """How many answers and questions, and why answers lack the primary score."""
    undefined = scores[scores.failed_batches == 0][primary_score].isna().sum()
    return (f"{len(sample)} answers to {sample.groupby('dataset').qid.nunique().to_dict()} questions "
            f"({int((scores.words == 0).sum())} empty); answers without a {primary_score} score: "
            f"{int(scores[primary_score].isna().sum())}, of which {undefined} because their question has no vital "
            f"nugget (or none at all) and {int((scores.failed_batches > 0).sum())} because an assignment call failed")


ANSWER_SETS = {"non-empty answers": lambda f: f[f.words > 0], "all answers": lambda f: f}


def human_ceiling(alce: pd.DataFrame, seed: int, n_resamples: int) -> dict[str, Any]:
    """How well ALCE's utility agrees with itself: pairs of byte-identical non-empty answers to one question from
    different systems (the same text, rated twice; the data name no rater). Keys: pairs, questions, exact (share
    of equal ratings), apart_2 (share 2 or more points apart), Spearman's ρ of the two ratings (each pair entered
    in both orders, so the order is not arbitrary) with its CI over questions: the ratings' test–retest
    reliability r, pooled over questions; and ceiling = √r, the classical bound on a score's correlation with one
    rating when the rating's reliability is r (Spearman 1904, correction for attenuation)."""
    pairs = []
    for (_, qid), group in alce[alce.answer.str.strip() != ""].groupby(["dataset", "qid"], sort=True):
        rated = group[["answer", "utility"]].to_numpy()
        pairs += [(qid, a[1], b[1]) for i, a in enumerate(rated) for b in rated[i + 1:] if a[0] == b[0]]
    frame = pd.DataFrame(pairs, columns=["qid", "first", "second"])
    both = pd.concat([frame, frame.rename(columns={"first": "second", "second": "first"})], ignore_index=True)
    rho = correlation_ci(both["first"], both["second"], "spearman", seed, n_resamples, units=both.qid,
                         unit="questions")
    gap = (frame["first"] - frame["second"]).abs()
    return {"pairs": len(frame), "questions": frame.qid.nunique(), "exact": float((gap == 0).mean()),
            "apart_2": float((gap >= 2).mean()), **{k: rho[k] for k in ("r", "ci_low", "ci_high", "ci_over")},
            "ceiling": float(np.sqrt(rho["r"])) if rho["r"] > 0 else float("nan")}


def alce_correlations(scores: pd.DataFrame, columns: Sequence[str], seed: int, n_resamples: int,
                      ceiling: Mapping[str, Any]) -> pd.DataFrame:
    """Each score's agreement with human utility, on the non-empty answers and on all of them: the mean over
    questions of the within-question Spearman ρ (questions where either side is constant have none and are
    counted: their number is the undefined share of this statistic), with a CI over the questions kept, beside the
    pooled ρ over all answers with a CI over questions and the share of its resamples where ρ was undefined (NaN
    when there was no interval); and the human ceiling (:func:`human_ceiling`)."""
    rows = []
    for answers, select in ANSWER_SETS.items():
        part = select(scores)
        for column in columns:
            both = part.dropna(subset=[column, "utility"])
            per_question = validity.document_correlations(both, "qid", column, "utility")
            within = validity.within_unit_correlation(both, "qid", column, "utility", "spearman", seed, n_resamples,
                                                      "questions")
            pooled = correlation_ci(both[column], both["utility"], "spearman", seed, n_resamples, units=both.qid,
                                    unit="questions")
            rows.append({"answers": answers, "score": column, "answers scored": len(both),
                         "questions": both.qid.nunique(), "questions with a within ρ": len(per_question),
                         "within ρ": within.value, "within ci_low": within.low, "within ci_high": within.high,
                         "pooled ρ": pooled["r"], "pooled ci_low": pooled["ci_low"],
                         "pooled ci_high": pooled["ci_high"],
                         "pooled undefined resamples": pooled.get("undefined_share", np.nan),
                         "human ceiling ρ": ceiling["ceiling"]})
    return pd.DataFrame(rows).set_index(["answers", "score"])


def run_monitor(db: Path, judge: Gateway, answers: pd.DataFrame, design: rag.LogDesign, sample_rate: float,
                seed: int, judge_name: str = monitor.DEFAULT_JUDGE) -> dict[str, int]:
    """Fill a fresh simulated log and run ``study-monitor run --judge judge_name`` for each day and the recheck day,
    as cron would: the exit status per day (printed as it goes)."""
    if db.exists():
        db.unlink()  # the simulation starts from an empty log on every run
    monitor.init_database(db)
    with closing(monitor.connect(db)) as connection:
        monitor.add_queries(connection, monitor.simulated_log(answers, design.days, design.per_day, design.degraded,
                                                              recheck_day=design.recheck))
    statuses = {}
    for day in [*design.days, design.recheck]:
        statuses[day] = monitor.main(["--db", str(db), "run", "--date", day, "--sample-rate", str(sample_rate),
                                      "--seed", str(seed), "--judge", judge_name], gateway=judge)
        print(f"exit status {statuses[day]}\n")
    return statuses


def monitor_rules(per_query: pd.DataFrame, summary: pd.DataFrame, degraded: str, target: float,
                  baseline_days: int = monitor.BASELINE_DAYS, limit_sds: float = monitor.LIMIT_SDS) -> pd.DataFrame:
    """Per judged day: the overall mean, the absolute target and the control limit (:func:`lib.monitor.control_limit`,
    NaN while the baseline is too short), which rule flags the day, and whether it is the degraded day."""
    rows = []
    for r in summary.itertuples():
        limit = monitor.control_limit(per_query, r.day, int(r.judged), baseline_days, limit_sds)
        rows.append({"day": r.day, "judged": int(r.judged), "overall": r.overall, "target": target,
                     "control_limit": limit.limit if limit else np.nan,
                     "baseline_items": limit.baseline_items if limit else 0,
                     "below_target": bool(r.overall < target),
                     "below_control_limit": bool(limit is not None and r.overall < limit.limit),
                     "degraded": r.day == degraded})
    return pd.DataFrame(rows)


# the rows of monitor_plan the summary reads
DECLARED_DROP, MEASURED_DROP = "declared", "measured (fixed − broken, same topics)"


def monitor_plan(per_query: pd.DataFrame, logged_per_day: int, drops: Mapping[str, float],
                 rate: float = monitor.DEFAULT_SAMPLE_RATE, limit_sds: float = monitor.LIMIT_SDS,
                 target_power: float = 0.8) -> pd.DataFrame:
    """The relative rule's power at sample rate ``rate`` on ``logged_per_day`` queries a day, for each named drop
    of the day's mean overall, with the per-item SD of every judged item
    (:func:`lib.analysis.power.control_limit_power`), and the items a day needed for ``target_power``."""
    scores = per_query[per_query.ok == 1].overall
    sd = float(scores.std(ddof=1))
    items = math.ceil(rate * logged_per_day)
    return pd.DataFrame([{"drop": name, "size": size, "per-item SD": sd, "items judged": len(scores),
                          "items a day at the default rate": items,
                          "power": control_limit_power(size, sd, items, limit_sds) if size > 0 else np.nan,
                          f"items a day for power {target_power:g}":
                              items_for_control_limit(size, sd, limit_sds, target_power) if size > 0 else np.nan}
                         for name, size in drops.items()]).set_index("drop")


CAUGHT = {True: "caught", False: "NOT caught"}


def monitor_verdict(rules: pd.DataFrame) -> str:
    """Which rule flagged the degraded day, and which other days each rule flagged."""
    degraded = rules[rules.degraded].iloc[0]
    others = rules[~rules.degraded]
    parts = []
    for rule, column in (("absolute target", "below_target"), ("control limit", "below_control_limit")):
        caught = CAUGHT[bool(degraded[column])]
        false_alarms = others.day[others[column]].tolist()
        parts.append(f"{rule}: degraded day {degraded.day} {caught}; other days flagged: {false_alarms or 'none'}")
    return "\n".join(parts)


def nugget_scores_table(alce_scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """The ``nugget_scores`` table: the ALCE answers' nugget scores with the judge model."""
    return alce_scores[list(tables.SCHEMAS["nugget_scores"])[:-1]].assign(model=model)


def monitor_days_table(summary: pd.DataFrame, rules: pd.DataFrame, model: str) -> pd.DataFrame:
    """The ``monitor_days`` table: the daily summary with the control limit, the degraded flag and the judge."""
    joined = summary.merge(rules[["day", "control_limit", "degraded"]], on="day", how="left")
    return joined[list(tables.SCHEMAS["monitor_days"])[:-1]].assign(model=model)


# ---------------------------------------------------------------------------------------------------------------
# Findings: every decision of the chapter, made here from its tables; the prose below only formats them.

CHAPTER = "05"
PRIMARY = f"{CHAPTER}.primary"

# What the report at commit cd3530b (outputs/notebooks/05_nugget_evaluation.ipynb, "What the numbers say") stated or
# implied for each question, by verdict key. Keys it did not state are new, not changed: the human ceiling (stated as
# a bound, not against a target), the share of questions with a vital nugget, the with/without-notes comparisons
# (it tested shown against held-out nuggets over nuggets instead) and the pooled ρ (stated without an interval
# and set aside as mixing questions).
EARLIER: dict[str, str] = {
    "05.primary": "undetermined",                     # "this run cannot decide it" (no question with a within ρ)
    "05.alce.all.within": "undetermined",             # 0.35, no interval (6 questions)
    "05.alce.length.within": "undetermined",          # 0.07 (−0.31 to 0.45)
    "05.rag25.importance.kappa": "undetermined",      # κ 0.01, no interval (2 topics)
    "05.monitor.release.overall": "undetermined",     # +0.009 on the same topics: "differences of that size are noise"
    "05.monitor.release.groundedness": "undetermined",  # +0.020, read beside the same sentence
}

# What commit 155ae75 (the last run before issue #35's budget cuts: two creation passes, the monitor's five-metric
# judge) decided for the verdicts those cuts could move, by key.
BEFORE_THE_CUTS: dict[str, str] = {
    "05.primary": "undetermined",                         # 0.20, no interval (5 questions)
    "05.alce.all.within": "undetermined",                 # 0.35, no interval (6 questions)
    "05.alce.all.pooled": "holds",                        # 0.43 (0.10 to 0.65)
    "05.alce.vital.pooled": "undetermined",               # 0.11 (−0.20 to 0.44)
    "05.alce.importance.vital_questions": "holds",        # 0.92 (0.75 to 1.00)
    "05.alce.importance.vital_questions.argmax": "fails",  # 0.17 (0.00 to 0.42)
    "05.alce.vital_argmax.within": "undetermined",        # no question with a within ρ
    "05.monitor.release.overall": "undetermined",         # +0.009, no interval (2 topics)
    "05.monitor.release.groundedness": "undetermined",    # +0.020, no interval (2 topics)
}

# the all-nugget score, the trivial baseline, and the vital score with importance as written, beside the primary score
SECONDARY_SCORE, LENGTH, VITAL_ARGMAX = "all", "words", "vital_argmax"


@dataclass(frozen=True)
class PairedDifference:
    """The mean over independent units of a paired difference d_u, its percentile bootstrap interval over the units
    and the exact sign-flip test one-sided each way (``p`` for d > 0, ``p_against`` for d < 0; None: no test)."""
    interval: Interval
    p: float | None
    p_against: float | None
    test: str


def paired_difference(differences: pd.Series, unit: str, seed: int, n_resamples: int) -> PairedDifference:
    """``differences`` indexed by unit: their mean with an interval over the units
    (:func:`lib.analysis.stats.unit_bootstrap`) and the sign-flip test of the mean difference
    (:func:`lib.analysis.stats.sign_flip_test`; Fisher 1935) in each direction. Neither an interval nor a test with
    fewer than :data:`lib.analysis.stats.MIN_CI_UNITS` units: the study states no verdict from so few."""
    values = differences.to_numpy(dtype=float)
    interval = unit_bootstrap(np.mean, [values], differences.index.to_numpy(), unit, seed, n_resamples)
    if interval.units < MIN_CI_UNITS:
        return PairedDifference(interval, None, None, "")
    greater = sign_flip_test(values, seed, alternative="greater")
    less = sign_flip_test(values, seed, alternative="less")
    return PairedDifference(interval, greater.p, less.p, greater.method)


def holm_family(results: Sequence[PairedDifference]) -> list[PairedDifference]:
    """The results with ``p`` and ``p_against`` Holm-adjusted over one family holding both directions of every test
    (:func:`lib.analysis.comparisons.holm_both_directions`); a result without a test stays without one and does not
    count."""
    p, p_against = holm_both_directions([np.nan if r.p is None else r.p for r in results],
                                        [np.nan if r.p_against is None else r.p_against for r in results])
    tested = sum(r.p is not None for r in results)
    return [r if r.p is None else replace(r, p=p[i], p_against=p_against[i], test=f"{r.test}, Holm over {tested}")
            for i, r in enumerate(results)]


def assignment_differences(labels: pd.DataFrame) -> pd.Series:
    """Per topic of the triad check (``labels``: :func:`lib.triads.nugget_labels`): the mean support value in the notes
    (:data:`lib.nuggets.SUPPORT_VALUE`) of the nuggets created from the clean answer minus that of the injected
    sentences that state facts absent from the notes (origin ``unsupported``). Only labelled nuggets count; a topic
    without both kinds is left out."""
    rows = labels[labels.origin.isin(["answer", "unsupported"]) & labels.support.notna()]
    value = rows.assign(value=rows.support.map(nug.SUPPORT_VALUE))
    means = value.pivot_table(index="qid", columns="origin", values="value", aggfunc="mean")
    means = means.reindex(columns=["answer", "unsupported"]).dropna()
    return (means["answer"] - means["unsupported"]).rename("answer − unsupported")


def release_differences(per_query: pd.DataFrame, broken_day: str, fixed_day: str) -> pd.DataFrame:
    """Per query judged under both releases (:func:`lib.monitor.release_comparison`): fixed − broken for each metric
    the judge measures and for ``overall``, their mean (as :func:`lib.monitor.overall_score` defines an item's)."""
    table, _ = monitor.release_comparison(per_query, broken_day, fixed_day)
    difference = table.xs("fixed", axis=1, level="release") - table.xs("broken", axis=1, level="release")
    measured = difference[list(monitor.METRICS)].dropna(axis=1, how="all")
    return measured.assign(overall=lambda d: d.mean(axis=1))


@dataclass(frozen=True)
class AlceEvidence:
    """ALCE values the prose states beside the verdicts (non-empty answers unless said)."""
    primary_score: str
    questions: int                   # questions asked
    questions_with_score: int        # with a primary score on some non-empty answer
    questions_to_ask: int | None     # for the plan's questions at this run's usable share; None: none usable
    answers_scored: int              # non-empty answers with a primary score
    secondary_answers_scored: int
    pooled: float                    # the primary score's ρ pooled over answers of different questions
    with_empty_within: float         # the primary score's mean within ρ with the empty answers (scored 0 by rule)
    with_empty_questions: int
    vital_nuggets: int               # automatic nuggets vital at the threshold, and as the judge wrote them, of
    vital_nuggets_argmax: int
    nuggets: int
    ceiling_r: float                 # ρ of two ratings of byte-identical answers, its interval and count
    ceiling_low: float
    ceiling_high: float
    ceiling_questions: int
    ceiling_pairs: int
    ceiling_exact: float             # share of those pairs rated equally
    ceiling_apart_2: float           # share 2 or more points apart


@dataclass(frozen=True)
class CreationEvidence:
    """How nugget creation went over the ALCE questions."""
    queries: int
    nuggets: int
    merged: int
    unsupported: int
    over_length: int
    stopped: dict[str, int]


@dataclass(frozen=True)
class MonitorEvidence:
    """The monitor's day-level rules and the power of its control limit (evidence; the days are too few for a
    verdict on the rule: one broken day)."""
    judge: str                       # the study-monitor judge that read the log
    degraded_day: str
    degraded_overall: float
    normal_low: float                # the other days' overall means, lowest and highest
    normal_high: float
    target: float
    below_target: bool
    control_limit: float             # NaN: too short a baseline
    baseline_items: int
    below_control_limit: bool
    topics: int                      # topics judged under both releases
    drop: dict[str, float]           # fixed − broken per measured metric and overall, mean over those topics
    declared_drop: float
    declared_power: float            # the control limit's power for the declared drop at the default rate
    measured_drop: float
    measured_power: float            # NaN: the fixed release did not score higher
    items_for_power: float           # judged items a day for power 0.8 at the measured drop
    items_a_day: int                 # items a day at the command's default rate
    per_item_sd: float
    items_judged: int
    logged_per_day: int


# ---------------------------------------------------------------------------------------------------------------
# Both RAG triads on clean and defective answers (lib.triads): declared in issue #35 before their run.

TRIAD_SYSTEMS = {"traditional": "traditional RAG triad (one call, E[g] of each grade)",
                 "nuggetized": "nuggetized RAG triad (importance-weighted nugget labels)"}
TRIAD_CONSTRUCTS = {"unsupported": "sentences stating facts absent from the context",
                    "irrelevant": "sentences about another topic"}
CONSTRUCTION_SCORE = {"unsupported": "cos_notes", "irrelevant": "cos_query"}  # the MiniLM reading of each defect


def triad_monitor_plan(scores: pd.DataFrame, logged_per_day: int, rate: float = monitor.DEFAULT_SAMPLE_RATE,
                       limit_sds: float = monitor.LIMIT_SDS, target_power: float = 0.8) -> pd.DataFrame:
    """Each triad's reading of each defect as a monitor would use it: the mean drop over topics of the component the
    defect is built to lower (clean − defective), the per-item SD of the clean answers' scores over topics, and the
    control-limit rule's power to catch that drop at sample rate ``rate`` of ``logged_per_day`` queries
    (:func:`lib.analysis.power.control_limit_power`), with the items a day ``target_power`` needs. A broken release
    that adds unsupported sentences is what the unsupported row's drop stands for."""
    table = triads.drops(scores)
    clean = scores[scores.variant == "clean"]
    items = math.ceil(rate * logged_per_day)
    rows = []
    for triad in triads.TRIADS:
        for defect, component in triads.DECLARED.items():
            part = table[(table.triad == triad) & (table.defect == defect) & (table.component == component)]
            sd = float(clean[(clean.triad == triad) & (clean.component == component)].score.std(ddof=1))
            drop = float(part["drop"].mean())
            usable = drop > 0 and sd > 0
            rows.append({"triad": triad, "defect": defect, "component": component, "topics": len(part),
                         "mean drop": drop, "per-item SD": sd, "items a day at the default rate": items,
                         "power": control_limit_power(drop, sd, items, limit_sds) if usable else np.nan,
                         f"items a day for power {target_power:g}":
                             items_for_control_limit(drop, sd, limit_sds, target_power) if usable else np.nan})
    return pd.DataFrame(rows)


def next_run_sizes(rows: Sequence[Verdict], families: Mapping[str, int] | None = None, power: float = 0.8,
                   level: float = 0.95) -> pd.DataFrame:
    """For each undetermined row with an interval, the units a next run would need to decide it with probability
    ``power`` if this run's estimate were the truth: a normal approximation with this run as the pilot (SE = the
    interval's width / 2·z_{(1+level)/2}, shrinking as 1/√n), n = max(MIN_CI_UNITS, ⌈n₀ · ((z_crit + z_power) · SE /
    d)²⌉). As :func:`lib.verdicts.decide` decides: a row with a test needs p < α/k, the first step of its Holm family
    of k tests (``families`` by key, 1 when absent; z_crit = z_{1−α/k}, d = |estimate − threshold|); a row without
    one needs its interval clear of the threshold (z_crit = z_{(1+level)/2}, same d), or, when its estimate lies in
    its blind band, inside the band ("blind" or "ruled out": d = margin − |estimate − threshold|). Sized after this
    run, for a next one; a next run that keeps these units looks at them a second time."""
    families = families or {}
    z_interval, z_power = float(norm.ppf((1 + level) / 2)), float(norm.ppf(power))
    out = []
    for row in rows:
        if row.verdict != "undetermined" or not (np.isfinite(row.ci_low) and np.isfinite(row.ci_high)):
            continue
        se = (row.ci_high - row.ci_low) / (2 * z_interval)
        offset = abs(row.estimate - row.threshold)
        if row.p is not None and np.isfinite(row.p):
            k = families.get(row.key, 1)
            z_crit, distance, decided_by = float(norm.ppf(1 - row.alpha / k)), offset, (
                f"one-sided test at α {row.alpha:g}" + (f"/{k} (first Holm step)" if k > 1 else ""))
        elif offset > row.margin:
            z_crit, distance, decided_by = z_interval, offset, f"{level:.0%} interval clear of {row.threshold:g}"
        else:
            z_crit, distance, decided_by = z_interval, row.margin - offset, (
                f"{level:.0%} interval inside {row.threshold:g} ± {row.margin:g}")
        needed = (max(MIN_CI_UNITS, math.ceil(row.units * ((z_crit + z_power) * se / distance) ** 2))
                  if distance > 0 else np.nan)
        out.append({"row": row.key, "decided by": decided_by, "estimate": row.estimate, "SE": se,
                    "unit": row.unit, "units now": row.units, f"units for power {power:g}": needed})
    return pd.DataFrame(out, columns=["row", "decided by", "estimate", "SE", "unit", "units now",
                                      f"units for power {power:g}"])


def _topic_auc(values: pd.DataFrame, score: str, seed: int, n_resamples: int) -> Interval:
    """Mean over topics (``entry_id``) of the AUC of the ``real`` rows over the others on ``score``
    (:func:`lib.known_answers.entry_auc`), with its interval over topics."""
    per_topic = [(t, known_answers.entry_auc(p.loc[p.kind == "real", score], p.loc[p.kind != "real", score]))
                 for t, p in values.groupby("entry_id", sort=False)]
    per_topic = [(t, a) for t, a in per_topic if np.isfinite(a)]
    return unit_bootstrap(np.mean, [np.array([a for _, a in per_topic])], [t for t, _ in per_topic], "topics", seed,
                          n_resamples)


def triad_construction_verdicts(construction: pd.DataFrame, margin: float, seed: int, n_resamples: int
                                ) -> tuple[Verdict, ...]:
    """Each defect shown worse without a judge (``05.triad.construction.<defect>``): AUC over topics of the clean
    answer's sentences over the injected ones on MiniLM cosine to the notes (unsupported) or to the query
    (irrelevant), against 0.5 ± ``margin``."""
    out = []
    for defect in triads.DEFECTS:
        score = CONSTRUCTION_SCORE[defect]
        auc = _topic_auc(construction[construction.kind.isin(["real", defect])], score, seed, n_resamples)
        out.append(verdict(CHAPTER, f"triad.construction.{defect}", f"{defect} sentences (construction)",
                           f"{TRIAD_CONSTRUCTS[defect]}: the answer's own sentences are closer (MiniLM, {score})",
                           Claim("known answer", 0.5, "higher", margin), f"AUC (answer sentence over injected, "
                           f"{score})", auc.value, auc.low, auc.high, "topics", auc.units, "triad_construction"))
    return tuple(out)


def creation_verdict(recall: pd.DataFrame, alpha: float, seed: int, n_resamples: int) -> Verdict:
    """``05.triad.creation.notes_recall``: do the nuggets created from an answer written from the notes state more of
    the notes than the query alone does (``recall``: :func:`lib.triads.creation_recall`)? Mean over topics of the
    difference, exact sign-flip test over topics, declared before the run (confirmatory)."""
    d = (recall.recall_created - recall.recall_query).to_numpy()
    mean = unit_bootstrap(np.mean, [d], recall.qid.tolist(), "topics", seed, n_resamples)
    above, below = (sign_flip_test(d, seed, alternative=side) for side in ("greater", "less"))
    return verdict(CHAPTER, "triad.creation.notes_recall", "nugget creation (from the answer, one pass)",
                   "the nuggets of an answer written from the notes state more of the notes than the query alone",
                   Claim("known behaviour", 0.0, "higher", alpha=alpha),
                   "mean share of notes matched (created nuggets − query alone)", mean.value, mean.low, mean.high,
                   "topics", mean.units, "triad_creation", test=above.method, p=above.p, p_against=below.p,
                   confirmatory=True)


def triad_verdicts(drops: pd.DataFrame, margin: float, alpha: float, seed: int, n_resamples: int
                   ) -> tuple[Verdict, ...]:
    """The triads' known answers and their comparison (``drops``: :func:`lib.triads.drops`).

    ``05.triad.<triad>.<component>.<defect>`` for the component each defect is built to lower
    (:data:`lib.triads.DECLARED`): per topic 1 when the clean answer scores above the defective one, ½ when equal, 0
    below; mean over topics against 0.5 ± ``margin``. ``05.triad.nuggetized.vs_traditional.<defect>``: per topic the
    nuggetized triad's drop minus the traditional one's (both 0–1), mean over topics, exact sign-flip test over topics
    in the declared direction (higher) and the opposite, Holm over both defects and both directions. All were
    declared before the run, on topics no triad choice was made on: confirmatory."""
    out = []
    for triad in triads.TRIADS:
        for defect, component in triads.DECLARED.items():
            part = drops[(drops.triad == triad) & (drops.component == component) & (drops.defect == defect)]
            wins = np.sign(part["drop"].to_numpy()) * 0.5 + 0.5
            auc = unit_bootstrap(np.mean, [wins], part.qid.tolist(), "topics", seed, n_resamples)
            out.append(verdict(
                CHAPTER, f"triad.{triad}.{component}.{defect}", TRIAD_SYSTEMS[triad],
                f"{component} lower for an answer with {TRIAD_CONSTRUCTS[defect]} than for the clean answer",
                Claim("known answer", 0.5, "higher", margin), "AUC (clean over defective)", auc.value, auc.low,
                auc.high, "topics", auc.units, "triad_scores", confirmatory=True,
                depends_on=[f"05.triad.construction.{defect}"]))
    differences, tests = {}, {}
    for defect, component in triads.DECLARED.items():
        wide = (drops[(drops.component == component) & (drops.defect == defect)]
                .pivot(index="qid", columns="triad", values="drop").dropna())
        differences[defect] = wide["nuggetized"] - wide["traditional"]
        tests[defect] = [sign_flip_test(differences[defect].to_numpy(), seed, alternative=side)
                         for side in ("greater", "less")]
    p, p_against = holm_both_directions([tests[d][0].p for d in triads.DEFECTS],
                                        [tests[d][1].p for d in triads.DEFECTS])
    for i, defect in enumerate(triads.DEFECTS):
        d = differences[defect]
        mean = unit_bootstrap(np.mean, [d.to_numpy()], d.index.tolist(), "topics", seed, n_resamples)
        out.append(verdict(
            CHAPTER, f"triad.nuggetized.vs_traditional.{defect}", TRIAD_SYSTEMS["nuggetized"],
            f"sees {TRIAD_CONSTRUCTS[defect]} better than the traditional triad: its {triads.DECLARED[defect]} drops "
            f"more", Claim("comparison", 0.0, "higher", alpha=alpha),
            "mean drop difference (nuggetized − traditional, 0–1)", mean.value, mean.low, mean.high, "topics",
            mean.units, "triad_scores", test=f"{tests[defect][0].method}, Holm over both defects and directions",
            p=p[i], p_against=p_against[i], confirmatory=True,
            depends_on=[f"05.triad.{t}.{triads.DECLARED[defect]}.{defect}" for t in triads.TRIADS]))
    return tuple(out)


@dataclass(frozen=True)
class Findings:
    """Chapter 05's decisions (:class:`lib.verdicts.Verdict`) and the evidence its prose states."""
    primary: Verdict
    vital_questions: tuple[Verdict, ...]   # importance read at the threshold, then as written
    ceiling: Verdict
    primary_pooled: Verdict
    secondary_within: Verdict
    secondary_pooled: Verdict
    length_within: Verdict
    vital_argmax: Verdict
    importance: tuple[Verdict, ...]        # κ with NIST as written, at the threshold (cross-fitted); p(vital)'s AUC
    importance_readings: pd.DataFrame
    assignment: Verdict
    release_overall: Verdict
    release_groundedness: Verdict
    triad_construction: tuple[Verdict, ...]
    triads: tuple[Verdict, ...]
    triad_monitor: pd.DataFrame
    plan: Plan
    next_run: pd.DataFrame                 # the undetermined triad-check rows, sized for a next run at this spread
    dev_topics: int                        # TREC RAG25 dev topics there are to draw from
    alce: AlceEvidence
    creation: CreationEvidence
    monitor: MonitorEvidence

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict the chapter states, the primary first."""
        return (self.primary, *self.vital_questions, self.ceiling, self.primary_pooled, self.secondary_within,
                self.secondary_pooled, self.length_within, self.vital_argmax, *self.importance, self.assignment,
                self.release_overall, self.release_groundedness, *self.triad_construction, *self.triads)


def importance_auc_verdict(labelled: pd.DataFrame, margin: float, seed: int, n_resamples: int) -> Verdict:
    """``05.rag25.importance.auc``: does the judge's p(vital) rank NIST's vital nuggets above its okay ones within a
    topic, whatever the cut? Mean over topics of the within-topic AUC (:func:`_topic_auc`), interval over topics,
    against 0.5 ± ``margin`` (the blind band of the triads' known answers). Added after the κ rows were seen, to
    tell a reading without information from one whose cut does not carry over: not confirmatory."""
    shaped = labelled.assign(entry_id=labelled.qid, kind=np.where(labelled.nist == 1, "real", "okay"))
    auc = _topic_auc(shaped.dropna(subset=["p_vital"]), "p_vital", seed, n_resamples)
    return verdict(CHAPTER, "rag25.importance.auc", "judge: nugget importance (p(vital), no cut)",
                   "ranks NIST's vital nuggets above its okay ones within a topic", Claim("human labels", 0.5,
                                                                                          "higher", margin),
                   "mean within-topic AUC (vital over okay, on p(vital))", auc.value, auc.low, auc.high, "topics",
                   auc.units, "NIST nuggets with the judge's p(vital) (chapter 01, nugget_importance)")


def vital_questions_verdict(created: pd.DataFrame, column: str, suffix: str, score: str, share: float, seed: int,
                            n_resamples: int) -> Verdict:
    """Does the importance reading in ``column`` of :func:`creation_table` label some nugget vital in at least
    ``share`` of the questions (where the ``score`` score exists at all)? Interval over questions."""
    has_vital = (created[column] > 0).astype(float)
    interval = unit_bootstrap(np.mean, [has_vital.to_numpy()], created.index.to_numpy(), "questions", seed,
                              n_resamples)
    reading = IMPORTANCE_READINGS["argmax" if column == "vital" else "threshold"]
    return verdict(CHAPTER, f"alce.importance.vital_questions{suffix}", f"judge: nugget importance ({reading})",
                   f"labels some nugget vital in most questions, so the {score} score exists",
                   Claim("known behaviour", share), "share of questions with a vital nugget", interval.value,
                   interval.low, interval.high, "questions", interval.units,
                   "nugget creation per ALCE question (notebook 05, alce_created)")


def _correlation_verdict(key: str, system: str, construct: str, row: pd.Series, kind: str, claim: Claim,
                         asked: int, **flags: Any) -> Verdict:
    """A row of :func:`alce_correlations` as a verdict: ``kind`` "within" (the mean within-question ρ over the
    questions that have one) or "pooled" (ρ over all answers, its interval over questions)."""
    if kind == "within":
        return verdict(CHAPTER, key, system, construct, claim, "mean within-question Spearman ρ", row["within ρ"],
                       row["within ci_low"], row["within ci_high"], f"questions with a within ρ, of {asked} asked",
                       int(row["questions with a within ρ"]), "nugget_scores", **flags)
    return verdict(CHAPTER, key, system, construct, claim, "Spearman ρ pooled over answers", row["pooled ρ"],
                   row["pooled ci_low"], row["pooled ci_high"], "questions", int(row["questions"]), "nugget_scores",
                   **flags)


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Chapter 05's verdicts from its tables.

    ``tables``: ``alce_correlations`` (:func:`alce_correlations`), ``alce_design`` (:func:`alce_design_table`),
    ``human_ceiling`` (one row, :func:`human_ceiling`), ``alce_created`` (:func:`creation_table` with the
    threshold), ``importance`` (:func:`importance_readings`), ``nugget_importance`` (chapter 01's table,
    :func:`lib.chapters.ch01.nugget_importance`),
    ``triad_labels`` (:func:`lib.triads.nugget_labels`), ``monitor_judgments`` (:func:`lib.monitor.judgments`),
    ``monitor_rules`` (:func:`monitor_rules`), ``monitor_plan`` (:func:`monitor_plan`), ``triad_construction``
    (:func:`lib.triads.construction_scores`), ``triad_creation`` (:func:`lib.triads.creation_recall`),
    ``triad_scores`` (:func:`lib.triads.traditional` and :func:`lib.triads.nuggetized`).
    ``params``: primary_score, primary_rho, importance_kappa, vital_question_share, answers_per_question, alpha,
    power, monitor_judge, monitor_drop, degraded_day, recheck_day, logged_per_day, known_answer_margin, dev_topics,
    seed, bootstrap_resamples.

    The primary (declared before any run, so confirmatory; the pilot's questions set only the number of answers per
    question): the primary score's mean within-question ρ with ALCE utility on the non-empty answers, interval over
    questions, tested against 0 with ``primary_rho`` the smallest ρ of interest (the planner's effect); it depends on
    the share of questions with a vital nugget (where the score exists at all), the judge's agreement with NIST's
    importance labels and the human ceiling. Paired comparisons are over topics, the independent unit the nuggets
    and the monitor's items are nested in."""
    seed, resamples = int(params["seed"]), int(params["bootstrap_resamples"])
    score, rho = str(params["primary_score"]), float(params["primary_rho"])
    correlations = tables["alce_correlations"]
    answered, everything = correlations.xs("non-empty answers"), correlations.xs("all answers")
    asked = int(answered["questions"].max())
    # the declared question: does the score order answers as utility does (ρ > 0), ρ = primary_rho the smallest
    # effect it should detect (the planner's effect), so an interval within ±primary_rho rules such agreement out
    orders = Claim("human labels", 0.0, margin=rho)

    primary = _correlation_verdict(
        "primary", f"nugget score ({score})", "orders the answers to one question as ALCE human utility does",
        answered.loc[score], "within", orders, asked, primary=True, confirmatory=True,
        depends_on=(f"{CHAPTER}.alce.importance.vital_questions", f"{CHAPTER}.rag25.importance.kappa.threshold",
                    f"{CHAPTER}.alce.human_ceiling"))

    created = tables["alce_created"]
    vital_questions = tuple(
        vital_questions_verdict(created, column, suffix, score, float(params["vital_question_share"]), seed,
                                resamples)
        for column, suffix in ((VITAL_AT, ""), ("vital", ".argmax")))

    ceiling_row = tables["human_ceiling"].iloc[0]
    root = {k: float(np.sqrt(ceiling_row[k])) if ceiling_row[k] >= 0 else float("nan")
            for k in ("r", "ci_low", "ci_high")}
    ceiling_questions = int(ceiling_row["questions"])
    ceiling = verdict(
        CHAPTER, "alce.human_ceiling", "ALCE human utility rating",
        f"is reliable enough for a score to reach ρ {rho:g} with it (attenuation ceiling √r of its test–retest ρ)",
        Claim("human labels", rho), "√ρ of two ratings of identical answers", root["r"], root["ci_low"],
        root["ci_high"], "questions", ceiling_questions,
        "ALCE utility, byte-identical answers (lib.data.load_alce_utility)")

    primary_pooled = _correlation_verdict(
        f"alce.{score}.pooled", f"nugget score ({score})", "ranks answers as ALCE human utility does, pooled over "
        "questions (between-question differences included)", answered.loc[score], "pooled", orders, asked)
    secondary_within = _correlation_verdict(
        f"alce.{SECONDARY_SCORE}.within", f"nugget score ({SECONDARY_SCORE})",
        "orders the answers to one question as ALCE human utility does", answered.loc[SECONDARY_SCORE], "within",
        orders, asked)
    secondary_pooled = _correlation_verdict(
        f"alce.{SECONDARY_SCORE}.pooled", f"nugget score ({SECONDARY_SCORE})",
        "ranks answers as ALCE human utility does, pooled over questions", answered.loc[SECONDARY_SCORE], "pooled",
        orders, asked)
    length_within = _correlation_verdict(
        "alce.length.within", "answer length in words (trivial baseline)",
        "orders the answers to one question as ALCE human utility does", answered.loc[LENGTH], "within", orders,
        asked)

    readings = tables["importance"]
    importance = tuple(
        verdict(CHAPTER, f"rag25.importance.kappa{suffix}", f"judge: nugget importance ({IMPORTANCE_READINGS[name]})",
                "agrees with NIST's vital/okay labels of the TREC RAG25 nuggets",
                Claim("human labels", float(params["importance_kappa"])), "Cohen κ", readings.loc[name, "kappa"],
                readings.loc[name, "kappa_ci_low"], readings.loc[name, "kappa_ci_high"], "topics",
                int(readings.loc[name, "topics"]), "NIST nuggets with the judge's labels (notebook 05, importance)")
        for name, suffix in (("argmax", ""), ("threshold", ".threshold")))
    importance += (importance_auc_verdict(tables["nugget_importance"], float(params["known_answer_margin"]), seed,
                                          resamples),)
    vital_argmax = _correlation_verdict(
        "alce.vital_argmax.within", "nugget score (vital, importance as the judge wrote it)",
        "orders the answers to one question as ALCE human utility does", answered.loc[VITAL_ARGMAX], "within",
        orders, asked, depends_on=(f"{CHAPTER}.alce.importance.vital_questions.argmax",))

    gap = paired_difference(assignment_differences(tables["triad_labels"]), "topics", seed, resamples)
    assignment = verdict(
        CHAPTER, "triad.assignment.unsupported", "judge: nugget assignment (support in the notes)",
        "finds the nuggets of the answer written from the notes better supported by the notes than sentences stating "
        "facts absent from them", Claim("known answer", 0.0), "mean support value, answer nuggets − unsupported "
        "sentences", gap.interval.value, gap.interval.low, gap.interval.high, "topics", gap.interval.units,
        "nugget labels of the triad check (notebook 05, triad_labels)", test=gap.test, p=gap.p,
        p_against=gap.p_against)

    per_query = tables["monitor_judgments"]
    differences = release_differences(per_query, str(params["degraded_day"]), str(params["recheck_day"]))
    drop = float(params["monitor_drop"])
    monitor_judge = str(params["monitor_judge"])
    releases = holm_family([paired_difference(differences[metric], "topics", seed, resamples)
                            for metric in ("overall", "groundedness")])
    release_verdicts = [
        verdict(CHAPTER, f"monitor.release.{metric}", f"{monitor_judge} via study-monitor ({metric})",
                "scores the broken release (answers written without the documents) below the fixed one on the "
                "same topics", Claim("known behaviour", 0.0, margin=margin), "mean fixed − broken",
                r.interval.value, r.interval.low, r.interval.high, "topics", r.interval.units,
                "monitor judgments (outputs/monitor/05_simulated_log.sqlite)", test=r.test, p=r.p,
                p_against=r.p_against)
        for metric, margin, r in zip(("overall", "groundedness"), (drop, 0.0), releases, strict=True)]

    design = tables["alce_design"]
    k = int(params["answers_per_question"])
    needed = int(design.loc[k, "questions needed"])
    kept = int(answered.loc[score, "questions with a within ρ"])
    plan = Plan(f"{score} score vs human utility within questions", "question", kept, needed,
                f"paired t-test on the mean within-question ρ (lib.analysis.power.units_for_t_test): ρ {rho:g} told "
                f"from 0 with pilot SD {design.loc[k, 'pilot SD of within-question ρ']:.2f} at {k} answers a "
                f"question, α {params['alpha']:g}, power {params['power']:g}").with_outcome(primary.verdict)

    alce_evidence = AlceEvidence(
        primary_score=score, questions=asked, questions_with_score=int(answered.loc[score, "questions"]),
        questions_to_ask=math.ceil(needed * asked / kept) if kept else None,
        answers_scored=int(answered.loc[score, "answers scored"]),
        secondary_answers_scored=int(answered.loc[SECONDARY_SCORE, "answers scored"]),
        pooled=float(answered.loc[score, "pooled ρ"]),
        with_empty_within=float(everything.loc[score, "within ρ"]),
        with_empty_questions=int(everything.loc[score, "questions with a within ρ"]),
        vital_nuggets=int(created[VITAL_AT].sum()), vital_nuggets_argmax=int(created["vital"].sum()),
        nuggets=int(created["automatic nuggets"].sum()),
        ceiling_r=float(ceiling_row["r"]), ceiling_low=float(ceiling_row["ci_low"]),
        ceiling_high=float(ceiling_row["ci_high"]), ceiling_questions=ceiling_questions,
        ceiling_pairs=int(ceiling_row["pairs"]), ceiling_exact=float(ceiling_row["exact"]),
        ceiling_apart_2=float(ceiling_row["apart_2"]))

    creation = CreationEvidence(
        queries=len(created), nuggets=int(created["automatic nuggets"].sum()), merged=int(created["merged"].sum()),
        unsupported=int(created["not from the sources"].sum()), over_length=int(created["over 12 words"].sum()),
        stopped={str(k): int(v) for k, v in created["stopped"].value_counts().sort_index().items()})

    rules, monitor_plan_table = tables["monitor_rules"], tables["monitor_plan"]
    degraded = rules[rules["degraded"]].iloc[0]
    normal = rules[~rules["degraded"]]
    declared, measured = monitor_plan_table.loc[DECLARED_DROP], monitor_plan_table.loc[MEASURED_DROP]
    monitor_evidence = MonitorEvidence(
        judge=monitor_judge, degraded_day=str(degraded["day"]), degraded_overall=float(degraded["overall"]),
        normal_low=float(normal["overall"].min()), normal_high=float(normal["overall"].max()),
        target=float(degraded["target"]), below_target=bool(degraded["below_target"]),
        control_limit=float(degraded["control_limit"]), baseline_items=int(degraded["baseline_items"]),
        below_control_limit=bool(degraded["below_control_limit"]), topics=len(differences),
        drop={str(k): float(v) for k, v in differences.mean().items()}, declared_drop=float(declared["size"]),
        declared_power=float(declared["power"]), measured_drop=float(measured["size"]),
        measured_power=float(measured["power"]), items_for_power=float(measured["items a day for power 0.8"]),
        items_a_day=int(declared["items a day at the default rate"]), per_item_sd=float(declared["per-item SD"]),
        items_judged=int(declared["items judged"]), logged_per_day=int(params["logged_per_day"]))

    margin = float(params["known_answer_margin"])
    triad_construction = triad_construction_verdicts(tables["triad_construction"], margin, seed, resamples)
    triad_rows = (creation_verdict(tables["triad_creation"], float(params["alpha"]), seed, resamples),
                  *triad_verdicts(triads.drops(tables["triad_scores"]), margin, float(params["alpha"]), seed,
                                  resamples))
    return Findings(primary, vital_questions, ceiling, primary_pooled, secondary_within, secondary_pooled,
                    length_within, vital_argmax, importance, readings, assignment, release_verdicts[0],
                    release_verdicts[1], triad_construction, triad_rows,
                    triad_monitor_plan(tables["triad_scores"], int(params["logged_per_day"])), plan,
                    next_run_sizes((assignment, *triad_rows),
                                   {f"{CHAPTER}.triad.nuggetized.vs_traditional.{d}": 2 * len(triads.DEFECTS)
                                    for d in triads.DEFECTS}), int(params["dev_topics"]), alce_evidence,
                    creation, monitor_evidence)


# ---------------------------------------------------------------------------------------------------------------
# Prose: formatters of the findings record; they decide nothing (a phrase for a flag is looked up, not chosen).

FLAGS = {True: "flags", False: "does not flag"}
def primary_text(f: Findings) -> str:
    """The primary question's answer: its verdict with the evidence, how many questions have the score at all and a
    within ρ, the plan (whether the design reaches its precision and whether the result decides), how many
    questions that means asking at this run's share of usable ones, and the reliability of the human rating."""
    a, score = f.alce, f.alce.primary_score
    to_ask = (f"at this run's share of usable questions ({f.plan.units_have} of {a.questions}) that means asking "
              f"about {a.questions_to_ask}" if a.questions_to_ask is not None
              else "at this run's share (none usable) no number of questions would do")
    return (f"{verdicts.sentence(f.primary)} {count_text(a.questions_with_score, 'question')} of {a.questions} have a "
            f"{score} score at all (a question whose nuggets include no {score} one has none) and "
            f"{f.primary.units} a within ρ (neither side constant). Plan: {f.plan.text()} For the plan's questions, "
            f"{to_ask}. The human rating itself: two ratings of the same text correlate at ρ {a.ceiling_r:.2f} "
            f"({interval_text(a.ceiling_low, a.ceiling_high)}, {a.ceiling_questions} questions, {a.ceiling_pairs} "
            f"pairs, pooled over questions), so a score's ρ with one rating can hardly exceed its square root: "
            f"{verdicts.sentence(f.ceiling)}")


def importance_text(f: Findings) -> str:
    """Both readings of importance against NIST's labels: the verdicts, the cut, and the vital shares."""
    written, cut = f.importance_readings.loc["argmax"], f.importance_readings.loc["threshold"]
    return (f"{count_text(int(written['nuggets']), 'NIST nugget')} of {count_text(int(written['topics']), 'topic')}, "
            f"one call a topic; the cut chosen on these topics, so the ALCE questions it is applied to are fresh): "
            f"{verdicts.sentence(f.importance[0])} {verdicts.sentence(f.importance[1])} "
            f"{verdicts.sentence(f.importance[2])} As written, the judge calls "
            f"{written['judge_vital_share']:.0%} of the nuggets vital, at the cut (read on topics it was not fit on) "
            f"{cut['judge_vital_share']:.0%}, where NIST calls {written['nist_vital_share']:.0%} vital; fit on every "
            f"topic, the cut is p(vital) ≥ {cut['threshold']:.3f}.")


def summary(f: Findings) -> str:
    """Chapter 05's "What the numbers say" as Markdown bullets, every number and verdict read from ``f``."""
    a, c, m = f.alce, f.creation, f.monitor
    limit = (f"({m.control_limit:.3f}, {m.baseline_items} baseline items) {FLAGS[m.below_control_limit]} it"
             if np.isfinite(m.control_limit) else "has no baseline yet")
    measured = (f"the measured drop with {m.measured_power:.2f}, and catching it with power 0.8 would need "
                f"{m.items_for_power:.0f} judged items a day, where the log has {m.logged_per_day} queries a day."
                if np.isfinite(m.measured_power)
                else "the fixed release did not score higher, so no drop was measured.")
    lines = [
        "**Primary (declared before the run)**: " + primary_text(f),
        "**Importance, read two ways** (" + importance_text(f) + ")",
        "**Where the primary's vital nuggets come from**: " + verdicts.sentence(f.vital_questions[0])
        + f" At the threshold the judge labels {a.vital_nuggets} of {a.nuggets} automatic ALCE nuggets vital; as "
          f"written, {a.vital_nuggets_argmax}. " + verdicts.sentence(f.vital_questions[1]) + " "
        + verdicts.sentence(f.vital_argmax),
        f"Beside it, on the same non-empty answers: {verdicts.sentence(f.secondary_within)} "
        f"{verdicts.sentence(f.length_within)} Pooled over answers of different questions (between-question "
        f"differences included; {count_text(a.answers_scored, 'answer')} with a {a.primary_score} score, "
        f"{a.secondary_answers_scored} with an '{SECONDARY_SCORE}' score): {verdicts.sentence(f.primary_pooled)} "
        f"{verdicts.sentence(f.secondary_pooled)} With the empty answers (scored 0 by rule, without a call) the "
        f"{a.primary_score} score's mean within-question ρ is {number_text(a.with_empty_within)} over "
        f"{count_text(a.with_empty_questions, 'question')}. The two ratings of a byte-identical answer agree exactly "
        f"in {a.ceiling_exact:.0%} of {a.ceiling_pairs} pairs and are 2 or more points apart in "
        f"{a.ceiling_apart_2:.0%}.",
        f"**Creation** ({count_text(c.queries, 'ALCE question')}, one pass over the answers): {c.nuggets} nuggets, "
        f"{c.merged} merged as near-duplicates, {c.unsupported} dropped as stated in no source sentence, "
        f"{c.over_length} over the 12 words asked for (kept whole); stopped: "
        + ", ".join(f"{k} {v}" for k, v in c.stopped.items()) + ".",
        "**Assignment** (on the triad topics' nugget labels): " + verdicts.sentence(f.assignment),
        f"**Monitor** (study-monitor with the {m.judge} judge): on the broken-release day the overall mean was "
        f"{m.degraded_overall:.3f} against "
        f"{m.normal_low:.3f}–{m.normal_high:.3f} on the other days; the absolute target {m.target:g} "
        f"{FLAGS[m.below_target]} it, the control limit {limit}. On the same "
        f"{count_text(m.topics, 'topic')}, fixed − broken: "
        + ", ".join(f"{metric.replace('_', ' ')} {value:+.3f}" for metric, value in m.drop.items()) + ". "
        f"{verdicts.sentence(f.release_overall)} {verdicts.sentence(f.release_groundedness)} At the command's "
        f"default rate the log gives {count_text(m.items_a_day, 'item')} a day: a drop of {m.declared_drop:g} would "
        f"be caught with probability {m.declared_power:.2f} (per-item SD {m.per_item_sd:.3f} over the "
        f"{m.items_judged} items of the normal days, the baseline taken as known: optimistic with a baseline this "
        f"short); " + measured,
        "**Both RAG triads** (declared before their run, confirmatory): " + triads_text(f),
    ]
    return "\n".join(f"* {line}" for line in lines)


def triads_text(f: Findings) -> str:
    """The triad section's sentences: each defect's construction, each triad's known answer, the comparison, and
    what each triad's drop on unsupported sentences would give a monitor at the command's default rate."""
    plan = f.triad_monitor[f.triad_monitor.defect == "unsupported"]
    monitor_line = "; ".join(
        f"{row.triad} mean drop {number_text(row['mean drop'])} (per-item SD {number_text(row['per-item SD'])}): "
        + (f"power {number_text(row.power)} with {count_text(row['items a day at the default rate'], 'item')} a day, "
           f"{row['items a day for power 0.8']:.0f} a day for power 0.8" if np.isfinite(row.power)
           else "no drop to catch")
        for _, row in plan.iterrows())
    column = f.next_run.columns[-1]
    sizes = "; ".join(f"{r.row}: {count_text(int(r[column]), r.unit.removesuffix('s'))}"
                      for _, r in f.next_run.iterrows() if pd.notna(r[column]))  # an int past int64 is an object
    next_run = (f" Sized after this run for a next one (the table under Verdicts; this run's estimates taken as the "
                f"truth, power {column.rsplit(' ', 1)[-1]}): {sizes}. TREC RAG25 has "
                f"{count_text(f.dev_topics, 'dev topic')}, and a next run would look at these again."
                if sizes else "")
    return (" ".join(verdicts.sentence(v) for v in (*f.triad_construction, *f.triads))
            + f" As a nightly monitor's groundedness, for a release that adds unsupported sentences: {monitor_line}."
            + next_run)


def full_size_text(before: Mapping[str, Any], after: Mapping[str, Any], questions: int, all_questions: int) -> str:
    """What the whole ALCE set would cost at this run's rate: the judge's requests and recorded request time of
    the ALCE section (ledger counts ``before`` and ``after`` it; the same in a replay) per question, times
    ``all_questions``."""
    requests = after["requests"] - before["requests"]
    seconds = after["recorded_latency_s"] - before["recorded_latency_s"]
    per_question = requests / questions
    return (f"The ALCE section made {requests} judge requests for {questions} questions ({per_question:.1f} a "
            f"question, {seconds / requests:.1f} s of recorded request time each, summed over parallel requests); "
            f"all {all_questions} questions would take about {per_question * all_questions:,.0f} requests, "
            f"{per_question * all_questions * seconds / requests / 3600:.1f} hours of request time on this backend.")
