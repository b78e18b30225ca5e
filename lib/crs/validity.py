"""Validity of chapter 06's CRS metrics, for chapter 07 (METHODOLOGY.md gives the metrics and the known
differences between systems).

* Convergent — :func:`convergent_validity`: Spearman's ρ and Kendall's τ of TAS, CAS and their components with
  each judge criterion and the judge's mean, per system (optional) and over all, with pair-bootstrap CIs
  (:func:`lib.analysis.validity.correlation_table`).
* Construct — :func:`shift_cc` (CC before, at and after each shift, per session) and :func:`cr_within_across`
  (CR of each reply to the user turns of its own segment vs the other segments), tested across sessions by
  :func:`paired_tests`: Wilcoxon signed-rank per system, one-sided in the direction the construct declares for that
  system (:data:`ADAPTS`, :class:`ConstructTest`) with the p the other way beside it, the matched-pairs
  rank-biserial effect size and Holm over the family for both; :func:`ordering_check` for the orders the
  known-behaviour systems must show.
* Ablations are :func:`lib.crs.summaries.ablation` and :func:`lib.crs.summaries.ablation_orders` (chapter 06's): how the
  order of systems changes without the copy penalty, with CC or CR alone, and with CAS without its recovery
  component (Kendall's τ with the declared weights' order).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from lib.analysis.comparisons import holm_both_directions
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


Direction = Literal["higher", "lower"]

# Whether each system of known behaviour adapts to a shift (METHODOLOGY.md, "Systems"): the tracked systems adapt at
# a shift cue; the memoryless LLM adapts at once (it reads only the last user turn); the echo repeats the last user
# turn, so it names every new wish at once ("it always names the new wish"); the stale template keeps every wish
# ever stated and never adapts.
ADAPTS: dict[str, bool] = {"llm": True, "retrieval_template": True, "memoryless_llm": True, "echo": True,
                           "stale_template": False}


@dataclass(frozen=True)
class ConstructTest:
    """One construct test of a CRS metric: the paired difference ``a`` − ``b`` per session, and the direction the
    construct declares for it in a system that adapts (``adapting``) and in one built not to (``not_adapting``;
    None: the construct declares no direction there, so no test is made). ``by_design`` names why a non-adapting
    system's direction holds by how it is built ("" when it does not): such a check tests the code, not the
    metric, and stays out of the tested family (METHODOLOGY.md, "Validation by known differences")."""

    name: str
    a: str
    b: str
    adapting: Direction
    not_adapting: Direction | None
    by_design: str = ""

    def direction(self, adapts: bool) -> Direction | None:
        """The declared direction for a system that adapts (``adapts``) or not."""
        return self.adapting if adapts else self.not_adapting


# CC around a shift: an adapting system's reply at the shift misses the new preference for a turn at most and then
# serves it; a system that never adapts loses CC at the shift (it keeps the abandoned wishes: built so) and must not
# regain it. CR within vs across segments: an adapting system's replies relate to its own segment's turns; the stale
# template names every wish of every segment, for which the construct declares no direction.
SHIFT_TESTS: tuple[ConstructTest, ...] = (
    ConstructTest("CC drops at the shift", "cc_before", "cc_at_shift", "higher", "higher",
                  by_design="the stale template keeps every abandoned wish, so its reply at a shift misses the new "
                            "preference"),
    ConstructTest("CC recovers after the shift", "cc_after", "cc_at_shift", "higher", "lower"),
)
SEGMENT_TESTS: tuple[ConstructTest, ...] = (
    ConstructTest("CR within > across segments", "cr_within", "cr_across", "higher", None),
)

_ALTERNATIVE: dict[str, Literal["greater", "less"]] = {"higher": "greater", "lower": "less"}
_OPPOSITE: dict[str, Literal["greater", "less"]] = {"higher": "less", "lower": "greater"}


def paired_tests(frame: pd.DataFrame, tests: Sequence[ConstructTest], adapts: Mapping[str, bool] = ADAPTS,
                 by: str = "system", unit: str = "session_id", seed: int = 0, n_resamples: int = 2000
                 ) -> pd.DataFrame:
    """Per group of ``by`` (system) and construct test: over the sessions with both values (each session one
    simulated user, the independent unit), the mean of d = a − b with its percentile bootstrap interval over the
    users (:func:`lib.analysis.stats.unit_bootstrap`), the declared ``direction`` (``adapts[system]`` picks the
    test's direction for an adapting or a non-adapting system; "none" when it declares none), and the Wilcoxon
    signed-rank test of d one-sided in that direction (``p``) and one-sided the other way (``p_against``;
    scipy.stats.wilcoxon, zero differences dropped, exact null distribution for n ≤ 50, by permutation when
    |d| ties; NaN without a non-zero difference or without a direction). ``rank_biserial``: the matched-pairs
    effect size (:func:`rank_biserial`); ``nonzero``: the differences the test uses; ``min_p``: the smallest
    one-sided p it could give (:func:`lib.analysis.stats.min_attainable_p`; see
    :func:`lib.analysis.comparisons.holm_floor`).

    The family is every row with a direction that does not hold by design (``tested``); ``p_holm`` and
    ``p_against_holm`` are Holm-adjusted over it, both directions in one family of 2k one-sided p-values
    (:func:`lib.analysis.comparisons.holm_both_directions`); a row outside the family keeps its own p. A
    significant ``p_against`` is a result the wrong way: evidence against the construct."""
    from scipy.stats import wilcoxon

    from lib.analysis.stats import unit_bootstrap

    rows = []
    for group, part in frame.groupby(by, sort=False):
        for test in tests:
            direction = test.direction(adapts[str(group)])
            both = part[[unit, test.a, test.b]].dropna()
            d = (both[test.a] - both[test.b]).to_numpy(dtype=float)
            nonzero = int(np.count_nonzero(d))
            method, exact = _wilcoxon_method(d, seed)
            p = p_against = float("nan")
            if direction is not None and nonzero > 0:
                p = float(wilcoxon(d, alternative=_ALTERNATIVE[direction], method=method).pvalue)
                p_against = float(wilcoxon(d, alternative=_OPPOSITE[direction], method=method).pvalue)
            interval = unit_bootstrap(np.mean, [d], both[unit].to_numpy(), "users", seed, n_resamples)
            by_design = bool(test.by_design) and not adapts[str(group)]
            rows.append({by: group, "comparison": test.name, "a": test.a, "b": test.b,
                         "direction": direction or "none", "n": len(d), "nonzero": nonzero,
                         "mean_diff": float(d.mean()) if len(d) else float("nan"), "ci_low": interval.low,
                         "ci_high": interval.high, "ci_over": interval.ci_over, "p": p, "p_against": p_against,
                         "min_p": min_attainable_p(nonzero, "greater"), "rank_biserial": rank_biserial(d),
                         "exact": exact, "by_design": by_design, "tested": direction is not None and not by_design})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    family = table["tested"].astype(bool)
    p_holm, p_against_holm = holm_both_directions(table["p"].where(family).tolist(),
                                                  table["p_against"].where(family).tolist())
    return table.assign(p_holm=[a if f else float(q) for a, q, f in zip(p_holm, table["p"], family, strict=True)],
                        p_against_holm=[a if f else float(q) for a, q, f in
                                        zip(p_against_holm, table["p_against"], family, strict=True)])


_PERMUTATIONS = 9999  # scipy's permutation null is enumerated exactly up to this many sign assignments


def _wilcoxon_method(d: np.ndarray, seed: int) -> tuple[Any, bool]:
    """scipy's method for the Wilcoxon test of ``d`` and whether its null distribution is exact: the exact
    distribution without ties in |d| (n ≤ 50), the permutation distribution with ties, enumerated when the
    2^n sign assignments are at most :data:`_PERMUTATIONS`, else drawn (seeded); beyond 50 the normal
    approximation."""
    from scipy.stats import PermutationMethod

    nonzero = np.abs(d[d != 0])
    if len(nonzero) > 50:
        return "asymptotic", False
    if len(np.unique(nonzero)) == len(nonzero):
        return "exact", True
    return (PermutationMethod(n_resamples=_PERMUTATIONS, rng=np.random.default_rng(seed)),
            2 ** len(nonzero) <= _PERMUTATIONS)


def family_test_text(tests: pd.DataFrame, row: Mapping[str, Any]) -> str:
    """The ``test`` text of a verdict made from one row of a :func:`paired_tests` table: the test, whether its
    null distribution is exact, and its family."""
    null = "exact null" if row["exact"] else "approximate null"
    family = (f"Holm over {int(tests['tested'].sum())} tests" if row["tested"]
              else "by design, outside the tested family")
    return f"Wilcoxon signed-rank over users, one-sided in the declared direction ({null}); {family}"


def ordering_check(rows: pd.DataFrame, metric: str, expected: Sequence[str]) -> dict[str, object]:
    """Whether the systems' means of ``metric`` follow ``expected`` (best first, strictly; e.g. TAS:
    retrieval_template > stale_template > echo, METHODOLOGY.md), with the observed order of those systems."""
    means = rows.groupby("system")[metric].mean().reindex(list(expected))
    observed = means.sort_values(ascending=False, kind="stable")
    holds = bool(means.notna().all() and np.all(np.diff(means.to_numpy()) < 0))
    return {"metric": metric, "expected": " > ".join(expected), "observed": " > ".join(observed.index),
            "holds": holds, **{f"mean_{m}": float(v) for m, v in means.items()}}
