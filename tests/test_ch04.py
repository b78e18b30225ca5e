"""Generated interpretation text follows the numbers (direction, effect, CI, what cannot be concluded, the
verdict and its reasons, threats with their measured numbers); the cost table reads every ledger."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lib.analysis.power import units_for_t_test
from lib.chapters.ch04 import (
    comparison_paragraph,
    conclusion,
    detectable_text,
    discrimination_table,
    known_answer_text,
    perturbation_text,
    primary_plan,
    threats_to_validity,
)
from lib.costs import hosted_cost, read_ledgers


def row(measure="NDCG@3", baseline="base", primary=False, mean_diff=0.01, wins=3, losses=3, ties=6, p=0.7,
        p_holm=1.0, family_size=3, mde=0.06, min_p=0.03, significant=False, system="sys_x"):
    return {"measure": measure, "system": system, "baseline": baseline, "primary": primary, "n_entries": 20,
            "n_informative": wins + losses + ties, "n_personas": 5, "wins": wins, "losses": losses, "ties": ties,
            "mean_diff": mean_diff, "ci_low": mean_diff - 0.04, "ci_high": mean_diff + 0.04,
            "ci_over": "20 entries", "ci_low_persona": mean_diff - 0.05, "ci_high_persona": mean_diff + 0.03,
            "ci_over_persona": "12 personas", "p_permutation": p,
            "permutation_exact": True, "p_sign": 1.0, "min_p": min_p, "family_size": family_size, "p_holm": p_holm,
            "alpha": 0.05, "significant": significant, "mde": mde, "power": 0.8}


def comparisons_today():
    """Primary not significant; secondary: Hit@3 differs from 'rand' but is identical to 'base' and 'cat'."""
    return pd.DataFrame([
        row(baseline="base", primary=True, mean_diff=0.0076, family_size=1, p_holm=0.7, mde=0.061),
        row(measure="Hit@3 (g=2)", baseline="rand", mean_diff=0.011, wins=3, losses=1, ties=0, p=0.75, mde=0.4,
            min_p=0.125),
        row(measure="Hit@3 (g=2)", baseline="base", mean_diff=0.0, wins=0, losses=0, ties=4, p=1.0, mde=float("nan"),
            min_p=1.0),
        row(measure="NDCG@3", baseline="cat", mean_diff=-0.05, wins=2, losses=6, ties=4, p=0.11, mde=0.2,
            min_p=0.0078)])


def test_paragraph_states_direction_effect_ci_and_what_cannot_be_concluded():
    text = comparison_paragraph(comparisons_today())
    assert "value-aware" not in text and "sys_x − base on NDCG@3 = **+0.008**" in text
    assert "95% CI -0.032 to +0.048 resampling 20 entries, -0.042 to +0.038 resampling 12 personas" in text
    assert "3 wins, 3 losses, 6 ties; exact sign-flip p = 0.7 — not significant at α = 0.05" in text
    assert "would have to be about ±0.061 to be detected with 80% power at level 0.05" in text
    assert "smaller than that" in text and "absence of evidence" in text
    assert "one family of 3, Holm-corrected): **0** significant" in text
    assert "higher in 1, lower in 1, equal in 0 of the 2 that differ on some entry" in text
    # only the pair that is identical on every entry is named — not the measure as a whole
    assert "Identical on every entry (p = 1; not evidence that the rankers are equal beyond these entries): " \
           "Hit@3 (g=2) vs base." in text
    assert ("1 of 2 have too few non-tied entries to reach p < 0.05 with any outcome, and 1 too few to clear "
            "α/3") in text
    assert "too few entries to tell" not in text
    # row() puts the CIs at mean_diff − 0.04 to + 0.04 and − 0.05 to + 0.03: for cat (−0.05) both exclude 0
    assert ("- Not significant after Holm, yet with a 95% CI that excludes 0 (NDCG@3 vs cat: by entry and by "
            "persona): an unadjusted 95% interval is not a test") in text


def test_a_ci_excluding_zero_without_significance_is_called_borderline():
    borderline = row(baseline="base", primary=True, family_size=1, mean_diff=0.1, p=0.054, p_holm=0.054, mde=0.14)
    table = pd.DataFrame([borderline])
    text = comparison_paragraph(table)
    assert ("not significant at α = 0.05. The 95% CI by entry and by persona excludes 0 although the exact test "
            "does not reject") in text and "borderline, not a finding" in text
    assert "compatible with no difference" not in text
    verdict = conclusion(table, summary_today(), known_judge(), changes(), 0.5, pd.Series({"base": 0.9}), "NDCG@3",
                         "value_mismatch", min_stability=0.95, variant_orders=ONE_ORDER)
    assert "but not significantly. The 95% CI by entry and by persona excludes 0" in verdict
    assert "includes both a gain and a loss" not in verdict


def test_paragraph_names_a_significant_secondary_comparison():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, p=0.01, p_holm=0.01, significant=True,
                              mean_diff=0.1),
                          row(baseline="rand", mean_diff=-0.2, p=0.001, p_holm=0.002, significant=True, family_size=1)])
    text = comparison_paragraph(table)
    assert "significant at α = 0.05: sys_x ranks better than base on NDCG@3 by this judge's labels" in text
    assert "Holm-adjusted p = 0.002: sys_x is worse." in text


def known_judge(mismatch_low=0.45):
    """The judge's known-answer rows: it sees off-topic and tone distractors, the value mismatch only when
    ``mismatch_low`` > 0.5."""
    return pd.DataFrame({"entries": [40] * 3, "auc": [0.95, 0.55, 0.8], "ci_low": [0.9, mismatch_low, 0.7],
                         "ci_high": [0.99, 0.65, 0.88], "ci_over": ["40 entries"] * 3},
                        index=pd.Index(["off_topic", "value_mismatch", "tone"], name="kind"))


def changes(changed=15, n=40):
    return {"column": "expected_grade", "n": n, "changed": changed,
            "changes": np.array([0.1] * changed + [0.0] * (n - changed))}


def summary_today():
    return pd.DataFrame({"measure": ["NDCG@3"] * 3, "ranker": ["sys_x", "base", "cat"], "mean": [0.93, 0.92, 0.98]})


ONE_ORDER = {"argmax grade": "cat > sys_x > base", "E[g]": "cat > sys_x > base"}


def test_conclusion_says_the_judge_cannot_rank_and_why():
    keeps = pd.Series({"base": 0.64, "rand": 0.78, "cat": 0.9})
    orders = {"argmax grade": "cat > sys_x > base", "E[g]": "sys_x > base > cat"}
    text = conclusion(comparisons_today(), summary_today(), known_judge(), changes(), 0.08, keeps, "NDCG@3",
                      "value_mismatch", min_stability=0.95, variant_orders=orders)
    assert text.startswith("**Does sys_x rank better than base on NDCG@3?** We cannot tell.")
    assert "sys_x's mean is higher, but not significantly, and the CI includes both a gain and a loss" in text
    # MDE 0.061 against the spread 0.92–0.98 of the ranker means
    assert "smaller than the 0.061 this study could detect with 80% power — 102% of the whole spread" in text
    assert "**No — with today's data, this judge cannot rank these rankers**" in text
    for reason in ("the primary comparison is not significant (p = 0.7, α = 0.05)",
                   "moved by the gain's measured layout changes, the sign of sys_x − base holds in 64%",
                   "the order of all rankers holds in 8% of them",
                   "the judge's gain tells real candidates from value mismatch distractors with AUC 0.55 (95% CI 0.45 "
                   "to 0.65, 40 entries)",
                   "the order of all rankers changes with the reading (2 different orders under 2 readings, e.g. "
                   "argmax grade: cat > sys_x > base; E[g]: sys_x > base > cat)"):
        assert reason in text
    assert "0 of 3 secondary comparisons are significant after Holm" in text


def test_conclusion_with_no_layout_change_calls_robustness_untested():
    keeps = pd.Series({"base": 1.0})
    text = conclusion(comparisons_today(), summary_today(), known_judge(), changes(changed=0), 1.0, keeps, "NDCG@3",
                      "value_mismatch", min_stability=0.95, variant_orders=ONE_ORDER)
    assert "the gain did not change under another layout, so its robustness to judge noise is untested" in text
    assert "holds in 100%" not in text
    assert "**No — with today's data" in text


def test_conclusion_without_an_attainable_significance_states_no_detectable_effect():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, wins=0, losses=1, ties=3, p=1.0,
                              min_p=1.0, mde=0.031, mean_diff=-0.007)])
    text = conclusion(table, summary_today(), known_judge(), changes(), 1.0, pd.Series({"base": 1.0}), "NDCG@3",
                      "value_mismatch", min_stability=0.95, variant_orders=ONE_ORDER)
    assert ("With 1 non-tied entries no outcome could have reached p < 0.05: no effect of any size was "
            "detectable") in text
    assert "0.031" not in text


def test_conclusion_says_yes_only_when_every_condition_holds():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, p=0.001, p_holm=0.001, significant=True,
                              mean_diff=0.1)])
    args = (table, summary_today(), known_judge(mismatch_low=0.51), changes())
    yes = conclusion(*args, 1.0, pd.Series({"base": 0.99}), "NDCG@3", "value_mismatch", min_stability=0.95,
                     variant_orders=ONE_ORDER)
    assert "By this judge's labels, yes" in yes and "**Yes**" in yes and "cannot rank" not in yes
    unstable = conclusion(*args, 0.5, pd.Series({"base": 0.99}), "NDCG@3", "value_mismatch", min_stability=0.95,
                          variant_orders=ONE_ORDER)
    assert "cannot rank these rankers**: the order of all rankers holds in 50% of them (needed" in unstable
    blind = conclusion(table, summary_today(), known_judge(), changes(), 1.0, pd.Series({"base": 0.99}), "NDCG@3",
                       "value_mismatch", min_stability=0.95, variant_orders=ONE_ORDER)
    assert "cannot rank these rankers**: the judge's gain tells real candidates from value mismatch" in blind


def test_threats_to_validity_come_from_the_tables():
    entries = pd.DataFrame({"entry_id": ["a", "b", "c"], "persona_id": ["p", "p", "q"], "split": ["test"] * 3,
                            "text": ["one two three", "one two", "one two three four five"], "attempts": [1, 2, 1],
                            "persona_similarity": [0.2, 0.3, 0.4],
                            "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 3})
    labels = pd.DataFrame({"entry_id": ["a", "a", "b", "b", "c", "c"], "label": [1.5, 1.5, 1.75, 1.25, 2.0, 2.0],
                           "label_source": "expected_grade",
                           "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 6})
    table = pd.DataFrame([row(baseline="base", primary=True, wins=1, losses=0, ties=0)])
    text = threats_to_validity(entries, labels, known_judge(), changes(), table, "NDCG@3")
    assert "One model — Qwen2.5-Coder-1.5B-Instruct, a 1.5-billion-parameter model tuned for code, quantised to 4 " \
           "bits (GGUF Q4_K_M) — wrote every candidate and labelled every candidate" in text
    assert ("its gain does not tell real candidates from: value mismatch (40 entries); re-judged with another layout "
            "of the same prompt, the gain changed on 15 of 40 candidates, by 0.037 on average") in text
    assert ("The 6 gains (expected_grade) take 4 distinct values from 1.25 to 2.00 (sd 0.303; 0 missing); 2 of 3 "
            "pools score the same under every order (0 hold one candidate, 2 carry one label on several); 1 of "
            "20") in text
    assert "2 personas" in text and "with 1–2 entries each; with 2 personas no interval resamples them" in text
    assert "mean entry–persona MiniLM cosine 0.300" in text
    assert "The 3 entries are EmpatheticDialogues situation prompts (test split; median 3 words)" in text
    assert "(2 candidates; 4 requests for 3 entries)" in text and "ignore label uncertainty" in text
    other = threats_to_validity(entries.assign(model="gen-model@x"), labels, known_judge(), changes(0, 0), table,
                                "NDCG@3")
    assert "Generator: gen-model; judge: Qwen2.5-Coder" in other and "another layout is not measured" in other


def test_perturbation_text_reports_the_measured_changes():
    text = perturbation_text(changes(), 50, 0.08, pd.Series({"base": 0.64}), "sys_x", "NDCG@3")
    assert ("a change drawn from the 40 measured under the alternate layout (`expected_grade`: 15 of them "
            "non-zero") in text
    assert "50 perturbations" in text and "unchanged in **8%**" in text and "sys_x − base: 64%" in text
    assert "no `expected_grade` gain" in perturbation_text(changes(0, 0), 50, float("nan"), pd.Series(dtype=float),
                                                           "s", "m")


def test_hosted_cost_formula():
    ledgers = pd.DataFrame({"prompt_tokens": [1_000_000], "completion_tokens": [500_000]}, index=["01"])
    cost = hosted_cost(ledgers, {"m": (2.0, 8.0)})
    assert cost.loc["01", "m"] == 2.0 + 4.0


def test_read_ledgers_picks_up_every_chapters_ledger(tmp_path):
    for name, calls in (("05_nuggets", 7), ("01_nudge_candidates", 20)):
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "notebook": name, "model": "m", "calls": calls, "requests": calls + 1,
            "failures": {"invalid_json": 1, "truncated": 2}, "prompt_tokens": 100, "completion_tokens": 10,
            "recorded_latency_s": 1.5}))
    table = read_ledgers(tmp_path)
    assert table.index.tolist() == ["01_nudge_candidates", "05_nuggets"]
    assert table.loc["05_nuggets"].to_dict() == {"model": "m", "calls": 7, "requests": 8, "failed_calls": 3,
                                                 "prompt_tokens": 100, "completion_tokens": 10,
                                                 "recorded_llm_time_s": 1.5}
    assert hosted_cost(table, {"m": (1.0, 10.0)}).loc["05_nuggets", "m"] == pytest.approx((100 + 100) / 1e6)
    assert read_ledgers(tmp_path, up_to="04").index.tolist() == ["01_nudge_candidates"]  # a later chapter is left out


def test_perturbation_text_without_a_change_says_nothing_was_tested():
    text = perturbation_text(changes(changed=0), 50, 1.0, pd.Series({"base": 1.0}), "sys_x", "NDCG@3")
    assert text.startswith("No perturbation check: the gain (`expected_grade`) did not change on any of the 40")
    assert "100%" not in text


def test_a_comparison_over_too_few_units_says_no_interval_bounds_it():
    few = {**row(primary=True, family_size=1), "ci_low": float("nan"), "ci_high": float("nan"),
           "ci_over": "4 entries", "ci_low_persona": float("nan"), "ci_high_persona": float("nan"),
           "ci_over_persona": "3 personas"}
    text = comparison_paragraph(pd.DataFrame([few]))
    assert ("(no 95% CI: 6 non-tied of 4 entries, 3 personas; an interval needs 10 units with 10 non-tied "
            "differences)") in text
    assert "No interval bounds the difference at this size" in text and "anywhere in the CI" not in text


def test_primary_plan_and_what_the_run_can_detect():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, wins=30, losses=8, ties=2, mde=0.0066,
                              min_p=2 / 2 ** 38)])
    plan = primary_plan(table, 0.01, 0.0142, 20, 0.05, 0.8)
    assert (plan.units_needed, plan.units_have, plan.reaches_precision) == (units_for_t_test(0.01, 0.0142), 20, True)
    assert plan.question == "Does sys_x rank differently from base on NDCG@3, by 0.01 or more?"
    labels = pd.DataFrame({"entry_id": ["a", "a", "b", "b"], "candidate_id": ["a1", "a2", "b1", "b2"],
                           "label": [2.0, 1.0, 1.0, 1.0]})
    text = detectable_text(table, labels)
    assert "This run can decide the primary comparison: with 38 non-tied entries" in text
    assert "detects a difference of 0.0066 on NDCG@3 with 80% power" in text
    # pool a: best 1, worst (1 + 2/log2 3) / (2 + 1/log2 3); pool b: constant, 0
    span = (1 - (1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3))) / 2
    assert f"allow {span:.3f} on average between their best and worst order (2 entries)" in text
    none = detectable_text(pd.DataFrame([row(primary=True, wins=0, losses=1, ties=3, min_p=1.0)]), labels)
    assert "no outcome could reach α = 0.05, so no difference is detectable" in none


def test_known_answer_table_and_text_flag_checks_that_hold_by_construction():
    judge = pd.DataFrame({"reading": ["expected_grade"] * 2 + ["grade"], "kind": ["off_topic", "tone", "tone"],
                          "entries": [40] * 3, "auc": [0.95, 0.52, 0.5], "ci_low": [0.9, 0.45, 0.4],
                          "ci_high": [0.99, 0.6, 0.6], "ci_over": ["40 entries"] * 3})
    rankers = pd.DataFrame({"ranker": ["embedding", "embedding", "category"], "kind": ["off_topic", "tone", "tone"],
                            "entries": [40] * 3, "auc": [0.99, 0.7, 0.8], "ci_low": [0.97, 0.6, 0.7],
                            "ci_high": [1.0, 0.8, 0.9], "ci_over": ["40 entries"] * 3})
    table = discrimination_table(judge, rankers, "expected_grade")
    assert table.index.tolist() == [("judge (expected_grade)", "off_topic"), ("judge (expected_grade)", "tone"),
                                    ("embedding", "off_topic"), ("embedding", "tone"), ("category", "tone")]
    assert table.loc[("embedding", "off_topic"), "by construction"].startswith("scores similarity to the entry")
    assert table.loc[("category", "tone"), "by construction"] == ""
    text = known_answer_text(table, "expected_grade")
    assert "sees: off topic (0.95, 95% CI 0.90 to 0.99); does not see: tone (0.52, 95% CI 0.45 to 0.60)" in text
    assert "**off topic**: rankers above 0.5 not by construction: none." in text  # embedding's holds by construction
    assert "**tone**: rankers above 0.5 not by construction: embedding 0.70, category 0.80." in text
