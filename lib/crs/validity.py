"""Validity of chapter 06's CRS metrics, for chapter 07 (METHODOLOGY.md gives the metrics and the known
differences between systems).

* Convergent — :func:`convergent_validity`: Spearman's ρ and Kendall's τ of TAS, CAS and their components with
  each judge criterion and the judge's mean, per system (optional) and over all, with pair-bootstrap CIs
  (:func:`lib.analysis.validity.correlation_table`).
* Construct — :func:`shift_cc` (CC before, at and after each shift, per session) and :func:`cr_within_across`
  (CR of each reply to the user turns of its own segment vs the other segments), tested across sessions by
  :func:`paired_tests`: Wilcoxon signed-rank per system with the matched-pairs rank-biserial effect size and Holm
  over the family; :func:`ordering_check` for the orders the known-behaviour systems must show.
* Ablations are :func:`lib.crs.summaries.ablation` and :func:`lib.crs.summaries.ablation_orders` (chapter 06's): how the
  order of systems changes without the copy penalty, with CC or CR alone, and with CAS without its recovery
  component (Kendall's τ with the declared weights' order).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lib.analysis.comparisons import holm
from lib.analysis.stats import min_attainable_p
from lib.analysis.validity import correlation_table
from lib.crs.config import MetricConfig
from lib.crs.judge import RUBRIC_CRITERIA
from lib.crs.metrics import idf_cosine, pairs, system_concepts
from lib.crs.records import SessionLog
from lib.crs.universe import ItemUniverse

METRICS = ("tas", "cas", "cc", "cr", "copy_ratio", "recovery_rate", "interference")


def convergent_validity(rows: pd.DataFrame, seed: int = 0, n_resamples: int = 2000,
                        metrics: Sequence[str] = METRICS, per_system: bool = True) -> pd.DataFrame:
    """For each judge score (every rubric criterion and ``judge_mean``, their mean) over the judged sessions:
    :func:`lib.analysis.validity.correlation_table` of the session ``metrics`` with it, per system (when
    ``per_system``; each bootstrap costs time, and a system has few sessions) and over all (``all``).
    Index (judge_score, model, score, method); columns n, r, p, ci_low, ci_high, units, ci_over (the CIs resample
    the simulated users, ``session_id``)."""
    judged = rows[rows["judge_ok"].astype(bool)].copy()
    criteria = [f"judge_{c}" for c in RUBRIC_CRITERIA]
    judged[criteria] = judged[criteria].astype(float)
    judged["judge_mean"] = judged[criteria].mean(axis=1)
    tables = {judge: correlation_table(judged, list(metrics), judge, by="system" if per_system else None, seed=seed,
                                       unit="session_id", unit_name="users", n_resamples=n_resamples
                                       ).rename_axis(index={"group": "system"})
              for judge in [*criteria, "judge_mean"]}
    return pd.concat(tables, names=["judge_score"])


def shift_cc(turns: pd.DataFrame, window: int = MetricConfig().window) -> pd.DataFrame:
    """Per (model, session_id): mean CC over the ``window`` scored turns before each shift (cc_before), at the
    shift turn (cc_at_shift) and over the scored turns after it inside its segment, at most ``window`` − 1 of
    them (cc_after), each averaged over the session's shifts (NaN where a session has none of them)."""
    rows = []
    for (model, session), part in turns.groupby(["system", "session_id"], sort=False):
        part = part.set_index("turn").sort_index()
        scored_cc = part["cc"].where(part["scored"].astype(bool))
        starts = list(part.index[part["shift"].astype(bool)])
        ends = [*starts[1:], int(part.index.max()) + 1]
        before, at, after = [], [], []
        for start, end in zip(starts, ends, strict=True):
            before.append(scored_cc.loc[max(0, start - window):start - 1].mean())
            at.append(scored_cc.get(start, np.nan))
            after.append(scored_cc.loc[start + 1:min(start + window, end) - 1].mean())
        rows.append({"system": model, "session_id": session, "cc_before": np.nanmean(before) if starts else np.nan,
                     "cc_at_shift": np.nanmean(at) if starts else np.nan,
                     "cc_after": np.nanmean(after) if starts else np.nan})
    return pd.DataFrame(rows)


def cr_within_across(logs: Sequence[SessionLog], universe: ItemUniverse) -> pd.DataFrame:
    """Per (model, session_id): the mean CR of each scored reply S(t) to the concepts U(t') stated at every other
    user turn t' ≠ t of its own segment (cr_within) and of the other segments (cr_across), CR as in
    :func:`lib.crs.metrics.idf_cosine`; segments as :func:`lib.crs.metrics.turn_table` numbers them (a new one at
    each shift). A reply that stays with the current preference relates to its segment's turns, not to others'."""
    rows = []
    for log in logs:
        turn_pairs = pairs(log.record()["conversation"])
        segments = np.cumsum([bool(u["user_meta"]["shift"]) for u, _ in turn_pairs])
        stated = [frozenset(u["user_meta"]["stated"]) for u, _ in turn_pairs]
        within: list[float] = []
        across: list[float] = []
        for t, (user, system) in enumerate(turn_pairs):
            if not system["text"]:
                continue
            meta = user["user_meta"]
            s, _, _ = system_concepts(system["text"], frozenset(meta["preference"]) | frozenset(meta["dropped"]),
                                      universe)
            for other in range(len(turn_pairs)):
                if other != t:
                    (within if segments[other] == segments[t] else across).append(
                        idf_cosine(s, stated[other], universe.idf))
        rows.append({"system": log.system, "session_id": log.session_id,
                     "cr_within": float(np.mean(within)) if within else np.nan,
                     "cr_across": float(np.mean(across)) if across else np.nan})
    return pd.DataFrame(rows)


def rank_biserial(differences: Sequence[float]) -> float:
    """Matched-pairs rank-biserial correlation (Kerby 2014): (R₊ − R₋) / (R₊ + R₋) over the ranks of the non-zero
    |differences| (average ranks for ties), from −1 (every pair lower) to 1 (every pair higher); NaN without a
    non-zero difference."""
    from scipy.stats import rankdata

    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if not len(d):
        return float("nan")
    ranks = rankdata(np.abs(d))
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())


def paired_tests(frame: pd.DataFrame, comparisons: Mapping[str, tuple[str, str]], by: str = "system"
                 ) -> pd.DataFrame:
    """Per group of ``by`` (system) and comparison name → (a, b): over the sessions with both values, the mean
    of a − b, the Wilcoxon signed-rank test of a − b (scipy.stats.wilcoxon, two-sided, exact for small n, zero
    differences dropped; NaN p without a non-zero difference), the rank-biserial effect size
    (:func:`rank_biserial`), and the Holm-adjusted p over every row of the call (one family). ``nonzero``: the
    differences the test uses; ``min_p``: the smallest p it could give whatever their signs
    (:func:`lib.analysis.stats.min_attainable_p`) — see :func:`lib.analysis.comparisons.holm_floor`."""
    from scipy.stats import wilcoxon

    rows = []
    for group, part in frame.groupby(by, sort=False):
        for name, (a, b) in comparisons.items():
            both = part[[a, b]].dropna()
            d = (both[a] - both[b]).to_numpy(dtype=float)
            p = float(wilcoxon(d).pvalue) if np.any(d != 0) else float("nan")
            nonzero = int(np.count_nonzero(d))
            rows.append({by: group, "comparison": name, "a": a, "b": b, "n": len(d), "nonzero": nonzero,
                         "mean_diff": float(d.mean()) if len(d) else float("nan"), "p": p,
                         "min_p": min_attainable_p(nonzero), "rank_biserial": rank_biserial(d)})
    table = pd.DataFrame(rows)
    return table.assign(p_holm=holm(table["p"].tolist()) if len(table) else [])


def ordering_check(rows: pd.DataFrame, metric: str, expected: Sequence[str]) -> dict[str, object]:
    """Whether the systems' means of ``metric`` follow ``expected`` (best first, strictly; e.g. TAS:
    retrieval_template > stale_template > echo, METHODOLOGY.md), with the observed order of those systems."""
    means = rows.groupby("system")[metric].mean().reindex(list(expected))
    observed = means.sort_values(ascending=False, kind="stable")
    holds = bool(means.notna().all() and np.all(np.diff(means.to_numpy()) < 0))
    return {"metric": metric, "expected": " > ".join(expected), "observed": " > ".join(observed.index),
            "holds": holds, **{f"mean_{m}": float(v) for m, v in means.items()}}
