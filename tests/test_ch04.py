"""Generated interpretation text follows the numbers (direction, effect, CI, what cannot be concluded, the
verdict and its reasons, threats with their measured numbers); the cost table reads every ledger."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from lib.chapters.ch04 import comparison_paragraph, conclusion, perturbation_text, threats_to_validity
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
    verdict = conclusion(table, summary_today(), judge_row(), {"rate": 0.15, "column": "c", "n": 40}, 0.5,
                         pd.Series({"base": 0.9}), "NDCG@3", min_kappa=0.4, min_stability=0.95,
                         variant_orders=ONE_ORDER)
    assert "but not significantly. The 95% CI by entry and by persona excludes 0" in verdict
    assert "includes both a gain and a loss" not in verdict


def test_paragraph_names_a_significant_secondary_comparison():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, p=0.01, p_holm=0.01, significant=True,
                              mean_diff=0.1),
                          row(baseline="rand", mean_diff=-0.2, p=0.001, p_holm=0.002, significant=True, family_size=1)])
    text = comparison_paragraph(table)
    assert "significant at α = 0.05: sys_x ranks better than base on NDCG@3 by this judge's labels" in text
    assert "Holm-adjusted p = 0.002: sys_x is worse." in text


def judge_row(weighted_kappa=0.21):
    return {"label_definition": "pointwise rounded E[g]", "weighted_kappa": weighted_kappa, "kappa": 0.07,
            "exact_agreement": 0.15, "n": 80.0, "dataset": "NovelEval"}


def summary_today():
    return pd.DataFrame({"measure": ["NDCG@3"] * 3, "ranker": ["sys_x", "base", "cat"], "mean": [0.93, 0.92, 0.98]})


ONE_ORDER = {"pointwise argmax": "cat > sys_x > base", "listwise argmax": "cat > sys_x > base"}


def test_conclusion_says_the_judge_cannot_rank_and_why():
    keeps = pd.Series({"base": 0.64, "rand": 0.78, "cat": 0.9})
    orders = {"pointwise argmax": "cat > sys_x > base", "listwise argmax": "sys_x > base > cat"}
    text = conclusion(comparisons_today(), summary_today(), judge_row(), {"rate": 0.15, "column": "c", "n": 40},
                      0.08, keeps, "NDCG@3", min_kappa=0.4, min_stability=0.95, variant_orders=orders)
    assert text.startswith("**Does sys_x rank better than base on NDCG@3?** We cannot tell.")
    assert "sys_x's mean is higher, but not significantly, and the CI includes both a gain and a loss" in text
    # MDE 0.061 against the spread 0.92–0.98 of the ranker means
    assert "smaller than the 0.061 this study could detect with 80% power — 102% of the whole spread" in text
    assert "**No — with today's data, this judge cannot rank these rankers**" in text
    for reason in ("the primary comparison is not significant (p = 0.7, α = 0.05)",
                   "at the label's measured repeat disagreement (15%) the sign of sys_x − base holds in 64%",
                   "the order of all rankers holds in 8% of them", "weighted κ = 0.21",
                   "the order of all rankers changes with the label definition (2 different orders under 2 "
                   "definitions, e.g. pointwise argmax: cat > sys_x > base; listwise argmax: sys_x > base > cat)"):
        assert reason in text
    assert "0 of 3 secondary comparisons are significant after Holm" in text


def test_conclusion_with_zero_measured_disagreement_calls_robustness_untested():
    keeps = pd.Series({"base": 1.0})
    text = conclusion(comparisons_today(), summary_today(), judge_row(), {"rate": 0.0, "column": "c", "n": 40},
                      1.0, keeps, "NDCG@3", min_kappa=0.4, min_stability=0.95, variant_orders=ONE_ORDER)
    assert "the label's measured repeat disagreement is 0%, so its robustness to judge noise is untested" in text
    assert "holds in 100%" not in text
    assert "**No — with today's data" in text


def test_conclusion_without_an_attainable_significance_states_no_detectable_effect():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, wins=0, losses=1, ties=3, p=1.0,
                              min_p=1.0, mde=0.031, mean_diff=-0.007)])
    text = conclusion(table, summary_today(), judge_row(), {"rate": 0.1, "column": "c", "n": 40}, 1.0,
                      pd.Series({"base": 1.0}), "NDCG@3", min_kappa=0.4, min_stability=0.95, variant_orders=ONE_ORDER)
    assert ("With 1 non-tied entries no outcome could have reached p < 0.05: no effect of any size was "
            "detectable") in text
    assert "0.031" not in text


def test_conclusion_says_yes_only_when_every_condition_holds():
    table = pd.DataFrame([row(baseline="base", primary=True, family_size=1, p=0.001, p_holm=0.001, significant=True,
                              mean_diff=0.1)])
    args = (table, summary_today(), judge_row(0.7), {"rate": 0.1, "column": "c", "n": 40})
    yes = conclusion(*args, 1.0, pd.Series({"base": 0.99}), "NDCG@3", min_kappa=0.4, min_stability=0.95,
                     variant_orders=ONE_ORDER)
    assert "By this judge's labels, yes" in yes and "**Yes**" in yes and "cannot rank" not in yes
    unstable = conclusion(*args, 0.5, pd.Series({"base": 0.99}), "NDCG@3", min_kappa=0.4, min_stability=0.95,
                          variant_orders=ONE_ORDER)
    assert "cannot rank these rankers**: the order of all rankers holds in 50% of them (needed" in unstable


def test_threats_to_validity_come_from_the_tables():
    entries = pd.DataFrame({"entry_id": ["a", "b", "c"], "persona_id": ["p", "p", "q"], "split": ["test"] * 3,
                            "text": ["one two three", "one two", "one two three four five"], "attempts": [1, 2, 1],
                            "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 3})
    labels = pd.DataFrame({"entry_id": ["a", "a", "b", "b", "c", "c"], "label": pd.array([1, 1, 2, 1, 2, 2], "Int64"),
                           "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 6})
    table = pd.DataFrame([row(baseline="base", primary=True, wins=1, losses=0, ties=0)])
    text = threats_to_validity(entries, labels, judge_row(), {"rate": 0.15, "column": "c", "n": 40}, table, "NDCG@3")
    assert "One model — Qwen2.5-Coder-1.5B-Instruct, a 1.5-billion-parameter model tuned for code, quantised to 4 " \
           "bits (GGUF Q4_K_M) — wrote every candidate and labelled every candidate" in text
    assert "weighted κ = 0.21 (κ = 0.07, exact agreement 15%) on 80 passages of NovelEval" in text
    assert "the label changed on 15% of 40 candidates" in text
    assert ("Label counts by grade: 1: 3, 2: 3 (0 missing); 2 of 3 pools carry a single label value, so every "
            "ranker scores the same on them; 1 of 20") in text
    assert "2 personas" in text and "with 1–2 entries each" in text
    assert "persona-resampled CI rests on the 5 personas of its informative entries" in text
    assert "The 3 entries are EmpatheticDialogues situation prompts (test split; median 3 words)" in text
    assert "(2 candidates; 4 requests for 3 entries)" in text and "ignore label uncertainty" in text
    other = threats_to_validity(entries.assign(model="gen-model@x"), labels, judge_row(), {"rate": float("nan"),
                                "column": "c", "n": 0}, table, "NDCG@3")
    assert "Generator: gen-model; judge: Qwen2.5-Coder" in other and "repeat disagreement is not measured" in other


def test_perturbation_text_reports_rate_source_and_grades():
    text = perturbation_text({"rate": 0.15, "column": "rounded_expected", "n": 40}, (1, 2), 50, 0.08,
                             pd.Series({"base": 0.64}), "sys_x", "NDCG@3")
    assert "(`rounded_expected`) measured repeat disagreement: **15.0%** of 40 re-judged candidates" in text
    assert "the grades the label takes (1, 2); 50 perturbations" in text and "unchanged in **8%**" in text
    assert "sys_x − base: 64%" in text
    assert "no `listwise_grade` column" in perturbation_text({"rate": float("nan"), "column": "listwise_grade", "n": 0},
                                                             (1, 2), 50, float("nan"), pd.Series(dtype=float), "s", "m")


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


def test_perturbation_text_at_zero_disagreement_says_nothing_was_tested():
    text = perturbation_text({"rate": 0.0, "column": "grade", "n": 40}, (1, 2), 50, 1.0, pd.Series({"base": 1.0}),
                             "sys_x", "NDCG@3")
    assert text.startswith("No perturbation check: the chosen label's (`grade`) measured repeat disagreement is 0%")
    assert "100%" not in text


def test_a_comparison_over_too_few_units_says_no_interval_bounds_it():
    few = {**row(primary=True, family_size=1), "ci_low": float("nan"), "ci_high": float("nan"),
           "ci_over": "4 entries", "ci_low_persona": float("nan"), "ci_high_persona": float("nan"),
           "ci_over_persona": "3 personas"}
    text = comparison_paragraph(pd.DataFrame([few]))
    assert "(no 95% CI (4 entries, 3 personas: fewer than 10 units))" in text
    assert "No interval bounds the difference at this size" in text and "anywhere in the CI" not in text
