"""Chapter 06's top-floor functions on small hand-made tables (no LLM)."""
from __future__ import annotations

import pandas as pd

from lib.chapters import ch06
from lib.crs.config import MetricConfig


def test_judgment_counts_name_each_failure_kind():
    rows = pd.DataFrame({"judge_failure_kind": [None, None, "invalid_json"]})
    assert ch06.judgment_counts(rows) == "conversations: judged 2, invalid_json 1"


def _correlation(r: float, n: int) -> dict[str, object]:
    return {"r": r, "ci_low": r - 0.2, "ci_high": r + 0.2, "n": n, "ci_over": "12 users"}


def test_summary_is_written_from_the_tables():
    systems = ["llm", "echo"]
    rows = pd.DataFrame({"system": ["llm", "llm", "echo", "echo"], "n_shifts": [2, 2, 2, 2], "n_turns": [8] * 4,
                         "failed_turns": [0, 1, 0, 0]})
    checks = pd.DataFrame({"expectation": ["llm above echo", "echo copies"], "metric": ["tas", "copy_ratio"],
                           "holds": [True, True], "mean_above": [0.6, 1.0], "mean_below": [-0.2, 0.1],
                           "sessions_holding": [2, 2], "sessions": [2, 2], "ties": [0, 0], "sign_test_p": [0.5, 0.5],
                           "by_design": ["", "the echo copies"], "tested": [True, False], "p_holm": [0.5, None],
                           "rejected": [False, False]})
    recovery = pd.DataFrame({"recovery_rate": [0.75, 0.0], "ci_low": [float("nan")] * 2,
                             "ci_high": [float("nan")] * 2, "ci_over": ["2 users"] * 2, "cue_shifts": [2, 2],
                             "rate_with_cue": [1.0, 0.0], "quiet_shifts": [2, 2], "rate_quiet": [0.5, 0.0]},
                            index=systems)
    summary = pd.DataFrame({"recovery_rate": [0.75, 0.0]}, index=systems)
    orders = pd.DataFrame({"changed": [False, True], "echo_rank": [2, 1]}, index=["tas", "tas_without_copy"])
    sessions = pd.DataFrame({"judge_ok": [True, True, False]})
    levels = pd.DataFrame([_correlation(0.1, 4), _correlation(0.2, 4), _correlation(0.9, 2)],
                          index=["without echo", "within systems", "system level"])
    judge_vs = pd.DataFrame([_correlation(0.3, 3)], index=["reply_words"])
    segmentation = pd.DataFrame({"f1": [0.5, 0.4, 0.0, 0.6], "pk": [0.3, 0.4, 0.35, 0.5]},
                                index=[*systems, "baseline: no boundary", "baseline: every turn"])
    title_filter = pd.DataFrame({"titles_proposed": [10], "titles_off_universe": [2], "titles_off_candidates": [1]})
    cues = pd.DataFrame({"with_cue": [0], "shift_turns": [3]}, index=["llm"])
    shifts = pd.DataFrame({"system": ["llm"] * 4, "session_id": ["s0", "s0", "s1", "s1"], "turn": [3, 6, 2, 6],
                           "censored": [False, True, False, True]})
    text = ch06.summary(ch06.Results(rows, systems, 2, MetricConfig(legacy_method="jaccard"), 0.05, checks, recovery,
                                     shifts,
                                     summary, orders,
                                     sessions, _correlation(0.5, 3), levels, judge_vs, segmentation, title_filter, cues,
                                     "**Independent extractor**: …", "nothing fools TAS.", 16, 10, 6, 0))
    assert ("1 of 1 tested differences hold on the means over 2 sessions, 0 of them with Holm-adjusted p < 0.05 "
            "(exact sign test over sessions, family of 1)") in text
    assert "llm above echo (tas): holds, 0.60 against -0.20; in 2 of 2 sessions (0 tied), Holm p = 0.5" in text
    assert "Not counted (1): echo copies (holds; by design: the echo copies)." in text
    assert "gave 2 distinct pairs of shift turns over 2 users; 2 of 4 shifts have a segment shorter than W" in text
    assert ("over 4 shifts per system, CI over users: llm 75% (no interval, 2 users; 100% of 2 shifts with a cue "
            "word, 50% of 2 without); echo 0%") in text
    assert "changes under tas_without_copy; the echo ranks 2 of 2 by TAS and 1 without the copy penalty." in text
    assert "2 of 3 conversations scored" in text
    assert "system level: ρ = 0.90 (95% CI 0.70 to 1.10, 12 users), n = 2" in text
    assert "its window is half the mean segment length, 1 turn here" in text  # 8 turns / 3 segments / 2
    assert "(jaccard) has F1 0.40–0.50 and Pk 0.30–0.40" in text and "does better than no boundary" in text
    assert "2 of 10 proposed titles were outside" in text
    assert "10 of 16 LLM-phrased user turns kept (6 fell back" in text
    assert "3 of 3 shift turns given to the LLM kept their planned form" in text
    assert text.endswith("0 user turns named a hidden target; 1 system turns failed.")


def test_session_plan_is_holms_floor_for_each_family():
    checks = pd.DataFrame({"tested": [True] * 5 + [False], "ties": [0, 0, 0, 0, 5, 9], "sessions": [10] * 6})
    plan = ch06.session_plan(checks, 10, 5, 0.05)
    # k = 5: 5 · 2/2^n < 0.05 first at n = 8 (5 · 2/128 = 0.078, 5 · 2/256 = 0.039); half the sessions tied → 16.
    first = plan.loc["06 known behaviour (exact sign test)"]
    assert (first.tests, first.nonzero_sessions_needed, first.pilot_tie_share, first.sessions_needed) == (5, 8, 0.5, 16)
    assert not first.can_reject
    # k = 10 (2 per system): 10 · 2/2^9 = 0.039 < 0.05 ≤ 10 · 2/2^8.
    second = plan.loc["07 CC around the shift (Wilcoxon)"]
    assert (second.tests, second.sessions_needed, second.can_reject) == (10, 9, True)
    assert plan.loc["07 CR within vs across segments (Wilcoxon)", "sessions_needed"] == 8  # k = 5, as above


def test_extractor_text_compares_the_two_verdicts():
    agreement = pd.DataFrame({"same_concepts": [0.5, 1.0], "turns": [80, 80]}, index=["llm", "echo"])
    sessions = pd.DataFrame([_correlation(0.9, 50), _correlation(0.8, 50)], index=["tas", "cas"])
    checks = pd.DataFrame({"expectation": ["a", "b", "c"], "tested": [True, True, False],
                           "rejected": [True, True, False]})
    independent = checks.assign(rejected=[True, False, False])
    text = ch06.extractor_text(agreement, sessions, checks, independent)
    assert "in 50% of llm's 80 scored turns, 100% of echo's 80 scored turns" in text
    assert "TAS ρ = 0.90 (95% CI 0.70 to 1.10, 12 users), n = 50" in text
    assert "rejects 2 of 2 differences scored by E(x) and 1 of 2 scored by the matcher; they differ on: b." in text
