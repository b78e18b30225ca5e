"""Tables passed between notebooks (``outputs/tables/*.parquet``), each with a documented column schema.

A notebook writes a table with :func:`write_table`, which refuses a frame whose columns differ from the
schema, and a later notebook reads it with :func:`read_table`. The schemas below are the documentation. A chapter
that reads a table an earlier chapter made for it checks, with :func:`check_upstream`, that it holds what its own
parameters ask for.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib import paths

SCHEMAS: dict[str, dict[str, str]] = {
    "entries": {
        "entry_id": "ed-<split>-<row>: row of the EmpatheticDialogues situations file (0-based, after header)",
        "split": "test or dev",
        "emotion_label": "EmpatheticDialogues label, 1–32",
        "emotion": "inferred emotion name (data/journal_entries/SOURCE.md)",
        "text": "the situation text, used as the journal entry",
        "persona_id": "persona (lib.design.PERSONAS) by notebook 01's persona_rule: most similar description by "
                      "MiniLM cosine (similarity) or seeded draw (random); lib.nudges.sample_entries",
        "persona_similarity": "MiniLM cosine between the entry text and the assigned persona's description "
                              "(5 decimals, lib.embeddings.similarity)",
        "category": "nudge category from the emotion (lib.design.EMOTION_CATEGORY)",
        "generation_ok": "True when the candidate call returned a schema-valid answer",
        "failure_kind": "invalid_json | schema_violation | truncated when generation failed, else null",
        "failure_error": "the validation message of the last attempt, else null",
        "attempts": "requests made for the entry (1 + retries)",
        "model": "identity of the generating model (name@sha256 for the embedded model)",
    },
    "candidates": {
        "entry_id": "entry the candidate was written for",
        "candidate_id": "<entry_id>/c<position>",
        "position": "0-based order in the generator's answer",
        "persona_id": "persona of the entry",
        "category": "nudge category asked for",
        "nudge_text": "the nudge",
        "reasoning": "the generator's one-sentence justification",
        "confidence": "the generator's self-reported confidence, 0–1",
        "word_count": "whitespace-separated words in nudge_text",
        "length_ok": "word_count within the asked 5–12",
        "model": "identity of the generating model",
        "near_duplicate_of": "earliest candidate of the same pool with MiniLM cosine ≥ threshold, else null",
        "pool_diversity": "mean pairwise cosine distance of the pool's candidates (cosines to 5 decimals, "
                          "lib.embeddings.similarity)",
        "near_duplicate": "near_duplicate_of is set; lib.nudges.pool_candidates drops these rows from the pools "
                          "under near_duplicate_rule 'drop' (the table keeps them)",
    },
    "distractors": {
        "entry_id": "the entry whose pool the distractor is judged with (never ranked in its pool)",
        "distractor_id": "<entry_id>/<kind>",
        "kind": "off_topic | value_mismatch | value_contrast | tone (lib.known_answers.DISTRACTOR_KINDS): why it "
                "is worse by construction (value_mismatch only for chapter 01's value_mismatch_entries)",
        "persona_id": "persona the nudge was written for (value_mismatch: the entry persona's contrasting "
                      "persona, lib.known_answers.contrasting_persona)",
        "source_candidate_id": "the real candidate it was taken from (off_topic: another entry's; value_contrast "
                               "and tone: the entry's first), null for value_mismatch",
        "nudge_text": "the distractor's text",
        "position": "its source candidate's position (value_mismatch: 0, its own answer's)",
        "confidence": "its source candidate's self-reported confidence (value_mismatch: its own)",
    },
    "rankings": {
        "ranker": "ranker name (lib.rankers.RANKER_ORDER)",
        "run": "seed index for random (0..k-1); 0 for deterministic rankers",
        "entry_id": "the pool's entry (pool: lib.nudges.pool_candidates under notebook 02's near_duplicate_rule)",
        "rank": "1 = shown first; equal scores in a seeded random order (lib.rankers.tie_order); failed "
                "candidates last",
        "candidate_id": "the ranked candidate",
        "score": "the ranker's score (higher is better; -inf for a failed candidate); embedding, category and "
                 "value_aware from cosines to 5 decimals (lib.embeddings.similarity)",
    },
    "known_answer_scores": {
        "ranker": "ranker name (lib.rankers.RANKER_ORDER)",
        "run": "seed index for random (0..k-1); 0 for deterministic rankers",
        "entry_id": "the entry",
        "item_id": "a real candidate of its pool (candidate_id) or one of its distractors (distractor_id)",
        "kind": "real, or the distractor's kind",
        "score": "the ranker's score of the item, scored with the pool but not ranked "
                 "(lib.known_answers.ranker_scores)",
    },
    "judge_discrimination": {
        "reading": "reading of the pointwise call (lib.chapters.ch03.READINGS)",
        "kind": "distractor kind (lib.known_answers.DISTRACTOR_KINDS)",
        "entries": "entries with a real candidate and a distractor of the kind judged",
        "auc": "mean over entries of P(real > distractor) + ½ P(equal) (lib.known_answers.entry_auc)",
        "ci_low": "95% percentile bootstrap interval over entries (null under 10 entries)",
        "ci_high": "upper end",
        "ci_over": "what the interval resampled, e.g. '40 entries'",
    },
    "known_answer_labels": {
        "entry_id": "the entry whose pool the distractor was judged with",
        "distractor_id": "the judged distractor (lib.tables.SCHEMAS['distractors'])",
        "kind": "distractor kind",
        "grade": "pointwise judge's argmax grade 0–2 (null when the call failed)",
        "expected_grade": "pointwise Σ p(g)·g from top_logprobs",
        "p_grade_0": "p(grade 0)",
        "p_grade_1": "p(grade 1)",
        "p_grade_2": "p(grade 2)",
        "rounded_expected": "expected_grade rounded half up to a grade",
        "failed": "pointwise call gave no valid grade",
        "failure_kind": "why it failed, else null",
        "model": "judge model identity",
    },
    "labels": {
        "entry_id": "entry of the candidate",
        "candidate_id": "the judged candidate",
        "grade": "pointwise judge's argmax grade 0–2 (null when the call failed)",
        "expected_grade": "pointwise Σ p(g)·g from top_logprobs (null without usable logprobs)",
        "p_grade_0": "p(grade 0), renormalised over the grades among the top logprobs",
        "p_grade_1": "p(grade 1)",
        "p_grade_2": "p(grade 2)",
        "rounded_expected": "expected_grade rounded half up to a grade",
        "failed": "pointwise call gave no valid grade",
        "failure_kind": "why it failed (invalid_json, schema_violation, truncated), else null",
        "label": "the gain notebook 04 uses: the column chapter 03's label_rule names, declared before the labels",
        "label_source": "that column (lib.chapters.ch03.READINGS)",
        "model": "judge model identity",
        "generator_model": "identity of the model that generated the candidates (the same model judging its own "
                           "output is a threat to validity)",
    },
    "labels_repeat": {
        "candidate_id": "re-judged candidate (seeded sample)",
        "grade": "pointwise argmax grade under the perturbation (lib.judges.relevance.ALTERNATE_LAYOUT)",
        "expected_grade": "pointwise expected grade under the perturbation",
        "rounded_expected": "expected_grade rounded half up",
        "label": "the chosen label definition's value under the perturbation (null when failed)",
        "failed": "the repeat call gave no valid grade",
    },
    "ndcg_comparisons": {
        "measure": "ranking measure (lib.analysis.ranking.MEASURES); only measures with informative entries",
        "system": "the ranker under test (notebook 04 parameter `system`)",
        "baseline": "the ranker compared with",
        "primary": "True for the one declared primary comparison (parameters primary_baseline, primary_measure)",
        "n_entries": "entries both rankers score (the measure's scoreable entries)",
        "n_informative": "of those, entries whose value the pool's order can change (the test's n)",
        "n_personas": "personas among the informative entries (clusters of the persona bootstrap)",
        "wins": "informative entries where system > baseline",
        "losses": "informative entries where system < baseline",
        "ties": "informative entries where system = baseline (|difference| ≤ 1e-12)",
        "mean_diff": "mean of system − baseline over the n_entries (= difference of the ranker means; 0–1 scale)",
        "ci_low": "95% percentile-bootstrap CI of mean_diff resampling entries, lower end (labels held fixed)",
        "ci_high": "upper end of that CI",
        "ci_over": "the units that CI resamples, e.g. '12 entries' (no CI with fewer than 10)",
        "ci_low_persona": "95% cluster-bootstrap CI of mean_diff resampling personas, lower end (NaN: < 10 personas)",
        "ci_high_persona": "upper end of that CI",
        "ci_over_persona": "the units that CI resamples, e.g. '12 personas' (no CI with fewer than 10)",
        "p_permutation": "two-sided exact sign-flip permutation test of the mean difference (the one test)",
        "permutation_exact": "True when all 2^k sign assignments were enumerated (k non-tied entries ≤ 20)",
        "p_sign": "two-sided exact sign test of wins vs losses (descriptive; not used for decisions)",
        "min_p": "smallest p the sign-flip test could give with wins + losses non-tied entries (2 / 2^k)",
        "family_size": "comparisons in the row's Holm family (1 for the primary, m for the secondary family)",
        "p_holm": "Holm-adjusted p_permutation within the row's family",
        "alpha": "declared significance level (notebook 04 parameter)",
        "significant": "p_holm < alpha",
        "mde": "minimum detectable effect on mean_diff's scale at n_informative, level alpha/family_size, `power`",
        "power": "power the mde is computed for",
    },
    "geval_scores": {
        "candidate_id": "the scored item: a candidate, or a distractor (chapter 03's tone check)",
        "rubric": "registered G-Eval rubric name (lib.judges.geval.RUBRICS)",
        "score": "probability-weighted (or sample-mean, or rule) score; null on failure",
        "argmax": "the score the model wrote (or the rule's score)",
        "scored_by": "logprobs | samples | rule",
        "reason": "the rule's reason (e.g. 'shaming: you_always_never: You never learn'), else null",
        "failed": "no score could be obtained",
        "failure_kind": "why, else null",
        "model": "judge model identity",
    },
    "rag_answers": {
        "qid": "TREC RAG25 dev topic (chapter 05's draw, lib.rag.study_draw)",
        "variant": "with_context (written from the notes) or no_context (the monitor's broken release)",
        "query": "the topic's narrative, the information need the answer is written for",
        "notes": "the notes shown to the generator: the topic's first context_nuggets sampled NIST nuggets, or null",
        "answer": "the generator's answer (null when the call failed)",
        "failure_kind": "why the call failed, else null",
        "completion_tokens": "tokens the answer took",
        "model": "generator model identity",
    },
    "nugget_importance": {
        "qid": "TREC RAG25 dev topic of chapter 05's importance set",
        "nugget": "a sampled NIST nugget of the topic",
        "nist": "1 when NIST labels the nugget vital, 0 when okay",
        "argmax": "1 when the judge wrote vital, 0 okay; null for a failed call",
        "p_vital": "p(vital) read at the label's token of the same answer; null where it could not be read",
        "model": "judge model identity",
    },
    "nugget_scores": {
        "dataset": "asqa / eli5 (ALCE)",
        "qid": "question id as in the data",
        "system": "the ALCE run's file name",
        "grades": "assignment label set: 3 (support / partial_support / not_support) or 2 (support / not_support)",
        "failed_batches": "assignment batches that failed for this answer (then every score is null)",
        "utility": "ALCE human utility 1–5",
        "words": "answer length in whitespace-separated words (the trivial baseline)",
        "strict_vital": "supported vital / vital (lib.nuggets.answer_scores); null without vital nuggets; vital: the "
                        "judge's p(vital) at the threshold fit on NIST's labels of the RAG25 nuggets",
        "vital": "(support + 0.5·partial) over vital",
        "strict_all": "supported / all nuggets",
        "all": "(support + 0.5·partial) / all nuggets",
        "weighted": "Σ w·s / Σ w, w(vital) 1, w(okay) 0.5 (this study's addition)",
        "vital_argmax": "vital with the importance label the judge wrote",
        "model": "judge model identity",
    },
    "triad_scores": {
        "qid": "TREC RAG25 topic",
        "variant": "the answer: clean, unsupported or irrelevant (lib.triads.VARIANTS)",
        "triad": "traditional (one call, E[g] / 3) or nuggetized (importance-weighted nugget labels)",
        "component": "groundedness or relevance",
        "score": "0–1; NaN where the call failed or no nugget has every label",
        "scored_by": "logprobs or argmax (traditional), labels (nuggetized)",
        "failure_kind": "the traditional call's failure, if any",
    },
    "monitor_days": {
        "day": "simulated day (YYYY-MM-DD)",
        "judged": "sampled queries judged successfully",
        "failed": "sampled queries without a judgment (judge failure or malformed row)",
        "groundedness": "mean over the day's judged queries, 0–1 (lib.monitor)",
        "context_relevance": "mean, 0–1: the retrieved documents against the query",
        "answer_relevance": "mean, 0–1: the answer against the query",
        "completeness": "mean, 0–1",
        "no_hallucination": "mean, 0–1",
        "overall": "mean of the items' overall scores (each the mean of the metrics its judge measures: five for the "
                   "monitor judge, two for a RAG triad); the target is 0.7",
        "control_limit": "the relative rule's limit for the day (lib.monitor.control_limit); null while the "
                         "baseline has fewer than 3 items",
        "degraded": "the day on which the broken release was served",
        "model": "judge model identity",
    },
    "crs_sessions": {
        "system": "CRS system under test (lib.crs.systems.default_systems): llm, retrieval_template, memoryless_llm, "
                 "stale_template, echo",
        "session_id": "s<seed>: one simulated user; every system meets the same scripted user",
        "seed": "the session's seed (script, phrasing variants, retrieval ties)",
        "n_turns": "user turns of the conversation",
        "n_shifts": "controlled preference shifts in it",
        "scored_turns": "system turns with text (the metrics' n)",
        "failed_turns": "system turns left empty by a failed LLM call (not scored)",
        "cc": "mean concept consistency CC over scored turns, 0–1 (lib/crs/METHODOLOGY.md, Metrics)",
        "cr": "mean concept relevance CR (IDF-weighted cosine with the last user turn), 0–1",
        "copy_ratio": "mean copy ratio I (share of the reply's n-grams copied from the user turn), 0–1",
        "tas": "mean turn adaptation score TAS = clip(0.5·CC + 0.5·CR − I, −1, 1)",
        "recovery_rate": "share of shifts recovered within W turns (TAS ≥ θ)",
        "recovery_delay": "mean delay of the recovered shifts, turns (null: none recovered)",
        "interference": "mean share of the W turns after a shift whose reply carries an abandoned wish",
        "cas": "conversation adaptation score: 0.5·TAS + 0.25·recovery rate + 0.25·(1 − interference)",
        "reply_words": "mean words per scored system turn (the trivial baseline beside the judge)",
        "llm_user_turns": "user turns phrased by the LLM and kept by the leak guard",
        "template_fallback_turns": "LLM-phrased user turns replaced by the template (guard or failed call)",
        "titles_proposed": "titles the LLM CRS proposed (0 for systems without an LLM)",
        "titles_off_universe": "of those, titles outside the item universe (dropped)",
        "titles_off_candidates": "of those, titles in the universe but not among the retrieved candidates (kept)",
        "judge_ok": "the conversation rubric returned valid scores",
        "judge_coherence": "rubric score 1–5 (null when not judged or failed); unvalidated against human ratings",
        "judge_personalisation": "rubric score 1–5",
        "judge_proactiveness": "rubric score 1–5",
        "judge_mean": "mean of the three rubric scores",
        "judge_failure_kind": "why there is no score (not_judged, invalid_json, …), else null",
        "judge_model": "judge model identity (null when not judged)",
        "generator_model": "identity of the model behind the LLM systems and the LLM-phrased user turns",
    },
    "crs_judgments": {
        "system": "CRS system without an LLM (lib.crs.systems.rule_systems) that met chapter 06's fresh users",
        "session_id": "s<seed>: one fresh user (seeds confirm_seed, confirm_seed + 1, … of chapter 06)",
        "transcript_sha256": "SHA-256 of the transcript the judge read; chapter 06 checks it against its own "
                             "simulation of the same users (lib.crs.runner.judgments_of)",
        "ok": "the conversation rubric returned valid scores",
        "coherence": "rubric score 1–5 (null when the call failed); unvalidated against human ratings",
        "personalisation": "rubric score 1–5",
        "proactiveness": "rubric score 1–5",
        "scored_by": "logprobs (probability-weighted scores) or argmax (the written integers)",
        "failure_kind": "why there is no score (invalid_json, …), else null",
        "model": "judge model identity",
    },
    "crs_checks": {
        "expectation": "a difference the systems' built-in behaviour implies (lib.crs.summaries.EXPECTATIONS)",
        "metric": "the crs_sessions column compared",
        "above": "systems expected higher",
        "below": "systems expected lower",
        "mean_above": "lowest mean over sessions among the above systems",
        "mean_below": "highest mean among the below systems",
        "sessions_holding": "sessions in which the comparison holds on that session's values (> or, for the "
                            "expectations stated with 'at least', ≥)",
        "sessions": "sessions where every system compared has a value (one per simulated user)",
        "ties": "sessions in which the two sides are equal (dropped by the sign test)",
        "share": "of the sessions where the two sides differ, the share where the above side is strictly higher "
                 "(0.5: no order)",
        "ci_low": "exact Clopper-Pearson 95% interval of share, lower end (null under 10 sessions)",
        "ci_high": "its upper end",
        "p": "exact sign test over sessions, one-sided in the expected direction (ties dropped)",
        "p_against": "the same test one-sided the other way",
        "by_design": "why the expectation cannot fail (a check of the code, not of the metric), else empty",
        "tested": "in the declared test family: strict and not by design",
        "p_holm": "p adjusted by Holm over one family: both directions of the tested expectations (empty outside it)",
        "p_against_holm": "p_against adjusted in the same family (empty outside it)",
    },
    "crs_known_answers": {
        "reply": "a counterfactual reply of known quality (lib.crs.recommendation.COUNTERFACTUALS), written over "
                 "the first system's sessions with the same user turns",
        "metric": "the session metric compared: tas, cas or hit_rate",
        "known": "'worse' (the real recommenders should score above it) or 'better' (it should score above them)",
        "auc": "mean over users of P(the known-better side's session value > the known-worse side's) + ½ P(equal), "
               "the real recommenders (lib.crs.recommendation.RECOMMENDERS) against the reply; chance 0.5",
        "ci_low": "percentile bootstrap 95% interval over users, lower end (null under 10 users)",
        "ci_high": "its upper end",
        "users": "simulated users with a value on both sides",
        "recommenders_low": "lowest mean of the metric among the real recommenders",
        "recommenders_high": "highest mean among them",
        "reply_mean": "the reply's mean of the metric",
        "by_construction": "why the comparison holds by how the reply is built (checks the rule, not the metric), "
                           "else empty",
    },
    "report_card": {
        "judge": "judge and method, e.g. 'pointwise, E[g] thresholds cross-fitted (declared primary)', "
                 "'G-Eval, study steps, weighted', 'BM25, thresholds' (lib.analysis.report_card)",
        "model": "judge model identity; '—' for a non-LLM baseline",
        "dataset": "TREC DL19 (every query), SummEval (the documents judged), ALCE, RAG monitor, CRS simulation",
        "criterion": "relevance, a SummEval dimension or 'average', a nugget score, a CRS metric, the monitor score",
        "statistic": "one of lib.analysis.report_card.STATISTICS",
        "level": "item, summary (within documents, averaged), system, answer, session or day",
        "n": "items, documents (summary level), systems (system level), sessions or days the value rests on",
        "value": "the statistic",
        "ci_low": "95% bootstrap CI, lower bound (items, documents or sessions resampled; NaN: undefined)",
        "ci_high": "95% bootstrap CI, upper bound",
        "ci_over": "the units the CI resampled, e.g. '4 documents' (a system-level ρ over 16 systems still rests on "
                   "the documents drawn); '—' without a CI",
        "failed": "items without a judgment (failed calls or answers without logprobs), left out of n",
        "anchors": "published values of the same statistic, criterion and level shown with this data set, '; '-"
                   "joined ('—': none); * marks a value not read in the paper itself",
        "anchor_unchecked": "some anchor of the row was not checked in its paper",
    },
    "judge_drift": {
        "rerun": "which rerun: 'drift rerun: concurrency <k>, fresh server' (lib.judges.drift.rerun_label)",
        "items": "passages judged in both runs (one per DL19 query)",
        "grades_changed": "passages whose argmax grade differs between the study's run and the rerun",
        "share_changed": "grades_changed / items",
        "mean_abs_change": "mean |E[g] rerun − E[g] study's run| over the passages",
        "ci_low": "95% bootstrap CI of mean_abs_change, lower bound (queries resampled)",
        "ci_high": "95% bootstrap CI, upper bound",
        "ci_over": "the units the CI resampled, e.g. '40 queries'",
        "max_abs_change": "largest |ΔE[g]| of a passage",
        "model": "judge model identity",
    },
    "bias_battery": {
        "bias": "position, self-consistency, verbosity or prompt injection (lib.judges.bias)",
        "form": "the judging form measured: pairwise or pointwise",
        "statistic": "what value is (e.g. position consistency, mean change of E[g] when padded)",
        "value": "the measured number",
        "ci_low": "95% bootstrap CI, lower bound (queries resampled; NaN: fewer than 10 queries)",
        "ci_high": "95% bootstrap CI, upper bound",
        "n": "items (pairs for pairwise position) compared",
        "ci_over": "the units the CI resamples, e.g. '12 queries' (no CI with fewer than 10)",
        "dataset": "TREC DL19 (one passage or pair of passages per sampled query)",
        "criterion": "the form again, for matching anchors",
        "level": "item",
        "anchors": "published values shown beside it (MT-Bench's position consistency for pairwise), * unchecked",
        "anchor_unchecked": "some anchor of the row was not checked in its paper",
        "model": "judge model identity",
    },
    "relevance_transfer": {
        "direction": "where the cuts were fit and applied (lib.chapters.ch07: DECLARED, REVERSE, NOVELEVAL)",
        "fit_queries": "queries the cuts were fit on",
        "held_out_queries": "queries the cuts were applied to (none of them used to fit)",
        "reading": "a fitted reading (its cuts carried over) or the within-query order of E[g] (no cuts)",
        "statistic": "quadratic-weighted κ with the human grades, or the mean within-query Kendall τ-b",
        "cuts": "the cuts fit on the fit queries, comma-separated (empty: no cuts)",
        "value": "the statistic on the held-out queries",
        "ci_low": "95% bootstrap CI over the held-out queries, lower bound (NaN: fewer than 10)",
        "ci_high": "upper bound, likewise",
        "units": "held-out queries the interval resampled (τ-b: those whose passages differ in human grade)",
        "ci_over": "the units the CI resamples, e.g. '22 queries'",
    },
    "verdicts": {
        "chapter": "the chapter that states the verdict (two digits)",
        "key": "<chapter>.<name>, stable across runs (an earlier run's verdict is found by it)",
        "system": "the thing judged: a judge and its reading, a metric, a ranker, a CRS",
        "construct": "what the system claims to measure (or do)",
        "check": "known answer | human labels | known behaviour | comparison (lib.verdicts.CHECKS)",
        "statistic": "the estimate's name (AUC, κ_w, ρ, mean difference, share of users)",
        "estimate": "the statistic on the run's units",
        "ci_low": "lower end of its 95% interval over the independent unit (NaN: none, e.g. too few units)",
        "ci_high": "upper end, likewise",
        "unit": "the independent unit the interval resampled and any test paired (plural: entries, queries, users)",
        "units": "how many of them",
        "threshold": "the declared value the claim is about (chance 0.5, κ_w 0.40, a difference of 0)",
        "direction": "higher | lower: the side of the threshold the claim puts the estimate on",
        "margin": "the smallest effect of interest around the threshold (0: no equivalence statement)",
        "alpha": "the level of its test",
        "test": "how p was computed (exact or Monte Carlo, one-sided, family adjustment); empty when the interval "
                "decides",
        "p": "one-sided p in the declared direction, adjusted for its family (NaN: no test)",
        "p_against": "one-sided p in the opposite direction, likewise: below alpha is evidence against",
        "verdict": "sees | blind | holds | fails | ruled out | undetermined (lib.verdicts.VERDICTS, decided by "
                   "lib.verdicts.decide)",
        "primary": "the chapter's declared primary question",
        "confirmatory": "question, threshold and method declared before these data were seen, on units not used "
                        "to choose them",
        "by_construction": "holds (or fails) by how the system and the check are built: it tests the code",
        "evidence": "the table (outputs/tables) or frame the numbers come from",
        "depends_on": "keys of the verdicts that qualify this one (the caveats its headline carries), comma-separated",
    },
}


def write_table(frame: pd.DataFrame, name: str) -> str:
    """Write ``outputs/tables/<name>.parquet`` after checking its columns against ``SCHEMAS[name]``."""
    expected = list(SCHEMAS[name])
    if sorted(frame.columns) != sorted(expected):
        raise ValueError(f"table {name}: columns {sorted(frame.columns)} differ from schema {sorted(expected)}")
    paths.TABLES.mkdir(parents=True, exist_ok=True)
    path = paths.TABLES / f"{name}.parquet"
    frame[expected].to_parquet(path, index=False)
    return paths.shown(path)


def read_table(name: str) -> pd.DataFrame:
    return pd.read_parquet(paths.TABLES / f"{name}.parquet")


class UpstreamMismatch(ValueError):
    """A table an earlier chapter wrote does not hold what this chapter asks for (their parameters differ)."""


def check_upstream(table: pd.DataFrame, expected: pd.DataFrame, keys: Sequence[str], same: Sequence[str],
                   table_name: str, chapter: str, parameters: str) -> pd.DataFrame:
    """The rows of ``table`` (written by ``chapter``) for the rows of ``expected``, matched on ``keys``, in
    ``expected``'s order; :class:`UpstreamMismatch` when ``table`` lacks one or holds others, or differs from
    ``expected`` in a column of ``same``: the two chapters were run with different ``parameters`` (named in the
    message)."""
    def rows(frame: pd.DataFrame) -> list[tuple[str, ...]]:
        return list(map(tuple, frame[list(keys)].astype(str).to_numpy()))

    have, want = rows(table), rows(expected)
    if set(have) != set(want) or len(have) != len(want):
        missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
        raise UpstreamMismatch(f"{table_name} (chapter {chapter}) does not hold what this chapter asks for: missing "
                               f"{missing[:3]}, extra {extra[:3]}; give both chapters the same {parameters}")
    picked = table.iloc[[have.index(k) for k in want]].reset_index(drop=True)
    for column in same:
        if [_plain(v) for v in picked[column]] != [_plain(v) for v in expected[column]]:
            raise UpstreamMismatch(f"{table_name} (chapter {chapter}) differs from what this chapter asks for in "
                                   f"{column}; give both chapters the same {parameters}")
    return picked


def _plain(value: object) -> object:
    """A cell as a comparable value: an array or list read from parquet as a list, a missing value as None."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [str(v) for v in value]
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
