"""Chapter 04's front-page headline, computed from the ndcg_comparisons table."""
from __future__ import annotations

import pandas as pd

from lib.chapters import HEADLINES


def comparison(primary, significant=False, mean_diff=0.0075, p=0.719, mde=0.0607, min_p=0.03):
    return {"measure": "NDCG@3", "system": "value_aware", "baseline": "embedding" if primary else "random",
            "primary": primary, "n_entries": 20, "n_informative": 12, "wins": 3, "losses": 3, "mean_diff": mean_diff,
            "ci_low": -0.0289, "ci_high": 0.0454, "p_permutation": p, "significant": significant, "mde": mde,
            "min_p": min_p, "alpha": 0.05}


def test_headline_04_states_the_primary_comparison_and_the_secondary_count():
    entry = HEADLINES["04_ndcg_analysis"]
    assert entry.tables == ("ndcg_comparisons",)
    table = pd.DataFrame([comparison(True), comparison(False), comparison(False, significant=True)])
    assert entry.sentence({"ndcg_comparisons": table}) == (
        "Primary comparison, value_aware − embedding on NDCG@3: +0.007 (95% CI -0.029 to +0.045) over 20 entries "
        "(12 informative; 3 wins, 3 losses), exact sign-flip p = 0.72 — not significant; this study can only detect "
        "differences of about ±0.061 or more; 1 of 2 secondary comparisons are significant after Holm.")


def test_headline_04_significant_and_missing_primary():
    entry = HEADLINES["04_ndcg_analysis"]
    significant = pd.DataFrame([comparison(True, significant=True, mean_diff=-0.1, p=0.001)])
    assert entry.sentence({"ndcg_comparisons": significant}).endswith(
        "exact sign-flip p = 0.001 — significant: value_aware ranks worse.")
    assert entry.sentence({"ndcg_comparisons": pd.DataFrame([comparison(False)])}) == (
        "No primary comparison could be tested (no informative entry on its measure); 0 of 1 secondary "
        "comparisons are significant after Holm.")


def test_headline_04_names_no_detectable_effect_when_no_outcome_could_be_significant():
    entry = HEADLINES["04_ndcg_analysis"]
    table = pd.DataFrame([comparison(True, p=1.0, min_p=0.125)])  # 3 non-tied entries: smallest p = 2/2³
    sentence = entry.sentence({"ndcg_comparisons": table})
    assert "not significant, and with 6 non-tied entries no outcome could have been significant" in sentence
    assert "±0.061" not in sentence


def test_headline_05_reads_the_declared_primary_within_questions_and_the_control_limit():
    # question a: vital order = utility order (ρ 1); b: reversed (-1); c: no vital score; the empty answer left out
    scores = pd.DataFrame({"dataset": ["asqa"] * 7 + ["rag25"], "qid": [*"aaabbcc", "t"],
                           "vital": [0.1, 0.5, 0.0, 0.9, 0.2, None, None, 1.0], "words": [5, 6, 0, 7, 8, 9, 9, None],
                           "utility": [1, 2, 1, 3, 4, 2, 3, None]})
    days = pd.DataFrame({"day": ["d1", "d2", "d3"], "overall": [0.9, 0.85, 0.8], "degraded": [False, True, False],
                         "control_limit": [None, 0.87, 0.86]})
    sentence = HEADLINES["05_nugget_evaluation"].sentence({"nugget_scores": scores, "monitor_days": days})
    assert "2 of 3 questions have vital-nugget scores" in sentence
    assert "is 0.00 (2 questions, fewer than 10 questions)" in sentence
    assert "overall 0.850 is below its control limit 0.870" in sentence
    no_limit = days.assign(control_limit=None)
    assert "has no control limit" in HEADLINES["05_nugget_evaluation"].sentence(
        {"nugget_scores": scores, "monitor_days": no_limit})


def test_headline_06_counts_the_known_differences_and_names_the_failures():
    checks = pd.DataFrame({"expectation": ["the echo copies the most", "the stale template recovers less",
                                           "the template scores higher"],
                           "tested": [False, True, True], "rejected": [False, False, True]})
    sessions = pd.DataFrame({"session_id": ["s0", "s1", "s0", "s1"]})
    sentence = HEADLINES["06_crs_simulation"].sentence({"crs_checks": checks, "crs_sessions": sessions})
    assert sentence == ("Over 2 simulated users, 1 of 2 tested differences between systems of known behaviour hold "
                        "after Holm (not: the stale template recovers less); 1 checks that hold by design or are no "
                        "strict difference are not counted.")
    every = HEADLINES["06_crs_simulation"].sentence({"crs_checks": checks.iloc[[0, 2]], "crs_sessions": sessions})
    assert "hold after Holm; 1 checks" in every


def test_headline_07_states_both_targets_with_their_intervals():
    from lib.analysis import report_card as rc

    rows = [rc._row("criteria, thresholds on the mean" + rc.CHOSEN, "m", "TREC DL19", "relevance", rc.WEIGHTED_KAPPA,
                    "item", 24, 0.52, 0.41, 0.70, "12 queries"),
            rc._row("BM25, thresholds", "—", "TREC DL19", "relevance", rc.WEIGHTED_KAPPA, "item", 24, 0.3, 0.1, 0.5,
                    "12 queries"),
            rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "summary", 12, 0.35, 0.12, 0.58,
                    "12 documents")]
    entry = HEADLINES["07_validity"]
    assert entry.tables == ("report_card",)
    sentence = entry.sentence({"report_card": rc.report_card(rows)})
    assert sentence.startswith("Report card of 3 judges and baselines in 3 rows.")
    assert ("the relevance reading declared primary (criteria, thresholds on the mean, scored out of fold) has "
            "quadratic-weighted κ = 0.52 "
            "(95% CI 0.41 to 0.70, 12 queries; n = 24) against a target of 0.40: it reaches it;") in sentence
    assert sentence.endswith("summary-level Spearman ρ = 0.35 (95% CI 0.12 to 0.58, 12 documents; n = 12) against a "
                             "target of 0.30: it reaches it by the estimate, not by the interval.")
    def with_geval(n: int, value: float, low: float, high: float, over: str) -> str:
        geval_row = rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "summary", n, value, low,
                            high, over)
        return entry.sentence({"report_card": rc.report_card([*rows[:2], geval_row])})

    assert with_geval(12, 0.27, 0.18, 0.37, "12 documents").endswith(
        "ρ = 0.27 (95% CI 0.18 to 0.37, 12 documents; n = 12) against a target of 0.30: its interval includes it, so "
        "it is neither reached nor missed.")
    assert with_geval(12, 0.12, 0.02, 0.25, "12 documents").endswith("against a target of 0.30: it misses it.")
    few = [*rows[:2], rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "summary", 4, 0.35, 0.12,
                              0.58, "4 documents")]
    assert entry.sentence({"report_card": rc.report_card(few)}).endswith(
        "summary-level Spearman ρ = 0.35 (no interval: 4 documents; n = 4) against a target of 0.30: without an "
        "interval it is neither reached nor missed.")
