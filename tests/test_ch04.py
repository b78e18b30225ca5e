"""Chapter 04's findings on hand-made tables (the primary comparison in the declared direction with a wrong-sign
case, equivalence, too few entries, the Holm family over one-sided p's, every ranker's known answers, the judge's
verdicts read from chapter 03's rows) and its formatters on hand-made records; the cost table reads every ledger."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib import known_answers, verdicts
from lib.analysis.comparisons import holm_both_directions
from lib.analysis.power import units_for_t_test
from lib.analysis.stats import sign_flip_test
from lib.chapters import ch04
from lib.costs import hosted_cost, read_ledgers
from lib.verdicts import Claim

PARAMS = {"system": "value_aware", "primary_baseline": "embedding", "primary_measure": "NDCG@3",
          "primary_difference": 0.01, "known_answer_kind": "value_mismatch", "known_answer_margin": 0.1,
          "alpha": 0.05, "power": 0.8, "pilot_sd": 0.0142, "pilot_entries": 20, "seed": 0,
          "bootstrap_resamples": 1000, "gain": "expected_grade"}


def comparison(baseline, primary=False, mean_diff=-0.002, ci=(-0.006, 0.001), informative=20, measure="NDCG@3"):
    return {"measure": measure, "system": "value_aware", "baseline": baseline, "primary": primary, "n_entries": 24,
            "n_informative": informative, "mean_diff": mean_diff, "ci_low": ci[0], "ci_high": ci[1]}


def differences(baseline, values, measure="NDCG@3"):
    return pd.DataFrame({"measure": measure, "baseline": baseline, "entry_id": [f"e{i}" for i in range(len(values))],
                         "difference": values})


MIXED = [0.004, -0.003, 0.002, -0.005, 0.001, -0.002, 0.003, -0.004, 0.0, -0.001, 0.002, -0.003]


def discrimination(rows):
    """ranker_discrimination rows from (ranker, kind, auc, ci_low, ci_high)."""
    return pd.DataFrame([{"ranker": r, "kind": k, "entries": 40, "auc": a, "ci_low": lo, "ci_high": hi,
                          "ci_over": "40 entries"} for r, k, a, lo, hi in rows])


KNOWN = discrimination([("random", "value_mismatch", 0.5, 0.45, 0.55),
                        ("embedding", "off_topic", 0.96, 0.92, 0.99),
                        ("value_aware", "value_mismatch", 0.455, 0.32, 0.588),
                        ("value_aware", "tone", 0.82, 0.74, 0.89),
                        (known_answers.VALUE_COMPONENT, "value_mismatch", 0.478, 0.37, 0.585)])


def judge_verdicts(kinds=("off_topic", "value_mismatch"), reading="expected_grade"):
    auc = {"off_topic": (0.87, 0.76, 0.95), "value_mismatch": (0.54, 0.42, 0.67), "value_contrast": (0.83, 0.73, 0.92)}
    return [verdicts.verdict("03", f"known_answer.{kind}.{reading}", f"judge ({reading})", "tells …",
                             Claim("known answer", 0.5, margin=0.1), "AUC", *auc[kind], "entries", 40,
                             "judge_discrimination") for kind in kinds]


LABELS = pd.DataFrame({"entry_id": ["a", "a", "b", "b"], "candidate_id": ["a1", "a2", "b1", "b2"],
                       "label": [2.0, 1.0, 1.0, 1.0]})


def make_tables(rows, diffs, known=KNOWN, earlier=None):
    return {"ndcg_comparisons": pd.DataFrame(rows), "differences": pd.concat(diffs, ignore_index=True),
            "ranker_discrimination": known, "labels": LABELS,
            "reading_means": pd.DataFrame({"value_aware": [0.9, 0.8], "embedding": [0.8, 0.9]},
                                          index=["E[g]", "argmax grade"]),
            "verdicts": verdicts.frame(judge_verdicts() if earlier is None else earlier)}


def findings_of(primary_diffs, ci=(-0.006, 0.001), mean_diff=-0.002, **kwargs):
    rows = [comparison("embedding", primary=True, mean_diff=mean_diff, ci=ci, informative=len(primary_diffs))]
    return ch04.findings(make_tables(rows, [differences("embedding", primary_diffs)], **kwargs), PARAMS)


def test_an_interval_within_the_margin_rules_the_difference_out_and_carries_its_caveats():
    f = findings_of(MIXED)
    v = f.primary
    assert (v.key, v.verdict, v.primary, v.confirmatory) == ("04.primary", "ruled out", True, False)
    p, p_against = holm_both_directions([sign_flip_test(MIXED, 0, alternative="greater").p],
                                        [sign_flip_test(MIXED, 0, alternative="less").p])
    assert (v.p, v.p_against) == (pytest.approx(p[0]), pytest.approx(p_against[0]))
    assert v.test == ("exact sign-flip, one-sided (greater), 11 non-zero; Holm over both directions of "
                      "1 comparison")
    assert (v.units, v.unit, v.margin) == (12, "entries", 0.01)
    assert v.depends_on == ("03.known_answer.value_mismatch.expected_grade",
                            "04.known_answer.value_aware.value_mismatch")
    assert f.plan.reaches_precision and f.plan.outcome == "ruled out" and f.plan.decided
    assert f.plan.units_needed == units_for_t_test(0.01, 0.0142)
    assert f.orders == (("E[g]", "value_aware > embedding"), ("argmax grade", "embedding > value_aware"))
    # pool a: best 1, worst (1 + 2/log2 3) / (2 + 1/log2 3); pool b is constant
    assert f.pool_span == pytest.approx((1 - (1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3))) / 2)


def test_a_significant_difference_the_wrong_way_is_evidence_against():
    worse = [-0.004, -0.003, -0.002, -0.005, -0.001, -0.002, -0.003, -0.004, -0.006, -0.001, -0.002, 0.001]
    f = findings_of(worse, ci=(-0.004, -0.001), mean_diff=-0.0027)
    assert f.primary.verdict == "fails" and f.primary.p > 0.5 and f.primary.p_against < 0.05
    assert f.plan.decided


def test_a_significant_difference_the_declared_way_holds_and_a_wide_interval_is_undetermined():
    better = [-x for x in [-0.004, -0.003, -0.002, -0.005, -0.001, -0.002, -0.003, -0.004, -0.006, -0.001]]
    assert findings_of(better, ci=(0.002, 0.004), mean_diff=0.003).primary.verdict == "holds"
    wide = findings_of(MIXED, ci=(-0.02, 0.015))
    assert wide.primary.verdict == "undetermined" and not wide.plan.decided


def test_too_few_informative_entries_are_undetermined_whatever_the_test():
    f = findings_of([0.01] * 9, ci=(float("nan"), float("nan")), mean_diff=0.01)
    assert f.primary.verdict == "undetermined" and np.isnan(f.primary.p) and f.primary.units == 9


def test_no_primary_row_gives_an_undetermined_primary():
    rows = [comparison("random")]
    f = ch04.findings(make_tables(rows, [differences("random", MIXED)]), PARAMS)
    assert (f.primary.verdict, f.primary.units) == ("undetermined", 0) and len(f.secondary) == 1


def test_the_secondary_family_is_holm_adjusted_over_one_sided_p_in_each_direction():
    better = [0.003] * 11 + [-0.001]
    rows = [comparison("embedding", primary=True, informative=12), comparison("random", informative=12),
            comparison("category", informative=12, measure="NDCG@5")]
    diffs = [differences("embedding", MIXED), differences("random", better),
             differences("category", MIXED, measure="NDCG@5")]
    f = ch04.findings(make_tables(rows, diffs), PARAMS)
    assert [v.key for v in f.secondary] == ["04.secondary.NDCG@3.random", "04.secondary.NDCG@5.category"]
    raw = [sign_flip_test(better, 0, alternative="greater").p, sign_flip_test(MIXED, 0, alternative="greater").p]
    against = [sign_flip_test(better, 0, alternative="less").p, sign_flip_test(MIXED, 0, alternative="less").p]
    p, p_against = holm_both_directions(raw, against)
    assert [v.p for v in f.secondary] == pytest.approx(p)
    assert [v.p_against for v in f.secondary] == pytest.approx(p_against)
    assert all(v.test.endswith("; Holm over both directions of 2 comparisons") and not v.primary and not v.depends_on
               for v in f.secondary)


def test_every_ranker_known_answer_is_a_verdict_flagged_by_construction():
    f = findings_of(MIXED)
    keys = [v.key for v in f.known_answers]
    assert keys == ["04.known_answer.random.value_mismatch", "04.known_answer.embedding.off_topic",
                    "04.known_answer.value_aware.value_mismatch", "04.known_answer.value_aware.tone",
                    "04.known_answer.value_component.value_mismatch"]
    by_key = {v.key: v for v in f.known_answers}
    assert by_key["04.known_answer.random.value_mismatch"].verdict == "blind"
    assert by_key["04.known_answer.random.value_mismatch"].by_construction
    assert by_key["04.known_answer.embedding.off_topic"].verdict == "sees"
    # the manipulation check is a finding about the system, not a check that holds by construction
    check = f.manipulation_check
    assert (check.system, check.verdict, check.by_construction) == ("value_aware ranker", "undetermined", False)
    assert check.construct == ("prefers the nudge written for the entry's values over one written for the opposite "
                               "values")
    assert f.value_component.system == "value_aware ranker's value component alone"
    assert f.verdicts() == (f.primary, *f.secondary, *f.known_answers)


def test_the_primary_needs_the_manipulation_check_and_the_judge_key_chapter_03_writes():
    with pytest.raises(ValueError, match="no known-answer scores"):
        findings_of(MIXED, known=KNOWN[KNOWN.ranker != known_answers.VALUE_COMPONENT])
    with pytest.raises(ValueError, match="the keys disagree"):
        findings_of(MIXED, earlier=judge_verdicts(reading="E[g]"))
    f = findings_of(MIXED)
    assert [v.key for v in f.judge] == ["03.known_answer.off_topic.expected_grade",
                                        "03.known_answer.value_mismatch.expected_grade"]
    assert findings_of(MIXED, earlier=[]).judge == ()  # chapter 03 not yet run: nothing to read


def test_a_kind_chapter_03_judged_on_no_entry_is_not_read_as_the_judges():
    unjudged = verdicts.verdict("03", "known_answer.value_contrast.expected_grade", "judge (expected_grade)",
                                "tells …", Claim("known answer", 0.5, margin=0.1), "AUC", float("nan"), float("nan"),
                                float("nan"), "entries", 0, "judge_discrimination")
    f = findings_of(MIXED, earlier=[*judge_verdicts(), unjudged])
    assert [v.key for v in f.judge] == ["03.known_answer.off_topic.expected_grade",
                                        "03.known_answer.value_mismatch.expected_grade"]
    assert "value contrast" not in ch04.known_answer_text(f).splitlines()[0]  # the judge's line


def test_the_conclusion_formats_the_record_and_its_caveats():
    f = findings_of(MIXED)
    text = ch04.conclusion(f)
    assert text.startswith("**Does value_aware rank better than embedding on NDCG@3?** By this judge's labels the "
                           "two rank alike: the interval lies within ±0.01")
    assert verdicts.sentence(f.primary, 4) in text and "Not confirmatory" in text
    assert "this run has 24, as planned; the result decides it (ruled out)" in text
    assert "**judge (expected_grade)** — tells …: **undetermined**" in text
    assert "it is not shown that the judge's gain tells a value mismatch distractor from a real nudge" in text
    assert "does not pass its own manipulation check" in text
    assert "in 2 different ways under 2 readings" in text
    # the phrase follows the record's word, whatever the numbers
    failed = replace(f, primary=replace(f.primary, verdict="fails"))
    assert "significantly — evidence against the claim" in ch04.conclusion(failed)
    missing = ch04.conclusion(replace(f, judge=()))
    assert "chapter 03's known-answer verdicts for the gain expected_grade are not in the verdicts table" in missing
    blind = replace(f, judge=tuple(replace(v, verdict="blind") for v in f.judge))
    assert "its labels cannot carry the difference the system is built to make" in ch04.conclusion(blind)


def test_comparisons_and_known_answer_texts_list_the_verdicts():
    rows = [comparison("embedding", primary=True), comparison("random"), comparison("category", ci=(-0.02, 0.01))]
    diffs = [differences(b, MIXED) for b in ("embedding", "random", "category")]
    f = ch04.findings(make_tables(rows, diffs), PARAMS)
    text = ch04.comparisons_text(f)
    assert "**Primary comparison** (declared before the run; a family of one): **value_aware ranker**" in text
    assert "(2, one family; Holm over the one-sided p's in each direction): 1 ruled out, 1 undetermined." in text
    known = ch04.known_answer_text(f)
    assert "**The judge** (gain expected_grade; chapter 03's verdicts): off topic: **sees**" in known
    assert "- **off topic** (scores a real nudge above one written for another entry): seen by none; seen by " \
           "construction: embedding ranker 0.96." in known
    assert "- **tone** (scores a real nudge above the same nudge with a dismissive opener): seen by value_aware " \
           "ranker 0.82; seen by construction: none." in known
    assert "**value_aware's manipulation check**" in known and "It does not pass its own manipulation check" in known


def test_earlier_names_outcomes_of_this_chapters_keys():
    assert all(k.startswith("04.") and v in verdicts.VERDICTS for k, v in ch04.EARLIER.items())
    assert ch04.EARLIER["04.primary"] == "undetermined"


def test_measure_status_text_gives_the_share_of_relevant_candidates():
    status = pd.DataFrame({"entries_scored": [2, 2], "entries_informative": [0, 1], "relevant_share": [1.0, 1.0],
                           "tested": [False, True], "reason": ["no informative entry", ""]},
                          index=pd.Index(["Hit@1 (g≥1)", "NDCG@3"], name="measure"))
    text = ch04.measure_status_text(status, LABELS)
    assert "1 of 2 pools score the same under every order" in text
    assert "- Tested (informative entries / entries scored): NDCG@3 1 / 2." in text
    assert ("- Not tested, tabled or plotted — Hit@1 (g≥1): its threshold counts 100% of the 4 labelled candidates as "
            "relevant; no informative entry.") in text


def changes(changed=15, n=40):
    return {"column": "expected_grade", "n": n, "changed": changed,
            "changes": np.array([0.1] * changed + [0.0] * (n - changed))}


def test_threats_to_validity_come_from_the_tables_and_the_record():
    entries = pd.DataFrame({"entry_id": ["a", "b", "c"], "persona_id": ["p", "p", "q"], "split": ["test"] * 3,
                            "text": ["one two three", "one two", "one two three four five"], "attempts": [1, 2, 1],
                            "persona_similarity": [0.2, 0.3, 0.4],
                            "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 3})
    labels = pd.DataFrame({"entry_id": ["a", "a", "b", "b", "c", "c"], "label": [1.5, 1.5, 1.75, 1.25, 2.0, 2.0],
                           "label_source": "expected_grade",
                           "model": ["qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:00"] * 6})
    table = pd.DataFrame([comparison("embedding", primary=True, informative=1)])
    f = findings_of(MIXED)
    text = ch04.threats_to_validity(f, entries, labels, changes(), table)
    assert "One model — Qwen2.5-Coder-1.5B-Instruct, a 1.5-billion-parameter model tuned for code, quantised to 4 " \
           "bits (GGUF Q4_K_M) — wrote every candidate and labelled every candidate" in text
    assert ("On the known answers its gain is: off topic **sees**, value mismatch **undetermined**; re-judged with "
            "another layout of the same prompt, the gain changed on 15 of 40 candidates, by 0.037 on average") in text
    assert ("The 6 gains (expected_grade) take 4 distinct values from 1.25 to 2.00 (sd 0.303; 0 missing); 2 of 3 "
            "pools score the same under every order (0 hold one candidate, 2 carry one label on several); 1 of "
            "24") in text
    assert "2 personas" in text and "with 1–2 entries each; with 2 personas no interval resamples them" in text
    assert "mean entry–persona MiniLM cosine 0.300" in text
    assert "The 3 entries are EmpatheticDialogues situation prompts (test split; median 3 words)" in text
    assert "(2 candidates; 4 requests for 3 entries)" in text and "ignore label uncertainty" in text
    other = ch04.threats_to_validity(replace(f, judge=()), entries.assign(model="gen-model@x"), labels,
                                     changes(0, 0), table)
    assert "Generator: gen-model; judge: Qwen2.5-Coder" in other and "another layout is not measured" in other
    assert "chapter 03 has not written them" in other


def test_perturbation_text_reports_the_measured_changes():
    text = ch04.perturbation_text(changes(), 50, 0.08, pd.Series({"base": 0.64}), "sys_x", "NDCG@3")
    assert ("a change drawn from the 40 measured under the alternate layout (`expected_grade`: 15 of them "
            "non-zero") in text
    assert "50 perturbations" in text and "unchanged in **8%**" in text and "sys_x − base: 64%" in text
    assert "no `expected_grade` gain" in ch04.perturbation_text(changes(0, 0), 50, float("nan"),
                                                                pd.Series(dtype=float), "s", "m")
    none = ch04.perturbation_text(changes(changed=0), 50, 1.0, pd.Series({"base": 1.0}), "sys_x", "NDCG@3")
    assert none.startswith("No perturbation check: the gain (`expected_grade`) did not change on any of the 40")
    assert "100%" not in none


def test_primary_plan_before_the_result():
    table = pd.DataFrame([{**comparison("base", primary=True), "n_entries": 20}])
    plan = ch04.primary_plan(table, 0.01, 0.0142, 20, 0.05, 0.8)
    assert (plan.units_needed, plan.units_have, plan.reaches_precision) == (units_for_t_test(0.01, 0.0142), 20, True)
    assert plan.question == "Does value_aware rank differently from base on NDCG@3, by 0.01 or more?"
    assert plan.outcome is None and plan.decided is None


def test_known_answer_table_flags_checks_that_hold_by_construction():
    judge = pd.DataFrame({"reading": ["expected_grade"] * 2 + ["grade"], "kind": ["off_topic", "tone", "tone"],
                          "entries": [40] * 3, "auc": [0.95, 0.52, 0.5], "ci_low": [0.9, 0.45, 0.4],
                          "ci_high": [0.99, 0.6, 0.6], "ci_over": ["40 entries"] * 3})
    rankers = discrimination([("embedding", "off_topic", 0.99, 0.97, 1.0), ("embedding", "tone", 0.7, 0.6, 0.8),
                              ("value_aware", "value_mismatch", 0.45, 0.3, 0.6)])
    table = ch04.discrimination_table(judge, rankers, "expected_grade")
    assert table.index.tolist() == [("judge (expected_grade)", "off_topic"), ("judge (expected_grade)", "tone"),
                                    ("embedding", "off_topic"), ("embedding", "tone"),
                                    ("value_aware", "value_mismatch")]
    assert table.loc[("embedding", "off_topic"), "by construction"].startswith("scores similarity to the entry")
    assert table.loc[("value_aware", "value_mismatch"), "by construction"] == ""


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
