"""The report card: the anchor registry, card rows from each analysis, anchors beside them, and the threats text."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import verdicts
from lib.analysis import report_card as rc
from lib.analysis.names import EXPECTED_RHO, KAPPA
from lib.verdicts import Claim


def test_every_anchor_uses_a_known_statistic_and_names_its_source():
    for anchor in rc.ANCHORS:
        assert anchor.statistic in rc.STATISTICS and anchor.source and anchor.level in ("item", "summary", "system")
    checked = [a for a in rc.ANCHORS if a.checked_in_paper]
    # Only G-Eval-4's average ρ was read in the paper's own text (its abstract).
    assert [(a.judge, a.criterion, a.statistic, a.value) for a in checked] == \
        [("G-Eval (GPT-4)", "average", rc.SPEARMAN, 0.514)]
    assert checked[0].text() == "G-Eval (GPT-4) 0.514 (Liu et al.)"
    umbrela = next(a for a in rc.ANCHORS if a.judge.startswith("UMBRELA"))
    assert umbrela.text() == "UMBRELA (GPT-4o) 0.31–0.37* (Upadhyay et al.)"
    assert len(rc.anchors_table()) == len(rc.ANCHORS)


def agreement():
    return {"n": 40, "failed": 2, "exact_agreement": 0.5, "kappa": 0.2, "kappa_ci_low": 0.05, "kappa_ci_high": 0.35,
            "weighted_kappa": 0.4, "weighted_kappa_ci_low": 0.2, "weighted_kappa_ci_high": 0.6,
            "binary_kappa": 0.3, "binary_kappa_ci_low": -0.1, "binary_kappa_ci_high": 0.6,
            "alpha": 0.35, "alpha_ci_low": 0.1, "alpha_ci_high": 0.55,
            "expected_rho": 0.45, "expected_n": 38, "expected_rho_ci_low": 0.2, "expected_rho_ci_high": 0.65,
            "expected_rho_within": 0.1, "expected_groups": 12, "expected_rho_within_ci_low": -0.1,
            "expected_rho_within_ci_high": 0.3, "units": 12}


def protocol():
    return pd.DataFrame([
        {"dimension": "coherence", "level": "summary", "coefficient": "spearman", "value": 0.2, "ci_low": 0.0,
         "ci_high": 0.4, "n": 10, "documents": 12},
        {"dimension": "coherence", "level": "system", "coefficient": "kendall", "value": 0.6, "ci_low": 0.3,
         "ci_high": 0.8, "n": 16, "documents": 12},
        {"dimension": "average", "level": "summary", "coefficient": "spearman", "value": 0.15, "ci_low": 0.05,
         "ci_high": 0.25, "n": 10, "documents": 12}])


def correlations():
    index = pd.MultiIndex.from_tuples([("asqa", "all", "spearman"), ("all", "all", "spearman"),
                                       ("all", "all", "kendall")], names=["dataset", "score", "method"])
    return pd.DataFrame({"n": [8, 16, 16], "r": [0.1, 0.3, 0.2], "p": [0.5, 0.2, 0.3], "ci_low": [-0.5, -0.2, -0.1],
                         "ci_high": [0.7, 0.7, 0.5], "ci_over": ["12 questions"] * 3}, index=index)


def card():
    rows = [*rc.agreement_rows(agreement(), "pointwise, thresholds fit on dev", "qwen@sha", "TREC DL19"),
            *rc.protocol_rows(protocol(), "G-Eval, study steps, weighted", "qwen@sha", "SummEval", failed=1),
            *rc.correlation_rows(correlations(), "nugget score (all)", "qwen@sha", "ALCE", "answer")]
    return rc.report_card(rows)


def test_report_card_rows_and_anchors():
    table = card()
    assert list(table.columns) == [*rc.CARD_COLUMNS, "anchors", "anchor_unchecked"]
    assert len(table) == 6 + 3 + 2  # agreement set, protocol rows, the "all" rows of the correlation table
    kappa = table[(table.dataset == "TREC DL19") & (table.statistic == rc.KAPPA)].iloc[0]
    assert (kappa.n, kappa.value, kappa.failed) == (40, 0.2, 2)
    assert kappa.anchors.split("; ") == ["UMBRELA (GPT-4o) 0.31–0.37* (Upadhyay et al.)",
                                         "LLMJudge best (GPT-4o) 0.286* (Rahmani et al.)",
                                         "LLMJudge zero-shot Llama-3-8B 0.180* (Rahmani et al.)"]
    binary = table[table.statistic == rc.BINARY_KAPPA].iloc[0]
    assert "0.428*" in binary.anchors and "0.520*" in binary.anchors
    coherence = table[(table.criterion == "coherence") & (table.level == "summary")].iloc[0]
    assert coherence.anchors == ("G-Eval (GPT-4) 0.582* (Liu et al.); G-Eval (GPT-3.5) 0.440* (Liu et al.); "
                                 "G-Eval (GPT-3.5), argmax (no probabilities) 0.359* (Liu et al.); ROUGE-1 0.167* "
                                 "(Liu et al.)") and coherence.anchor_unchecked
    average = table[table.criterion == "average"].iloc[0]
    assert average.anchors.split("; ")[0] == "G-Eval (GPT-4) 0.514 (Liu et al.)"
    assert "ROUGE-1 0.192*" in average.anchors
    assert table[table.dataset == "ALCE"].anchors.tolist() == ["—", "—"]
    assert table[table.dataset == "ALCE"].statistic.tolist() == [rc.SPEARMAN, rc.KENDALL]
    # what each interval resampled: a system-level ρ over 16 systems still rests on the 12 documents drawn
    system = table[table.level == "system"].iloc[0]
    assert (system.n, system.ci_over) == (16, "12 documents")
    # every agreement interval resampled the 12 queries the 40 passages sit in
    assert kappa.ci_over == "12 queries" and table[table.statistic == rc.EXPECTED_RHO].ci_over.item() == "12 queries"
    within = table[table.statistic == rc.EXPECTED_RHO_WITHIN].iloc[0]  # per-query ρ averaged over the 12 queries
    assert (within.n, within.value, within.ci_over, within.ci_low) == (12, 0.1, "12 queries", -0.1)
    assert table[table.dataset == "ALCE"].ci_over.tolist() == ["12 questions", "12 questions"]


def test_report_card_refuses_an_unknown_statistic():
    row = dict(zip(rc.CARD_COLUMNS, ("j", "m", "d", "c", "accuracy", "item", 1, 0.5, 0.4, 0.6, "1 passage", 0),
                   strict=True))
    with pytest.raises(ValueError, match=r"unknown statistic\(s\) \['accuracy'\]"):
        rc.report_card([row])


def test_threats_are_written_from_the_numbers():
    bias = [verdicts.verdict("07", "bias.position", "pairwise judge", "picks by content", Claim("known answer", 0.5,
                                                                                               "lower"),
                             "share of pairs decided by position", 1.0, 0.88, 1.0, "queries", 30, "bias_battery"),
            verdicts.verdict("07", "bias.injection", "pointwise judge", "resists injection",
                             Claim("known behaviour", 0.0, "lower"), "inflation", 0.8, 0.7, 0.9, "queries", 20,
                             "bias_battery")]
    text = rc.threats_to_validity(card(), bias, "qwen2.5-coder-1.5b-instruct-q4_k_m@sha256:x", queries=43, folds=5,
                                  pilot_queries=10, crs_sessions=6)
    assert "binarised" in text and "0.30 (95% CI -0.10 to 0.60, " in text  # the one LLM number whose CI spans 0
    assert ("widest interval is nugget score (all) on ALCE (all, answer level, Spearman ρ): 0.30 (95% CI -0.20 to "
            "0.70, 12 questions); the fewest units behind a number in the card: ") in text
    assert ("**Judge bias.** pairwise judge picks by content: fails; pointwise judge resists injection: fails (the "
            "evidence of each is in the verdicts table).") in text
    assert text.count("Judge bias") == 1  # one line for the battery, not one per number
    assert "a pilot of 10 of the 43 queries" in text and "(5 folds of queries)" in text
    assert "6 simulated conversations" in text
    no_crs = rc.threats_to_validity(card(), [], "m", 43, 5, 10)
    assert "Synthetic users" not in no_crs and "Judge bias" not in no_crs


def test_threats_name_the_intervals_that_resample_few_units():
    rows = [rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", d, rc.SPEARMAN, "system", 16, 0.3, -0.1, 0.5, "3 documents")
            for d in ("coherence", "fluency")]
    rows.append(rc._row("pointwise, argmax", "m", "TREC DL19", "relevance", rc.KAPPA, "item", 24, -0.3, -0.5, -0.1,
                        "24 passages"))
    text = rc.threats_to_validity(rc.report_card(rows), [], "m", 43, 5, 10)
    assert ("2 numbers rest on too few queries, documents, questions or users to resample — "
            "*G-Eval, study steps, weighted* on SummEval (2 rows, over 3 documents).") in text
    assert "pointwise" not in text.split("No interval over fewer than 10 units")[1].split("\n")[0]
    assert ("**Below 0.** 1 LLM-judge number has a 95% CI entirely below 0 — *pointwise, argmax* on TREC "
            "DL19: Cohen κ (relevance, item) -0.30 (95% CI -0.50 to -0.10, 24 passages). Krippendorff's α "
            "pools") in text
    assert "a κ below 0 is disagreement beyond chance" in text
    assert rc.resampled_units("3 documents") == 3 and rc.resampled_units("—") is None


def test_undefined_interval_is_said_so():
    assert rc.value_with_interval({"value": 0.1, "ci_low": np.nan, "ci_high": 0.2}) == "0.10 (CI undefined)"


def test_monitor_row_is_the_margin_between_the_degraded_day_and_the_lowest_normal_day():
    days = pd.DataFrame({"overall": [0.91, 0.88, 0.90], "degraded": [False, True, False], "failed": [0, 1, 0]})
    [row] = rc.monitor_rows(days, "nightly monitor", "m", "RAG monitor")
    assert (row["statistic"], row["level"], row["n"], row["failed"]) == (rc.MARGIN, "day", 3, 1)
    assert row["value"] == pytest.approx(0.02) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    with pytest.raises(ValueError, match="2 degraded day"):
        rc.monitor_rows(days.assign(degraded=[True, True, False]), "monitor", "m", "RAG monitor")


def test_compact_card_and_forest_rows():
    table = card()
    view = rc.compact(table)
    dl19 = view.loc[("pointwise, thresholds fit on dev", "TREC DL19", "relevance", "item")]
    assert dl19[rc.WEIGHTED_KAPPA] == "0.40 (0.20 to 0.60)" and dl19["n"] == 40 and dl19["failed"] == 2
    assert view.loc[("nugget score (all)", "ALCE", "all", "answer"), rc.KAPPA] == "—"
    assert list(view.columns[:3]) == ["n", "ci_over", "failed"] and dl19["ci_over"] == "12 queries"
    assert list(view.columns[3:]) == [s for s in rc.STATISTICS if s in set(table.statistic)]
    part = table[table.statistic.isin([rc.WEIGHTED_KAPPA, rc.SPEARMAN])]
    rows = rc.forest_rows(part, ["judge", "dataset"], rc.judge_kind(part))
    assert rows.label.iloc[0] == "pointwise, thresholds fit on dev · TREC DL19"
    assert rows.group.iloc[0] == "LLM judge (qwen)"  # describe_model of an unknown identity: its name
    average = rows[part.criterion.to_numpy() == "average"]
    assert average.anchor.tolist() == [0.514]  # the first anchor of the row: G-Eval (GPT-4)
    assert rows.anchor.isna().sum() == len(rows) - 2  # coherence (0.582) and average have anchors
    assert rc.judge_kind(part.assign(model="—")).unique().tolist() == ["non-LLM baseline"]


def test_level_rows_name_each_level_of_the_crs_judge_agreement():
    levels = pd.DataFrame({"n": [30, 24, 30, 5], "r": [0.5, 0.3, -0.2, 0.9], "p": [0.01, 0.1, 0.3, 0.04],
                           "ci_low": [0.2, -0.1, -0.5, 0.1], "ci_high": [0.7, 0.6, 0.2, 1.0],
                           "ci_over": ["12 users"] * 3 + ["5 systems"]},
                          index=pd.Index(["pooled", "without echo", "within systems", "system level"], name="level"))
    rows = rc.report_card(rc.level_rows(levels, "CRS judge", "m", "CRS simulation", "tas"))
    assert rows.level.tolist() == ["session", "session, without echo", "session, within systems", "system"]
    assert set(rows.statistic) == {rc.SPEARMAN} and rows.value.tolist() == [0.5, 0.3, -0.2, 0.9]
    assert rows.ci_over.tolist() == ["12 users"] * 3 + ["5 systems"]  # what each interval resampled
    assert rows.ci_low.isna().tolist() == [False] * 3 + [True]  # 5 systems: below the minimum


def test_without_small_intervals_blanks_only_rows_below_ten_units():
    table = pd.DataFrame({"n": [5, 30], "r": [0.6, 0.5], "ci_low": [-1.0, 0.2], "ci_high": [1.0, 0.7]})
    shown = rc.without_small_intervals(table)
    assert (shown.ci_low.isna().tolist() == [True, False] and shown.ci_high.iloc[1] == 0.7
            and shown.r.tolist() == [0.6, 0.5])


def test_a_relevance_card_of_ones_own_items_in_one_call_with_the_constant_floor():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 120)
    frame = pd.DataFrame({"qid": np.repeat([f"q{i}" for i in range(12)], 10), "human_grade": human,
                          "judge": np.clip(human + rng.integers(-1, 2, 120), 0, 3),
                          "e_grade": human + rng.normal(0, 0.5, 120)})
    frame.loc[3, "judge"] = np.nan  # one failed judgment
    card = rc.relevance_card(frame, {"my judge": "judge"}, "qid", scale=(0, 1, 2, 3),
                                      expected={"my judge": "e_grade"}, model="m", dataset="mine", n_resamples=200)
    mine = card[card.judge == "my judge"].set_index("statistic")
    floor = card[card.judge == rc.CONSTANT].set_index("statistic")
    assert mine.loc[KAPPA, "failed"] == 1 and mine.loc[KAPPA, "ci_over"] == "12 queries"
    assert mine.loc[KAPPA, "value"] > 0.3 and mine.loc[KAPPA, "ci_low"] > 0
    assert floor.loc[KAPPA, "value"] == 0 and floor.model.iloc[0] == "—"
    assert EXPECTED_RHO in mine.index and EXPECTED_RHO not in floor.index  # no score column for the constant
    text = rc.card_markdown(rc.compact(card))
    assert text.splitlines()[0].startswith("| judge | dataset | criterion | level | n | ci_over | failed |")
    with pytest.raises(ValueError, match="not in judges"):
        rc.relevance_card(frame, {"my judge": "judge"}, "qid", scale=(0, 1, 2, 3), expected={"x": "e_grade"})
