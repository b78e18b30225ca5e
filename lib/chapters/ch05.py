"""Chapter 05 (nugget evaluation, nuggetized RAG triad, nightly judge monitor): the loops that build its tables,
its generated "what the numbers say" and its front-page headline. The notebook calls these; the functions that
need no LLM are tested on small hand-made tables (``tests/test_ch05.py``), the ones that call the judge on the
fake endpoint.

Vocabulary: a *topic* is a TREC RAG25 query (``qid``), a *variant* the answer written with or without the notes,
*grades* the size of the assignment label set (3: support / partial / not; 2: support / not).
"""
from __future__ import annotations

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
from lib.analysis.stats import correlation_ci, interval_over_text
from lib.chapters.headline import Tables, headline
from lib.judges import triad
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
class AutomaticNuggets:
    """One topic's automatic nuggets with their importance labels."""
    created: nug.Creation
    importance: list[str | None]
    importance_failures: list[nug.BatchFailure]


def automatic_nuggets(judge: Gateway, qids: Sequence[str], narrative: Mapping[str, str], answers: pd.DataFrame,
                      max_nuggets: int) -> dict[str, AutomaticNuggets]:
    """Per topic: nuggets created from the narrative and the topic's answers, then labelled vital/okay."""
    auto = {}
    for q in qids:
        sources = [narrative[q], *answers[(answers.qid == q) & answers.answer.notna()].answer.tolist()]
        created = nug.create_nuggets(judge, narrative[q], sources, max_nuggets=max_nuggets, call_label=f"rag25:{q}")
        importance, failures = nug.label_importance(judge, narrative[q], created.nuggets, call_label=f"rag25:{q}")
        auto[q] = AutomaticNuggets(created, importance, failures)
    return auto


def automatic_nuggets_table(auto: Mapping[str, AutomaticNuggets]) -> pd.DataFrame:
    """Per topic: how creation went (nuggets, why it stopped, calls, failures) and the importance labels."""
    return pd.DataFrame([{"qid": q, "automatic nuggets": len(a.created.nuggets), "stopped": a.created.stopped,
                          "calls": a.created.calls, "creation failures": len(a.created.failures),
                          "vital": sum(i == "vital" for i in a.importance),
                          "importance failures": len(a.importance_failures),
                          "over 12 words": sum(len(n.split()) > nug.MAX_NUGGET_WORDS for n in a.created.nuggets)}
                         for q, a in auto.items()]).set_index("qid")


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
    """Each evaluated topic's human nuggets assigned to both of its answers with 3 and with 2 grades: (one row
    per nugget, answer and grade set; one row of nugget scores per answer and grade set). A failed generation
    gives no labels and one recorded failure, never a score of 0."""
    assignment_rows, score_rows = [], []
    for q in qids:
        rows = evaluated[evaluated.qid == q]
        for variant in VARIANTS:
            answer = answer_of(answers, q, variant)
            for grades in (3, 2):
                labels: list[str | None]
                failures: list[nug.BatchFailure] | list[str]
                if answer is None:
                    labels, failures = [None] * len(rows), ["generation failed"]
                else:
                    labels, failures = nug.assign(judge, narrative[q], answer, rows.nugget.tolist(), grades=grades,
                                                  call_label=f"rag25:{q}:{variant}")
                assignment_rows += [{"qid": q, "variant": variant, "grades": grades, "nugget": n, "in_context": c,
                                     "importance": i, "assignment": label}
                                    for n, c, i, label in zip(rows.nugget, rows.in_context, rows.importance, labels,
                                                              strict=True)]
                score_rows.append({"dataset": "rag25", "qid": q, "system": variant, "grades": grades,
                                   "failed_batches": len(failures),
                                   **nug.answer_scores(labels, rows.importance.tolist())})
    return pd.DataFrame(assignment_rows), pd.DataFrame(score_rows)


def support_table(assignment: pd.DataFrame) -> pd.DataFrame:
    """With 3 grades: per answer variant and shown/held-out nuggets, how many are fully supported."""
    support = assignment[assignment.grades == 3].assign(supported=lambda f: f.assignment == "support")
    return (support.groupby(["variant", "in_context"]).supported.agg(["sum", "size", "mean"])
            .rename(columns={"sum": "supported", "size": "nuggets", "mean": "share"}))


def alce_sample(alce: pd.DataFrame, questions: int, seed: int) -> tuple[dict[str, list[str]], pd.DataFrame]:
    """(sampled question ids per dataset, the answers to them)."""
    qids = {ds: validity.sample_ids(alce[alce.dataset == ds].qid, questions, seed) for ds in ("asqa", "eli5")}
    sample = alce[[q in qids[d] for d, q in zip(alce.dataset, alce.qid, strict=True)]].reset_index(drop=True)
    return qids, sample


def alce_nugget_scores(judge: Gateway, sample: pd.DataFrame, max_nuggets: int
                       ) -> tuple[pd.DataFrame, dict[tuple[str, str], AutomaticNuggets]]:
    """Per question: nuggets created from its systems' non-empty answers and labelled vital/okay, then assigned to
    every answer (3 grades): (one row of nugget scores per answer with its utility and length, the nuggets)."""
    rows, created_nuggets = [], {}
    for (dataset, qid), group in sample.groupby(["dataset", "qid"], sort=True):
        question = group.question.iloc[0]
        created = nug.create_nuggets(judge, question, [a for a in group.answer if a.strip()], max_nuggets=max_nuggets,
                                     call_label=f"alce:{qid}")
        importance, failures = nug.label_importance(judge, question, created.nuggets, call_label=f"alce:{qid}")
        created_nuggets[(dataset, qid)] = AutomaticNuggets(created, importance, failures)
        for r in group.itertuples():
            labels, failed = nug.assign(judge, question, r.answer, created.nuggets,
                                        call_label=f"alce:{qid}:{r.system}")
            rows.append({"dataset": dataset, "qid": qid, "system": r.system, "grades": 3, "utility": r.utility,
                         "words": len(r.answer.split()), "nuggets": len(created.nuggets),
                         "failed_batches": len(failed), **nug.answer_scores(labels, importance)})
    return pd.DataFrame(rows), created_nuggets


def alce_scores_text(sample: pd.DataFrame, scores: pd.DataFrame, created: Mapping[tuple[str, str], AutomaticNuggets],
                     primary_score: str) -> str:
    """How many answers and nuggets, and why answers lack the primary score."""
    undefined = scores[scores.failed_batches == 0][primary_score].isna().sum()
    return (f"{len(sample)} answers to {sample.groupby('dataset').qid.nunique().to_dict()} questions; "
            f"nuggets per question {[len(a.created.nuggets) for a in created.values()]}; answers without a score "
            f"({primary_score}): {int(scores[primary_score].isna().sum())}\n"
            f"{undefined} of {len(scores)} answers have no {primary_score} score although assignment succeeded: "
            f"their question's nuggets include no vital one (vital nuggets per question: "
            f"{[sum(i == 'vital' for i in a.importance) for a in created.values()]})")


def alce_triad(judge: Gateway, sample: pd.DataFrame, max_nuggets: int) -> pd.DataFrame:
    """Answer relevance of each ALCE answer, traditional and nuggetized (the only leg without passages)."""
    rows = []
    for r in sample.itertuples():
        traditional = triad.traditional_triad(judge, r.question, r.answer, None, call_label=f"triad:{r.qid}:{r.system}")
        nuggetized, _ = triad.nuggetized_triad(judge, r.question, r.answer, None, max_nuggets=max_nuggets,
                                               call_label=f"triad:{r.qid}:{r.system}")
        rows.append({"dataset": r.dataset, "qid": r.qid, "system": r.system, "utility": r.utility,
                     "words": len(r.answer.split()), "traditional_answer_relevance": traditional["answer_relevance"],
                     "nuggetized_answer_relevance": nuggetized["answer_relevance"]})
    return pd.DataFrame(rows)


def rag_triad(judge: Gateway, qids: Sequence[str], answers: pd.DataFrame, narrative: Mapping[str, str],
              notes: Mapping[str, list[str]], max_nuggets: int
              ) -> tuple[pd.DataFrame, dict[tuple[str, str], triad.NuggetBreakdown]]:
    """Both triads on both answers of each topic (the answer without notes, judged against the same notes, is the
    negative control): (one row per topic, answer and triad; the nuggetized breakdown per topic and answer)."""
    rows, breakdowns = [], {}
    for q in qids:
        for variant in VARIANTS:
            answer = answer_of(answers, q, variant)
            if answer is None:
                continue
            label = f"triad:{q}" if variant == "with_context" else f"triad:{q}:{variant}"
            traditional = triad.traditional_triad(judge, narrative[q], answer, notes[q], call_label=label)
            nuggetized, breakdowns[(q, variant)] = triad.nuggetized_triad(
                judge, narrative[q], answer, notes[q], max_nuggets=max_nuggets,
                context_relevance=traditional["context_relevance"], call_label=label)
            rows += [{"qid": q, "answer": variant, "triad": "traditional", **traditional},
                     {"qid": q, "answer": variant, "triad": "nuggetized", **nuggetized}]
    return pd.DataFrame(rows), breakdowns


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


def monitor_verdict(statuses: Mapping[str, int], degraded: str) -> str:
    """Whether the alert fired on the degraded day, and on which other days it fired."""
    caught = statuses[degraded] == monitor.EXIT_ALERT
    false_alarms = [d for d, s in statuses.items() if d != degraded and s == monitor.EXIT_ALERT]
    return (f"degraded day {degraded}: {'caught by the alert' if caught else 'NOT caught by the alert'}; "
            f"alerts on other days: {false_alarms or 'none'}")


def nugget_scores_table(rag_scores: pd.DataFrame, alce_scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """The ``nugget_scores`` table: RAG25 and ALCE answers' nugget scores with the judge model."""
    columns = list(tables.SCHEMAS["nugget_scores"])[:-1]
    return pd.concat([rag_scores.assign(utility=np.nan, words=np.nan), alce_scores.drop(columns=["nuggets"])],
                     ignore_index=True)[columns].assign(model=model)


@dataclass(frozen=True)
class Results:
    """What chapter 05's summary reads: the tables and values its sections computed."""
    primary_score: str
    embedding_threshold: float
    auto: Mapping[str, AutomaticNuggets]
    evaluated: pd.DataFrame
    importance: ImportanceAgreement
    rag_scores: pd.DataFrame
    rag_assignment: pd.DataFrame
    notes_support: Mapping[str, float]
    alce_scores: pd.DataFrame
    alce_correlation: pd.DataFrame
    answered_correlation: pd.DataFrame
    alce_questions: int
    triad_answered: pd.DataFrame
    rag_triad: pd.DataFrame
    statuses: Mapping[str, int]
    monitor_summary: pd.DataFrame
    degraded: str
    paired_drop: pd.Series


def summary(r: Results) -> str:
    """Chapter 05's "What the numbers say" as Markdown bullets, every number read from ``r``."""
    agreement, nist, ours = r.importance.agreement, r.importance.nist, r.importance.judge
    evaluated = r.evaluated
    agree, with_llm = match_agreement(evaluated)
    overall_corr = r.alce_correlation.loc[("all", "all", "spearman")]
    answered_corr = r.answered_correlation.loc[("all", "all", "spearman")]
    triad_corr = r.triad_answered.loc["all"].xs("spearman", level="method")
    primary_corr = r.alce_correlation.loc[("all", r.primary_score, "spearman")]
    length_corr = r.alce_correlation.loc[("all", "words", "spearman")]
    primary_eli5 = r.alce_correlation.loc[("eli5", r.primary_score, "spearman")]
    by_variant = r.rag_scores.groupby(["grades", "system"])["all"].mean().unstack()
    traditional_ground = r.rag_triad[r.rag_triad.triad == "traditional"].groupby("answer").groundedness.mean()
    empty = int((r.alce_scores.words == 0).sum())
    support = r.notes_support
    normal = r.monitor_summary[r.monitor_summary.day != r.degraded].overall
    caught = r.statuses[r.degraded] == monitor.EXIT_ALERT
    kappa_interval = {"ci_low": agreement["kappa_ci_low"], "ci_high": agreement["kappa_ci_high"],
                      "ci_over": agreement["ci_over"]}
    lines = [
        f"**Importance**: the judge's vital/okay labels agree with NIST's at κ = {agreement['kappa']:.2f} "
        f"({interval_over_text(kappa_interval)}) on {agreement['n']} nuggets; it "
        f"calls {sum(ours)} vital where NIST calls {sum(nist)}. Its exact agreement, "
        f"{agreement['exact_agreement']:.3f}, is far below always answering 'vital' ({np.mean(nist):.3f}).",
        f"**Recall** of {len(evaluated)} assessed NIST nuggets by the automatic ones "
        f"({', '.join(str(len(a.created.nuggets)) for a in r.auto.values())} per topic): "
        f"{evaluated.embedding_match.mean():.0%} by embedding match (cosine ≥ {r.embedding_threshold}; the narrative "
        f"alone reaches {evaluated.narrative_match.mean():.0%} the same way: a cosine match credits topical "
        f"similarity as well as facts) and {evaluated.llm_match.mean():.0%} by LLM match; the two agree on {agree} "
        f"of {with_llm}.",
        f"**With vs without notes** (mean 'all' score of the NIST nuggets over the {len(r.auto)} topics): "
        + "; ".join(f"{g} grades: with {by_variant.loc[g, 'with_context']:.2f}, without "
                    f"{by_variant.loc[g, 'no_context']:.2f}" for g in (3, 2))
        + ". The notes barely move the score, so assignment is not shown to see them.",
        f"**Assignment**: the answer written with the notes supports {support['shown_supported']}/{support['shown']} "
        f"shown and {support['held_out_supported']}/{support['held_out']} held-out nuggets (Fisher exact p = "
        f"{support['p']:.2g}); with 3 grades the judge gives partial_support to "
        f"{(r.rag_assignment[r.rag_assignment.grades == 3].assignment == 'partial_support').mean():.0%} of all "
        f"nugget-answer pairs.",
        f"**ALCE**: the declared primary score ({r.primary_score}) exists for {int(primary_corr['n'])} of "
        f"{len(r.alce_scores)} answers (the judge labels few nuggets vital) and ranks them against utility with "
        f"Spearman ρ = {primary_corr['r']:.2f} ({interval_over_text(primary_corr)}; "
        f"ELI5: n = {int(primary_eli5['n'])}). As a secondary score, 'all' ranks {int(overall_corr['n'])} answers "
        f"with ρ = {overall_corr['r']:.2f} ({interval_over_text(overall_corr)}), "
        f"answer length with ρ = {length_corr['r']:.2f}; without the {empty} empty answers, ρ = "
        f"{answered_corr['r']:.2f} ({interval_over_text(answered_corr)}) "
        f"over {int(answered_corr['n'])}.",
        f"**Triad on ALCE** (answer relevance, non-empty answers, n = {int(triad_corr.loc['words', 'n'])}): Spearman "
        f"ρ with utility {triad_corr.loc['traditional_answer_relevance', 'r']:.2f} traditional, "
        f"{triad_corr.loc['nuggetized_answer_relevance', 'r']:.2f} nuggetized, {triad_corr.loc['words', 'r']:.2f} "
        f"for length; on the RAG25 answers, traditional groundedness is "
        f"{traditional_ground.get('with_context', np.nan):.2f} with the notes and "
        f"{traditional_ground.get('no_context', np.nan):.2f} for the answers written without them (the negative "
        f"control) — a ceiling that does not separate them. These correlations treat answers as independent "
        f"although they are nested in {r.alce_questions} questions.",
        f"**Monitor**: the day with the broken release was {'caught' if caught else 'not caught'} by the alert; its "
        f"overall mean was {r.monitor_summary.set_index('day').overall[r.degraded]:.2f} against "
        f"{normal.min():.2f}–{normal.max():.2f} on the other days; on the same topics, the fixed release scores "
        f"{r.paired_drop.mean():+.3f} higher on average over the four metrics.",
    ]
    return "\n".join(f"* {line}" for line in lines)


@headline("05_nugget_evaluation", "nugget_scores", "monitor_days")
def nugget_validity(tables: Tables) -> str:
    """How many ALCE answers have the declared vital score, the rank correlation of the all-nuggets score with
    human utility, and whether the monitor's overall mean separated the degraded day from the others."""
    scores, days = tables["nugget_scores"], tables["monitor_days"]
    alce = scores[scores["dataset"].isin(["asqa", "eli5"])]
    rated = alce.dropna(subset=["all", "utility"])
    rho = correlation_ci(rated["all"], rated["utility"], "spearman", seed=0, units=rated["qid"], unit="questions")
    degraded, normal = days[days["degraded"]], days[~days["degraded"]]
    return (f"ALCE: {int(alce['vital'].notna().sum())} of {len(alce)} answers have a vital-nugget score (the judge "
            f"labels few nuggets vital); the all-nuggets score ranks {int(rho['n'])} answers to {rho['units']} "
            f"questions against human utility with Spearman ρ = {rho['r']:.2f} "
            f"({interval_over_text(rho)}). "
            f"Monitor: overall "
            f"judge score {degraded['overall'].mean():.2f} on the degraded day vs {normal['overall'].min():.2f}–"
            f"{normal['overall'].max():.2f} on the {len(normal)} normal days.")
