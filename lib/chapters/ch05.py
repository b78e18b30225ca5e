"""Chapter 05 (nugget evaluation against ALCE utility and TREC RAG25 nuggets, nightly judge monitor): the loops that
build its tables, its generated "what the numbers say" and its front-page headline. The notebook calls these; the
functions that need no LLM are tested on small hand-made tables (``tests/test_ch05.py``), the LLM steps they call on
the fake endpoint (``tests/test_nuggets.py``, ``tests/test_monitor.py``).

Vocabulary: a *topic* is a TREC RAG25 query (``qid``), a *question* an ALCE one, a *variant* the answer written with
or without the notes; assignment uses 3 grades (support / partial / not).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lib import embeddings, monitor, tables
from lib import nuggets as nug
from lib.analysis import validity
from lib.analysis.power import control_limit_power, items_for_control_limit, units_for_t_test
from lib.analysis.stats import correlation_ci, count_text, interval_over_text, nested_sample
from lib.chapters.headline import Tables, headline
from lib.llm.gateway import Gateway

VARIANTS = ("with_context", "no_context")


@dataclass(frozen=True)
class LogDesign:
    """The simulated query log's calendar: the sampled topics fill ``per_day`` queries a day; the topics of the
    degraded day are the ones evaluated nugget by nugget, and come back on the recheck day after the fix."""
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


def answer_requests(design: LogDesign, narrative: Mapping[str, str], notes: Mapping[str, list[str]]) -> pd.DataFrame:
    """One request per topic with its notes, and one without notes per topic evaluated by nuggets."""
    return pd.DataFrame([{"qid": q, "variant": "with_context", "query": narrative[q], "notes": notes[q]}
                         for q in design.topics]
                        + [{"qid": q, "variant": "no_context", "query": narrative[q], "notes": None}
                           for q in design.nugget_qids])


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
    """One query's automatic nuggets with their importance labels."""
    created: nug.Creation
    importance: list[str | None]
    importance_failures: list[nug.BatchFailure]


def nuggets_for(judge: Gateway, query: str, sources: Sequence[str], creator: Creator, call_label: str
                ) -> AutomaticNuggets:
    """Nuggets created from ``sources``, then labelled vital/okay."""
    created = creator.create(judge, query, sources, call_label)
    importance, failures = nug.label_importance(judge, query, created.nuggets, call_label=call_label)
    return AutomaticNuggets(created, importance, failures)


def automatic_nuggets(judge: Gateway, qids: Sequence[str], narrative: Mapping[str, str], answers: pd.DataFrame,
                      creator: Creator) -> dict[str, AutomaticNuggets]:
    """Per topic: nuggets created from the narrative and the topic's answers, then labelled vital/okay. (The
    topic's documents, AutoNuggetizer's sources, are not in this study's data; its notes are NIST nuggets, which
    would hand creation the answer key.)"""
    return {q: nuggets_for(judge, narrative[q],
                           [narrative[q], *answers[(answers.qid == q) & answers.answer.notna()].answer.tolist()],
                           creator, f"rag25:{q}") for q in qids}


def creation_table(auto: Mapping[Any, AutomaticNuggets], key: str = "qid") -> pd.DataFrame:
    """Per query: how creation went (nuggets, why it stopped, calls, passes, nuggets merged as near-duplicates
    and dropped as not from the sources, failures, nuggets over the 12 words asked for) and the importance labels."""
    return pd.DataFrame([{key: q, "automatic nuggets": len(a.created.nuggets), "stopped": a.created.stopped,
                          "calls": a.created.calls, "passes": a.created.passes, "merged": a.created.merged,
                          "not from the sources": a.created.unsupported,
                          "creation failures": len(a.created.failures), "over 12 words": a.created.over_length,
                          "vital": sum(i == "vital" for i in a.importance),
                          "importance failures": len(a.importance_failures)}
                         for q, a in auto.items()]).set_index(key)


def match_human_nuggets(judge: Gateway, evaluated: pd.DataFrame, auto: Mapping[str, AutomaticNuggets],
                        narrative: Mapping[str, str], threshold: float) -> pd.DataFrame:
    """``evaluated`` (the assessed NIST nuggets of the evaluated topics) with, per nugget, the best MiniLM cosine
    to an automatic nugget and the embedding match at ``threshold``, the same for the narrative as the only
    "nugget" (a baseline: what topical similarity alone earns) and the judge's LLM match (missing on failure)."""
    similarity = np.zeros(len(evaluated))
    narrative_cosine = np.zeros(len(evaluated))
    llm_covered: list[bool | None] = [None] * len(evaluated)
    for q, a in auto.items():
        rows = np.flatnonzero(evaluated.qid == q)
        texts = evaluated.nugget.iloc[rows].tolist()
        similarity[rows] = nug.embedding_match(embeddings.embed(a.created.nuggets), embeddings.embed(texts))
        narrative_cosine[rows] = nug.embedding_match(embeddings.embed([narrative[q]]), embeddings.embed(texts))
        matched, _ = nug.llm_match(judge, narrative[q], a.created.nuggets, texts, call_label=f"rag25:{q}")
        for r, m in zip(rows, matched, strict=True):
            llm_covered[r] = m
    return evaluated.assign(best_cosine=similarity, embedding_match=similarity >= threshold,
                            narrative_cosine=narrative_cosine, narrative_match=narrative_cosine >= threshold,
                            llm_match=pd.array(llm_covered, dtype="boolean"))


def recall_table(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Recall of the human nuggets per topic, shown as notes or held out: embedding, narrative-only, LLM."""
    return evaluated.groupby(["qid", "in_context"]).agg(
        nuggets=("nugget", "size"), embedding_recall=("embedding_match", "mean"),
        narrative_only_baseline=("narrative_match", "mean"), llm_recall=("llm_match", "mean"),
        llm_failed=("llm_match", lambda s: int(s.isna().sum())))


def recall_summary(evaluated: pd.DataFrame) -> pd.DataFrame:
    """Recall of the NIST nuggets held out from the generator (the primary figure: the with-notes answer, a source
    of creation, copied the shown ones) and, apart, of the shown ones: nuggets, topics, embedding and LLM recall
    (LLM: over the nuggets it matched), the narrative-only baseline."""
    groups = evaluated.assign(nuggets_are=evaluated.in_context.map({False: "held out", True: "shown as notes"}))
    return groups.groupby("nuggets_are").agg(
        nuggets=("nugget", "size"), topics=("qid", "nunique"), embedding_recall=("embedding_match", "mean"),
        llm_recall=("llm_match", "mean"), narrative_only_baseline=("narrative_match", "mean")
    ).reindex(["held out", "shown as notes"])


def match_agreement(evaluated: pd.DataFrame) -> tuple[int, int]:
    """(human nuggets on which embedding and LLM match agree, nuggets with an LLM match)."""
    both = evaluated.llm_match.notna()
    return int((evaluated.embedding_match[both] == evaluated.llm_match[both]).sum()), int(both.sum())


def judge_importance(judge: Gateway, evaluated: pd.DataFrame, qids: Sequence[str], narrative: Mapping[str, str]
                     ) -> pd.Series:
    """The judge's vital/okay label of each assessed human nugget (missing on failure), on ``evaluated``'s index."""
    labels = pd.Series(None, index=evaluated.index, dtype=object, name="judge_importance")
    for q in qids:
        rows = evaluated[evaluated.qid == q]
        found, _ = nug.label_importance(judge, narrative[q], rows.nugget.tolist(), call_label=f"rag25-human:{q}")
        labels[rows.index] = found
    return labels


@dataclass(frozen=True)
class ImportanceAgreement:
    """The judge's importance labels against NIST's (1 = vital), on the nuggets the judge labelled."""
    nist: list[int]
    judge: list[int]
    agreement: dict[str, Any]

    def table(self) -> pd.DataFrame:
        """κ, exact agreement and their CIs (the weighted κ is left out: two categories)."""
        return pd.DataFrame([self.agreement], index=["judge vs NIST"]).drop(
            columns=["weighted_kappa", "weighted_kappa_ci_low", "weighted_kappa_ci_high"])


def importance_agreement(evaluated: pd.DataFrame, seed: int, n_resamples: int) -> ImportanceAgreement:
    """Cohen's κ of the judge's vital labels with NIST's, with a 95% CI over topics (the unit the nuggets of a
    topic are nested in)."""
    scored = evaluated[evaluated.judge_importance.notna()]
    nist = (scored.importance == "vital").astype(int).tolist()
    ours = (scored.judge_importance == "vital").astype(int).tolist()
    agreement = {**validity.agreement(nist, ours, categories=[0, 1]),
                 **validity.agreement_ci(nist, ours, scored.qid, seed=seed, n_resamples=n_resamples,
                                          categories=[0, 1], unit="topics")}
    return ImportanceAgreement(nist, ours, agreement)


def assign_human_nuggets(judge: Gateway, evaluated: pd.DataFrame, qids: Sequence[str], answers: pd.DataFrame,
                         narrative: Mapping[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each evaluated topic's human nuggets assigned to both of its answers (3 grades): (one row per nugget and
    answer; one row of nugget scores per answer). A failed generation gives no labels and one recorded failure,
    never a score of 0."""
    assignment_rows, score_rows = [], []
    for q in qids:
        rows = evaluated[evaluated.qid == q]
        for variant in VARIANTS:
            answer = answer_of(answers, q, variant)
            labels: list[str | None]
            failures: list[nug.BatchFailure] | list[str]
            if answer is None:
                labels, failures = [None] * len(rows), ["generation failed"]
            else:
                labels, failures = nug.assign(judge, narrative[q], answer, rows.nugget.tolist(),
                                              call_label=f"rag25:{q}:{variant}")
            assignment_rows += [{"qid": q, "variant": variant, "nugget": n, "in_context": c, "importance": i,
                                 "assignment": label}
                                for n, c, i, label in zip(rows.nugget, rows.in_context, rows.importance, labels,
                                                          strict=True)]
            score_rows.append({"dataset": "rag25", "qid": q, "system": variant, "grades": 3,
                               "failed_batches": len(failures), **nug.answer_scores(labels, rows.importance.tolist())})
    return pd.DataFrame(assignment_rows), pd.DataFrame(score_rows)


def support_table(assignment: pd.DataFrame) -> pd.DataFrame:
    """Per answer variant and shown/held-out nuggets, how many are fully supported."""
    support = assignment.assign(supported=lambda f: f.assignment == "support")
    return (support.groupby(["variant", "in_context"]).supported.agg(["sum", "size", "mean"])
            .rename(columns={"sum": "supported", "size": "nuggets", "mean": "share"}))


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


def alce_nugget_scores(judge: Gateway, sample: pd.DataFrame, creator: Creator
                       ) -> tuple[pd.DataFrame, dict[tuple[str, str], AutomaticNuggets]]:
    """Per question: nuggets created from its systems' answers (the data has no retrieved passages; an empty answer
    is no source) and labelled vital/okay, then assigned to every answer (3 grades; an empty answer supports no
    nugget, without a call): (one row of nugget scores per answer with its utility and length, the nuggets)."""
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
                         "failed_batches": len(failed), **nug.answer_scores(labels, auto.importance)})
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


def primary_text(correlations: pd.DataFrame, primary_score: str, design: pd.DataFrame, answers_per_question: int,
                 ceiling: Mapping[str, Any]) -> str:
    """The primary question's answer: the declared score's mean within-question ρ on the non-empty answers, its
    interval, how many questions have the score at all and a within ρ, how many the planner needs and how many
    questions that means asking at this run's share of usable ones; the reliability of the human rating beside
    it."""
    row = correlations.loc[("non-empty answers", primary_score)]
    asked = int(correlations.xs("non-empty answers").questions.max())
    needed = int(design.loc[answers_per_question, "questions needed"])
    kept = int(row["questions with a within ρ"])
    decides = kept >= needed and np.isfinite(row["within ci_low"])
    within = {"ci_low": row["within ci_low"], "ci_high": row["within ci_high"], "ci_over": f"{kept} questions"}
    value = "undefined" if np.isnan(row["within ρ"]) else f"{row['within ρ']:.2f}"
    to_ask = (f"at this run's share of usable questions ({kept} of {asked}) that means asking about "
              f"{math.ceil(needed * asked / kept)}" if kept else "at this run's share (none usable) no number of "
              "questions would do")
    return (f"{primary_score} score vs human utility within questions (non-empty answers): mean ρ {value} "
            f"({interval_over_text(within)}). {count_text(int(row['questions']), 'question')} of {asked} have a "
            f"{primary_score} score at all (a question whose nuggets include no {primary_score} one has none) and "
            f"{kept} a within ρ (neither side constant). The planner needs {needed} questions with a within ρ, and "
            f"{to_ask}; this run " + ("can decide the question." if decides else "cannot decide it.")
            + f" The human rating itself: two ratings of the same text correlate at ρ {ceiling['r']:.2f} "
              f"({interval_over_text(ceiling)}, {ceiling['pairs']} pairs, pooled over questions), so a score's ρ "
              f"with one rating can hardly exceed √{ceiling['r']:.2f} = {ceiling['ceiling']:.2f}.")


def run_monitor(db: Path, judge: Gateway, answers: pd.DataFrame, design: LogDesign, sample_rate: float,
                seed: int) -> dict[str, int]:
    """Fill a fresh simulated log and run ``study-monitor run`` for each day and the recheck day, as cron would:
    the exit status per day (printed as it goes)."""
    if db.exists():
        db.unlink()  # the simulation starts from an empty log on every run
    monitor.init_database(db)
    with closing(monitor.connect(db)) as connection:
        monitor.add_queries(connection, monitor.simulated_log(answers, design.days, design.per_day, design.degraded,
                                                              recheck_day=design.recheck))
    statuses = {}
    for day in [*design.days, design.recheck]:
        statuses[day] = monitor.main(["--db", str(db), "run", "--date", day, "--sample-rate", str(sample_rate),
                                      "--seed", str(seed)], gateway=judge)
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


def monitor_verdict(rules: pd.DataFrame) -> str:
    """Which rule flagged the degraded day, and which other days each rule flagged."""
    degraded = rules[rules.degraded].iloc[0]
    others = rules[~rules.degraded]
    parts = []
    for rule, column in (("absolute target", "below_target"), ("control limit", "below_control_limit")):
        caught = "caught" if degraded[column] else "NOT caught"
        false_alarms = others.day[others[column]].tolist()
        parts.append(f"{rule}: degraded day {degraded.day} {caught}; other days flagged: {false_alarms or 'none'}")
    return "\n".join(parts)


def nugget_scores_table(rag_scores: pd.DataFrame, alce_scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """The ``nugget_scores`` table: RAG25 and ALCE answers' nugget scores with the judge model."""
    columns = list(tables.SCHEMAS["nugget_scores"])[:-1]
    return pd.concat([rag_scores.assign(utility=np.nan, words=np.nan), alce_scores.drop(columns=["nuggets"])],
                     ignore_index=True)[columns].assign(model=model)


def monitor_days_table(summary: pd.DataFrame, rules: pd.DataFrame, model: str) -> pd.DataFrame:
    """The ``monitor_days`` table: the daily summary with the control limit, the degraded flag and the judge."""
    joined = summary.merge(rules[["day", "control_limit", "degraded"]], on="day", how="left")
    return joined[list(tables.SCHEMAS["monitor_days"])[:-1]].assign(model=model)


@dataclass(frozen=True)
class Results:
    """What chapter 05's summary reads: the tables and values its sections computed."""
    primary_score: str
    alce_correlations: pd.DataFrame
    alce_design: pd.DataFrame
    answers_per_question: int
    ceiling: Mapping[str, Any]
    alce_created: pd.DataFrame
    recall: pd.DataFrame
    embedding_threshold: float
    rag_created: pd.DataFrame
    importance: ImportanceAgreement
    notes_support: Mapping[str, float]
    rules: pd.DataFrame
    plan: pd.DataFrame
    paired_drop: pd.Series
    logged_per_day: int


def summary(r: Results) -> str:
    """Chapter 05's "What the numbers say" as Markdown bullets, every number read from ``r``."""
    c = r.alce_correlations
    primary_all = c.loc[("all answers", r.primary_score)]
    length = c.loc[("non-empty answers", "words")]
    secondary = c.loc[("non-empty answers", "all")]
    primary = c.loc[("non-empty answers", r.primary_score)]
    secondary_within, length_within = ({"ci_low": row["within ci_low"], "ci_high": row["within ci_high"],
                                        "ci_over": f"{int(row['questions with a within ρ'])} questions"}
                                       for row in (secondary, length))
    held, shown = r.recall.loc["held out"], r.recall.loc["shown as notes"]
    agreement = r.importance.agreement
    kappa = {"ci_low": agreement["kappa_ci_low"], "ci_high": agreement["kappa_ci_high"],
             "ci_over": agreement["ci_over"]}
    created = pd.concat([r.rag_created, r.alce_created])
    support = r.notes_support
    degraded = r.rules[r.rules.degraded].iloc[0]
    normal = r.rules[~r.rules.degraded]
    measured = r.plan.loc[MEASURED_DROP]
    default = r.plan.loc[DECLARED_DROP]
    lines = [
        "**Primary (declared before the run)**: " + primary_text(c, r.primary_score, r.alce_design,
                                                                 r.answers_per_question, r.ceiling),
        f"Beside it, on the same non-empty answers: the secondary 'all' score's mean within-question ρ "
        f"{secondary['within ρ']:.2f} ({interval_over_text(secondary_within)}), answer length's "
        f"{length['within ρ']:.2f} ({interval_over_text(length_within)}). Pooled over answers of different "
        f"questions (between-question differences included): {r.primary_score} "
        f"{c.loc[('non-empty answers', r.primary_score), 'pooled ρ']:.2f} over "
        f"{count_text(int(primary['answers scored']), 'answer')} of "
        f"{count_text(int(primary['questions']), 'question')}, "
        f"'all' {secondary['pooled ρ']:.2f} over {int(secondary['answers scored'])} answers. With the empty "
        f"answers (scored 0 by rule, without a call) the "
        f"{r.primary_score} score's within-question ρ is {primary_all['within ρ']:.2f} over "
        f"{count_text(int(primary_all['questions with a within ρ']), 'question')}. The two ratings of a byte-identical "
        f"answer agree exactly in {r.ceiling['exact']:.0%} of {r.ceiling['pairs']} pairs and are 2 or more points "
        f"apart in {r.ceiling['apart_2']:.0%}.",
        f"**Recall of the held-out NIST nuggets** (the primary recall figure; {int(held['nuggets'])} nuggets of "
        f"{int(held['topics'])} topics, too few topics for an interval): {held['embedding_recall']:.0%} by embedding "
        f"match (cosine ≥ {r.embedding_threshold}; the narrative alone reaches {held['narrative_only_baseline']:.0%}) "
        f"and {held['llm_recall']:.0%} by LLM match. The nuggets shown to the generator as notes, which the "
        f"with-notes answer could copy: {shown['embedding_recall']:.0%} and {shown['llm_recall']:.0%}"
        + ("; the LLM match finds the held-out nuggets more often than the shown ones, the opposite of what copying "
           "predicts, so it is not read as recall here." if held["llm_recall"] > shown["llm_recall"] else ".")
        + f" {r.rag_created['automatic nuggets'].min()} to {r.rag_created['automatic nuggets'].max()} automatic "
          f"nuggets per topic carry these figures.",
        f"**Creation** ({len(created)} queries): {int(created['automatic nuggets'].sum())} nuggets, "
        f"{int(created['merged'].sum())} merged as near-duplicates, {int(created['not from the sources'].sum())} "
        f"dropped as stated in no source sentence, {int(created['over 12 words'].sum())} over the 12 words asked "
        f"for (kept whole); stopped: "
        + ", ".join(f"{k} {v}" for k, v in created.stopped.value_counts().sort_index().items()) + ".",
        f"**Importance**: the judge's vital/okay labels of the NIST nuggets agree with NIST's at κ = "
        f"{agreement['kappa']:.2f} ({interval_over_text(kappa)}) on {agreement['n']} nuggets.",
        f"**Assignment**: the answer written with the notes supports {support['shown_supported']}/{support['shown']} "
        f"shown and {support['held_out_supported']}/{support['held_out']} held-out nuggets (Fisher exact p = "
        f"{support['p']:.2g})"
        + (": it was written from the shown notes, so an assignment that finds fewer than half of them supported "
           "misses facts the answer states." if support["shown_supported"] < support["shown"] / 2 else "."),
        f"**Monitor**: on the broken-release day the overall mean was {degraded.overall:.3f} against "
        f"{normal.overall.min():.3f}–{normal.overall.max():.3f} on the other days; the absolute target "
        f"{degraded.target:g} {'flags' if degraded.below_target else 'does not flag'} it, the control limit "
        + (f"({degraded.control_limit:.3f}, {int(degraded.baseline_items)} baseline items) "
           f"{'flags' if degraded.below_control_limit else 'does not flag'} it"
           if np.isfinite(degraded.control_limit) else "has no baseline yet")
        + f". On the same topics, fixed − broken: groundedness {r.paired_drop['groundedness']:+.3f}, overall "
          f"{measured['size']:+.3f}, and context relevance {r.paired_drop['context_relevance']:+.3f}, which the "
          f"broken release cannot change (the same documents): differences of that size are noise. At the "
          f"command's default rate the log gives {count_text(int(default['items a day at the default rate']), 'item')} "
          f"a day: a drop of {default['size']:g} would be caught with probability {default['power']:.2f} (per-item "
          f"SD {default['per-item SD']:.3f} over the {int(default['items judged'])} items of the normal days, the "
          f"baseline taken as known: optimistic with a baseline this short); "
        + (f"the measured drop with {measured['power']:.2f}, and catching it with power 0.8 would need "
           f"{measured['items a day for power 0.8']:.0f} judged items a day, where the log has "
           f"{r.logged_per_day} queries a day."
           if np.isfinite(measured["power"]) else "the fixed release did not score higher, so no drop was measured."),
    ]
    return "\n".join(f"* {line}" for line in lines)


@headline("05_nugget_evaluation", "nugget_scores", "monitor_days")
def nugget_validity(tables: Tables) -> str:
    """The declared primary: the vital score's mean within-question ρ with human utility on the non-empty ALCE
    answers (interval over questions), with how many questions have a vital score at all; and whether the control
    limit flagged the broken-release day."""
    scores, days = tables["nugget_scores"], tables["monitor_days"]
    answered = scores[scores["dataset"].isin(["asqa", "eli5"]) & (scores["words"] > 0)]
    scored = answered.dropna(subset=["vital", "utility"])
    within = validity.within_unit_correlation(scored, "qid", "vital", "utility", "spearman", seed=0,
                                              unit_name="questions")
    degraded = days[days["degraded"]].iloc[0]
    if pd.isna(degraded["control_limit"]):
        monitor_text = "has no control limit (too few baseline items)"
    else:
        below = "below" if degraded["overall"] < degraded["control_limit"] else "not below"
        monitor_text = f"is {below} its control limit {degraded['control_limit']:.3f}"
    return (f"ALCE (declared primary): {scored['qid'].nunique()} of {answered['qid'].nunique()} questions have "
            f"vital-nugget scores (a question without a vital nugget has none); their mean within-question Spearman "
            f"ρ with human utility on the non-empty answers is {within.text()}. Monitor: the broken-release day's "
            f"overall {degraded['overall']:.3f} {monitor_text}.")


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
