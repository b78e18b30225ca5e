"""Chapter 06 (CRS simulation): its generated "what the numbers say", the small loops over its tables, and its
front-page headline. Tested on small hand-made tables (``tests/test_ch06.py``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from lib.analysis.stats import correlation_text
from lib.chapters.headline import Tables, headline
from lib.crs import summaries as crs_summaries
from lib.crs.config import MetricConfig
from lib.crs.records import SessionLog

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


@dataclass(frozen=True)
class Results:
    """What chapter 06's summary reads: the tables its sections computed and the run's counts."""
    rows: pd.DataFrame
    systems: list[str]
    n_sessions: int
    config: MetricConfig
    checks: pd.DataFrame
    summary: pd.DataFrame
    orders: pd.DataFrame
    sessions: pd.DataFrame
    tas_judge: Mapping[str, Any]
    judge_levels: pd.DataFrame
    judge_vs: pd.DataFrame
    segmentation: pd.DataFrame
    title_filter: pd.DataFrame
    cues: pd.DataFrame
    llm_planned: int
    kept: int
    fallback: int
    mentions: int


def summary(r: Results) -> str:
    """Chapter 06's "What the numbers say" as Markdown bullets, every number read from ``r``."""
    systems, config = r.systems, r.config
    n_shifts = int(r.rows[r.rows.system == systems[0]].n_shifts.sum())
    holding = r.checks[r.checks.holds]
    changed = r.orders[r.orders.changed]
    judged = r.sessions[r.sessions.judge_ok]
    proposed = int(r.title_filter.titles_proposed.sum())
    legacy, trivial = r.segmentation.loc[systems], r.segmentation.drop(index=systems)
    no_boundary_pk = trivial.at["baseline: no boundary", "pk"]
    lines = [
        f"**Known behaviour**: {len(holding)} of {len(r.checks)} expected differences hold on the means over "
        f"{r.n_sessions} sessions:"
        + "".join(f"\n  * {c.expectation} ({c.metric}): {'holds' if c.holds else 'does not hold'}, "
                  f"{c.mean_above:.2f} against {c.mean_below:.2f}; in {c.sessions_holding} of {c.sessions} sessions "
                  f"(exact sign test p = {c.sign_test_p:.2g})" + (f" — by design: {c.by_design}" if c.by_design else "")
                  for c in r.checks.itertuples())
        + f"\n  The checks marked *by design* test the code, not the metrics; the others rest on {r.n_sessions} "
          f"sessions.",
        f"**Recovery** within W = {config.window} over {n_shifts} shifts per system: "
        + ", ".join(f"{m} {rate:.0%}" for m, rate in r.summary.recovery_rate.items()) + ".",
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
        f"lower is better; with 8 turns Pk's window is 1 turn). The legacy segmenter does "
        f"{'worse' if legacy.pk.min() > no_boundary_pk else 'better'} than no boundary at all on Pk. The systems meet "
        f"the same user scripts, so these are one segmentation per user, repeated.",
        f"**LLM titles**: {int(r.title_filter.titles_off_universe.sum())} of {proposed} proposed titles were outside "
        f"the universe and dropped; {int(r.title_filter.titles_off_candidates.sum())} were in it but not among the "
        f"candidates.",
        f"**Simulator**: {r.kept} of {r.llm_planned} LLM-phrased user turns kept ({r.fallback} fell back to the "
        f"template); "
        + (f"{int(r.cues.at['llm', 'with_cue'])} of {int(r.cues.at['llm', 'shift_turns'])} LLM-phrased shift turns "
           f"carry a shift cue; " if "llm" in r.cues.index else "")
        + f"{r.mentions} user turns named a hidden target; {int(r.rows.failed_turns.sum())} system turns failed.",
    ]
    return "\n".join(f"* {line}" for line in lines)


@headline("06_crs_simulation", "crs_checks", "crs_sessions")
def crs_known_behaviour(tables: Tables) -> str:
    """How many differences between systems of known behaviour the adaptation metrics reproduce, and the LLM
    recommender's recovery rate beside the adapting template's."""
    checks, sessions = tables["crs_checks"], tables["crs_sessions"]
    failing = checks.loc[~checks["holds"], "expectation"]
    recovery = sessions.groupby("system")["recovery_rate"].mean()
    llm = (f" The LLM recommender recovers from {recovery['llm']:.0%} of shifts within the window, the adapting "
           f"template from {recovery['retrieval_template']:.0%}."
           if {"llm", "retrieval_template"} <= set(recovery.index) else "")
    return (f"Over {sessions['session_id'].nunique()} simulated users, the adaptation metrics reproduce "
            f"{int(checks['holds'].sum())} of {len(checks)} expected differences between systems of known behaviour"
            + (f" (not: {'; '.join(failing)})" if len(failing) else "") + f".{llm}")


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
              f"current wishes, not whether it recommends something that satisfies them.")
