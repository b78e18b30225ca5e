"""Chapter 05's top-floor functions on small hand-made tables (no LLM): the log calendar, the tables built from
matches and assignments, the monitor verdict and the generated summary."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib import monitor
from lib.chapters import ch05
from lib.nuggets import Creation


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


def test_support_table_reads_three_grade_assignments_only():
    assignment = pd.DataFrame({"grades": [3, 3, 3, 2], "variant": ["with_context"] * 4,
                               "in_context": [True, True, False, True],
                               "assignment": ["support", "partial_support", "support", "support"]})
    table = ch05.support_table(assignment)
    assert table.loc[("with_context", True)].tolist() == [1, 2, 0.5]
    assert table.loc[("with_context", False)].tolist() == [1, 1, 1.0]


def test_monitor_verdict_names_missed_days_and_false_alarms():
    statuses = {"d1": monitor.EXIT_OK, "d2": monitor.EXIT_ALERT, "d3": monitor.EXIT_OK}
    assert (ch05.monitor_verdict(statuses, "d3")
            == "degraded day d3: NOT caught by the alert; alerts on other days: ['d2']")
    assert ch05.monitor_verdict({"d3": monitor.EXIT_ALERT}, "d3").endswith(
        "caught by the alert; alerts on other days: none")


def _correlation(rows: dict[tuple[str, str, str], tuple[float, float, float, int]]) -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples(list(rows), names=["group", "score", "method"])
    return pd.DataFrame(list(rows.values()), index=index, columns=["r", "ci_low", "ci_high", "n"]).assign(
        ci_over="12 questions")


def test_summary_is_written_from_the_results():
    auto = {"1": ch05.AutomaticNuggets(Creation(["x", "y"], "no_new", 2), ["vital", "okay"], [])}
    evaluated = pd.DataFrame({"embedding_match": [True, False], "narrative_match": [False, False],
                              "llm_match": pd.array([True, True], dtype="boolean")})
    importance = ch05.ImportanceAgreement([1, 1], [1, 0], {"kappa": 0.0, "kappa_ci_low": np.nan, "ci_over": "2 topics",
                                                            "kappa_ci_high": np.nan, "n": 2, "exact_agreement": 0.5})
    rag_scores = pd.DataFrame({"grades": [3, 3, 2, 2], "system": ["with_context", "no_context"] * 2,
                               "all": [0.6, 0.4, 0.9, 0.8]})
    assignment = pd.DataFrame({"grades": [3, 3], "assignment": ["partial_support", "support"]})
    alce = _correlation({("all", "all", "spearman"): (0.5, 0.1, 0.8, 16),
                         ("all", "vital", "spearman"): (0.3, -0.2, 0.7, 8),
                         ("all", "words", "spearman"): (0.05, -0.4, 0.5, 16),
                         ("eli5", "vital", "spearman"): (0.2, np.nan, np.nan, 4)})
    answered = _correlation({("all", "all", "spearman"): (0.4, -0.1, 0.8, 14)})
    triad = _correlation({("all", "traditional_answer_relevance", "spearman"): (0.0, -0.5, 0.5, 6),
                          ("all", "nuggetized_answer_relevance", "spearman"): (0.7, 0.1, 0.9, 6),
                          ("all", "words", "spearman"): (0.1, -0.6, 0.7, 6)})
    rag_triad = pd.DataFrame({"triad": ["traditional"] * 2, "answer": ["with_context", "no_context"],
                              "groundedness": [1.0, 0.9]})
    days = pd.DataFrame({"day": ["d1", "d2", "d3"], "overall": [0.91, 0.88, 0.90]})
    text = ch05.summary(ch05.Results(
        "vital", 0.6, auto, evaluated, importance, rag_scores, assignment,
        {"shown_supported": 4, "shown": 20, "held_out_supported": 2, "held_out": 20, "p": 0.66},
        pd.DataFrame({"words": [0, 10, 12]}), alce, answered, 4, triad, rag_triad,
        {"d1": 0, "d2": 0, "d3": 0}, days, "d2", pd.Series([0.02, 0.04])))
    assert "κ = 0.00 (no interval: 2 topics) on 2 nuggets; it calls 1 vital where NIST calls 2" in text
    assert "(2 per topic): 50% by embedding match (cosine ≥ 0.6" in text and "agree on 1 of 2" in text
    assert "3 grades: with 0.60, without 0.40; 2 grades: with 0.90, without 0.80" in text
    assert "supports 4/20 shown and 2/20 held-out nuggets (Fisher exact p = 0.66)" in text
    assert "partial_support to 50%" in text
    assert "exists for 8 of 3 answers" in text and "ρ = 0.30 (95% CI -0.20 to 0.70, 12 questions; ELI5: n = 4)" in text
    assert "without the 1 empty answers, ρ = 0.40 (95% CI -0.10 to 0.80, 12 questions) over 14" in text
    assert "0.00 traditional, 0.70 nuggetized, 0.10 for length" in text and "nested in 4 questions" in text
    assert "was not caught by the alert; its overall mean was 0.88 against 0.90–0.91" in text
    assert "scores +0.030 higher" in text
