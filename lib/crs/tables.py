"""Tables for chapter 06's figures and summaries, computed from a run's results (``rows``: one per session and
system, :attr:`lib.crs.runner.SimulationRun.rows`), per-turn metrics (``turns``) and per-shift metrics
(``shifts``). Systems keep the order in which they first appear (the order of ``default_systems``)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib.analysis.stats import correlation_ci
from lib.crs.config import MetricConfig
from lib.crs.judge import RUBRIC_CRITERIA
from lib.crs.metrics import turn_adaptation

TURN_COMPONENTS = ("cc", "cr", "copy_ratio")
SESSION_COMPONENTS = ("cc", "cr", "copy_ratio", "tas")
# Variants of the ablation: each sets one TAS weight to 0.
ABLATIONS = {"full": None, "without_cc": "alpha", "without_cr": "beta", "without_copy": "gamma"}


def _order(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["model"]))


def turn_timeline(turns: pd.DataFrame, model: str | None = None, session_id: str | None = None) -> pd.DataFrame:
    """Long per-turn CC, CR, I (timeline figure; ``shift`` marks the user turns where a shift happens)."""
    chosen = turns[(turns["model"] == model) if model else slice(None)]
    chosen = chosen[(chosen["session_id"] == session_id) if session_id else slice(None)]
    return chosen.melt(id_vars=["model", "session_id", "turn", "shift", "segment"], value_vars=list(TURN_COMPONENTS),
                       var_name="metric", value_name="value")


def component_long(rows: pd.DataFrame) -> pd.DataFrame:
    """Long session-level CC, CR, I, TAS per system (violin figure)."""
    return rows.melt(id_vars=["model", "session_id"], value_vars=list(SESSION_COMPONENTS), var_name="component",
                     value_name="value").dropna(subset=["value"])


def component_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system, the means over sessions of CC, CR, 1 − I, TAS, recovery rate and stability (1 −
    interference): every axis higher-is-better (radar figure)."""
    frame = rows.assign(no_copy=1 - rows["copy_ratio"], stability=1 - rows["interference"])
    columns = ["cc", "cr", "no_copy", "tas", "recovery_rate", "stability"]
    return frame.groupby("model", sort=False)[columns].mean().loc[_order(rows)]


def system_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system: sessions, means of every metric, judged sessions and the judge's mean scores."""
    metrics = ["cc", "cr", "copy_ratio", "tas", "recovery_rate", "recovery_delay", "interference", "cas", "missing",
               "hallucinated", "failed_turns"]
    judged = rows[rows["judge_ok"]]
    summary = rows.groupby("model", sort=False)[metrics].mean()
    summary.insert(0, "sessions", rows.groupby("model", sort=False).size())
    summary["judged"] = judged.groupby("model", sort=False).size().reindex(summary.index, fill_value=0)
    for criterion in RUBRIC_CRITERIA:
        summary[f"judge_{criterion}"] = judged.groupby("model", sort=False)[f"judge_{criterion}"].mean()
    return summary.loc[_order(rows)]


def tas_vs_judge(rows: pd.DataFrame, seed: int = 0, n_resamples: int = 2000) -> tuple[pd.DataFrame, dict[str, float]]:
    """The judged sessions with TAS and the judge's mean score over its three criteria (scatter figure), and
    Spearman's ρ between them with a pair-bootstrap CI (:func:`lib.analysis.stats.correlation_ci`)."""
    judged = rows[rows["judge_ok"] & rows["tas"].notna()].copy()
    judged["judge_mean"] = judged[[f"judge_{c}" for c in RUBRIC_CRITERIA]].astype(float).mean(axis=1)
    points = judged[["model", "session_id", "tas", "judge_mean"]].reset_index(drop=True)
    return points, correlation_ci(points["tas"], points["judge_mean"], "spearman", seed=seed, n_resamples=n_resamples)


def recovery_delays(shifts: pd.DataFrame) -> pd.DataFrame:
    """The recovered shifts' delays (turns from the shift to the first turn with TAS ≥ θ) per system
    (histogram figure)."""
    return shifts.loc[shifts["delay"].notna(), ["model", "session_id", "turn", "delay"]].reset_index(drop=True)


def recovery_by_window(shifts: pd.DataFrame, windows: Sequence[int]) -> pd.DataFrame:
    """Recovery rate per system for each window W: share of shifts with delay < W (recovery-rate-vs-W figure).
    A delay is bounded by the shift's segment, so a large W cannot count turns after the next shift."""
    rows = []
    for model in _order(shifts):
        delays = shifts.loc[shifts["model"] == model, "delay"].astype(float)
        rows.extend({"model": model, "window": w, "recovery_rate": float((delays < w).mean())} for w in windows)
    return pd.DataFrame(rows)


def ablation(turns: pd.DataFrame, config: MetricConfig = MetricConfig()) -> pd.DataFrame:
    """Mean session TAS per system with all components and with each weight in turn set to 0 (ablation bars):
    TAS(t) is recomputed from the stored CC, CR, I with the changed weights, averaged per session, then over
    sessions."""
    scored = turns[turns["scored"]]
    rows = []
    for variant, weight in ABLATIONS.items():
        weights = dict(config.tas_weights) | ({weight: 0.0} if weight else {})
        tas = [turn_adaptation(cc, cr, copy, weights) for cc, cr, copy in
               zip(scored["cc"], scored["cr"], scored["copy_ratio"])]
        per_session = scored.assign(tas=tas).groupby(["model", "session_id"], sort=False)["tas"].mean()
        for model, value in per_session.groupby(level="model", sort=False).mean().items():
            rows.append({"model": model, "variant": variant, "tas": float(value)})
    return pd.DataFrame(rows)


def concept_errors(turns: pd.DataFrame, kind: str, k: int = MetricConfig().top_k) -> pd.DataFrame:
    """The ``k`` most frequent concepts of ``kind`` (missing, hallucinated or stale) per system, with counts
    over scored turns."""
    rows = []
    for model in _order(turns):
        counts = Counter(c for concepts in turns.loc[(turns["model"] == model) & turns["scored"], kind]
                         for c in concepts)
        rows.extend({"model": model, "concept": c, "count": n} for c, n in
                    sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k])
    return pd.DataFrame(rows, columns=["model", "concept", "count"])


def segmentation_agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """Legacy vs grounded segmentation per system: micro precision Σtp / Σ legacy boundaries, recall Σtp /
    Σ shifts, their F1, and mean Pk over sessions."""
    frame = rows.assign(n_legacy=rows["legacy_boundaries"].map(len))
    sums = frame.groupby("model", sort=False)[["legacy_tp", "n_legacy", "n_shifts"]].sum()
    precision = sums["legacy_tp"] / sums["n_legacy"].replace(0, np.nan)
    recall = sums["legacy_tp"] / sums["n_shifts"].replace(0, np.nan)
    return pd.DataFrame({"shifts": sums["n_shifts"], "legacy_boundaries": sums["n_legacy"], "matched": sums["legacy_tp"],
                         "precision": precision, "recall": recall,
                         "f1": 2 * precision * recall / (precision + recall),
                         "pk": frame.groupby("model", sort=False)["legacy_pk"].mean()}).loc[_order(rows)]


def title_filter(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system: titles the LLM proposed, how many were outside the universe (dropped) and how many were in
    the universe but not among the retrieved candidates (kept), with their shares of the proposed titles."""
    sums = rows.groupby("model", sort=False)[["titles_proposed", "titles_off_universe", "titles_off_candidates"]].sum()
    proposed = sums["titles_proposed"].replace(0, np.nan)
    return sums.assign(off_universe_share=sums["titles_off_universe"] / proposed,
                       off_candidates_share=sums["titles_off_candidates"] / proposed).loc[_order(rows)]

