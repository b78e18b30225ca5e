"""Chapter 06's top floor on small hand-made tables and records (no LLM): the verdicts its findings decide (a
wrong-sign case among them), and the formatters of the findings record."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib.chapters import ch06
from lib.crs import summaries
from lib.verdicts import VERDICTS

NAN = float("nan")
SYSTEMS = ["llm", "retrieval_template", "echo"]


def test_judgment_counts_name_each_failure_kind():
    rows = pd.DataFrame({"judge_failure_kind": [None, None, "invalid_json"]})
    assert ch06.judgment_counts(rows) == "conversations: judged 2, invalid_json 1"


def _correlation(r: float, n: int, units: int = 12) -> dict[str, object]:
    return {"r": r, "ci_low": r - 0.2, "ci_high": r + 0.2, "n": n, "units": units, "ci_over": f"{units} users"}


def checks_table(p_holm=(0.006, 0.02), p_against_holm=(1.0, 1.0)) -> pd.DataFrame:
    """Two tested expectations, one by design and one "at least as" (not tested), as known_behaviour gives them."""
    return pd.DataFrame({
        "expectation": ["TAS: the template above the stale template", "the LLM keeps more than the memoryless LLM",
                        "the echo copies the user the most", "the memoryless LLM recovers at least as often"],
        "metric": ["tas", "cc", "copy_ratio", "recovery_rate"], "above": ["t", "llm", "echo", "m"],
        "below": ["s", "m", "t", "llm"], "mean_above": [0.8, 0.79, 1.0, 1.0], "mean_below": [0.63, 0.68, 0.1, 0.6],
        "sessions_holding": [12, 11, 12, 12], "sessions": [12, 12, 12, 12], "ties": [0, 0, 0, 4],
        "share": [1.0, 11 / 12, 1.0, 1.0], "ci_low": [0.74, 0.62, 0.74, 0.63], "ci_high": [1.0, 0.99, 1.0, 1.0],
        "p": [0.0002, 0.003, 0.0002, 0.004], "p_against": [1.0, 1.0, 1.0, 1.0],
        "by_design": ["", "", "the echo repeats the user", ""], "tested": [True, True, False, False],
        "p_holm": [*p_holm, NAN, NAN], "p_against_holm": [*p_against_holm, NAN, NAN]})


def test_known_behaviour_rows_tested_by_holm_the_rest_by_their_interval_and_flagged():
    rows = ch06.known_behaviour_verdicts(checks_table(), 0.05)
    assert [v.key for v in rows][:2] == ["06.known_behaviour.tas_the_template_above_the_stale_template",
                                         "06.known_behaviour.the_llm_keeps_more_than_the_memoryless_llm"]
    assert [v.verdict for v in rows] == ["holds"] * 4
    assert [v.by_construction for v in rows] == [False, False, True, False]
    assert [bool(v.test) for v in rows] == [True, True, False, False]
    assert not any(v.confirmatory for v in rows)  # the first users' run chose things: exploratory
    fresh = ch06.known_behaviour_verdicts(checks_table(), 0.05, "crs_checks_confirm", "confirmatory",
                                          confirmatory=True)
    assert [v.confirmatory for v in fresh] == [True, True, False, False]  # only the tested ones, on fresh users
    assert fresh[0].key == "06.confirmatory.tas_the_template_above_the_stale_template"
    assert rows[1].p == 0.02 and np.isnan(rows[2].p) and rows[0].units == 12 and rows[0].unit == "users not tied"


def test_a_tested_difference_significant_the_wrong_way_fails_it_and_the_family():
    checks = checks_table(p_holm=(0.006, 1.0), p_against_holm=(1.0, 0.004))
    rows = ch06.known_behaviour_verdicts(checks, 0.05)
    assert (rows[0].verdict, rows[1].verdict) == ("holds", "fails")
    family = ch06.family_verdict(checks, rows, 0.05, "primary", "TAS", "crs_checks", primary=True)
    assert family.verdict == "fails" and family.p == 1.0 and family.p_against == 0.004
    # not significant either way: the family cannot say
    undecided = checks_table(p_holm=(0.006, 0.2), p_against_holm=(1.0, 1.0))
    assert ch06.family_verdict(undecided, ch06.known_behaviour_verdicts(undecided, 0.05), 0.05, "primary", "TAS",
                               "crs_checks").verdict == "undetermined"


def test_the_family_holds_when_every_tested_difference_does_and_reads_the_weakest():
    checks = checks_table()
    family = ch06.family_verdict(checks, ch06.known_behaviour_verdicts(checks, 0.05), 0.05, "primary", "TAS",
                                 "crs_checks", primary=True, depends_on=["06.known_answer.nothing.cas"])
    assert family.verdict == "holds" and family.p == 0.02  # intersection-union: the largest Holm p
    assert (family.estimate, family.ci_low) == (pytest.approx(11 / 12), 0.62) and "2 tested" in family.statistic
    assert family.primary and family.depends_on == ("06.known_answer.nothing.cas",)


def known_answers_table() -> pd.DataFrame:
    return pd.DataFrame({
        "reply": ["nothing", "nothing", "nothing", "target_named"], "metric": ["tas", "cas", "hit_rate", "tas"],
        "known": ["worse", "worse", "worse", "better"], "auc": [0.5, 0.05, 1.0, 0.9],
        "ci_low": [0.45, 0.0, 1.0, 0.55], "ci_high": [0.55, 0.1, 1.0, 1.0], "users": [12] * 4,
        "recommenders_low": [0.66, 0.63, 0.93, 0.66], "recommenders_high": [0.8, 0.7, 0.96, 0.8],
        "reply_mean": [0.77, 0.88, 0.0, 0.89], "by_construction": ["", "", "no title, so no hit", ""]})


def test_known_answer_rows_see_are_blind_or_fail():
    rows = ch06.known_answer_verdicts(known_answers_table(), 0.05, 0.1)
    assert [v.verdict for v in rows] == ["blind", "fails", "sees", "sees"]
    assert [v.key for v in rows][:2] == ["06.known_answer.nothing.tas", "06.known_answer.nothing.cas"]
    assert rows[2].by_construction and not rows[1].by_construction and rows[1].statistic == "AUC"
    assert "above a reply that notes the user's last wish and recommends nothing" in rows[0].construct
    assert rows[3].construct.startswith("scores a reply that names the hidden target and nothing else above the real")


def hand_tables() -> dict[str, pd.DataFrame]:
    sessions = pd.DataFrame({
        "system": [s for s in SYSTEMS for _ in range(2)], "session_id": ["s0", "s1"] * 3, "n_shifts": [2] * 6,
        "n_turns": [8] * 6, "failed_turns": [0, 1, 0, 0, 0, 0], "judge_ok": [True, False] * 3,
        "llm_user_turns": [5, 0] * 3, "template_fallback_turns": [3, 0] * 3, "titles_proposed": [5, 5, 0, 0, 0, 0],
        "titles_off_universe": [1, 1, 0, 0, 0, 0], "titles_off_candidates": [1, 0, 0, 0, 0, 0]})
    recovery = pd.DataFrame({"recovery_rate": [0.75, 0.5, 0.0], "ci_low": [NAN] * 3, "ci_high": [NAN] * 3,
                             "ci_over": ["2 users"] * 3, "cue_shifts": [2] * 3, "rate_with_cue": [1.0, 1.0, 0.0],
                             "quiet_shifts": [2] * 3, "rate_quiet": [0.5, 0.0, 0.0]}, index=SYSTEMS)
    shifts = pd.DataFrame({"system": ["llm"] * 4, "session_id": ["s0", "s0", "s1", "s1"], "turn": [3, 6, 2, 6],
                           "censored": [False, True, False, True]})
    orders = pd.DataFrame({"changed": [False, True], "echo_rank": [3, 1]}, index=["tas", "tas_without_copy"])
    levels = pd.DataFrame([_correlation(0.4, 6), _correlation(0.1, 4), _correlation(0.3, 6, 6),
                           _correlation(0.9, 3, 3)], index=["pooled", "without echo", "within systems", "system level"])
    levels.loc["within systems", ["ci_low", "ci_high"]] = NAN  # 6 users: no interval
    reply_means = pd.DataFrame({"tas": [0.66, 0.8, -0.2, 0.77, 0.77, 0.85, 0.89],
                                "cas": [0.63, 0.7, 0.15, 0.88, 0.88, 0.92, 0.94],
                                "hit_rate": [0.93, 0.96, 0.0, 0.0, 0.0, 0.0, 1.0],
                                "target_success": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]},
                               index=[*SYSTEMS, *summaries_counterfactuals()])
    return {"crs_sessions": sessions, "crs_checks": checks_table(), "crs_checks_matcher": checks_table(),
            "crs_checks_confirm": checks_table(p_holm=(0.006, 0.2), p_against_holm=(1.0, 1.0)),
            "crs_judge_checks_confirm": judge_checks_table(), "crs_judge_reading": judge_reading_table(),
            "crs_known_answers": known_answers_table(), "crs_reply_means": reply_means, "crs_recovery": recovery,
            "crs_shifts": shifts, "crs_ablation_orders": orders, "crs_judge_levels": levels,
            "crs_judge_correlations": pd.DataFrame([_correlation(0.26, 6)], index=["reply_words"]),
            "crs_segmentation": pd.DataFrame({"f1": [0.5, 0.4, 0.45, 0.0, 0.6], "pk": [0.3, 0.4, 0.35, 0.29, 0.7]},
                                             index=[*SYSTEMS, "baseline: no boundary", "baseline: every turn"]),
            "crs_shift_cues": pd.DataFrame({"shift_turns": [3, 1]}, index=["llm", "template_fallback"]),
            "crs_extractor_turns": pd.DataFrame({"same_concepts": [0.96, 1.0, 0.99], "turns": [16] * 3},
                                                index=SYSTEMS),
            "crs_extractor_sessions": pd.DataFrame([_correlation(0.99, 6), _correlation(1.0, 6)],
                                                   index=["tas", "cas"])}


def judge_rows(template, stale, echo, criterion_gap=0.0) -> pd.DataFrame:
    """One judged session per user (12 users) and system: each criterion at the given level, personalisation
    ``criterion_gap`` higher for the template."""
    rows = []
    for user in range(12):
        for system, level in (("retrieval_template", template), ("stale_template", stale), ("echo", echo)):
            gap = criterion_gap if system == "retrieval_template" else 0.0
            rows.append({"session_id": f"s{user}", "system": system, "judge_coherence": level(user),
                         "judge_personalisation": level(user) + gap, "judge_proactiveness": level(user)})
    return pd.DataFrame(rows)


def judge_checks_table() -> pd.DataFrame:
    """The fresh users' judge checks of two readings: the mean holds both ways, personalisation fails one."""
    mean = summaries.judge_checks(judge_rows(lambda u: 4.0, lambda u: 3.0, lambda u: 2.0), ["judge_mean"])
    backwards = summaries.judge_checks(judge_rows(lambda u: 3.0, lambda u: 4.0, lambda u: 2.0),
                                       ["judge_personalisation"])
    return pd.concat([mean, backwards], ignore_index=True)


def judge_reading_table() -> pd.DataFrame:
    return summaries.choose_judge_reading(judge_rows(lambda u: 2.5 + 1.5 * (u % 2), lambda u: 3.0, lambda u: 2.0,
                                                     criterion_gap=1.0))


def test_a_judge_reading_is_chosen_on_the_first_users_and_the_mean_wins_a_tie():
    table = judge_reading_table()
    # personalisation puts the template above both in all 12 users; the mean and the others only in the odd ones
    # against the stale template
    assert table.index[table.chosen].tolist() == ["judge_personalisation"]
    assert table.loc["judge_personalisation", "users ordered as built"] == 24
    tied = summaries.choose_judge_reading(judge_rows(lambda u: 4.0, lambda u: 3.0, lambda u: 2.0))
    assert tied.index[tied.chosen].tolist() == ["judge_mean"]  # every reading orders every user: the mean first


def test_the_judge_on_fresh_users_is_one_confirmatory_family_per_reading_and_a_wrong_way_reading_fails():
    rows = ch06.judge_confirmatory_verdicts(judge_checks_table(), 0.05)
    keys = [v.key for v in rows]
    assert keys[0] == "06.judge.confirmatory.mean" and keys[3] == "06.judge.confirmatory.personalisation"
    assert all(v.confirmatory for v in rows)
    assert rows[0].system == "conversation judge (mean of 3 criteria) on fresh users"
    # the mean: template above echo and stale in all 12 users, exact one-sided p 2^-12 · 4 (Holm, both directions)
    assert rows[0].verdict == "holds" and rows[0].p == pytest.approx(4 * 2 ** -12) and rows[0].units == 12
    # personalisation rates the stale template above the template in every user: the family fails
    assert rows[3].verdict == "fails" and rows[3].estimate == 0.0


def summaries_counterfactuals() -> tuple[str, ...]:
    from lib.crs.recommendation import COUNTERFACTUALS
    return COUNTERFACTUALS


PARAMS = {"alpha": 0.05, "known_answer_margin": 0.1, "window": 3, "legacy_method": "jaccard", "llm_planned": 16,
          "target_mentions": 0}


def test_findings_carry_the_caveat_that_decides_the_primary_verdict():
    f = ch06.findings(hand_tables(), PARAMS)
    keys = [v.key for v in f.verdicts()]
    assert len(keys) == len(set(keys)) and keys[0] == "06.primary" and sum(v.primary for v in f.verdicts()) == 1
    assert all(v.verdict in VERDICTS for v in f.verdicts())
    # CAS prefers the reply that recommends nothing and TAS cannot tell: both qualify the primary verdict
    assert f.primary.verdict == "holds"
    assert f.primary.depends_on == ("06.known_answer.nothing.tas", "06.known_answer.nothing.cas",
                                    "06.confirmatory")
    assert not f.primary.confirmatory and f.confirmed.confirmatory
    assert f.confirmed.verdict == "undetermined"  # one of the fresh users' tested differences is not significant
    assert f.by_matcher.key == "06.known_behaviour_by_matcher" and not f.by_matcher.confirmatory
    assert f.judge_vs_tas.verdict == "undetermined" and np.isnan(f.judge_vs_tas.ci_low)  # 6 users, no interval
    # a metric that sees the reply that recommends nothing is no caveat
    seeing = hand_tables()
    seeing["crs_known_answers"] = known_answers_table().assign(auc=0.8, ci_low=0.7, ci_high=0.9)
    assert ch06.findings(seeing, PARAMS).primary.depends_on == ("06.confirmatory",)
    # the descriptive evidence
    assert (f.users, f.shifts_per_system, f.schedules, f.censored) == (2, 4, 2, 2)
    assert f.target_ceiling == ("llm", "retrieval_template") and f.order_by["cas"] == "retrieval_template > llm > echo"
    assert (f.kept, f.fallback, f.failed_turns, f.titles["titles_off_universe"]) == (5, 3, 1, 2)


def test_every_earlier_verdict_is_one_the_chapter_states():
    from lib.crs.recommendation import COUNTERFACTUALS, KNOWN_ANSWER_METRICS
    keys = {"06.primary", "06.known_behaviour_by_matcher",
            *(f"06.known_behaviour.{ch06.slug(e.text)}" for e in summaries.EXPECTATIONS),
            *(f"06.known_answer.{r}.{m}" for r in COUNTERFACTUALS for m in KNOWN_ANSWER_METRICS)}
    assert set(ch06.EARLIER) <= keys and set(ch06.EARLIER.values()) <= set(VERDICTS)


def test_summary_formats_the_record_and_decides_nothing():
    f = ch06.findings(hand_tables(), PARAMS)
    text = ch06.summary(f)
    assert text.startswith("* **Known behaviour** (the primary question, exploratory on these users): **TAS, CAS and "
                           "their components** — orders the systems of known behaviour as they were built (every "
                           "tested difference): **holds**")
    assert "**Confirmatory run** on fresh users, the systems without an LLM" in text
    assert "on fresh users (the systems without an LLM)** — orders the systems" in text
    assert "Caveat: **CAS** — scores the real recommenders' replies (llm and retrieval_template) above a reply that " \
           "notes the user's last wish and recommends nothing: **fails**" in text
    assert "Not counted (2):" in text and "[holds by construction]" in text
    assert ("over 4 shifts per system, CI over users: llm 75% (no interval, 2 users; 100% of 2 shifts with a cue "
            "word, 50% of 2 without)") in text
    assert "gave 2 distinct pairs of shift turns over 2 users; 2 of 4 shifts have a segment shorter than W" in text
    assert "changes under tas_without_copy; the echo ranks 3 of 3 by TAS and 1 without the copy penalty." in text
    assert "3 of 6 conversations scored" in text
    assert "system level: ρ = 0.90 (95% CI 0.70 to 1.10, 3 users), n = 3" in text
    assert "moves with session TAS within systems (descriptive; validity: chapter 07): **undetermined**" in text
    assert "(jaccard) has F1 0.40–0.50 and Pk 0.30–0.40" in text and "no boundary at all has Pk 0.29" in text
    assert "recommends nothing scores TAS 0.77 and CAS 0.88, against 0.66–0.80 and 0.63–0.70" in text
    assert "Target success, iEvaLM's criterion, is 1 in every session of each of the 2 systems" in text
    assert "by the matcher: **TAS, CAS and their components scored by the independent matcher**" in text
    assert "2 of 10 proposed titles were outside" in text and "5 of 16 LLM-phrased user turns kept (3 fell back" in text
    assert "3 of 4 shift turns given to the LLM kept their planned form" in text
    assert text.endswith("0 user turns named a hidden target; 1 system turns failed.")
    # the formatter only carries the record's words: another outcome in the record, another word in the text
    flipped = replace(f, primary=replace(f.primary, verdict="fails"))
    assert "(every tested difference): **fails**" in ch06.summary(flipped)


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
