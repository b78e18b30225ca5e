"""Chapter 07's generated summary: each bullet says what its numbers carry (hand-made tables)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.analysis import report_card as rc
from lib.chapters import ch07


def test_lean_on_says_undetermined_without_system_intervals():
    targets = pd.DataFrame({"reached_by_interval": [False, False], "ci_low": [0.0, np.nan], "value": [0.1, 0.29],
                            "goal": [0.4, 0.3], "n": [24, 4]})
    card = pd.DataFrame([rc._row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "system", 16, 0.3,
                                 np.nan, np.nan, "4 documents")])
    assert ch07.lean_on(targets, card).endswith(
        "summary-level G-Eval scores are undetermined (0.29 against 0.30 over 4 documents, no interval); system-level "
        "G-Eval orderings are undetermined (4 documents, no interval).")


def battery(recovered=(-0.05, -0.09, -0.02)):
    rows = [("listwise", rc.POSITION_CONSISTENCY, 0.9, 0.7, 1.0, 20), ("listwise", "share of the modal grade, as given",
                                                                       1.0, 1.0, 1.0, 20),
            ("pairwise", rc.POSITION_CONSISTENCY, 0.08, 0.0, 0.17, 12),
            ("pairwise", "share of answers choosing the first-shown passage", 0.96, 0.9, 1.0, 12),
            ("pointwise", "inflation recovered by the defence", *recovered, 6)]
    rows.append(("pointwise", "agreement with the modal grade over 3 samples at T = 1.0", 0.44, 0.33, 0.56, 6))
    return pd.DataFrame([{"form": f, "statistic": s, "value": v, "ci_low": lo, "ci_high": hi, "n": n, "anchors": "A",
                          "bias": "self-consistency" if s.startswith("agreement") else "other"}
                         for f, s, v, lo, hi, n in rows])


def test_bias_bullet_reads_consistency_beside_the_modal_share_and_the_defence_by_its_sign():
    pools = pd.DataFrame({"passages": [4, 4], "relevant (grade > 0)": [2, 0], "distinct prp": [3, 1]})
    text = ch07.bias(battery(), pools, 17 / 27)
    assert "consistency 0.90 (0.70 to 1.00, n = 20), but the judge gave its most frequent grade to 1.00" in text
    assert "PRP ranked 2 pools, 1 with a relevant passage (nDCG needs one), with 3, 1 distinct scores for 4, 4" in text
    assert text.endswith("The defence sentence *raises* the inflation (its interval lies below 0).")
    assert "docid tie-break. Pointwise: inflation recovered by the defence" in text
    assert "agreement with the modal grade over 3 samples at T = 1.0 0.44 (0.33 to 0.56, n = 6) against 0.63, the " \
        "least an independent sampler can score" in text
    assert "the first-shown passage chosen in 23 of 24 answers (exact binomial p = 3e-06" in text
    assert ch07.bias(battery((-0.05, np.nan, np.nan)), pools, 17 / 27).endswith(
        "The defence's effect (-0.05) rests on 6 passages, too few for an interval.")
    no_pairs = battery()
    no_pairs.loc[no_pairs.form == "pairwise", ["value", "n"]] = [np.nan, 0]  # every pair failed in one order
    assert "chosen in no answer: no pair was judged in both orders." in ch07.bias(no_pairs, pools, 17 / 27)
    assert ch07.bias(battery((0.1, -0.1, 0.3)), pools, 17 / 27).endswith("not distinguishable from 0.")


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


def test_prp_text_counts_complete_and_consistent_pairs():
    from lib.judges.methods import PairJudgment

    pairs = [PairJudgment("q", "a", "b", "a", "a"), PairJudgment("q", "a", "c", "a", "c"),
             PairJudgment("q", "b", "c", None, "b")]
    assert ch07.prp_text(pairs) == "2 of 3 pairs judged in both orders, 1 with the same winner"


def test_card_forests_keep_summeval_system_and_average_rows_with_their_targets():
    card = pd.DataFrame({"judge": ["j"] * 4, "dataset": ["TREC DL19", "SummEval", "SummEval", "ALCE"],
                         "criterion": ["relevance", "coherence", "average", "utility"],
                         "statistic": [rc.WEIGHTED_KAPPA, rc.SPEARMAN, rc.SPEARMAN, rc.SPEARMAN],
                         "level": ["item", "summary", "summary", "answer"], "model": ["m"] * 4,
                         "value": [0.1, 0.2, 0.3, 0.4], "ci_low": [0.0] * 4, "ci_high": [0.5] * 4, "n": [24] * 4,
                         "anchors": ["—"] * 4})
    (kappa_rows, _, _, kappa_targets), (rho_rows, _, _, rho_targets) = ch07.card_forests(card)
    assert len(kappa_rows) == 1 and list(kappa_targets.values()) == [0.40]
    assert len(rho_rows) == 2  # the per-dimension summary-level row is left out; the average and ALCE stay
    assert list(rho_targets.values()) == [0.30]
