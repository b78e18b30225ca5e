"""Chapter 07's generated summary: each bullet says what its numbers carry (hand-made tables); and the SummEval
documents its parameters draw (the real data)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.analysis import report_card as rc
from lib.chapters import ch07


def test_lean_on_says_undetermined_without_system_intervals():
    targets = pd.DataFrame({"reached_by_interval": [False, False], "missed_by_interval": [False, False],
                            "ci_low": [0.0, np.nan], "ci_high": [0.2, np.nan], "value": [0.1, 0.29],
                            "goal": [0.4, 0.3], "n": [24, 4], "ci_over": ["24 queries", "4 documents"]})
    card = pd.DataFrame([rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "system", 16, 0.3,
                                 np.nan, np.nan, "4 documents")])
    assert ch07.lean_on(targets, card).endswith(
        "summary-level G-Eval scores are undetermined (0.29 against 0.30, no interval: 4 documents); system-level "
        "G-Eval orderings are undetermined (4 documents, no interval).")
    # an interval on both sides of the target decides nothing; one wholly below it decides against
    straddling = targets.assign(ci_low=[0.0, 0.18], ci_high=[0.2, 0.37], ci_over=["24 queries", "12 documents"])
    assert ("summary-level G-Eval scores are undetermined (0.29 against 0.30, 95% CI 0.18 to 0.37, 12 documents)"
            in ch07.lean_on(straddling, card))
    below = straddling.assign(ci_high=[0.2, 0.28], missed_by_interval=[True, True])
    assert "; not summary-level G-Eval scores;" in ch07.lean_on(below, card)
    argmax = rc._row("pointwise, argmax", "m", "TREC DL19", "relevance", rc.WEIGHTED_KAPPA, "item", 258, 0.12, 0.05,
                     0.21, "43 queries")
    assert ("; the plain argmax reading of the same calls has κ_w 0.12 (95% CI 0.05 to 0.21, 43 queries), wholly "
            "below the target; summary-level") in ch07.lean_on(targets, pd.concat([card, pd.DataFrame([argmax])]))


def test_chapter03_bullet_reads_the_paired_differences_and_names_the_gain_without_choosing_it():
    def text(lift: tuple[float, float], minilm: tuple[float, float]) -> str:
        return ch07.chapter03({"ci_low": lift[0], "ci_high": lift[1]}, {"ci_low": minilm[0], "ci_high": minilm[1]})

    assert text((0.05, 0.30), (-0.10, 0.20)).startswith(
        "**The primary against the argmax, and chapter 03's gain**: on DL19 the primary reading beats the plain argmax "
        "of the same calls by more than its interval and is not distinguishable from MiniLM. Chapter 03's gain is "
        "E[g] of the same pointwise call")
    assert "does not beat the plain argmax of the same calls by more than its interval and beats MiniLM" in text(
        (-0.05, 0.30), (0.02, 0.20))
    assert "does not beat the plain argmax" in text((np.nan, np.nan), (-0.30, -0.02))  # no interval: no claim
    assert "and falls below MiniLM." in text((np.nan, np.nan), (-0.30, -0.02))
    assert "known-answer distractors (reported in chapter 04)" in text((0.05, 0.30), (-0.10, 0.20))
    assert "chosen" not in text((0.05, 0.30), (-0.10, 0.20))  # chapter 03 declares its gain, 07 does not choose it


def test_summeval_documents_are_the_twelve_whose_calls_are_cached_in_their_order():
    """params.yaml's values draw the documents earlier runs judged, in the order of their calls: the first six
    (chapter 03's draw, now judged here) sorted by id, then the further ones in the order they were drawn."""
    import yaml

    from lib import paths
    from lib.data import load_summeval

    params = yaml.safe_load((paths.ROOT / "params.yaml").read_text())["07_validity"]
    split = ch07.summeval_documents(load_summeval(), params["summeval_first_docs"], params["summeval_first_seed"],
                                    params["summeval_test_docs"], params["summeval_test_seed"],
                                    params["summeval_judged_docs"])
    assert split.dev == ("cnn-test-a02e362c5b8f049848ce718b37b96117485461cf",
                         "dm-test-18243373494a1722ddcd162ec67b63dd749633ab",
                         "dm-test-26e4e19d945cedcb489f28808c730658139c9415",
                         "dm-test-5be0a9584b051175d9f4842a143b76385335d96a",
                         "dm-test-8b51a10370a1219137e231192e65b9cd52238ea6",
                         "dm-test-c6667409fcdea2c89ba9f0d3a72c50e3967b4b1b")
    assert split.test == tuple(params["summeval_judged_docs"])


def battery(recovered=(-0.05, -0.09, -0.02), extra=(0.10, 0.02, 0.20)):
    rows = [("self-consistency", "pointwise", "agreement with the modal grade over 3 samples at T = 1, predicted from "
             "p(g)", 0.71, 0.68, 0.74),
            ("verbosity", "pointwise", "mean change of E[g], first sentence restated", 0.16, 0.06, 0.27),
            ("verbosity", "pointwise", "mean change of E[g], neutral filler of the same length", 0.05, -0.02, 0.12),
            ("verbosity", "pointwise", "restated minus neutral", *extra),
            ("prompt injection", "pointwise", "mean inflation of E[g], no defence", 0.90, 0.70, 1.10),
            ("prompt injection", "pointwise", "mean inflation of E[g], with the defence", 0.95, 0.75, 1.15),
            ("prompt injection", "pointwise", "inflation recovered by the defence", *recovered),
            ("position", "pairwise", rc.POSITION_CONSISTENCY, 0.40, 0.20, 0.60),
            ("position", "pairwise", "share biased to the first-shown passage", 0.55, 0.35, 0.75)]
    return pd.DataFrame([{"bias": b, "form": f, "statistic": s, "value": v, "ci_low": lo, "ci_high": hi, "n": 20,
                          "ci_over": "20 queries", "anchors": "MT-Bench judge GPT-4 0.650*" if s ==
                          rc.POSITION_CONSISTENCY else "—"} for b, f, s, v, lo, hi in rows])


def test_bias_bullet_reads_every_row_with_its_interval_and_the_defence_by_its_sign():
    text = ch07.bias(battery(), 17 / 27)
    assert text.startswith("**Bias** (TREC DL19; self-consistency over every judged passage, each other check one "
                           "passage or pair per query): agreement with the modal grade over 3 samples at T = 1, "
                           "predicted from p(g) 0.71 (95% CI 0.68 to 0.74, 20 queries), against "
                           "0.63 for grades drawn uniformly at random")
    assert ("restated minus neutral +0.10 (95% CI +0.02 to +0.20, 20 queries): the restated text scores higher than "
            "the filler of the same length") in text
    assert "the defence raises it (-0.05 (95% CI -0.09 to -0.02, 20 queries))" in text
    assert "consistent 0.40 (95% CI 0.20 to 0.60, 20 queries) (published: MT-Bench judge GPT-4 0.650*)" in text
    assert text.endswith("share biased to the first-shown passage 0.55 (95% CI 0.35 to 0.75, 20 queries).")
    assert "defence not distinguishable from 0" in ch07.bias(battery((0.1, -0.1, 0.3)), 17 / 27)
    no_interval = ch07.bias(battery((-0.05, np.nan, np.nan), extra=(0.1, np.nan, np.nan)), 17 / 27)
    assert "the defence without an interval" in no_interval
    assert "scores (without an interval) against the filler" in no_interval


def test_bias_samples_take_one_item_per_query_in_nested_order():
    judged = pd.DataFrame({"qid": ["a", "a", "b", "b", "c", "c"], "query": ["qa", "qa", "qb", "qb", "qc", "qc"],
                           "passage": ["a1", "a2", "b1", "b2", "c1", "c2"], "human_grade": [2, 0, 1, 1, 0, 3]})
    items = ch07.bias_samples(judged, queries=5, pair_queries=5, seed=0)
    assert sorted(items.injection.passage) == ["a2", "c1"]  # b has no passage graded 0
    assert sorted(items.verbosity.passage) == ["a1", "b1", "c1"]
    pairs = items.pairs.set_index("qid")
    assert sorted(pairs.index) == ["a", "c"] and pairs.loc["c", "better_text"] == "c2"  # b's grades are equal
    assert len(ch07.bias_samples(judged, queries=1, pair_queries=1, seed=0).pairs) == 1


def test_crs_bullet_states_each_familys_holm_floor():
    tests = pd.DataFrame({"p": [0.031, 0.5], "p_holm": [0.062, 0.5], "min_p": [2 / 64, 2 / 64]})
    levels = pd.DataFrame({"n": [30, 30, 5], "r": [0.5, -0.2, 0.6], "ci_low": [0.2, -0.5, -1.0],
                           "ci_high": [0.7, 0.2, 1.0], "ci_over": ["12 users", "12 users", "5 systems"]},
                          index=["pooled", "within systems", "system level"])
    orderings = pd.DataFrame({"metric": ["tas"], "holds": [True], "observed": ["a > b"]})
    ablations = pd.DataFrame({"variant": ["cc_only"], "changed": [True], "kendall_tau": [0.6]})
    text = ch07.crs({"r": 0.5, "ci_low": 0.2, "ci_high": 0.7, "n": 30, "ci_over": "12 users"}, levels, orderings, tests,
                         tests.iloc[:1], ablations, 0.05)
    assert "over the 5 system means ρ = 0.60 (too few systems for an interval)" in text
    assert ("0 of 2 shift tests (the smallest Holm-adjusted p this family could reach is 0.06, so it cannot reject at "
            "this size) and in 0 of 1 within-vs-across tests (the smallest Holm-adjusted p this family could reach is "
            "0.03)") in text


def test_card_forests_split_kappa_and_rho_rows_with_their_targets():
    card = pd.DataFrame({"judge": ["j"] * 4, "dataset": ["TREC DL19", "SummEval", "SummEval", "ALCE"],
                         "criterion": ["relevance", "coherence", "coherence", "utility"],
                         "statistic": [rc.WEIGHTED_KAPPA, rc.SPEARMAN, rc.SPEARMAN, rc.SPEARMAN],
                         "level": ["item", "summary", "system", "answer"], "model": ["m"] * 4,
                         "value": [0.1, 0.2, 0.3, 0.4], "ci_low": [0.0] * 4, "ci_high": [0.5] * 4, "n": [24] * 4,
                         "anchors": ["—"] * 4})
    (kappa_rows, _, _, kappa_targets), (rho_rows, _, _, rho_targets) = ch07.card_forests(card)
    assert len(kappa_rows) == 1 and list(kappa_targets.values()) == [0.40]
    assert rho_rows.label.tolist() == ["j · SummEval · coherence · summary", "j · SummEval · coherence · system",
                                       "j · ALCE · utility · answer"]
    assert list(rho_targets.values()) == [0.30]


def test_drift_bullet_and_card_rows_read_each_rerun():
    table = pd.DataFrame([{"rerun": "drift rerun: concurrency 1, fresh server", "items": 40, "grades_changed": 2,
                           "share_changed": 0.05, "mean_abs_change": 0.021, "ci_low": 0.012, "ci_high": 0.033,
                           "ci_over": "40 queries", "max_abs_change": 0.2}])
    text = ch07.drift(table)
    assert text.startswith("**Run-to-run drift** (the same T = 0 requests sent again): concurrency 1, fresh server: "
                           "2 of 40 grades changed, E[g] moved by 0.021 on average (95% CI 0.012 to 0.033, 40 "
                           "queries), at most 0.200.")
    assert text.endswith("is the server's noise, not the judge's.")  # one rerun: nothing to compare
    two = pd.concat([table, table.assign(rerun="drift rerun: concurrency 2, fresh server", ci_low=0.040,
                                         ci_high=0.060)], ignore_index=True)
    assert ch07.drift(two).endswith(
        "concurrency 1 drifts measurably less than concurrency 2 (the intervals of the mean change do not overlap): a "
        "rerun that should repeat the committed answers needs it, at the cost of the second server slot.")
    overlapping = two.assign(ci_low=[0.012, 0.020])
    assert ch07.drift(overlapping).endswith(
        "concurrency 1 is not shown to drift less than concurrency 2 (the intervals of the mean change overlap, which "
        "shows no difference either way), so the default concurrency stays at the embedded server's two slots.")
    rows = rc.report_card(rc.drift_rows(table, "pointwise, E[g] (run-to-run drift)", "m", "TREC DL19"))
    assert rows.statistic.tolist() == [rc.DRIFT] and rows.ci_over.tolist() == ["40 queries"]
    assert rows.criterion.tolist() == ["drift rerun: concurrency 1, fresh server"] and rows.n.tolist() == [40]
