"""Chapter 05's top-floor functions on small hand-made tables (no LLM): the log calendar, the tables built from
matches and assignments, the monitor verdict and the generated summary."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.analysis.power import control_limit_power
from lib.chapters import ch05


def test_log_design_puts_the_degraded_days_topics_under_nugget_evaluation():
    design = ch05.log_design(["1", "2", "3", "4", "5", "6", "7", "8"], "2026-11-01", 4, 3)
    assert design.days == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    assert (design.per_day, design.degraded, design.recheck) == (2, "2026-11-03", "2026-11-05")
    assert design.nugget_qids == ["5", "6"]
    requests = ch05.answer_requests(design, {q: f"query {q}" for q in design.topics},
                                    {q: [f"note {q}"] for q in design.topics})
    assert len(requests) == 10 and requests[requests.variant == "no_context"].qid.tolist() == ["5", "6"]
    assert requests[requests.variant == "no_context"].notes.isna().all()


def test_answer_lengths_count_failures_and_words():
    answers = pd.DataFrame({"qid": ["1", "2", "1"], "variant": ["with_context", "with_context", "no_context"],
                            "answer": ["one two three", None, "a b"]})
    table = ch05.answer_lengths(answers)
    assert table.loc["with_context"].tolist() == [2, 1, 1.5, 3]  # the failed answer counts 0 words
    assert table.loc["no_context"].tolist() == [1, 0, 2.0, 2]


def test_recall_and_match_agreement_skip_missing_llm_matches():
    evaluated = pd.DataFrame({"qid": ["1"] * 4, "in_context": [True, True, False, False], "nugget": list("abcd"),
                              "embedding_match": [True, False, True, False],
                              "narrative_match": [False, False, True, False],
                              "llm_match": pd.array([True, True, None, False], dtype="boolean")})
    assert ch05.match_agreement(evaluated) == (2, 3)  # a, d agree; b disagrees; c has no LLM match
    recall = ch05.recall_table(evaluated)
    assert recall.loc[("1", False), "llm_failed"] == 1 and recall.loc[("1", True), "embedding_recall"] == 0.5


def test_recall_summary_puts_the_held_out_nuggets_first():
    evaluated = pd.DataFrame({"qid": ["1", "1", "2", "2"], "in_context": [True, False, False, False],
                              "nugget": list("abcd"), "embedding_match": [True, False, True, True],
                              "narrative_match": [False, False, True, False],
                              "llm_match": pd.array([True, None, False, True], dtype="boolean")})
    summary = ch05.recall_summary(evaluated)
    assert summary.index.tolist() == ["held out", "shown as notes"]
    assert summary.loc["held out", ["nuggets", "topics"]].tolist() == [3, 2]
    assert summary.loc["held out", "embedding_recall"] == 2 / 3 and summary.loc["held out", "llm_recall"] == 0.5


def test_support_table_counts_full_support():
    assignment = pd.DataFrame({"variant": ["with_context"] * 3, "in_context": [True, True, False],
                               "assignment": ["support", "partial_support", "support"]})
    table = ch05.support_table(assignment)
    assert table.loc[("with_context", True)].tolist() == [1, 2, 0.5]
    assert table.loc[("with_context", False)].tolist() == [1, 1, 1.0]


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


def test_primary_text_says_how_many_questions_to_ask_at_the_usable_share():
    index = pd.MultiIndex.from_tuples([("non-empty answers", "vital"), ("non-empty answers", "all")],
                                      names=["answers", "score"])
    correlations = pd.DataFrame({"questions": [4, 12], "questions with a within ρ": [3, 6],
                                 "within ρ": [0.5, 0.3], "within ci_low": [np.nan] * 2,
                                 "within ci_high": [np.nan] * 2}, index=index)
    design = pd.DataFrame({"questions needed": [16]}, index=pd.Index([4], name="answers per question"))
    ceiling = {"r": 0.36, "ci_low": 0.1, "ci_high": 0.5, "ci_over": "68 questions", "pairs": 74, "ceiling": 0.6}
    text = ch05.primary_text(correlations, "vital", design, 4, ceiling)
    assert "mean ρ 0.50 (no interval: 3 questions)" in text
    assert "4 questions of 12 have a vital score at all" in text and "and 3 a within ρ" in text
    # 16 usable questions at 3 usable of 12 asked: 16 * 12 / 3 = 64 to ask
    assert "usable questions (3 of 12) that means asking about 64; this run cannot decide it." in text
    assert "can hardly exceed √0.36 = 0.60" in text
    none = correlations.assign(**{"questions with a within ρ": [0, 6], "within ρ": [np.nan, 0.3]})
    assert "mean ρ undefined" in ch05.primary_text(none, "vital", design, 4, ceiling)
    assert "no number of questions would do" in ch05.primary_text(none, "vital", design, 4, ceiling)
