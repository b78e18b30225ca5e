"""Chapter 07's generated summary: each bullet says what its numbers carry (hand-made tables); and the SummEval
documents its parameters draw (the real data)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import tables, verdicts
from lib.analysis import power
from lib.analysis import report_card as rc
from lib.chapters import ch07
from lib.crs import validity as crs_validity
from lib.judges import bias


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


def battery(recovered=(-0.05, -0.09, -0.02), extra=(0.10, 0.02, 0.20), first=0.55, second=0.05,
            combined=(0.80, 0.62, 0.95)):
    rows = [("self-consistency", "pointwise", "agreement with the modal grade over 3 samples at T = 1, predicted from "
             "p(g)", 0.71, 0.68, 0.74),
            ("verbosity", "pointwise", "mean change of E[g], first sentence restated", 0.16, 0.06, 0.27),
            ("verbosity", "pointwise", "mean change of E[g], neutral filler of the same length", 0.05, -0.02, 0.12),
            ("verbosity", "pointwise", "restated minus neutral", *extra),
            ("prompt injection", "pointwise", "mean inflation of E[g], no defence", 0.90, 0.70, 1.10),
            ("prompt injection", "pointwise", "mean inflation of E[g], with the defence", 0.95, 0.75, 1.15),
            ("prompt injection", "pointwise", "inflation recovered by the defence", *recovered),
            ("position", "pairwise", rc.POSITION_CONSISTENCY, 0.40, 0.20, 0.60),
            ("position", "pairwise", "share biased to the first-shown passage", first, 0.35, 0.75),
            ("position", "pairwise", "share biased to the second-shown passage", second, 0.0, 0.2),
            ("position", "pairwise", bias.COMBINED_PREFERENCE, 0.60, 0.55, 0.65),
            ("position", "pairwise", bias.COMBINED_AUC, *combined),
            ("position", "pairwise", bias.POSITION_OUTWEIGHS, 0.90, 0.68, 0.99)]
    return pd.DataFrame([{"bias": b, "form": f, "statistic": s, "value": v, "ci_low": lo, "ci_high": hi, "n": 20,
                          "ci_over": "20 queries", "anchors": "MT-Bench judge GPT-4 0.650*" if s ==
                          rc.POSITION_CONSISTENCY else "—"} for b, f, s, v, lo, hi in rows])


def test_bias_samples_take_one_item_per_query_in_nested_order():
    judged = pd.DataFrame({"qid": ["a", "a", "b", "b", "c", "c"], "query": ["qa", "qa", "qb", "qb", "qc", "qc"],
                           "passage": ["a1", "a2", "b1", "b2", "c1", "c2"], "human_grade": [2, 0, 1, 1, 0, 3]})
    items = ch07.bias_samples(judged, queries=5, pair_queries=5, seed=0)
    assert sorted(items.injection.passage) == ["a2", "c1"]  # b has no passage graded 0
    assert sorted(items.verbosity.passage) == ["a1", "b1", "c1"]
    pairs = items.pairs.set_index("qid")
    assert sorted(pairs.index) == ["a", "c"] and pairs.loc["c", "better_text"] == "c2"  # b's grades are equal
    assert len(ch07.bias_samples(judged, queries=1, pair_queries=1, seed=0).pairs) == 1


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
    two = pd.concat([table, table.assign(rerun="drift rerun: concurrency 2, fresh server", ci_low=0.040,
                                         ci_high=0.060)], ignore_index=True)
    # intervals apart or overlapping, the formatter states no comparison: the table has no paired differences
    assert ch07.drift(two).split("at most 0.200")[-1] == ch07.drift(two.assign(ci_low=[0.012, 0.020])).split(
        "at most 0.200")[-1]
    assert "draws no conclusion on which concurrency drifts less" in ch07.drift(two)
    assert "concurrency drifts less" not in text  # one rerun: nothing to compare
    rows = rc.report_card(rc.drift_rows(table, "pointwise, E[g] (run-to-run drift)", "m", "TREC DL19"))
    assert rows.statistic.tolist() == [rc.DRIFT] and rows.ci_over.tolist() == ["40 queries"]
    assert rows.criterion.tolist() == ["drift rerun: concurrency 1, fresh server"] and rows.n.tolist() == [40]


def test_drift_off_at_size_zero_makes_no_call_and_says_so():
    table = ch07.drift_measurement({"drift_queries": 0})  # returns before the data, the judge or the server
    assert table.empty and list(table.columns) == [*tables.SCHEMAS["judge_drift"]]
    assert ch07.drift(table).startswith("**Run-to-run drift** is not measured at this size")


# ---------------------------------------------------------------------------------------------------------------
# The findings record on hand-made tables, and its formatters on hand-made records.

def card_for_findings(primary: tuple[float, float, float] = (0.42, 0.30, 0.53),
                      argmax: tuple[float, float, float] = (0.14, 0.08, 0.20)) -> pd.DataFrame:
    row = rc._row
    rows = [row("pointwise, E[g] thresholds cross-fitted" + rc.CHOSEN, "m", "TREC DL19", "relevance",
                rc.WEIGHTED_KAPPA, "item", 258, *primary, "43 queries"),
            row("pointwise, argmax", "m", "TREC DL19", "relevance", rc.WEIGHTED_KAPPA, "item", 258, *argmax,
                "43 queries"),
            row("pointwise, rounded E[g]", "m", "TREC DL19", "relevance", rc.WEIGHTED_KAPPA, "item", 258, 0.10, 0.05,
                0.15, "43 queries"),
            row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "summary", 12, 0.27, 0.18, 0.37,
                "12 documents"),
            row(rc.GEVAL_WEIGHTED, "m", "SummEval", "coherence", rc.SPEARMAN, "system", 16, 0.48, 0.07, 0.68,
                "12 documents"),
            row(rc.GEVAL_ARGMAX, "m", "SummEval", "coherence", rc.SPEARMAN, "summary", 12, 0.23, 0.12, 0.33,
                "12 documents"),
            row(rc.ROUGE_BASELINE, "—", "SummEval", "coherence", rc.SPEARMAN, "summary", 12, 0.03, -0.16, 0.22,
                "12 documents"),
            row(rc.COSINE_BASELINE, "—", "SummEval", "coherence", rc.SPEARMAN, "summary", 12, 0.0, -0.14, 0.14,
                "12 documents"),
            row(ch07.NUGGET_JUDGE, "m", "ALCE", "all", rc.SPEARMAN, "answer", 48, 0.56, 0.25, 0.74, "12 questions"),
            row(ch07.NUGGET_JUDGE, "m", "ALCE", "vital", rc.SPEARMAN, "answer", 8, 0.84, 0.1, 0.9, "2 questions"),
            row(ch07.MONITOR_JUDGE, "m", "RAG monitor", "overall", rc.MARGIN, "day", 5, 0.009, np.nan, np.nan, "—"),
            *(row(ch07.CONVERSATION_JUDGE, "m", "CRS simulation", metric, rc.SPEARMAN, "session, within systems", 30,
                  -0.3, np.nan, np.nan, "6 users") for metric in ("tas", "cas"))]
    return rc.report_card(rows)


def construct_tables():
    """Ten users of each system: the adapting LLM drops and recovers; the echo and the memoryless LLM peak at the
    shift (the wrong way); the stale template drops (by design) and "recovers" (the wrong way)."""
    users = [f"s{k}" for k in range(10)]
    ramp = np.linspace(0.1, 0.3, 10)
    shape = {"llm": (1.0, 0.5, 0.5 + ramp), "memoryless_llm": (0.3, 0.9, 0.9 - ramp), "echo": (0.2, 0.9, 0.9 - ramp),
             "stale_template": (1.0, 0.3, 0.3 + ramp), "retrieval_template": (0.9, 0.5, 0.5 + ramp * 0)}
    shift = pd.concat([pd.DataFrame({"system": system, "session_id": users, "cc_before": before + ramp,
                                     "cc_at_shift": at, "cc_after": after}) for system, (before, at, after)
                       in shape.items()], ignore_index=True)
    segments = shift.rename(columns={"cc_before": "cr_within", "cc_at_shift": "cr_across"})
    return (crs_validity.paired_tests(shift, crs_validity.SHIFT_TESTS, n_resamples=200),
            crs_validity.paired_tests(segments, crs_validity.SEGMENT_TESTS, n_resamples=200))


def transfer_rows(cuts=(0.20, 0.05, 0.36), minilm=(0.39, 0.22, 0.53), order=(0.24, 0.10, 0.36),
                  directions=(ch07.DECLARED, ch07.REVERSE)) -> pd.DataFrame:
    """A hand-made ``relevance_transfer`` table: κ_w of the primary's and MiniLM's cuts and the within-query τ-b of
    E[g] on 22 held-out queries, the same numbers in each of ``directions`` (the default: the reviewer's held-out
    set, whose cuts fell below the target while the order held)."""
    readings = {"pointwise, E[g] thresholds cross-fitted": (rc.WEIGHTED_KAPPA, "2.0402, 2.2203, 2.2935", cuts),
                ch07.MINILM: (rc.WEIGHTED_KAPPA, "0.4012, 0.5521, 0.6630", minilm),
                ch07.ORDER_READING: (ch07.TRANSFER_TAU, "", order)}
    return pd.DataFrame([{"direction": d, "fit_queries": 21, "held_out_queries": 22, "reading": name,
                          "statistic": statistic, "cuts": cut_text, "value": v, "ci_low": low, "ci_high": high,
                          "units": 22, "ci_over": "22 queries"}
                         for d in directions for name, (statistic, cut_text, (v, low, high)) in readings.items()])


def make_findings(card=None, minilm=(0.04, -0.12, 0.20), transfer=None, **battery_args):
    shift, segments = construct_tables()
    differences = pd.DataFrame({"difference": [0.29, minilm[0]], "ci_low": [0.18, minilm[1]],
                                "ci_high": [0.38, minilm[2]], "units": [43, 43]},
                               index=["pointwise, argmax", ch07.MINILM])
    outside = pd.DataFrame([{"weighted_kappa": 0.41, "weighted_kappa_ci_low": 0.26, "weighted_kappa_ci_high": 0.53,
                             "units": 33}])
    tables = {"report_card": card_for_findings() if card is None else card, "relevance_differences": differences,
              "outside_pilot": outside, "relevance_transfer": transfer_rows() if transfer is None else transfer,
              "bias_battery": battery(**battery_args), "shift_tests": shift,
              "segment_tests": segments}
    params = {"primary_reading": "pointwise, E[g] thresholds cross-fitted", "relevance_target": 0.40,
              "summeval_target": 0.30, "summeval_dimension": "coherence", "rho_target": 0.30, "alpha": 0.05,
              "self_consistency_samples": 3, "known_answer_margin": 0.1,
              "relevance_plan": power.Plan("Does it reach κ_w ≥ 0.40?", "query", 43, 104, "a basis"),
              "geval_plan": power.Plan("Does G-Eval reach ρ ≥ 0.30?", "document", 12, 11, "a basis")}
    return ch07.findings(tables, params)


def test_findings_decide_the_primary_and_carry_its_caveats():
    f = make_findings()
    # its pilot's queries stay in the sample: only the row outside the pilot is confirmatory
    assert f.primary.key == "07.primary" and f.primary.primary and not f.primary.confirmatory
    assert f.primary.verdict == "undetermined" and (f.primary.units, f.primary.unit) == (43, "queries")
    assert f.primary.system == "pointwise, E[g] thresholds cross-fitted"  # the card's "(declared primary)" dropped
    assert f.primary.depends_on == ("07.relevance.argmax", "07.relevance.primary_vs_minilm",
                                    "07.primary.outside_pilot", "07.relevance.transfer.cuts",
                                    "07.relevance.transfer.minilm", "07.relevance.transfer.order")
    keys = f.by_key()
    assert keys["07.relevance.argmax"].verdict == "fails" and keys["07.relevance.rounded"].verdict == "fails"
    assert keys["07.relevance.primary_vs_argmax"].verdict == "holds"
    assert keys["07.relevance.primary_vs_minilm"].verdict == "undetermined"
    assert make_findings(card_for_findings(primary=(0.50, 0.42, 0.60))).primary.verdict == "holds"
    assert make_findings(card_for_findings(primary=(0.30, 0.20, 0.38))).primary.verdict == "fails"
    assert f.geval.verdict == "undetermined" and not f.geval.confirmatory and f.geval_system.verdict == "holds"
    # plans: the G-Eval design reached its precision, yet its result does not decide the question
    relevance_plan, geval_plan = f.plans
    assert geval_plan.reaches_precision and geval_plan.outcome == "undetermined" and geval_plan.decided is False
    assert not relevance_plan.reaches_precision and relevance_plan.outcome == "undetermined"
    keys_in_order = [v.key for v in f.verdicts()]
    assert len(set(keys_in_order)) == len(keys_in_order) and keys_in_order[0] == "07.primary"
    assert sum(v.primary for v in f.verdicts()) == 1


def test_findings_give_no_interval_under_the_minimum_of_units():
    keys = make_findings().by_key()
    for key in ("07.nuggets.vital", "07.monitor", "07.crs_judge.tas", "07.crs_judge.cas"):
        v = keys[key]
        assert v.units < 10 and np.isnan(v.ci_low) and v.verdict == "undetermined", key
    assert keys["07.nuggets.all"].verdict == "undetermined" and keys["07.nuggets.all"].unit == "questions"
    assert keys["07.monitor"].unit == "days" and keys["07.monitor"].units == 5


def test_a_construct_result_the_wrong_way_is_evidence_against_never_support():
    keys = make_findings().by_key()
    assert keys["07.construct.cc_drop.llm"].verdict == "holds"
    assert keys["07.construct.cc_recovery.llm"].verdict == "holds"
    for system in ("memoryless_llm", "echo"):  # built to follow a new wish, their CC peaks at the shift
        assert keys[f"07.construct.cc_drop.{system}"].verdict == "fails"
        assert keys[f"07.construct.cc_recovery.{system}"].verdict == "fails"
    stale = keys["07.construct.cc_recovery.stale_template"]
    assert stale.direction == "lower" and stale.verdict == "fails" and stale.p_against < 0.05
    drop = keys["07.construct.cc_drop.stale_template"]
    assert drop.by_construction and drop.verdict == "holds"
    assert "07.construct.cr_segments.stale_template" not in keys  # no declared direction: no verdict
    assert keys["07.construct.cr_segments.echo"].verdict == "fails"  # within (0.2–0.4) below across (0.9)
    assert keys["07.construct.cc_recovery.retrieval_template"].verdict == "undetermined"  # no difference at all
    assert all(not v.confirmatory and v.unit == "users" for v in make_findings().shift)


def test_the_bias_battery_verdicts():
    keys = make_findings().by_key()
    assert keys["07.bias.injection"].verdict == "fails"  # inflation 0.90 (0.70 to 1.10): the judge does not resist
    assert keys["07.bias.injection.defence"].verdict == "fails"  # the defence raises it (-0.05 (-0.09 to -0.02))
    assert keys["07.bias.verbosity.filler"].verdict == "undetermined"
    assert keys["07.bias.self_consistency"].verdict == "holds"  # 0.71 (0.68 to 0.74) against 0.56 for uniform
    position = keys["07.bias.position"]  # 0.55 + 0.05 of 20 pairs: 12 of 20 decided by position
    assert position.estimate == pytest.approx(0.60) and position.verdict == "undetermined"
    assert position.check == "known answer" and position.units == 20
    every_pair = make_findings(first=1.0, second=0.0).by_key()["07.bias.position"]
    assert every_pair.verdict == "fails" and every_pair.ci_low == pytest.approx(0.8316, abs=1e-3)  # 20 of 20
    combined = keys["07.bias.position.combined"]  # the lifted reading beside the unlifted one, qualified by it
    assert combined.estimate == 0.80 and combined.verdict == "sees" and combined.units == 20
    assert combined.depends_on == ("07.bias.position",) and not combined.confirmatory
    finds = make_findings
    assert finds(combined=(0.50, 0.45, 0.56)).by_key()["07.bias.position.combined"].verdict == "blind"
    assert finds(combined=(0.20, 0.05, 0.38)).by_key()["07.bias.position.combined"].verdict == "fails"


def test_formatters_only_format_the_record():
    f = make_findings()
    lines = ch07.conclusions(f)
    assert lines[0].startswith("**Other readings of the same calls**: **pointwise, argmax** — grades passages as NIST "
                               "does (κ_w ≥ 0.40): **fails**; quadratic-weighted κ 0.14 (0.08 to 0.20, 43 queries")
    assert "Does G-Eval reach ρ ≥ 0.30?" in lines[2] and "the result does not decide it (undetermined)" in lines[2]
    assert "Does it reach κ_w" not in "".join(lines)  # the primary's plan is in the relevance bullets
    text = ch07.crs(f, {"r": 0.5, "ci_low": np.nan, "ci_high": np.nan, "n": 30, "ci_over": "6 users"},
                    pd.DataFrame({"n": [30, 30, 5], "r": [0.5, -0.2, 0.6], "ci_low": [np.nan] * 3,
                                  "ci_high": [np.nan] * 3, "ci_over": ["6 users", "6 users", "5 systems"]},
                                 index=["pooled", "within systems", "system level"]),
                    pd.DataFrame({"metric": ["tas"], "observed": ["a > b"]}),
                    pd.DataFrame({"variant": ["cc_only"], "changed": [True], "kendall_tau": [0.6]}))
    against = [v for v in (*f.shift, *f.segments) if v.verdict == "fails"]
    assert f"{len(against)} of {len(f.shift) + len(f.segments)} results go significantly the wrong way" in text
    assert ("*CC recovers after the shift*: holds for 1 (llm); goes the wrong way (evidence against) for 3 "
            "(memoryless_llm, echo, stale_template); undetermined for 1 (retrieval_template)") in text
    assert "TAS a > b" in text and "cc_only (τ = 0.60)" in text
    bias_text = ch07.bias(f, battery())
    assert "**pointwise judge, E[g] (0–3 prompt)** — resists an injected instruction to give the top grade: " \
           "**fails**" in bias_text
    assert "share biased to the second-shown passage 0.05" in bias_text and "MT-Bench judge GPT-4 0.650*" in bias_text
    assert ch07.summeval(card_for_findings(), "coherence").startswith(
        "**G-Eval on SummEval, coherence** (summary-level Spearman ρ): as declared (weighted) 0.27 (95% CI 0.18 to "
        "0.37, 12 documents); argmax digit")
    changed = verdicts.changes(f.verdicts(), ch07.EARLIER)
    assert "07.construct.cc_recovery.echo" in set(changed.key)  # counted as support at cd3530b


def test_the_notebook_verdict_rows_are_those_earlier_keys_name():
    keys = {v.key for v in make_findings().verdicts()}
    assert set(ch07.EARLIER) <= keys | {"07.construct.cr_segments.stale_template"}
    assert set(ch07.EARLIER.values()) <= set(verdicts.VERDICTS)
