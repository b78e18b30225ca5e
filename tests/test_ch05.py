"""Chapter 05's top-floor functions on small hand-made tables (no LLM): the log calendar, the tables built from
matches and assignments, the monitor's rules, the findings (every verdict, with a wrong-sign case of each directional
test) and the prose formatted from a findings record."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib import monitor
from lib.analysis.power import control_limit_power
from lib.chapters import ch05


def test_answer_lengths_count_failures_and_words():
    answers = pd.DataFrame({"qid": ["1", "2", "1"], "variant": ["with_context", "with_context", "no_context"],
                            "answer": ["one two three", None, "a b"]})
    table = ch05.answer_lengths(answers)
    assert table.loc["with_context"].tolist() == [2, 1, 1.5, 3]  # the failed answer counts 0 words
    assert table.loc["no_context"].tolist() == [1, 0, 2.0, 2]


def _alce(rows):
    return pd.DataFrame(rows, columns=["dataset", "qid", "system", "answer", "utility"])


def test_human_ceiling_pairs_identical_non_empty_answers_of_one_question():
    rows = [("asqa", "q1", "s1", "same text", 5), ("asqa", "q1", "s2", "same text", 3),
            ("asqa", "q1", "s3", "other", 1), ("asqa", "q2", "s1", "", 1), ("asqa", "q2", "s2", "", 2),
            ("eli5", "q3", "s1", "twin", 4), ("eli5", "q3", "s2", "twin", 4), ("eli5", "q4", "s1", "twin", 2)]
    ceiling = ch05.human_ceiling(_alce(rows), seed=0, n_resamples=50)
    # pairs: (5, 3) in q1, (4, 4) in q3; the empty answers and the twin of another question are no pair
    assert (ceiling["pairs"], ceiling["questions"]) == (2, 2)
    assert ceiling["exact"] == 0.5 and ceiling["apart_2"] == 0.5 and "2 questions" in ceiling["ci_over"]
    # both orders: (5, 3), (3, 5), (4, 4), (4, 4) -> ρ = -1, and no √r bound from a negative reliability
    assert ceiling["r"] == pytest.approx(-1.0) and np.isnan(ceiling["ceiling"])


def test_alce_correlations_average_within_questions_and_count_the_undefined():
    # q1: score order = utility order (ρ 1); q2: reversed (ρ -1); q3: utility constant (no within ρ)
    scores = pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 3 + ["q3"] * 2,
                           "utility": [1, 2, 3, 1, 2, 3, 4, 4], "words": [5, 6, 0, 5, 6, 7, 8, 9],
                           "vital": [0.1, 0.2, 0.0, 0.3, 0.2, 0.1, 0.5, 0.6]})
    table = ch05.alce_correlations(scores, ["vital"], seed=0, n_resamples=50,
                                   ceiling={"r": 0.16, "ci_low": np.nan, "ci_high": np.nan, "ci_over": "2 questions",
                                            "ceiling": 0.4})
    everything, answered = table.loc[("all answers", "vital")], table.loc[("non-empty answers", "vital")]
    # q1: vital ranks 2, 3, 1 against 1, 2, 3: ρ = 1 - 6·6 / (3·8) = -0.5; q2: -1; mean -0.75
    assert everything["questions with a within ρ"] == 2 and everything["within ρ"] == -0.75
    assert everything["questions"] == 3 and np.isnan(everything["within ci_low"])  # fewer than 10 questions
    # without q1's empty answer, q1 has two answers in the utility's order: ρ 1; q2 -1
    assert answered["answers scored"] == 7 and answered["within ρ"] == pytest.approx(0.0)
    assert everything["human ceiling ρ"] == 0.4


def test_alce_design_table_costs_questions_by_answers_per_question():
    from lib.analysis.power import units_for_t_test
    table = ch05.alce_design_table({2: 0.8, 4: 0.4}, effect=0.3, alpha=0.05, power=0.8, fixed_calls=3)
    assert table.loc[4, "questions needed"] == units_for_t_test(0.3, 0.4) and table.loc[4, "calls per question"] == 7
    assert table.loc[2, "calls needed"] == units_for_t_test(0.3, 0.8) * 5
    assert table["calls needed"].idxmin() == 4


def test_alce_sample_keeps_the_pilot_questions_and_grows_by_nesting():
    rows = [(ds, f"{ds}{i}", f"s{k}", "text", 3) for ds in ("asqa", "eli5") for i in range(20) for k in range(4)]
    alce = _alce(rows).assign(question="q")
    pilot, _ = ch05.alce_sample(alce, 2, seed=0, pilot_questions=2)
    small, _ = ch05.alce_sample(alce, 4, seed=0, pilot_questions=2)
    large, sample = ch05.alce_sample(alce, 6, seed=0, pilot_questions=2)
    for dataset in ("asqa", "eli5"):
        assert small[dataset][:2] == pilot[dataset] and large[dataset][:4] == small[dataset]
    assert len(sample) == 2 * 6 * 4


def _monitor_frames():
    per_query = pd.DataFrame({"day": ["d1", "d1", "d2", "d2", "d3", "d3"], "ok": [1] * 6,
                              "overall": [0.9, 0.92, 0.91, 0.93, 0.80, 0.82]})
    summary = per_query.groupby("day").agg(judged=("ok", "sum"), overall=("overall", "mean")).reset_index()
    return per_query, summary


def test_monitor_rules_flag_the_day_below_its_control_limit(monkeypatch):
    per_query, summary = _monitor_frames()
    per_query["day"] = per_query.day.map({"d1": "2026-11-01", "d2": "2026-11-02", "d3": "2026-11-03"})
    summary["day"] = summary.day.map({"d1": "2026-11-01", "d2": "2026-11-02", "d3": "2026-11-03"})
    rules = ch05.monitor_rules(per_query, summary, "2026-11-03", target=0.7)
    degraded = rules[rules.degraded].iloc[0]
    # baseline 0.90, 0.92, 0.91, 0.93: mean 0.915, SD 0.012910; limit 0.915 - 3 * 0.012910 / sqrt(2) = 0.88761
    assert degraded.control_limit == pytest.approx(0.88761, abs=1e-5) and degraded.below_control_limit
    assert not degraded.below_target and rules.baseline_items.tolist() == [0, 0, 4]
    assert np.isnan(rules.control_limit.iloc[1])  # 2 baseline items: no limit yet
    assert ch05.monitor_verdict(rules) == (
        "absolute target: degraded day 2026-11-03 NOT caught; other days flagged: none\n"
        "control limit: degraded day 2026-11-03 caught; other days flagged: none")


def test_monitor_plan_reads_the_power_of_each_drop():
    per_query, _ = _monitor_frames()
    plan = ch05.monitor_plan(per_query, logged_per_day=2, drops={"declared": 0.05, "none": 0.0})
    sd = per_query.overall.std(ddof=1)
    assert plan.loc["declared", "items a day at the default rate"] == 1
    assert plan.loc["declared", "power"] == pytest.approx(control_limit_power(0.05, sd, 1))
    assert np.isnan(plan.loc["none", "power"])


def test_full_size_text_scales_the_measured_rate():
    text = ch05.full_size_text({"requests": 10, "recorded_latency_s": 100.0},
                               {"requests": 40, "recorded_latency_s": 400.0}, questions=3, all_questions=200)
    assert text.startswith("The ALCE section made 30 judge requests for 3 questions (10.0 a question, 10.0 s")
    assert "about 2,000 requests, 5.6 hours" in text


# --- findings: hand-made tables shaped as the notebook's, at the sizes of the cd3530b run where it matters ------------

CORRELATION_COLUMNS = ["answers scored", "questions", "questions with a within ρ", "within ρ", "within ci_low",
                       "within ci_high", "pooled ρ", "pooled ci_low", "pooled ci_high"]
NAN = np.nan


def _correlations(vital=(6, 2, 0, NAN, NAN, NAN, 0.671, NAN, NAN)):
    rows = {("non-empty answers", "vital"): vital,
            ("non-empty answers", "all"): (44, 12, 6, 0.35, NAN, NAN, 0.427, 0.103, 0.651),
            ("non-empty answers", "vital_argmax"): vital,
            ("non-empty answers", "words"): (44, 12, 11, 0.071, -0.313, 0.445, -0.153, -0.437, 0.172),
            ("all answers", "vital"): (8, 2, 1, 0.577, NAN, NAN, 0.844, NAN, NAN),
            ("all answers", "all"): (48, 12, 8, 0.46, NAN, NAN, 0.555, 0.251, 0.745),
            ("all answers", "vital_argmax"): (8, 2, 1, 0.577, NAN, NAN, 0.844, NAN, NAN),
            ("all answers", "words"): (48, 12, 12, 0.128, -0.252, 0.483, 0.107, -0.351, 0.52)}
    index = pd.MultiIndex.from_tuples(list(rows), names=["answers", "score"])
    return pd.DataFrame(list(rows.values()), index=index, columns=CORRELATION_COLUMNS)


def _created(qids, vital, vital_at=None):
    return pd.DataFrame({"automatic nuggets": 5, "stopped": "unchanged", "merged": 1, "not from the sources": 0,
                         "over 12 words": 2, "vital": vital, ch05.VITAL_AT: vital if vital_at is None else vital_at},
                        index=pd.Index(qids, name="qid"))


def _readings(kappa=(0.015, NAN, NAN, 2), threshold_kappa=(0.3, 0.1, 0.5, 22)):
    """:func:`ch05.importance_readings` shaped: as written (the cd3530b run: 2 topics) and at the threshold."""
    return pd.DataFrame([{"reading": name, "kappa": k, "kappa_ci_low": low, "kappa_ci_high": high, "topics": topics,
                          "nuggets": 10 * topics, "exact_agreement": 0.3, "judge_vital_share": share,
                          "nist_vital_share": 0.74, "threshold": cut}
                         for name, (k, low, high, topics), share, cut in (("argmax", kappa, 0.05, NAN),
                                                                          ("threshold", threshold_kappa, 0.6, 0.12))]
                        ).set_index("reading")


TOPICS = [f"t{i}" for i in range(10)]


def _judgments(groundedness_gain):
    """Each topic judged on the broken day d3 (every metric 0.8) and again on the recheck day d5, where only
    groundedness differs, by ``groundedness_gain[i]``."""
    rows = []
    for q, gain in zip(TOPICS, groundedness_gain, strict=True):
        for day, g in (("d3", 0.8), ("d5", 0.8 + gain)):
            metrics = dict.fromkeys(monitor.METRICS, 0.8) | {"groundedness": g}
            rows.append({"day": day, "query": f"query {q}", "ok": 1, **metrics,
                         "overall": float(np.mean(list(metrics.values())))})
    return pd.DataFrame(rows)


def _tables(**changes):
    rules = pd.DataFrame({"day": ["d1", "d2", "d3", "d4", "d5"], "overall": [0.913, 0.909, 0.893, 0.902, 0.902],
                          "target": 0.7, "control_limit": [NAN, NAN, 0.883, 0.875, 0.877],
                          "baseline_items": [0, 0, 4, 6, 8], "below_target": False, "below_control_limit": False,
                          "degraded": [False, False, True, False, False]})
    plan = pd.DataFrame({"size": [0.05, 0.009], "per-item SD": 0.012, "items judged": 6,
                         "items a day at the default rate": 1, "power": [0.845, 0.011],
                         "items a day for power 0.8": [1, 30]}, index=[ch05.DECLARED_DROP, ch05.MEASURED_DROP])
    tables = {
        "alce_correlations": _correlations(),
        "alce_design": pd.DataFrame({"pilot SD of within-question ρ": [0.4], "questions needed": [16]},
                                    index=pd.Index([4], name="answers per question")),
        "human_ceiling": pd.DataFrame([{"pairs": 74, "questions": 68, "exact": 0.284, "apart_2": 0.284, "r": 0.388,
                                        "ci_low": 0.168, "ci_high": 0.574, "ci_over": "68 questions",
                                        "ceiling": 0.623}]),
        "alce_created": _created([f"q{i}" for i in range(12)], [1, 2] + [0] * 10),
        "importance": _readings(), "nugget_importance": _importance_set(),
        "triad_labels": _triad_labels(["support", "partial_support"], ["not_support", "not_support"]),
        # groundedness +0.02 and −0.01 in turn: overall moves a fifth of that
        "monitor_judgments": _judgments([0.02, -0.01] * 5),
        "monitor_rules": rules, "monitor_plan": plan,
        # the triads: every clean answer above its defective copies on both triads (tests/test_triads.py varies it)
        "triad_construction": pd.DataFrame([{"entry_id": str(t), "kind": k, "cos_query": q, "cos_notes": n}
                                            for t in range(10) for k, q, n in (("real", 0.6, 0.8),
                                                                               ("unsupported", 0.5, 0.3),
                                                                               ("irrelevant", 0.1, 0.2))]),
        "triad_creation": pd.DataFrame({"qid": [str(t) for t in range(10)], "created": 5, "notes": 10,
                                        "recall_created": 0.6, "recall_query": [0.1 * (t % 3) for t in range(10)]}),
        "triad_scores": pd.DataFrame([{"qid": str(t), "variant": v, "triad": tr, "component": c,
                                       "score": 0.9 - 0.2 * (v != "clean") - 0.01 * (tr == "traditional") * t}
                                      for t in range(10) for v in ("clean", "unsupported", "irrelevant")
                                      for tr in ("traditional", "nuggetized") for c in ("groundedness", "relevance")])}
    return tables | changes


PARAMS = {"primary_score": "vital", "primary_rho": 0.3, "importance_kappa": 0.4, "vital_question_share": 0.5,
          "answers_per_question": 4, "alpha": 0.05, "power": 0.8, "monitor_judge": "monitor", "monitor_drop": 0.05,
          "degraded_day": "d3", "recheck_day": "d5", "logged_per_day": 2, "known_answer_margin": 0.1,
          "dev_topics": 22, "seed": 0,
          "bootstrap_resamples": 200}


@pytest.fixture(scope="module")
def found() -> ch05.Findings:
    """The findings of the default hand-made tables (computed once: Holm's statsmodels call collects garbage)."""
    return ch05.findings(_tables(), PARAMS)


def test_the_primary_is_undetermined_where_the_vital_score_is_defined_for_no_question(found):
    f = found
    primary = f.primary
    assert primary.key == ch05.PRIMARY and primary.primary and primary.confirmatory
    assert primary.verdict == "undetermined" and primary.units == 0 and np.isnan(primary.ci_low)
    assert primary.unit == "questions with a within ρ, of 12 asked"
    assert (primary.threshold, primary.margin) == (0.0, 0.3)
    # the caveat that decides it: the judge labels almost no nugget vital
    assert "05.alce.importance.vital_questions" in primary.depends_on
    assert {v.key for v in f.verdicts()} >= set(primary.depends_on)
    at_cut, written = f.vital_questions
    assert at_cut.key == "05.alce.importance.vital_questions" and written.key.endswith("vital_questions.argmax")
    assert at_cut.estimate == pytest.approx(2 / 12) and at_cut.units == 12
    assert at_cut.ci_high < 0.5 and at_cut.verdict == "fails"
    assert f.alce.questions_with_score == 2 and f.alce.questions_to_ask is None
    # the plan: the design does not reach its precision, and the result does not decide
    assert not f.plan.reaches_precision and f.plan.outcome == "undetermined" and f.plan.decided is False


def test_the_other_alce_rows_read_the_interval_over_questions(found):
    f = found
    assert f.secondary_pooled.verdict == "holds"  # 0.10 to 0.65: above 0
    assert f.secondary_within.verdict == "undetermined" and f.secondary_within.units == 6  # no interval
    assert f.length_within.verdict == "undetermined"  # −0.31 to 0.45 reaches past −0.3
    assert f.primary_pooled.verdict == "undetermined" and f.primary_pooled.units == 2
    # the ceiling √0.388 = 0.62 (√0.168 = 0.41 to √0.574 = 0.76) lies above the ρ of interest
    assert f.ceiling.estimate == pytest.approx(np.sqrt(0.388)) and f.ceiling.verdict == "holds"
    written, at_cut, _ = f.importance
    assert written.verdict == "undetermined" and written.units == 2 and written.threshold == 0.4
    assert at_cut.key == "05.rag25.importance.kappa.threshold" and at_cut.units == 22
    assert at_cut.verdict == "undetermined"  # 0.1 to 0.5 reaches both sides of 0.4
    # p(vital) puts every vital nugget above every okay one in each topic: AUC 1 over 12 topics
    assert f.importance[2].key == "05.rag25.importance.auc" and f.importance[2].estimate == 1.0
    assert f.importance[2].units == 12 and f.importance[2].verdict == "holds"
    assert not any(v.primary for v in f.verdicts() if v.key != ch05.PRIMARY)


def test_a_primary_with_enough_questions_decides_and_the_plan_says_so():
    held = _tables(alce_correlations=_correlations(vital=(64, 16, 16, 0.5, 0.35, 0.65, 0.5, 0.3, 0.6)))
    f = ch05.findings(held, PARAMS)
    assert f.primary.verdict == "holds" and f.plan.reaches_precision and f.plan.decided
    assert f.alce.questions_to_ask == 16  # every question asked is usable: ask as many as the plan needs
    ruled_out = ch05.findings(_tables(alce_correlations=_correlations(
        vital=(64, 16, 16, 0.05, -0.1, 0.2, 0.1, -0.1, 0.2))), PARAMS)
    assert ruled_out.primary.verdict == "ruled out" and ruled_out.plan.decided


def _triad_labels(answer_support, unsupported_support):
    """Per topic t0–t9: two nuggets of the answer and two unsupported sentences, labelled in the notes as given."""
    return pd.DataFrame([{"qid": q, "nugget": f"{origin} {i}", "origin": origin, "importance": "okay",
                          "support": label, "relevance": "relevant"}
                         for q in TOPICS for origin, labels in (("answer", answer_support),
                                                                ("unsupported", unsupported_support))
                         for i, label in enumerate(labels)])


def test_the_assignment_check_pairs_topics_and_a_wrong_sign_result_fails(found):
    f = found
    gap = f.assignment
    assert gap.key == "05.triad.assignment.unsupported" and gap.unit == "topics" and gap.units == 10
    # every topic: answer nuggets 1 and ½, unsupported sentences 0 and 0: +0.75, exact one-sided p = 2^-10
    assert gap.estimate == 0.75 and gap.p == pytest.approx(2 ** -10) and gap.verdict == "sees"
    backwards = ch05.findings(_tables(triad_labels=_triad_labels(["not_support"] * 2, ["support"] * 2)), PARAMS)
    assert backwards.assignment.estimate == -1.0 and backwards.assignment.verdict == "fails"


def test_assignment_differences_leave_out_a_topic_without_both_kinds():
    labels = _triad_labels(["support", "not_support"], ["not_support", "partial_support"])
    labels.loc[(labels.qid == "t0") & (labels.origin == "unsupported"), "support"] = None
    differences = ch05.assignment_differences(labels)
    assert "t0" not in differences.index and len(differences) == 9 and (differences == 0.25).all()


def test_the_monitor_verdict_pairs_topics_and_rules_out_a_drop_of_the_declared_size(found):
    f = found
    overall, grounded = f.release_overall, f.release_groundedness
    assert overall.unit == "topics" and overall.units == 10
    assert overall.estimate == pytest.approx(0.001) and f.monitor.drop["groundedness"] == pytest.approx(0.005)
    # 5 topics up, 5 down: no test rejects; the interval lies within ±0.05 (the declared drop): ruled out
    assert overall.verdict == "ruled out" and overall.margin == 0.05
    assert grounded.verdict == "undetermined" and grounded.margin == 0.0
    # the power of the control limit is evidence in the record, not a verdict
    assert (f.monitor.declared_power, f.monitor.measured_power, f.monitor.items_for_power) == (0.845, 0.011, 30)
    broken = ch05.findings(_tables(monitor_judgments=_judgments([-0.02] * 10)), PARAMS)
    assert broken.release_overall.verdict == "fails" and broken.release_groundedness.verdict == "fails"


def test_two_topics_give_neither_an_interval_nor_a_test():
    two = ch05.paired_difference(pd.Series([0.02, 0.01], index=["a", "b"]), "topics", seed=0, n_resamples=50)
    assert two.p is None and two.p_against is None and two.test == ""
    assert np.isnan(two.interval.low) and two.interval.value == pytest.approx(0.015) and two.interval.units == 2


def test_release_differences_give_overall_as_the_mean_of_the_metrics():
    differences = ch05.release_differences(_judgments([0.05] * 10), "d3", "d5")
    assert differences.groundedness.tolist() == pytest.approx([0.05] * 10)
    assert differences.overall.tolist() == pytest.approx([0.01] * 10)


def test_release_differences_of_a_triad_leave_out_the_metrics_it_does_not_measure():
    unmeasured = [m for m in monitor.METRICS if m not in monitor.JUDGES["traditional-triad"]]
    triad = _judgments([0.05] * 10).assign(**dict.fromkeys(unmeasured, np.nan))
    differences = ch05.release_differences(triad, "d3", "d5")
    assert sorted(differences.columns) == ["answer_relevance", "groundedness", "overall"]
    assert differences.overall.tolist() == pytest.approx([0.025] * 10)  # the mean of the two it measures


def test_earlier_outcomes_are_words_of_the_vocabulary_for_keys_the_chapter_states(found):
    from lib.verdicts import VERDICTS
    keys = {v.key for v in found.verdicts()}
    for earlier in (ch05.EARLIER, ch05.BEFORE_THE_CUTS):
        assert set(earlier) <= keys and set(earlier.values()) <= set(VERDICTS)


# --- prose: formatters of a findings record --------------------------------------------------------------------------

def test_primary_text_carries_the_verdict_the_plan_and_the_ceiling(found):
    text = ch05.primary_text(found)
    assert text.startswith("**nugget score (vital)** — orders the answers to one question as ALCE human utility does: "
                           "**undetermined** [confirmatory]; mean within-question Spearman ρ – (no interval: 0 "
                           "questions with a within ρ, of 12 asked;")
    assert "2 questions of 12 have a vital score at all" in text and "and 0 a within ρ" in text
    assert "needs 16 questions" in text and "does not decide it (undetermined)" in text
    assert "at this run's share (none usable) no number of questions would do" in text
    assert "correlate at ρ 0.39 (95% CI 0.17 to 0.57, 68 questions, 74 pairs" in text
    usable = ch05.findings(_tables(alce_correlations=_correlations(
        vital=(12, 4, 3, 0.5, NAN, NAN, 0.5, NAN, NAN))), PARAMS)
    # 16 usable questions at 3 usable of 12 asked: 16 · 12 / 3 = 64 to ask
    assert "usable questions (3 of 12) that means asking about 64" in ch05.primary_text(usable)


def test_summary_formats_every_verdict_and_reads_its_phrases_from_the_record(found):
    f = found
    text = ch05.summary(f)
    for v in f.verdicts():
        assert f"**{v.system}** — {v.construct}: **{v.verdict}**" in text
    assert "the cut is p(vital) ≥ 0.120" in text and "at the cut (read on topics it was not fit on) 60%" in text
    assert ("the absolute target 0.7 does not flag it, the control limit (0.883, 4 baseline items) does not flag it"
            in text)
    assert "Fisher" not in text  # no test over nuggets nested in topics
    quiet = ch05.summary(replace(f, monitor=replace(f.monitor, below_control_limit=True, measured_power=NAN)))
    assert "the control limit (0.883, 4 baseline items) flags it" in quiet
    assert "the fixed release did not score higher" in quiet


def test_a_next_run_size_past_int64_is_told_not_raised(found):
    # a row sized with a distance near 0 needs more units than an int64 holds: its column is then of objects
    huge = pd.DataFrame({"row": ["05.far"], "decided by": ["x"], "estimate": [0.5], "SE": [1.0], "unit": ["topics"],
                         "units now": [10], "units for power 0.8": [10 ** 30]})
    assert huge["units for power 0.8"].dtype == object
    assert f"05.far: {10 ** 30} topics" in ch05.triads_text(replace(found, next_run=huge))


# --- importance: the written label and p(vital) at a threshold fit on NIST's labels ----------------------------------

def _importance_set(topics=12):
    """Per topic 4 NIST nuggets, 2 vital: the judge writes okay for all, and its p(vital) puts vital ones at 0.3 and
    okay ones at 0.1 (topic t0 shifted up by 0.5, so a cut fit with t0 differs from one fit without it)."""
    rows = []
    for t in range(topics):
        shift = 0.5 if t == 0 else 0.0
        rows += [{"qid": f"t{t}", "nugget": f"n{t}.{i}", "nist": int(i < 2), "argmax": 0,
                  "p_vital": (0.3 if i < 2 else 0.1) + shift} for i in range(4)]
    return pd.DataFrame(rows).astype({"argmax": "Int64"})


def test_importance_readings_cross_fit_the_cut_by_topic_and_fit_the_applied_cut_on_every_topic():
    readings = ch05.importance_readings(_importance_set(), seed=0, n_resamples=200)
    written, at_cut = readings.loc["argmax"], readings.loc["threshold"]
    # written: the judge calls nothing vital, κ 0 and no interval (a constant rater)
    assert written["kappa"] == 0 and np.isnan(written["kappa_ci_low"]) and written["judge_vital_share"] == 0
    # the shifted topic, read with the cut fit on the other 11 (0.2), calls all 4 of its nuggets vital: 46 of 48 right
    assert at_cut["exact_agreement"] == pytest.approx(46 / 48) and at_cut["topics"] == 12 and at_cut["nuggets"] == 48
    assert 0.1 < at_cut["threshold"] < 0.3 and np.isnan(written["threshold"])


def test_the_threshold_reading_of_automatic_nuggets_leaves_an_unread_p_vital_unlabelled():
    from lib.nuggets import Creation

    auto = ch05.AutomaticNuggets(Creation(["a", "b", "c"], "unchanged", 1), ["okay"] * 3, [0.4, 0.1, None], [])
    assert auto.importance_at(0.2) == ["vital", "okay", None]
    table = ch05.creation_table({"q": auto}, threshold=0.2)
    assert table.loc["q", "vital"] == 0 and table.loc["q", ch05.VITAL_AT] == 1
    assert ch05.VITAL_AT not in ch05.creation_table({"q": auto}).columns


def test_next_run_sizes_follow_how_each_row_is_decided():
    from lib.verdicts import Claim, verdict

    def row(key, estimate, low, high, **test):
        return verdict("05", key, "s", "c", Claim("known answer", 0.5, "higher", 0.1), "AUC", estimate, low, high,
                       "topics", 10, "t", **test)

    outside, inside = row("out", 0.75, 0.5, 0.95), row("in", 0.55, 0.45, 0.8)
    tested = row("test", 0.6, 0.4, 0.8, test="sign-flip", p=0.2, p_against=0.9)
    decided = row("seen", 0.95, 0.9, 1.0)
    assert (outside.verdict, inside.verdict, tested.verdict, decided.verdict) == ("undetermined",) * 3 + ("sees",)
    sizes = ch05.next_run_sizes([outside, inside, tested, decided], {"05.test": 4}).set_index("row")
    assert list(sizes.index) == ["05.out", "05.in", "05.test"]  # a decided row needs no next run
    z, power = 1.959964, 0.841621
    # interval clear of the threshold 0.5 (not of the band's edge 0.6): SE 0.45 / 2z, d 0.25
    se = 0.45 / (2 * z)
    assert sizes.loc["05.out", "units for power 0.8"] == np.ceil(10 * ((z + power) * se / 0.25) ** 2)
    # inside the band: sized to fit in 0.5 ± 0.1, d = 0.1 − 0.05
    assert sizes.loc["05.in", "decided by"] == "95% interval inside 0.5 ± 0.1"
    assert sizes.loc["05.in", "units for power 0.8"] == np.ceil(10 * ((z + power) * (0.35 / (2 * z)) / 0.05) ** 2)
    # a tested row at the first Holm step of 4: z_{1 − 0.05/4}
    assert sizes.loc["05.test", "decided by"] == "one-sided test at α 0.05/4 (first Holm step)"
    holm_first, se_tested = 2.241403, 0.4 / (2 * z)
    assert sizes.loc["05.test", "units for power 0.8"] == np.ceil(10 * ((holm_first + power) * se_tested / 0.1) ** 2)
