"""Validity checks of the CRS metrics on hand-made sessions: CC around shifts, CR within vs across segments,
paired Wilcoxon tests with rank-biserial effect sizes and Holm, system orders, ablation rankings, and the
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


def test_paired_tests_wilcoxon_effect_size_and_holm_within_the_family():
    frame = pd.DataFrame({"system": ["a"] * 6 + ["b"] * 6, "before": [1.0] * 12,
                          "at": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] + [1.0] * 6,
                          "after": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5]})
    table = validity.paired_tests(frame, {"drop at the shift": ("before", "at"), "recovery": ("after", "at")})
    drop = table[(table.system == "a") & (table.comparison == "drop at the shift")].iloc[0]
    # Six positive differences: exact two-sided p = 2/2^6; every rank positive: r = 1.
    assert drop.n == 6 and drop.p == pytest.approx(2 / 64) and drop.rank_biserial == 1.0
    assert drop.mean_diff == pytest.approx(0.65)
    b_drop = table[(table.system == "b") & (table.comparison == "drop at the shift")].iloc[0]
    assert math.isnan(b_drop.p) and math.isnan(b_drop.p_holm)  # no non-zero difference: no test, not counted
    p = table.p.dropna().sort_values().tolist()
    assert table.p_holm.dropna().min() == pytest.approx(min(1.0, 3 * p[0]))  # m = 3 tests in the family
    b_recovery = table[(table.system == "b") & (table.comparison == "recovery")].iloc[0]
    assert (b_recovery.n, b_recovery.nonzero, b_recovery.min_p) == (6, 1, 1.0)  # one non-zero difference: p ≥ 1
    # the family's floor: 3 tests, the best-placed with 6 non-zero differences: 3 · 2/64
    assert holm_floor(table) == pytest.approx(3 * 2 / 64)


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
