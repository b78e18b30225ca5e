"""Validity checks of the CRS metrics on hand-made sessions: CC around shifts, CR within vs across segments,
paired Wilcoxon tests one-sided in the direction declared per system (with the p the other way), rank-biserial
effect sizes and Holm, system orders, ablation rankings, and the
convergent correlations with the judge."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lib.analysis.comparisons import holm_floor
from lib.crs import validity
from lib.crs.records import SessionLog
from tests.crs_tiny import tiny_universe
from tests.test_crs_metrics import EVENTS, scripted_shift


def turns_frame():
    """Two sessions of one system: 6 turns, shifts at 2 and 4 (s0), one shift at 3 (s1); turn 1 of s1 failed."""
    return pd.DataFrame({
        "system": ["m"] * 12, "session_id": ["s0"] * 6 + ["s1"] * 6, "turn": list(range(6)) * 2,
        "shift": [False, False, True, False, True, False, False, False, False, True, False, False],
        "scored": [True] * 7 + [False] + [True] * 4,
        "cc": [1.0, 0.8, 0.2, 0.6, 0.0, 1.0, 0.9, np.nan, 0.7, 0.1, 0.5, 0.9]})


def test_shift_cc_before_at_and_after_each_shift():
    table = validity.shift_cc(turns_frame(), window=2).set_index("session_id")
    # s0, shift 2: before (1.0, 0.8) 0.9, at 0.2, after turn 3 (next shift at 4) 0.6;
    #     shift 4: before (0.2, 0.6) 0.4, at 0.0, after turn 5: 1.0.
    assert table.loc["s0", ["cc_before", "cc_at_shift", "cc_after"]].tolist() == \
        pytest.approx([(0.9 + 0.4) / 2, 0.1, 0.8])
    # s1, shift 3: before turns 1 (failed) and 2: 0.7; at 0.1; after turn 4 (window 2): 0.5.
    assert table.loc["s1", ["cc_before", "cc_at_shift", "cc_after"]].tolist() == pytest.approx([0.7, 0.1, 0.5])


def test_cr_within_and_across_segments_by_hand():
    universe = tiny_universe()
    log = SessionLog.model_validate({"session_id": "s0", "system": "template", "true_genre": "comedy",
                                     "conversation": scripted_shift(), "shift_events": EVENTS})
    [row] = validity.cr_within_across([log], universe).to_dict("records")
    c, h = universe.idf("genre=comedy"), universe.idf("actor=tom hanks")
    horror, m = universe.idf("genre=horror"), universe.idf("director=f w murnau")
    # S = {comedy}, {comedy, Hanks}, {comedy, Hanks}, {horror, Murnau}; U = {comedy}, {Hanks}, {horror}, {Murnau};
    # segments 0, 0, 1, 1. Within: S1·U0 and S3·U2 are non-zero of 4 pairs; across: S2·U0 and S2·U1 of 8.
    assert row["cr_within"] == pytest.approx((c / math.hypot(c, h) + horror / math.hypot(horror, m)) / 4)
    assert row["cr_across"] == pytest.approx((c / math.hypot(c, h) + h / math.hypot(c, h)) / 8)


def test_rank_biserial_by_hand():
    assert validity.rank_biserial([1, -2, 3, 0]) == pytest.approx((1 + 3 - 2) / 6)
    assert validity.rank_biserial([2, 5]) == 1.0 and math.isnan(validity.rank_biserial([0, 0]))


def shift_frame():
    """Six users of three systems: the LLM adapts (CC drops at the shift and comes back), the echo goes the
    wrong way (its CC peaks at the shift), the stale template never recovers but "recovers" here."""
    users = [f"s{k}" for k in range(6)]
    return pd.DataFrame({"system": ["llm"] * 6 + ["echo"] * 6 + ["stale_template"] * 6, "session_id": users * 3,
                         "before": [1.0] * 6 + [0.2] * 6 + [1.0] * 6,
                         "at": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] + [0.9] * 6 + [0.2] * 6,
                         "after": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6,
                                   0.3, 0.4, 0.5, 0.6, 0.7, 0.8]})


TESTS = (validity.ConstructTest("drop at the shift", "before", "at", "higher", "higher", by_design="kept wishes"),
         validity.ConstructTest("recovery", "after", "at", "higher", "lower"))


def test_paired_tests_are_one_sided_in_the_direction_declared_per_system_with_p_against_and_holm_for_both():
    table = validity.paired_tests(shift_frame(), TESTS, n_resamples=200).set_index(["system", "comparison"])
    drop = table.loc[("llm", "drop at the shift")]
    # six positive differences in the declared direction: exact one-sided p = 1/2^6, the other way 1; r = 1
    assert drop.direction == "higher" and drop.p == pytest.approx(1 / 64) and drop.p_against == pytest.approx(1.0)
    assert drop.rank_biserial == 1.0 and drop.mean_diff == pytest.approx(0.65) and drop.min_p == pytest.approx(1 / 64)
    assert drop.ci_over == "6 users" and np.isnan(drop.ci_low)  # fewer users than an interval needs
    # the echo's CC peaks at the shift: the wrong way, so p is large and p_against small
    echo = table.loc[("echo", "drop at the shift")]
    assert echo.p == pytest.approx(1.0) and echo.p_against == pytest.approx(1 / 64)
    # the stale template must not regain CC: declared "lower", so its rise is a result the wrong way
    stale = table.loc[("stale_template", "recovery")]
    assert stale.direction == "lower" and stale.p_against == pytest.approx(1 / 64) and stale.tested
    # its drop holds by design: outside the family, its own p kept
    stale_drop = table.loc[("stale_template", "drop at the shift")]
    assert stale_drop.by_design and not stale_drop.tested and stale_drop.p_holm == stale_drop.p
    family = table[table.tested]
    assert len(family) == 5
    # Holm over both directions of the 5 tested rows (10 one-sided p-values), for p ...
    assert family.p_holm.min() == pytest.approx(10 / 64)
    assert table.loc[("echo", "drop at the shift")].p_against_holm == pytest.approx(10 / 64)  # ... and p_against
    assert holm_floor(family) == pytest.approx(10 / 64)
    assert "Holm over 5 tests" in validity.family_test_text(table, table.loc[("echo", "recovery")])
    assert "outside the tested family" in validity.family_test_text(table, stale_drop)


def test_paired_tests_without_a_direction_or_a_difference_make_no_test():
    frame = shift_frame().assign(after=lambda f: f["at"])
    undirected = (validity.ConstructTest("recovery", "after", "at", "higher", None),)
    table = validity.paired_tests(frame, undirected, n_resamples=200).set_index("system")
    assert table.loc["stale_template", "direction"] == "none" and not table.loc["stale_template", "tested"]
    assert np.isnan(table.loc["llm", "p"]) and table.loc["llm", "nonzero"] == 0  # no non-zero difference: no test
    assert table.p_holm.isna().all()


def test_every_system_of_known_behaviour_has_a_declared_adaptation():
    assert set(validity.ADAPTS) == {"llm", "retrieval_template", "memoryless_llm", "stale_template", "echo"}
    assert not validity.ADAPTS["stale_template"] and validity.ADAPTS["memoryless_llm"]
    assert [t.direction(False) for t in validity.SHIFT_TESTS] == ["higher", "lower"]
    assert validity.SEGMENT_TESTS[0].direction(False) is None


def session_rows():
    return pd.DataFrame({"system": ["template", "template", "stale", "stale", "echo", "echo"],
                         "session_id": ["s0", "s1"] * 3,
                         "tas": [0.8, 0.7, 0.5, 0.4, -0.2, -0.1], "cc": [0.9, 0.8, 0.6, 0.5, 0.9, 0.9],
                         "cr": [0.8, 0.9, 0.4, 0.4, 1.0, 1.0], "copy_ratio": [0.0, 0.0, 0.0, 0.0, 1.0, 1.0],
                         "recovery_rate": [1.0, 1.0, 0.0, 0.5, 0.0, 0.0],
                         "interference": [0.0, 0.0, 1.0, 0.5, 0.0, 0.0],
                         "cas": [0.9, 0.85, 0.25, 0.45, -0.1, -0.05],
                         "judge_ok": [True, True, True, False, True, True],
                         "judge_coherence": [5, 4, 3, None, 1, 2], "judge_personalisation": [5, 5, 3, None, 1, 1],
                         "judge_proactiveness": [4, 4, 2, None, 1, 2]})


def test_ordering_check():
    check = validity.ordering_check(session_rows(), "tas", ["template", "stale", "echo"])
    assert check["holds"] and check["observed"] == "template > stale > echo"
    assert not validity.ordering_check(session_rows(), "cc", ["template", "stale", "echo"])["holds"]


def test_ablation_orders_give_kendall_tau_with_the_declared_weights():
    from lib.crs import summaries
    turns = pd.DataFrame({"system": ["template", "stale", "echo"], "session_id": ["s0"] * 3, "scored": [True] * 3,
                          "cc": [0.9, 0.5, 1.0], "cr": [0.8, 0.4, 1.0], "copy_ratio": [0.0, 0.0, 1.0]})
    table = summaries.ablation_orders(summaries.ablation(turns, session_rows()))
    assert (table.loc["tas", "order"] == "template > stale > echo"
            and table.loc["tas", "kendall_tau"] == pytest.approx(1))
    # Without the copy penalty the echo (CC = CR = 1) goes first: 1 concordant, 2 discordant pairs -> τ = −1/3.
    assert table.loc["tas_without_copy", "order"] == "echo > template > stale"
    assert table.loc["tas_without_copy", "kendall_tau"] == pytest.approx(-1 / 3)
    assert table.loc["tas_without_copy", "changed"] and not table.loc["tas", "changed"]


def test_convergent_validity_correlates_metrics_with_each_judge_score():
    table = validity.convergent_validity(session_rows(), seed=0, n_resamples=200, metrics=["tas", "cc"])
    assert set(table.index.get_level_values("judge_score")) == {"judge_coherence", "judge_personalisation",
                                                                 "judge_proactiveness", "judge_mean"}
    row = table.loc[("judge_mean", "all", "tas", "spearman")]
    judged = session_rows().iloc[[0, 1, 2, 4, 5]]
    mean = judged[["judge_coherence", "judge_personalisation", "judge_proactiveness"]].astype(float).mean(axis=1)
    assert row["n"] == 5 and row["r"] == pytest.approx(judged.tas.corr(mean, "spearman"))


def test_convergent_validity_over_all_sessions_only():
    table = validity.convergent_validity(session_rows(), seed=0, n_resamples=100, metrics=["tas"], per_system=False)
    assert set(table.index.get_level_values("system")) == {"all"}
    assert table.loc[("judge_mean", "all", "tas", "spearman"), "r"] == pytest.approx(
        validity.convergent_validity(session_rows(), seed=0, n_resamples=100, metrics=["tas"]).loc[
            ("judge_mean", "all", "tas", "spearman"), "r"])
