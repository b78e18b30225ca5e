"""Tables for chapter 06's figures and summaries, computed from a run's results (``rows``: one per session and
system, :attr:`lib.crs.runner.SimulationRun.rows`), per-turn metrics (``turns``) and per-shift metrics
(``shifts``). Systems keep the order in which they first appear (the order of ``default_systems``)."""
from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from lib.analysis.stats import correlation_ci
from lib.crs.config import MetricConfig
from lib.crs.judge import RUBRIC_CRITERIA
from lib.crs.metrics import boundary_agreement, conversation_adaptation, turn_adaptation
from lib.crs.records import SessionLog
from lib.crs.simulator import names_title
from lib.crs.systems import has_shift_cue
from lib.crs.universe import ItemUniverse

TURN_COMPONENTS = ("cc", "cr", "copy_ratio")
SESSION_COMPONENTS = ("cc", "cr", "copy_ratio", "tas")
# Variants of the ablation: the TAS weights (α, β, γ) or CAS weights that replace the declared ones (None: the
# declared weights). CC-only and CR-only give the component its full weight, so their session score is the
# component's mean; CAS without recovery keeps the other two declared weights.
TAS_VARIANTS: Mapping[str, Mapping[str, float] | None] = {
    "tas": None, "tas_without_copy": {"gamma": 0.0}, "cc_only": {"alpha": 1.0, "beta": 0.0, "gamma": 0.0},
    "cr_only": {"alpha": 0.0, "beta": 1.0, "gamma": 0.0}}
CAS_VARIANTS: Mapping[str, Mapping[str, float] | None] = {"cas": None, "cas_without_recovery": {"recovery": 0.0}}


def _number(value: Any) -> float | None:
    """A table cell as a float, None where it is missing."""
    return None if pd.isna(value) else float(value)


def _order(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["system"]))


def user_correlation(x: Sequence[float] | pd.Series, y: Sequence[float] | pd.Series, units: Sequence[str] | pd.Series,
                     unit: str = "users", seed: int = 0, n_resamples: int = 2000) -> dict[str, Any]:
    """Spearman's ρ of paired session values with a percentile bootstrap CI resampling the independent ``units``
    the sessions belong to (:func:`lib.analysis.stats.correlation_ci`), without its p: that p treats every session
    as independent, while a user's sessions (one per system) are not, so the chapter gives no p over sessions."""
    result = correlation_ci(x, y, "spearman", seed=seed, n_resamples=n_resamples, units=units, unit=unit)
    return {k: v for k, v in result.items() if k != "p"}


def turn_timeline(turns: pd.DataFrame, system: str | None = None, session_id: str | None = None) -> pd.DataFrame:
    """Long per-turn CC, CR, I (timeline figure; ``shift`` marks the user turns where a shift happens)."""
    chosen = turns[(turns["system"] == system) if system else slice(None)]
    chosen = chosen[(chosen["session_id"] == session_id) if session_id else slice(None)]
    return chosen.melt(id_vars=["system", "session_id", "turn", "shift", "segment"], value_vars=list(TURN_COMPONENTS),
                       var_name="metric", value_name="value")


def component_long(rows: pd.DataFrame) -> pd.DataFrame:
    """Long session-level CC, CR, I, TAS per system (violin figure)."""
    return rows.melt(id_vars=["system", "session_id"], value_vars=list(SESSION_COMPONENTS), var_name="component",
                     value_name="value").dropna(subset=["value"])


def component_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system, the means over sessions of CC, CR, 1 − I, TAS, recovery rate and stability (1 −
    interference): every axis higher-is-better (radar figure)."""
    frame = rows.assign(no_copy=1 - rows["copy_ratio"], stability=1 - rows["interference"])
    columns = ["cc", "cr", "no_copy", "tas", "recovery_rate", "stability"]
    return frame.groupby("system", sort=False)[columns].mean().loc[_order(rows)]


def system_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system: sessions, means of every metric, judged sessions and the judge's mean scores."""
    metrics = ["cc", "cr", "copy_ratio", "tas", "recovery_rate", "recovery_delay", "interference", "cas", "missing",
               "hallucinated", "failed_turns"]
    judged = rows[rows["judge_ok"]]
    summary = rows.groupby("system", sort=False)[metrics].mean()
    summary.insert(0, "sessions", rows.groupby("system", sort=False).size())
    summary["judged"] = judged.groupby("system", sort=False).size().reindex(summary.index, fill_value=0)
    for criterion in RUBRIC_CRITERIA:
        summary[f"judge_{criterion}"] = judged.groupby("system", sort=False)[f"judge_{criterion}"].mean()
    return summary.loc[_order(rows)]


def judge_mean(rows: pd.DataFrame) -> pd.Series:
    """The judge's mean score over its criteria per row (NaN where it did not judge)."""
    return rows[[f"judge_{c}" for c in RUBRIC_CRITERIA]].astype(float).mean(axis=1, skipna=False)


def judge_levels(sessions: pd.DataFrame, metric: str = "tas", judge: str = "judge_mean", seed: int = 0,
                 n_resamples: int = 2000, degenerate: str = "echo") -> pd.DataFrame:
    """Spearman's ρ between ``metric`` and ``judge`` at four levels, because pooling sessions of very different
    systems mostly measures the differences between systems: ``pooled`` (every judged session), ``without
    <degenerate>``, ``within systems`` (both sides centred on their system's mean, so only session-to-session
    differences inside a system count) and ``system level`` (one point per system: its means). Each with a
    bootstrap CI (:func:`user_correlation`, no p) over the independent units: the simulated users
    (``session_id``: a user's sessions meet every system, so they are resampled together), the systems at system
    level."""
    judged = sessions.dropna(subset=[metric, judge])
    # rounded so that floating-point noise of the subtraction cannot break ties between equal centred values
    centred = (judged[[metric, judge]] - judged.groupby("system")[[metric, judge]].transform("mean")).round(12)
    means = judged.groupby("system")[[metric, judge]].mean()
    users = judged["session_id"]
    levels = {"pooled": (judged[[metric, judge]], users, "users"),
              f"without {degenerate}": (judged[judged.system != degenerate][[metric, judge]],
                                        users[judged.system != degenerate], "users"),
              "within systems": (centred, users, "users"), "system level": (means, means.index, "systems")}
    return pd.DataFrame([{"level": name, **user_correlation(frame[metric], frame[judge], units, unit, seed,
                                                             n_resamples)}
                         for name, (frame, units, unit) in levels.items()]).set_index("level")


def tas_vs_judge(rows: pd.DataFrame, seed: int = 0, n_resamples: int = 2000) -> tuple[pd.DataFrame, dict[str, float]]:
    """The judged sessions with TAS and the judge's mean score over its three criteria (scatter figure), and
    Spearman's ρ between them with a CI resampling the simulated users (``session_id``; :func:`user_correlation`,
    no p over sessions)."""
    judged = rows[rows["judge_ok"] & rows["tas"].notna()].assign(judge_mean=judge_mean)
    points = judged[["system", "session_id", "tas", "judge_mean"]].reset_index(drop=True)
    return points, user_correlation(points["tas"], points["judge_mean"], points["session_id"], "users", seed,
                                    n_resamples)


def recovery_delays(shifts: pd.DataFrame) -> pd.DataFrame:
    """The recovered shifts' delays (turns from the shift to the first turn with TAS ≥ θ) per system
    (histogram figure)."""
    return shifts.loc[shifts["delay"].notna(), ["system", "session_id", "turn", "delay"]].reset_index(drop=True)


def recovery_by_window(shifts: pd.DataFrame, windows: Sequence[int]) -> pd.DataFrame:
    """Recovery rate per system for each window W: share of shifts with delay < W (recovery-rate-vs-W figure).
    A delay is bounded by the shift's segment, so a large W cannot count turns after the next shift."""
    rows: list[dict[str, object]] = []
    for system in _order(shifts):
        delays = shifts.loc[shifts["system"] == system, "delay"].astype(float)
        rows.extend({"system": system, "window": w, "recovery_rate": float((delays < w).mean())} for w in windows)
    return pd.DataFrame(rows)


def ablation(turns: pd.DataFrame, rows: pd.DataFrame, config: MetricConfig = MetricConfig()) -> pd.DataFrame:
    """Mean session score per system under each variant of :data:`TAS_VARIANTS` and :data:`CAS_VARIANTS`
    (ablation bars). TAS(t) is recomputed from the stored CC, CR, I with the variant's weights, averaged per
    session, then over sessions; CAS from each session's TAS, recovery rate and interference, with the
    variant's weights divided by their sum so that every CAS variant is a weighted mean on one scale (the
    declared weights sum to 1)."""
    scored = turns[turns["scored"]]
    out: list[dict[str, object]] = []
    for variant, change in TAS_VARIANTS.items():
        weights = dict(config.tas_weights) | dict(change or {})
        tas = [turn_adaptation(cc, cr, copy, weights) for cc, cr, copy in
               zip(scored["cc"], scored["cr"], scored["copy_ratio"], strict=True)]
        per_session = scored.assign(tas=tas).groupby(["system", "session_id"], sort=False)["tas"].mean()
        out.extend({"system": system, "variant": variant, "score": float(value)}
                   for system, value in per_session.groupby(level="system", sort=False).mean().items())
    for variant, change in CAS_VARIANTS.items():
        weights = {k: w for k, w in (dict(config.cas_weights) | dict(change or {})).items() if w}
        total = sum(weights.values())
        weights = {k: w / total for k, w in weights.items()}
        cas = [conversation_adaptation(_number(tas), _number(recovery), _number(interference), weights)
               for tas, recovery, interference in zip(rows["tas"], rows["recovery_rate"], rows["interference"],
                                                      strict=True)]
        means = rows.assign(cas=pd.array(cas, dtype="Float64")).groupby("system", sort=False)["cas"].mean()
        out.extend({"system": system, "variant": variant, "score": float(value)} for system, value in means.items())
    return pd.DataFrame(out)


def ablation_orders(ablation_frame: pd.DataFrame) -> pd.DataFrame:
    """Per variant of :func:`ablation`, the systems from the highest mean score to the lowest (ties in table
    order), whether that order differs from the order under the declared weights (``tas`` for the TAS
    variants, ``cas`` for the CAS variants), and Kendall's τ-b between the variant's and the declared weights'
    system means (scipy.stats.kendalltau; NaN with fewer than two systems scored under both)."""
    from scipy.stats import kendalltau

    systems = _order(ablation_frame)
    scores = ablation_frame.pivot(index="system", columns="variant", values="score")

    def order(variant: str) -> list[str]:
        column = scores[variant]
        return sorted(column.index, key=lambda m: (-column[m] if pd.notna(column[m]) else np.inf, systems.index(m)))

    rows = []
    for variants in (TAS_VARIANTS, CAS_VARIANTS):
        declared = next(iter(variants))
        for v in variants:
            both = scores[[v, declared]].dropna()
            tau = float(kendalltau(both[v], both[declared]).statistic) if len(both) > 1 else float("nan")
            rows.append({"variant": v, "order": " > ".join(order(v)), "changed": order(v) != order(declared),
                         "kendall_tau": tau, "echo_rank": order(v).index("echo") + 1 if "echo" in systems else None})
    return pd.DataFrame(rows).set_index("variant")


def concept_errors(turns: pd.DataFrame, kind: str, k: int = MetricConfig().top_k) -> pd.DataFrame:
    """The ``k`` most frequent concepts of ``kind`` (missing, hallucinated or stale) per system, with counts
    over scored turns."""
    rows: list[dict[str, object]] = []
    for system in _order(turns):
        counts = Counter(c for concepts in turns.loc[(turns["system"] == system) & turns["scored"], kind]
                         for c in concepts)
        rows.extend({"system": system, "concept": c, "count": n} for c, n in
                    sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k])
    return pd.DataFrame(rows, columns=["system", "concept", "count"])


def segmentation_agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """Legacy vs grounded segmentation per system: micro precision Σtp / Σ legacy boundaries, recall Σtp /
    Σ shifts, their F1, and mean Pk over sessions."""
    frame = rows.assign(n_legacy=rows["legacy_boundaries"].map(len))
    sums = frame.groupby("system", sort=False)[["legacy_tp", "n_legacy", "n_shifts"]].sum()
    precision = sums["legacy_tp"] / sums["n_legacy"].replace(0, np.nan)
    recall = sums["legacy_tp"] / sums["n_shifts"].replace(0, np.nan)
    return pd.DataFrame({"shifts": sums["n_shifts"], "legacy_boundaries": sums["n_legacy"],
                         "matched": sums["legacy_tp"], "precision": precision, "recall": recall,
                         "f1": 2 * precision * recall / (precision + recall),
                         "pk": frame.groupby("system", sort=False)["legacy_pk"].mean()}).loc[_order(rows)]


def title_filter(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system: titles the LLM proposed, how many were outside the universe (dropped) and how many were in
    the universe but not among the retrieved candidates (kept), with their shares of the proposed titles."""
    sums = rows.groupby("system", sort=False)[["titles_proposed", "titles_off_universe", "titles_off_candidates"]].sum()
    proposed = sums["titles_proposed"].replace(0, np.nan)
    return sums.assign(off_universe_share=sums["titles_off_universe"] / proposed,
                       off_candidates_share=sums["titles_off_candidates"] / proposed).loc[_order(rows)]



def conversation_frame(log: SessionLog, universe: ItemUniverse) -> pd.DataFrame:
    """One row per turn of a logged conversation: the text, and for a user turn the simulator's state (turn
    kind, focus, stated concepts, how it was phrased, the hidden target's title); for a system turn the
    constraints it acted on."""
    rows: list[dict[str, object]] = []
    for turn in log.record()["conversation"]:
        meta = turn.get("user_meta")
        rows.append({"turn": meta["turn"] if meta else rows[-1]["turn"], "speaker": turn["speaker"],
                     "text": turn["text"], "kind": meta["kind"] if meta else "",
                     "stated": ", ".join(meta["stated"]) if meta else "",
                     "phrasing": meta["phrasing"] if meta else "",
                     "hidden_target": universe.names[meta["target"]] if meta else "",
                     "constraints": "" if meta else ", ".join(turn["constraints"])})
    return pd.DataFrame(rows)


def target_mentions(logs: Sequence[SessionLog], universe: ItemUniverse) -> int:
    """User turns, over every log, that name the title of one of their session's hidden targets (the leak guard
    keeps this at 0)."""
    count = 0
    for log in logs:
        users = log.record()["conversation"][0::2]
        targets = {u["user_meta"]["target"] for u in users}
        count += sum(any(names_title(u["text"], universe, t) for t in targets) for u in users)
    return count


def reply_words(logs: Sequence[SessionLog]) -> pd.DataFrame:
    """Mean length in whitespace-separated words of each session's scored system turns (a trivial baseline
    beside the judge's scores)."""
    rows = []
    for log in logs:
        texts = [t["text"] for t in log.record()["conversation"][1::2] if t["text"]]
        rows.append({"system": log.system, "session_id": log.session_id,
                     "reply_words": float(np.mean([len(t.split()) for t in texts])) if texts else np.nan})
    return pd.DataFrame(rows)


def session_frame(rows: pd.DataFrame, logs: Sequence[SessionLog]) -> pd.DataFrame:
    """The results rows with each session's mean reply length (:func:`reply_words`) and the judge's mean over
    its criteria (``judge_mean``, NaN when not judged); judge scores as floats."""
    frame = rows.merge(reply_words(logs), on=["system", "session_id"], how="left", validate="one_to_one")
    criteria = [f"judge_{c}" for c in RUBRIC_CRITERIA]
    frame[criteria] = frame[criteria].astype(float)
    return frame.assign(judge_mean=judge_mean(frame))


def judge_correlations(sessions: pd.DataFrame, columns: Sequence[str], seed: int = 0,
                       n_resamples: int = 2000) -> pd.DataFrame:
    """Spearman's ρ between the judge's mean score and each column over the judged sessions
    (:func:`session_frame` rows), with a CI resampling the simulated users (``session_id``; :func:`user_correlation`,
    no p over sessions): the metrics beside trivial baselines such as the reply length."""
    judged = sessions[sessions["judge_ok"]]
    out = {}
    for column in columns:
        both = judged[[column, "judge_mean"]].astype(float).dropna()
        out[column] = user_correlation(both[column], both["judge_mean"], judged.loc[both.index, "session_id"],
                                       "users", seed, n_resamples)
    return pd.DataFrame.from_dict(out, orient="index")[["n", "r", "ci_low", "ci_high", "ci_over"]].rename_axis(
        "against the judge's mean")


def recovery_summary(shifts: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Per system and user phrasing (sessions with LLM-phrased user turns apart from template-only ones): shifts,
    shifts recovered within W, the recovery rate, shifts recovered later in their segment, shifts never
    recovered, and censored shifts (segment shorter than W)."""
    phrasing = rows.set_index(["system", "session_id"])["llm_user_turns"].gt(0).map({True: "llm-phrased",
                                                                                  False: "template"})
    frame = shifts.join(phrasing.rename("user"), on=["system", "session_id"])
    grouped = frame.groupby(["system", "user"], sort=False)
    summary = pd.DataFrame({"shifts": grouped.size(), "recovered_within_w": grouped["recovered"].sum(),
                            "recovered_later": grouped["delay"].count() - grouped["recovered"].sum(),
                            "never_recovered": grouped["delay"].apply(lambda d: int(d.isna().sum())),
                            "censored": grouped["censored"].sum()})
    summary.insert(2, "recovery_rate", summary["recovered_within_w"] / summary["shifts"])
    return summary


def one_per_session(logs: Sequence[SessionLog]) -> list[SessionLog]:
    """The first log of each session: every system meets the same scripted user, so what belongs to the user
    (its turns, its shifts) is counted once."""
    first: dict[str, SessionLog] = {}
    for log in logs:
        first.setdefault(log.session_id, log)
    return list(first.values())


def shift_cues(logs: Sequence[SessionLog]) -> pd.DataFrame:
    """Per phrasing of the user turn (template, llm, template_fallback), the shift turns, how many were planned
    quiet (without a cue word), how many carry a shift cue the tracking systems react to
    (:data:`lib.crs.systems.SHIFT_CUES`), how many keep a stated value (partial), and how many are real changes (a
    stated value abandoned and a new one wanted, read from the simulator's state before and at the turn: true by
    the simulator's construction, so a check of its code); once per session, the base text being shared by every
    system. A shift said without a cue is reset by no tracker: only a new value on the same field replaces the old
    one."""
    rows: list[dict[str, object]] = []
    for log in one_per_session(logs):
        users = log.user_turns()
        events = {e.turn: e for e in log.shift_events}
        for u in users:
            if u.user_meta.shift:
                before, now = set(users[u.user_meta.turn - 1].user_meta.preference), set(u.user_meta.preference)
                rows.append({"phrasing": u.user_meta.phrasing, "planned_quiet": u.user_meta.quiet,
                             "with_cue": has_shift_cue(u.text),
                             "partial": bool(events[u.user_meta.turn].kept),
                             "real_change": bool(before - now) and bool(now - before)})
    frame = pd.DataFrame(rows, columns=["phrasing", "planned_quiet", "with_cue", "partial", "real_change"])
    return frame.groupby("phrasing").agg(shift_turns=("with_cue", "size"), planned_quiet=("planned_quiet", "sum"),
                                         with_cue=("with_cue", "sum"),
                                         partial=("partial", "sum"), real_change=("real_change", "sum"))


def shift_phrasing(logs: Sequence[SessionLog]) -> pd.DataFrame:
    """One row per shift of every log: system, session_id, turn, and whether the user's turn carries a shift cue."""
    return pd.DataFrame([{"system": log.system, "session_id": log.session_id, "turn": u.user_meta.turn,
                          "with_cue": has_shift_cue(u.text)}
                         for log in logs for u in log.user_turns() if u.user_meta.shift],
                        columns=["system", "session_id", "turn", "with_cue"])


def recovery_intervals(shifts: pd.DataFrame, logs: Sequence[SessionLog], seed: int = 0, n_resamples: int = 2000
                       ) -> pd.DataFrame:
    """Per system: shifts, shifts recovered within W, the recovery rate (recovered / shifts, pooled over the
    sessions) with a cluster-bootstrap CI over the simulated users (a user's shifts are resampled together;
    :func:`lib.analysis.stats.unit_bootstrap`; none under its minimum of users, and none when every user has the
    same rate), and the rate on the shifts said with a cue word and without one (quiet)."""
    from lib.analysis.stats import unit_bootstrap

    frame = shifts.merge(shift_phrasing(logs), on=["system", "session_id", "turn"], how="left", validate="1:1")
    rows = []
    for system in _order(frame):
        part = frame[frame["system"] == system]
        recovered = part["recovered"].astype(float).to_numpy()
        interval = unit_bootstrap(np.mean, [recovered], part["session_id"], "users", seed, n_resamples)
        if part.groupby("session_id")["recovered"].mean().nunique() == 1:
            # every user has the same rate: a percentile bootstrap collapses onto it, which is no interval
            interval = replace(interval, low=np.nan, high=np.nan, unit="users, all at one rate")
        cue = part.loc[part["with_cue"], "recovered"]
        quiet = part.loc[~part["with_cue"], "recovered"]
        rows.append({"system": system, "shifts": len(part), "recovered": int(recovered.sum()),
                     "recovery_rate": interval.value, "ci_low": interval.low, "ci_high": interval.high,
                     "ci_over": interval.ci_over, "cue_shifts": len(cue),
                     "rate_with_cue": cue.mean() if len(cue) else np.nan, "quiet_shifts": len(quiet),
                     "rate_quiet": quiet.mean() if len(quiet) else np.nan})
    return pd.DataFrame(rows).set_index("system")


def segmentation_baselines(logs: Sequence[SessionLog], tolerance: int = MetricConfig().boundary_tolerance
                           ) -> pd.DataFrame:
    """Rows shaped like the results (for :func:`segmentation_agreement`) of two trivial segmenters, once per
    session: no boundary at all, and a boundary before every user turn but the first."""
    rows: list[dict[str, object]] = []
    for log in one_per_session(logs):
        n_turns = len(log.conversation) // 2
        shifts = [e.turn for e in log.shift_events]
        for name, boundaries in (("baseline: no boundary", []), ("baseline: every turn", list(range(1, n_turns)))):
            agreement = boundary_agreement(shifts, boundaries, n_turns, tolerance)
            rows.append({"system": name, "session_id": log.session_id, "n_shifts": len(shifts),
                         "legacy_boundaries": boundaries, "legacy_tp": int(agreement["tp"]),
                         "legacy_pk": agreement["pk"]})
    return pd.DataFrame(rows)


def concept_error_table(turns: pd.DataFrame, kind: str, k: int = MetricConfig().top_k) -> pd.DataFrame:
    """:func:`concept_errors` side by side: one column per system, its ``k`` most frequent concepts of ``kind``
    as "concept (count)", most frequent first."""
    errors = concept_errors(turns, kind, k)
    cells = {system: [f"{c} ({n})" for c, n in zip(part["concept"], part["count"], strict=True)]
             for system, part in errors.groupby("system", sort=False)}
    grid = pd.DataFrame({m: pd.Series(v, index=range(1, len(v) + 1), dtype=object) for m, v in cells.items()},
                        index=pd.RangeIndex(1, k + 1, name="rank"))
    return grid.dropna(how="all").fillna("")


@dataclass(frozen=True)
class Expectation:
    """A difference the systems' known behaviour implies: on ``metric``, the lowest mean of the ``above``
    systems exceeds (``strict``) or equals at least the highest mean of the ``below`` systems. ``by_design``
    says why it cannot fail when the metric's definition or a system's construction forces it (then it checks
    the code, not the metric's validity)."""

    text: str
    metric: str
    above: tuple[str, ...]
    below: tuple[str, ...]
    strict: bool = True
    by_design: str = ""


_NOT_ECHO = ("llm", "retrieval_template", "memoryless_llm", "stale_template")
# METHODOLOGY.md, "Validation by known differences". The last two need the real LLM to mean anything.
EXPECTATIONS: tuple[Expectation, ...] = (
    Expectation("the echo copies the user the most", "copy_ratio", ("echo",), _NOT_ECHO,
                by_design="the echo repeats the user verbatim, so its copy ratio is 1"),
    Expectation("the copy penalty puts the echo's TAS last", "tas", _NOT_ECHO, ("echo",),
                by_design="with γ = α + β and I = 1, the echo's TAS is at most 0"),
    Expectation("TAS: the template above the stale template", "tas", ("retrieval_template",), ("stale_template",)),
    Expectation("the template recovers more often than the stale template", "recovery_rate",
                ("retrieval_template",), ("stale_template",),
                by_design="the stale template names every abandoned wish, and a reply with one never recovers"),
    Expectation("the stale template carries more abandoned wishes", "interference", ("stale_template",),
                ("retrieval_template",), by_design="the stale template never drops a wish, so it names every "
                                                   "abandoned one it tracked"),
    Expectation("CAS: the template above the stale template", "cas", ("retrieval_template",), ("stale_template",),
                by_design="the stale template's recovery is 0 and its stability 0 by design, so the CAS gap is half "
                          "the TAS gap (tested above) plus terms that cannot be negative"),
    Expectation("CAS: the stale template above the echo", "cas", ("stale_template",), ("echo",)),
    Expectation("the memoryless LLM recovers at least as often as the LLM", "recovery_rate", ("memoryless_llm",),
                ("llm",), strict=False),
    Expectation("the LLM keeps the whole preference better than the memoryless LLM", "cc", ("llm",),
                ("memoryless_llm",)),
)


# The conversation judge's readings: the mean of its criteria (the study's reading) first, then each criterion; the
# order breaks a tie when one is chosen on the first users (:func:`choose_judge_reading`).
JUDGE_READINGS: tuple[str, ...] = ("judge_mean", *(f"judge_{c}" for c in RUBRIC_CRITERIA))


def judge_expectations(reading: str) -> tuple[Expectation, ...]:
    """What the construction of the systems without an LLM implies for a conversation judge's ``reading``: the echo
    repeats the user and recommends nothing (the copy ratio shows it without a judge), and the stale template keeps
    recommending for wishes the user abandoned (the interference count shows it), so the template's conversation is
    better than either's on every criterion of the rubric."""
    name = reading.removeprefix("judge_")
    return (Expectation(f"{name}: the template above the echo", reading, ("retrieval_template",), ("echo",)),
            Expectation(f"{name}: the template above the stale template", reading, ("retrieval_template",),
                        ("stale_template",)))


def judge_checks(rows: pd.DataFrame, readings: Sequence[str]) -> pd.DataFrame:
    """:func:`known_behaviour` of each judge reading's :func:`judge_expectations` on ``rows`` (a ``reading`` column
    says which; each reading is its own Holm family)."""
    frame = rows.assign(judge_mean=judge_mean(rows))
    return pd.concat([known_behaviour(frame, judge_expectations(r)).assign(reading=r) for r in readings],
                     ignore_index=True)


def choose_judge_reading(rows: pd.DataFrame) -> pd.DataFrame:
    """Each judge reading (:data:`JUDGE_READINGS`) on ``rows`` (the first users, who choose): the users ordered as
    built summed over both :func:`judge_expectations`, of the users compared, and ``chosen``: the reading with the
    largest share (the first in :data:`JUDGE_READINGS` order on a tie). Choosing here and testing on fresh users
    keeps the test confirmatory."""
    checks = judge_checks(rows, JUDGE_READINGS).groupby("reading", sort=False)
    table = pd.DataFrame({"users ordered as built": checks["sessions_holding"].sum(),
                          "users compared": checks["sessions"].sum()}).astype(int)
    share = table["users ordered as built"] / table["users compared"]
    table["share"] = share
    table["chosen"] = table.index == share.idxmax()
    return table


def known_behaviour(rows: pd.DataFrame, expectations: Sequence[Expectation] = EXPECTATIONS) -> pd.DataFrame:
    """Per expectation, its session-by-session comparison over the simulated users (sessions where every system
    compared has a value): on each user's values, the lowest of the ``above`` systems against the highest of the
    ``below`` systems. Systems absent from ``rows`` are left out of an expectation, and an expectation with nobody
    left on one side is left out.

    * ``share``: of the users where the two sides differ, the share where the above side is strictly higher
      (0.5 under the null of the sign test), with its exact Clopper–Pearson 95% interval over those users
      (Clopper & Pearson 1934; none under :data:`lib.analysis.stats.MIN_CI_UNITS` users compared);
    * ``p`` / ``p_against``: the exact sign test over the users (Dixon & Mood 1946;
      :func:`lib.analysis.stats.sign_test`, ties dropped), one-sided in the expected direction and the other way;
    * ``tested``: the declared test family, the strict expectations that do not hold by design (a check that holds
      by construction tests the code; an "at least as" expectation is no difference a sign test can show);
    * ``p_holm`` / ``p_against_holm``: Holm's adjustment (Holm 1979) over one family of 2k one-sided tests, both
      directions of the k tested expectations, so that a result either way is a claim the family's α covers; its
      smallest step, 2k · 2^−n, is the two-sided sign test's k · 2/2^n, so the session plan is unchanged (NaN
      outside the family).

    ``mean_above`` / ``mean_below``: the lowest mean over users of the above systems and the highest of the below
    ones (means and users can disagree: a mean is carried by large differences, a sign test counts users)."""
    from scipy.stats import binomtest

    from lib.analysis.comparisons import holm
    from lib.analysis.stats import MIN_CI_UNITS, sign_test

    present = _order(rows)
    out = []
    for e in expectations:
        above = [s for s in present if s in e.above]
        below = [s for s in present if s in e.below]
        if not above or not below:
            continue
        values = rows.pivot(index="session_id", columns="system", values=e.metric).astype(float)
        means = values.mean()
        per_session = values[above + below].dropna()
        high, low = per_session[above].min(axis=1), per_session[below].max(axis=1)
        wins, losses = int((high > low).sum()), int((high < low).sum())
        holds = operator.gt if e.strict else operator.ge
        interval = (binomtest(wins, wins + losses).proportion_ci(0.95, method="exact")
                    if wins + losses >= MIN_CI_UNITS else None)  # the share's units: the users not tied
        out.append({"expectation": e.text, "metric": e.metric, "above": ", ".join(above), "below": ", ".join(below),
                    "mean_above": means[above].min(), "mean_below": means[below].max(),
                    "sessions_holding": int(holds(high, low).sum()), "sessions": len(per_session),
                    "ties": int((high == low).sum()),
                    "share": wins / (wins + losses) if wins + losses else np.nan,
                    "ci_low": interval.low if interval else np.nan, "ci_high": interval.high if interval else np.nan,
                    "p": sign_test(wins, losses, "greater"), "p_against": sign_test(wins, losses, "less"),
                    "by_design": e.by_design, "tested": e.strict and not e.by_design})
    table = pd.DataFrame(out, columns=KNOWN_BEHAVIOUR_COLUMNS[:-2])
    table["tested"] = table["tested"].astype(bool)
    adjusted = holm([*table["p"].where(table["tested"]), *table["p_against"].where(table["tested"])])
    return table.assign(p_holm=adjusted[:len(table)], p_against_holm=adjusted[len(table):])


# The columns of known_behaviour, in order (documented in lib.tables.SCHEMAS["crs_checks"]).
KNOWN_BEHAVIOUR_COLUMNS = ("expectation", "metric", "above", "below", "mean_above", "mean_below", "sessions_holding",
                           "sessions", "ties", "share", "ci_low", "ci_high", "p", "p_against", "by_design", "tested",
                           "p_holm", "p_against_holm")
