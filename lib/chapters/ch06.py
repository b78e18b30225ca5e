"""Chapter 06 (CRS simulation): its generated "what the numbers say", the small loops over its tables, and its
front-page headline. Tested on small hand-made tables (``tests/test_ch06.py``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lib.analysis import power
from lib.analysis.stats import correlation_text, interval_text
from lib.chapters.headline import Tables, headline
from lib.crs import summaries as crs_summaries
from lib.crs.config import MetricConfig
from lib.crs.records import CRS_OUTPUTS, ResultRow, SessionLog, read_jsonl
from lib.crs.runner import results_frame

CONCEPT_ERRORS = ("missing", "hallucinated", "stale")


def example_log(logs: Sequence[SessionLog], system: str, session_id: str) -> SessionLog:
    """The log of one system in one session."""
    return next(log for log in logs if log.system == system and log.session_id == session_id)


def concept_error_tables(turns: pd.DataFrame, top_k: int) -> dict[str, pd.DataFrame]:
    """Per kind of concept error, the top ``top_k`` concepts per system (counts of turns); empty when none."""
    return {kind: crs_summaries.concept_error_table(turns, kind, top_k) for kind in CONCEPT_ERRORS}


def judgment_counts(rows: pd.DataFrame) -> str:
    """How many conversations were judged and how many failed, by failure kind."""
    judgments = rows.judge_failure_kind.fillna("judged").value_counts()
    return "conversations: " + ", ".join(f"{kind} {n}" for kind, n in judgments.items())


# Chapter 07's construct families (lib.crs.validity.paired_tests, Holm within each): tests per system.
CONSTRUCT_FAMILIES: dict[str, int] = {"07 CC around the shift (Wilcoxon)": 2,
                                      "07 CR within vs across segments (Wilcoxon)": 1}


def session_plan(pilot: pd.DataFrame, n_sessions: int, n_systems: int, alpha: float) -> pd.DataFrame:
    """Per declared test family, the sessions (simulated users) it needs to be able to reject after Holm: its
    tests k; the fewest non-tied sessions with which its best exact test reaches Holm's α/k when every session
    agrees (:func:`lib.analysis.power.min_nonzero_units`); the largest share of tied sessions among its tests in
    the ``pilot`` checks (the first simulator's run; chapter 07's families, :data:`CONSTRUCT_FAMILIES`: not known
    there, 0); the sessions that give that many non-tied ones on average
    (:func:`lib.analysis.power.units_for_nonzero`); and this run's sessions. A floor, not a power: a session that
    disagrees raises the need."""
    tested = pilot[pilot["tested"]]
    ties = float((tested["ties"] / tested["sessions"]).max()) if len(tested) else 0.0
    families = [("06 known behaviour (exact sign test)", len(tested), ties),
                *((name, per_system * n_systems, 0.0) for name, per_system in CONSTRUCT_FAMILIES.items())]
    rows = []
    for family, k, tie_share in families:
        nonzero = power.min_nonzero_units(alpha, k)
        needed = power.units_for_nonzero(nonzero, min(tie_share, 0.99))
        rows.append({"family": family, "tests": k, "nonzero_sessions_needed": nonzero, "pilot_tie_share": tie_share,
                     "sessions_needed": needed, "sessions_have": n_sessions, "can_reject": n_sessions >= needed})
    return pd.DataFrame(rows).set_index("family")


def known_behaviour_text(checks: pd.DataFrame, alpha: float) -> str:
    """The known-behaviour checks in words: the tested family with Holm's p, then the checks out of the count."""
    tested, rest = checks[checks["tested"]], checks[~checks["tested"]]
    rejected = tested[tested["rejected"]]
    return (f"**Known behaviour**: {int(tested['holds'].sum())} of {len(tested)} tested differences hold on the means "
            f"over {int(tested['sessions'].max()) if len(tested) else 0} sessions, {len(rejected)} of them with "
            f"Holm-adjusted p < {alpha:g} (exact sign test over sessions, family of {len(tested)}):"
            + "".join(f"\n  * {c.expectation} ({c.metric}): {'holds' if c.holds else 'does not hold'}, "
                      f"{c.mean_above:.2f} against {c.mean_below:.2f}; in {c.sessions_holding} of {c.sessions} "
                      f"sessions ({c.ties} tied), Holm p = {c.p_holm:.2g}" for c in tested.itertuples())
            + f"\n  Not counted ({len(rest)}): "
            + "; ".join(f"{c.expectation} ({'holds' if c.holds else 'does not hold'}"
                        + (f"; by design: {c.by_design})" if c.by_design else "; not a strict difference)")
                        for c in rest.itertuples()) + ".")


# Runs this one replaced, kept beside it (their results as committed; their logs are in the git history).
EARLIER_RUNS: dict[str, Path] = {
    "first simulator": CRS_OUTPUTS / "first_simulator" / "results.jsonl",
    "before review": CRS_OUTPUTS / "before_review" / "results.jsonl",
}


def earlier_checks(alpha: float, runs: Mapping[str, Path] = EARLIER_RUNS) -> pd.DataFrame:
    """The known-behaviour checks (as now declared) on the committed results of the runs this one replaced: the
    first simulator (6 users, shifts at turns 3 and 6 resetting every wish with a cue word, recovery without the
    stale-wish rule) and this simulator before its review (LLM-phrased shifts free to drop or add a cue word, LLM
    reasons cut at the length cap, a liked movie recommended back accepted and counted as a hit). The first is the
    pilot the session plan starts from."""
    tables = {run: crs_summaries.known_behaviour(results_frame(read_jsonl(path, ResultRow)), alpha=alpha)
              for run, path in runs.items()}
    columns = ["expectation", "holds", "sessions_holding", "sessions", "ties", "sign_test_p", "tested", "p_holm"]
    return pd.concat({run: table[columns] for run, table in tables.items()}, names=["run", "row"])


def extractor_text(agreement: pd.DataFrame, sessions: pd.DataFrame, checks: pd.DataFrame,
                   independent_checks: pd.DataFrame) -> str:
    """The two extractors compared, from :mod:`lib.crs.matcher`'s tables: per system the share of scored turns
    with the same reply concepts, the session-level Spearman ρ of TAS and CAS, and the tested family's verdicts by
    each (``checks`` by E(x), ``independent_checks`` by the matcher)."""
    tested = checks[checks["tested"]].set_index("expectation")
    other = independent_checks[independent_checks["tested"]].set_index("expectation")
    differ = [e for e in tested.index if bool(tested.at[e, "rejected"]) != bool(other.at[e, "rejected"])]
    return ("**Independent extractor**: the matcher reads the same concepts in a reply as E(x) in "
            + ", ".join(f"{row.same_concepts:.0%} of {system}'s {int(row.turns)} scored turns"
                        for system, row in agreement.iterrows())
            + f". Session values by the two: TAS {correlation_text(sessions.loc['tas'].to_dict())}, CAS "
              f"{correlation_text(sessions.loc['cas'].to_dict())}. The tested family rejects "
              f"{int(tested['rejected'].sum())} of {len(tested)} differences scored by E(x) and "
              f"{int(other['rejected'].sum())} of {len(other)} scored by the matcher"
            + (f"; they differ on: {'; '.join(differ)}." if differ else "; the same ones."))


@dataclass(frozen=True)
class Results:
    """What chapter 06's summary reads: the tables its sections computed and the run's counts."""
    rows: pd.DataFrame
    systems: list[str]
    n_sessions: int
    config: MetricConfig
    alpha: float
    checks: pd.DataFrame
    recovery: pd.DataFrame
    shifts: pd.DataFrame
    summary: pd.DataFrame
    orders: pd.DataFrame
    sessions: pd.DataFrame
    tas_judge: Mapping[str, Any]
    judge_levels: pd.DataFrame
    judge_vs: pd.DataFrame
    segmentation: pd.DataFrame
    title_filter: pd.DataFrame
    cues: pd.DataFrame
    extractor: str
    recommendation: str
    llm_planned: int
    kept: int
    fallback: int
    mentions: int


def summary(r: Results) -> str:
    """Chapter 06's "What the numbers say" as Markdown bullets, every number read from ``r``."""
    systems, config = r.systems, r.config
    n_shifts = int(r.rows[r.rows.system == systems[0]].n_shifts.sum())
    llm_shifts, fallback_shifts = (int(r.cues.at[p, "shift_turns"]) if p in r.cues.index else 0
                                   for p in ("llm", "template_fallback"))
    user_shifts = r.shifts[r.shifts.system == systems[0]]
    schedules = user_shifts.groupby("session_id")["turn"].apply(tuple).nunique()
    censored = int(user_shifts["censored"].sum())
    changed = r.orders[r.orders.changed]
    judged = r.sessions[r.sessions.judge_ok]
    proposed = int(r.title_filter.titles_proposed.sum())
    legacy, trivial = r.segmentation.loc[systems], r.segmentation.drop(index=systems)
    no_boundary_pk = trivial.at["baseline: no boundary", "pk"]
    first = r.rows[r.rows.system == systems[0]]
    pk_window = max(1, round(float((first.n_turns / (first.n_shifts + 1)).mean()) / 2))  # as lib.crs.metrics.pk
    lines = [
        known_behaviour_text(r.checks, r.alpha),
        f"**Recovery** within W = {config.window} (a reply with TAS ≥ θ and no abandoned wish) over {n_shifts} "
        f"shifts per system, CI over users: "
        + "; ".join(f"{m} {row.recovery_rate:.0%} ({interval_text(row.ci_low, row.ci_high)}, {row.ci_over}; "
                    f"{row.rate_with_cue:.0%} of {row.cue_shifts} shifts with a cue word, {row.rate_quiet:.0%} of "
                    f"{row.quiet_shifts} without)" for m, row in r.recovery.iterrows())
        + f". The seeded schedules gave {schedules} distinct pairs of shift turns over {r.n_sessions} users; "
          f"{censored} of {n_shifts} shifts have a segment shorter than W (censored).",
        "**Ablation**: the order of the systems changes under "
        + (", ".join(changed.index) if len(changed) else "no variant")
        + (f"; the echo ranks {int(r.orders.at['tas', 'echo_rank'])} of {len(systems)} by TAS and "
           f"{int(r.orders.at['tas_without_copy', 'echo_rank'])} without the copy penalty" if "echo" in systems else "")
        + ".",
        f"**Judge** (unvalidated here; chapter 07 measures its validity): {len(judged)} of {len(r.sessions)} "
        f"conversations scored. Its mean score against session TAS, pooled over systems: Spearman "
        f"{correlation_text(r.tas_judge)}; without the echo: "
        f"{correlation_text(r.judge_levels.loc['without echo'].to_dict())}; within systems (session against "
        f"session): {correlation_text(r.judge_levels.loc['within systems'].to_dict())}; system level: "
        f"{correlation_text(r.judge_levels.loc['system level'].to_dict())}. The pooled figure is carried by the "
        f"differences between systems, mostly the echo. Against the mean reply length, a trivial baseline: "
        f"{correlation_text(r.judge_vs.loc['reply_words'].to_dict())}.",
        f"**Segmentation** against the shifts: the legacy segmenter ({config.legacy_method}) has F1 "
        f"{legacy.f1.min():.2f}–{legacy.f1.max():.2f} and Pk {legacy.pk.min():.2f}–{legacy.pk.max():.2f} over the "
        f"systems' users; no boundary at all has Pk {no_boundary_pk:.2f}, a boundary at every turn F1 "
        f"{trivial.at['baseline: every turn', 'f1']:.2f} and Pk {trivial.at['baseline: every turn', 'pk']:.2f} (Pk: "
        f"lower is better; its window is half the mean segment length, {pk_window} turn"
        f"{'' if pk_window == 1 else 's'} here). The legacy segmenter does "
        f"{'worse' if legacy.pk.min() > no_boundary_pk else 'better'} than no boundary at all on Pk. The systems meet "
        f"the same user scripts, so these are one segmentation per user, repeated.",
        f"**Recommendation level** (section M): {r.recommendation}",
        r.extractor,
        f"**LLM titles**: {int(r.title_filter.titles_off_universe.sum())} of {proposed} proposed titles were outside "
        f"the universe and dropped; {int(r.title_filter.titles_off_candidates.sum())} were in it but not among the "
        f"candidates.",
        f"**Simulator**: {r.kept} of {r.llm_planned} LLM-phrased user turns kept ({r.fallback} fell back to the "
        f"template); "
        + (f"{llm_shifts} of {llm_shifts + fallback_shifts} shift turns given to the LLM kept their planned form "
           f"(with a cue word or, planned quiet, without one); " if llm_shifts + fallback_shifts else "")
        + f"{r.mentions} user turns named a hidden target; {int(r.rows.failed_turns.sum())} system turns failed.",
    ]
    return "\n".join(f"* {line}" for line in lines)


@headline("06_crs_simulation", "crs_checks", "crs_sessions")
def crs_known_behaviour(tables: Tables) -> str:
    """How many of the tested differences between systems of known behaviour the adaptation metrics reproduce
    after Holm, and which do not."""
    checks, sessions = tables["crs_checks"], tables["crs_sessions"]
    tested = checks[checks["tested"].astype(bool)]
    rejected = tested[tested["rejected"].astype(bool)]
    failing = tested.loc[~tested["rejected"].astype(bool), "expectation"]
    return (f"Over {sessions['session_id'].nunique()} simulated users, {len(rejected)} of {len(tested)} tested "
            f"differences between systems of known behaviour hold after Holm"
            + (f" (not: {'; '.join(failing)})" if len(failing) else "")
            + f"; {len(checks) - len(tested)} checks that hold by design or are no strict difference are not "
              f"counted.")


def metric_check_text(table: pd.DataFrame, recommenders: Sequence[str] = ("llm", "retrieval_template")) -> str:
    """What the adaptation metrics can and cannot see, from :func:`lib.crs.recommendation.metric_check_table`: the
    TAS and CAS of the replies that recommend nothing against the real recommenders', beside the
    recommendation-level hit rate that tells them apart."""
    real = table.loc[list(recommenders)]
    nothing = table.loc["nothing"]
    fooled = [m.upper() for m in ("tas", "cas") if nothing[m] >= real[m].min()]
    return (f"A reply that only notes the user's last wish and recommends nothing scores TAS {nothing['tas']:.2f} "
            f"and CAS {nothing['cas']:.2f}, against {real['tas'].min():.2f}–{real['tas'].max():.2f} and "
            f"{real['cas'].min():.2f}–{real['cas'].max():.2f} for the real recommenders ({', '.join(recommenders)}); "
            + (f"{' and '.join(fooled)} {'score' if len(fooled) > 1 else 'scores'} it within or above the "
               "recommenders' range. " if fooled else "both score it below them. ")
            + f"The recommendation-level hit rate (a named title fits the current hidden preference) is "
              f"{nothing['hit_rate']:.2f} for it (by construction: it names no title) and "
              f"{real['hit_rate'].min():.2f}–{real['hit_rate'].max():.2f} for the recommenders; two random titles "
              f"added to it score TAS {table.loc['nothing_random_titles', 'tas']:.2f}, the preference restated "
              f"without a title {table.loc['preference_restated', 'tas']:.2f}, the hidden target named "
              f"{table.loc['target_named', 'tas']:.2f}. TAS and CAS measure whether a reply talks about the "
              f"current wishes, not whether it recommends something that satisfies them. "
            + system_order_text(table))


def system_order_text(table: pd.DataFrame) -> str:
    """The real systems (the rows of :func:`lib.crs.recommendation.metric_check_table` that are no counterfactual)
    ordered by CAS and by hit rate, Kendall's τ between the two orders, and whether target success (iEvaLM's
    criterion) is at its ceiling for every system that ever names the target."""
    from scipy.stats import kendalltau

    from lib.crs.recommendation import COUNTERFACTUALS

    real = table.drop(index=[r for r in COUNTERFACTUALS if r in table.index])
    by = {m: " > ".join(real[m].sort_values(ascending=False, kind="stable").index) for m in ("cas", "hit_rate")}
    tau = float(kendalltau(real["cas"], real["hit_rate"]).statistic)
    naming = real[real["target_success"] > 0]
    ceiling = len(naming) > 1 and bool((naming["target_success"] == 1).all())
    return (f"Over the {len(real)} systems, CAS orders them {by['cas']} and the hit rate {by['hit_rate']} (Kendall "
            f"τ {tau:.2f} over {len(real)} systems, no interval)."
            + (f" Target success, iEvaLM's criterion, is 1 in every session of each of the {len(naming)} systems "
               f"that ever name the target ({', '.join(naming.index)}): here the wishes narrow retrieval to the "
               f"target, so it cannot tell them apart." if ceiling else ""))
