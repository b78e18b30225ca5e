"""Chapter 06's helpers: the tables behind its figures and checks (ablation variants and orders, known-behaviour
expectations, trivial segmenters, judge correlations, recovery by user phrasing, concept-error grids, the
conversation view and the target-title count) and the figure builders of lib.plots, asserted on the figures'
data. A template-only run (no LLM) over the real universe supplies the logs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import plots
from lib.crs import summaries
from lib.crs.config import MetricConfig
from lib.crs.records import SessionLog
from lib.crs.runner import run_sessions
from lib.crs.systems import echo_crs, retrieval_template_crs, stale_template_crs
from lib.crs.universe import load_universe

SYSTEMS = ["retrieval_template", "stale_template", "echo"]


@pytest.fixture(scope="module")
def universe():
    return load_universe()


@pytest.fixture(scope="module")
def run(universe):
    systems = [retrieval_template_crs(universe), stale_template_crs(universe), echo_crs()]
    return run_sessions(universe, systems, [0, 1, 2], config=MetricConfig(legacy_method="jaccard"), out_dir=None)


# --- tables ----------------------------------------------------------------------------------------------------

def test_ablation_recomputes_each_variant_and_reports_order_changes(run):
    rows = run.rows
    scores = summaries.ablation(run.turns, rows).set_index(["system", "variant"])["score"]
    assert set(scores.index.get_level_values("variant")) == {*summaries.TAS_VARIANTS, *summaries.CAS_VARIANTS}
    echo = rows[rows["system"] == "echo"]
    assert scores["echo", "cr_only"] == pytest.approx(echo["cr"].mean(), abs=1e-6)
    # CAS without recovery: the declared tas 0.5 and stability 0.25, divided by their sum.
    expected = ((0.5 * rows["tas"] + 0.25 * (1 - rows["interference"])) / 0.75).groupby(rows["system"]).mean()
    for model in SYSTEMS:
        assert scores[model, "cas_without_recovery"] == pytest.approx(expected[model], abs=1e-6)
    orders = summaries.ablation_orders(summaries.ablation(run.turns, rows))
    assert orders.loc["tas", "order"] == "retrieval_template > stale_template > echo"
    assert not orders.loc["tas", "changed"] and not orders.loc["cas", "changed"]
    # The echo names exactly what the user just said: CR alone puts it first.
    assert orders.loc["cr_only", "echo_rank"] == 1 and orders.loc["cr_only", "changed"]
    assert orders.loc["tas", "echo_rank"] == 3


def hand_rows(values):
    """Results rows from {model: [session values of tas]} (other metrics unused)."""
    return pd.DataFrame([{"system": m, "session_id": f"s{i}", "tas": v} for m, vs in values.items()
                         for i, v in enumerate(vs)])


def test_known_behaviour_on_means_and_per_session():
    expectations = (summaries.Expectation("a above b", "tas", ("a",), ("b",)),
                    summaries.Expectation("a at least c", "tas", ("a",), ("c",), strict=False),
                    summaries.Expectation("a above everyone", "tas", ("a",), ("b", "c")),
                    summaries.Expectation("needs d", "tas", ("d",), ("a",)))
    rows = hand_rows({"a": [0.9, 0.2, 0.5], "b": [0.1, 0.4, np.nan], "c": [0.9, 0.1, 0.5]})
    checks = summaries.known_behaviour(rows, expectations).set_index("expectation")
    assert list(checks.index) == ["a above b", "a at least c", "a above everyone"]  # d is not in the run
    assert list(checks.reset_index().columns) == list(summaries.KNOWN_BEHAVIOUR_COLUMNS)
    assert checks.loc["a above b", "mean_above"] == pytest.approx(1.6 / 3)
    assert (checks.loc["a above b", "sessions_holding"], checks.loc["a above b", "sessions"]) == (1, 2)
    assert checks.loc["a at least c", "sessions_holding"] == 3
    # On the means a (0.53) is above b (0.25) and c (0.50); in no session with every value is it strictly above
    # both (session 0 ties with c, session 1 is below b): means and sessions can disagree.
    everyone = checks.loc["a above everyone"]
    assert everyone["mean_above"] > everyone["mean_below"] and everyone["sessions_holding"] == 0
    # sign test over sessions, one-sided: "a above b" has 1 session higher, 1 lower -> P(W ≥ 1 | 2) = 3/4 each way
    assert (checks.loc["a above b", "p"], checks.loc["a above b", "p_against"]) == (pytest.approx(0.75),) * 2
    assert checks.loc["a above b", "share"] == 0.5 and np.isnan(checks.loc["a above b", "ci_low"])  # 2 < 10 users
    # "a at least c": 2 ties and 1 session higher -> share 1, one-sided p = ½
    assert (checks.loc["a at least c", "share"], checks.loc["a at least c", "p"]) == (1.0, 0.5)
    # the family: the strict ones; Holm over both directions of its 2 tests (4 p-values)
    assert checks["tested"].tolist() == [True, False, True]
    assert np.isnan(checks.loc["a at least c", "p_holm"])
    assert checks.loc["a above everyone", "p_against_holm"] == pytest.approx(1.0)  # 0 wins, 1 loss: P = 1/2, × 4


def test_known_behaviour_tests_each_direction_one_sided_with_holm_over_both():
    expectation = (summaries.Expectation("a above b", "tas", ("a",), ("b",)),
                   summaries.Expectation("b above a", "tas", ("b",), ("a",)))
    rows = hand_rows({"a": [0.9] * 9 + [0.1] * 3, "b": [0.5] * 12})  # 9 users a higher, 3 lower: 12 ≥ 10 users
    checks = summaries.known_behaviour(rows, expectation).set_index("expectation")
    from scipy.stats import binomtest
    one_sided = binomtest(9, 12, alternative="greater").pvalue
    assert checks.loc["a above b", "p"] == pytest.approx(one_sided)
    assert checks.loc["b above a", "p_against"] == pytest.approx(one_sided)  # the same evidence, the other way
    # Holm over the 4 one-sided p-values: the two small ones are multiplied by 4 and 3, then made monotone
    assert checks.loc["a above b", "p_holm"] == pytest.approx(4 * one_sided)
    assert checks.loc["b above a", "p_against_holm"] == pytest.approx(4 * one_sided)
    assert checks.loc["a above b", "share"] == 0.75
    low, high = binomtest(9, 12).proportion_ci(0.95, method="exact")
    assert (checks.loc["a above b", "ci_low"], checks.loc["a above b", "ci_high"]) == (pytest.approx(low),
                                                                                      pytest.approx(high))


def test_judge_levels_separate_between_and_within_system_agreement():
    sessions = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 3 + ["echo"] * 3,
                             "tas": [0.9, 0.8, 0.7, 0.5, 0.4, 0.3, -0.2, -0.3, -0.1],
                             "judge_mean": [4.0, 4.1, 4.2, 3.0, 3.1, 3.2, 1.0, 1.1, 1.2],
                             "session_id": ["s0", "s1", "s2"] * 3})
    levels = summaries.judge_levels(sessions, n_resamples=200)
    # every level's interval would resample the 3 users (the 3 systems at system level): none is given
    assert set(levels["units"]) == {3} and set(levels["ci_over"]) == {"3 users", "3 systems"}
    assert levels.loc["system level", "r"] == pytest.approx(1.0) and levels.loc["system level", "n"] == 3
    # inside each system the judge goes down where TAS goes up (the echo: -0.2,-0.3,-0.1 vs 1.0,1.1,1.2 -> mixed)
    centred_tas = [0.1, 0, -0.1, 0.1, 0, -0.1, 0, -0.1, 0.1]
    centred_judge = [-0.1, 0, 0.1, -0.1, 0, 0.1, -0.1, 0, 0.1]
    from scipy.stats import spearmanr
    assert levels.loc["within systems", "r"] == pytest.approx(spearmanr(centred_tas, centred_judge).statistic)
    assert levels.loc["without echo", "n"] == 6
    assert "p" not in levels.columns


def test_known_behaviour_holds_for_the_template_run(run):
    checks = summaries.known_behaviour(run.rows)
    # Without the LLM systems the two expectations about them are left out; the echo is compared with the rest.
    assert len(checks) == 7
    assert checks.loc[0, "below"] == "retrieval_template, stale_template"
    assert (checks["mean_above"] >= checks["mean_below"]).all()


def test_segmentation_baselines(run):
    baselines = summaries.segmentation_baselines(run.logs)
    assert len(baselines) == 2 * 3  # once per session, not per system
    agreement = summaries.segmentation_agreement(baselines)
    none, every = agreement.loc["baseline: no boundary"], agreement.loc["baseline: every turn"]
    assert none["recall"] == 0 and np.isnan(none["precision"])
    assert every["recall"] == 1 and every["precision"] == pytest.approx(6 / 21)  # 2 shifts in 7 boundaries, ×3


def test_session_frame_and_judge_correlations(run):
    sessions = summaries.session_frame(run.rows, run.logs)
    echo = next(log for log in run.logs if log.system == "echo")
    user_words = [len(t.text.split()) for t in echo.conversation[0::2]]
    assert sessions.set_index(["system", "session_id"]).loc[("echo", echo.session_id), "reply_words"] == \
        pytest.approx(np.mean(user_words))
    assert sessions["judge_mean"].isna().all()  # nothing judged
    judged = pd.DataFrame({"judge_ok": [True] * 5 + [False], "judge_mean": [1, 2, 3, 4, 5, np.nan],
                           "tas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.9], "reply_words": [9, 8, 7, 6, 5, 1],
                           "session_id": [f"s{k}" for k in range(6)]})
    correlations = summaries.judge_correlations(judged, ["tas", "reply_words"], n_resamples=200)
    assert correlations.loc["tas", "n"] == 5 and correlations.loc["tas", "r"] == pytest.approx(1.0)
    assert correlations.loc["reply_words", "r"] == pytest.approx(-1.0)
    assert "p" not in correlations.columns  # no p over sessions nested in users


def test_recovery_summary_separates_llm_phrased_sessions():
    shifts = pd.DataFrame({"system": ["a"] * 4, "session_id": ["s0", "s0", "s1", "s1"], "turn": [3, 6, 3, 6],
                           "delay": [0, None, 4, 1], "recovered": [True, False, False, True],
                           "censored": [False, True, False, True]})
    rows = pd.DataFrame({"system": ["a", "a"], "session_id": ["s0", "s1"], "llm_user_turns": [5, 0]})
    summary = summaries.recovery_summary(shifts, rows)
    assert summary.loc[("a", "llm-phrased")].to_dict() == {"shifts": 2, "recovered_within_w": 1, "recovery_rate": 0.5,
                                                          "recovered_later": 0, "never_recovered": 1, "censored": 1}
    assert summary.loc[("a", "template"), "recovered_later"] == 1


def test_shift_cues_counts_each_session_once(run, universe):
    cues = summaries.shift_cues(run.logs)
    partial = sum(bool(e.kept) for log in summaries.one_per_session(run.logs) for e in log.shift_events)
    assert cues.to_dict("index") == {"template": {"shift_turns": 6, "planned_quiet": 0, "with_cue": 6,
                                                  "partial": partial, "real_change": 6}}  # 3 sessions × 2 shifts
    record = run.logs[0].record()
    shift = next(u for u in record["conversation"][0::2] if u["user_meta"]["shift"])
    shift["text"], shift["user_meta"]["phrasing"] = "Now a horror movie, please.", "llm"
    cues = summaries.shift_cues([SessionLog.model_validate(record)])
    assert cues.loc["llm", ["shift_turns", "with_cue", "real_change"]].to_dict() == \
        {"shift_turns": 1, "with_cue": 0, "real_change": 1}
    # A "shift" after which the user wants what it wanted before is no real change.
    users = record["conversation"][0::2]
    users[shift["user_meta"]["turn"]]["user_meta"]["preference"] = users[shift["user_meta"]["turn"] - 1][
        "user_meta"]["preference"]
    users[shift["user_meta"]["turn"]]["user_meta"]["stated"] = users[shift["user_meta"]["turn"]]["user_meta"][
        "preference"][:1]
    assert summaries.shift_cues([SessionLog.model_validate(record)]).loc["llm", "real_change"] == 0


def test_recovery_intervals_resample_users_and_split_by_cue(run):
    shifts = pd.DataFrame({"system": ["a"] * 20, "session_id": [f"s{k // 2}" for k in range(20)],
                           "turn": [3, 6] * 10, "recovered": [True, False] * 10})
    logs = [log.model_copy(update={"system": "a", "session_id": f"s{k}"})
            for k, log in enumerate(run.logs[:1] * 10)]
    table = summaries.recovery_intervals(shifts, logs, n_resamples=200)
    row = table.loc["a"]
    # Every user recovers from 1 of its 2 shifts: every resample gives 0.5, which is no interval.
    assert (row.shifts, row.recovered, row.recovery_rate) == (20, 10, 0.5) and np.isnan(row.ci_low)
    assert row.ci_over == "10 users, all at one rate"
    varied = shifts.assign(recovered=[True, False] * 6 + [False, False] * 4)
    low, high = summaries.recovery_intervals(varied, logs, n_resamples=200).loc["a", ["ci_low", "ci_high"]]
    assert 0 <= low < 0.3 < high <= 0.5  # 6 users at 0.5, 4 at 0: rate 0.3
    assert row.cue_shifts + row.quiet_shifts == 20
    few = summaries.recovery_intervals(shifts.iloc[:6], logs[:3], n_resamples=200).loc["a"]
    assert np.isnan(few.ci_low) and few.ci_over == "3 users, all at one rate"  # and under the study's minimum


def test_concept_error_table_puts_systems_side_by_side():
    turns = pd.DataFrame({"system": ["a", "a", "b"], "scored": [True, True, True],
                          "missing": [("genre=comedy", "year=1990"), ("genre=comedy",), ()]})
    grid = summaries.concept_error_table(turns, "missing", k=5)
    assert list(grid.columns) == ["a"] and list(grid["a"]) == ["genre=comedy (2)", "year=1990 (1)"]
    assert list(grid.index) == [1, 2]


def test_conversation_view_and_target_mentions(run, universe):
    log = run.logs[0]
    view = summaries.conversation_frame(log, universe)
    assert len(view) == len(log.conversation) and list(view["speaker"][:2]) == ["USER", "SYSTEM"]
    assert view.loc[0, "hidden_target"] == universe.names[log.conversation[0].user_meta.target]
    assert view.loc[1, "constraints"] == ", ".join(log.conversation[1].constraints)
    assert summaries.target_mentions(run.logs, universe) == 0
    record = log.record()
    target = universe.items.loc[universe.position[record["conversation"][0]["user_meta"]["target"]], "title"]
    record["conversation"][0]["text"] = f"Something like {target}, please."
    assert summaries.target_mentions([SessionLog.model_validate(record)], universe) == 1


# --- figures ---------------------------------------------------------------------------------------------------

def test_timeline_has_one_panel_per_system_and_marks_every_shift(run):
    timeline = summaries.turn_timeline(run.turns, session_id="s0")
    fig = plots.crs_timeline(timeline, SYSTEMS)
    assert len(fig.data) == 3 * len(SYSTEMS)  # CC, CR, I in each panel
    shift_turns = sorted(set(timeline.loc[timeline["shift"], "turn"]))
    assert shift_turns == [3, 6]
    assert sorted(shape.x0 for shape in fig.layout.shapes) == sorted(shift_turns * len(SYSTEMS))
    echo_copy = [t for t in fig.data if t.name == "copy_ratio" and t.xaxis == fig.data[-1].xaxis]
    assert list(echo_copy[0].y) == [1.0] * 8  # the last panel is the echo, which copies every turn
    assert {a.text for a in fig.layout.annotations} == set(SYSTEMS)  # "model=echo" shortened to "echo"


def test_system_colours_stay_fixed_when_a_system_has_no_data(run):
    violin = plots.component_violin(summaries.component_long(run.rows), SYSTEMS)
    delays = summaries.recovery_delays(run.shifts)
    assert "echo" not in set(delays["system"])  # the echo never recovers
    histogram = plots.recovery_delay_histogram(delays, SYSTEMS, window=3)
    colour = {t.name: t.marker.color for t in histogram.data}
    assert colour == {t.name: t.marker.color for t in violin.data if t.name in colour}
    assert [shape.x0 for shape in histogram.layout.shapes] == [2.5]  # delays 0, 1, 2 are within W = 3


def test_radar_closes_each_polygon_on_the_means(run):
    means = summaries.component_means(run.rows)
    fig = plots.component_radar(means, SYSTEMS)
    assert [t.name for t in fig.data] == SYSTEMS
    for trace, (_, row) in zip(fig.data, means.iterrows(), strict=True):
        assert list(trace.r[:-1]) == pytest.approx(list(row)) and trace.r[-1] == trace.r[0]
        assert list(trace.theta) == [*means.columns, means.columns[0]]


def test_scatter_names_the_correlation():
    points = pd.DataFrame({"system": ["a", "b", "a"], "tas": [0.1, 0.5, 0.9], "judge_mean": [2.0, 3.0, 4.5]})
    fig = plots.correlation_scatter(points, "tas", "judge_mean", {"n": 3, "r": 1.0, "ci_low": 0.5, "ci_high": 1.0,
                                                                      "ci_over": "12 users"},
                                    ["a", "b"], "TAS", "judge mean")
    assert "ρ = 1.00 (95% CI 0.50 to 1.00, 12 users), n = 3" in fig.layout.title.text
    assert sorted(x for t in fig.data for x in t.x) == [0.1, 0.5, 0.9]
    undefined = {"n": 2, "r": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    assert "ρ undefined (n = 2" in plots.correlation_scatter(points[:2], "tas", "judge_mean", undefined, ["a", "b"],
                                                             "TAS", "judge mean").layout.title.text


def test_recovery_by_window_and_ablation_bars(run):
    rates = summaries.recovery_by_window(run.shifts, [1, 2, 3])
    fig = plots.recovery_by_window(rates, SYSTEMS, window=3)
    assert [t.name for t in fig.data] == SYSTEMS and list(fig.data[0].x) == [1, 2, 3]
    assert fig.layout.shapes[0].x0 == 3
    scores = summaries.ablation(run.turns, run.rows)
    bars = plots.ablation_bars(scores, SYSTEMS)
    assert [t.name for t in bars.data] == SYSTEMS
    echo = bars.data[2]
    assert dict(zip(echo.x, echo.y, strict=True)) == pytest.approx(
        scores[scores["system"] == "echo"].set_index("variant")["score"].to_dict())


def test_one_per_session_keeps_the_first_log_of_each_session_in_order(run):
    logs: list[SessionLog] = run.logs[::-1]  # the last system's sessions first, in reverse session order
    kept = summaries.one_per_session(logs)
    assert [log.session_id for log in kept] == ["s2", "s1", "s0"]
    assert {log.system for log in kept} == {"echo"}
