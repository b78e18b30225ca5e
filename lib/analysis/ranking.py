"""Ranking measures of the study, computed by ir_measures (pytrec_eval provider): one small object per measure,
registered by name in ``MEASURES``. tests/test_ranking.py cross-checks them with an independent implementation.

Definitions (rank i = 1 is shown first; g_i the gain of the candidate at rank i: the labels table's ``label``, a grade
0/1/2 (``lib.design.GRADES``) or a graded gain such as the expected grade E[g] in [0, 2]):
* Hit@k (g ≥ t) = 1 if some candidate in the top k has g ≥ t, else 0  — ir_measures ``Success(rel=t)@k``.
  Two relevance definitions are reported: t = 1 (okay or better) and t = 2 (highly relevant only).
* NDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} g_i / log2(i + 1) (Järvelin & Kekäläinen 2002), linear gains
  — ir_measures ``nDCG@k`` (trec_eval's definition). Linear rather than exponential (2^g − 1) gains because
  the labels come from a weak judge whose 2-vs-1 distinction is the least reliable part of its output;
  exponential gains would triple the weight of exactly that distinction.
ir_measures (pytrec_eval) takes integer relevance, so gains are passed in millionths (``GAIN_SCALE``; NDCG does not
change when every gain is multiplied by one number, and Hit's thresholds are scaled alike).
An entry whose pool has no candidate meeting a measure's relevance threshold has IDCG = 0 (or cannot be hit by
any ranker): it is excluded from that measure, and the count is reported — never scored 0.
An entry is *informative* for a measure when the order of its pool can change the value: its labels' best order
(grades descending) and worst order (ascending) score differently (:func:`value_range`). Hit@k and NDCG@k of
any order lie between those two (for NDCG by the rearrangement inequality: the discounts do not increase with
rank), so on an uninformative entry every ranker scores the same — e.g. a pool whose labels are all equal, or
Hit@k (g ≥ t) when fewer than k candidates are graded below t.
Candidates without a label (the judge failed) are unjudged: every measure is computed with ir_measures'
``judged_only=True`` (trec_eval -J), which removes them from the ranking before scoring (condensed lists,
Sakai 2007), so a failure never counts as "irrelevant".

Each measure is a metric of the study (:class:`lib.metrics.Metric`, kind ``ranking``) in the one registry
(:func:`lib.metrics.register`); ``MEASURES`` is the registry's view of the ranking measures, in the order of
registration. A new measure family registers the same way: an object with the metric's declaration, ``cutoff``,
``min_grade``, an ``ir_measure`` and its ``random_expectation`` (:class:`RankingMeasure`). Its ``score(None,
pools)`` scores each :class:`RankedPool` on its own (an entry that cannot be scored is a failure, not 0).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Qrel, ScoredDoc

from lib.design import GRADES
from lib.metrics import UNDEFINED, Metric, Result, Scale, checked, of_kind, register
from lib.rankers import RANKER_ORDER

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

GAIN_SCALE = 1_000_000  # gains reach ir_measures as round(g × GAIN_SCALE)
RANDOM_EXPECTED = "random (expected)"  # the ranker name of the analytical random-order rows


class RankingMeasure(Metric, Protocol):
    @property
    def cutoff(self) -> int:
        """k: the rank the measure looks down to."""

    @property
    def min_grade(self) -> int:
        """The relevance threshold that decides whether an entry can score at all."""

    @property
    def ir_measure(self) -> Any:
        """The ir_measures measure that computes it."""

    def random_expectation(self, gains: Sequence[float]) -> float:
        """Expected value for a uniformly random order of a pool with these gains."""


@dataclass(frozen=True)
class RankedPool:
    """One entry's ranking (candidate ids, shown first first) and the gain of each candidate (None: unjudged)."""

    ranking: tuple[str, ...]
    gains: Mapping[str, float | None]


def score_pools(measure: RankingMeasure, pools: Sequence[RankedPool]) -> list[Result]:
    """The measure's value on each pool, as :func:`per_entry` computes it; a pool without a candidate of gain ≥ the
    measure's threshold is not scoreable (a failure of kind ``undefined``, never 0)."""
    results = []
    for pool in pools:
        labelled = {c: float(g) for c, g in pool.gains.items() if g is not None}
        if not any(g >= measure.min_grade for g in labelled.values()):
            results.append(Result.failure(UNDEFINED, f"no judged candidate has g ≥ {measure.min_grade}"))
            continue
        qrels = [Qrel("entry", c, round(g * GAIN_SCALE)) for c, g in labelled.items()]
        run = [ScoredDoc("entry", c, -float(rank)) for rank, c in enumerate(pool.ranking)]
        values = [m.value for m in ir_measures.iter_calc([measure.ir_measure], qrels, run)]
        results.append(Result(float(values[0])) if values else Result.failure(UNDEFINED, "no judged candidate ranked"))
    return checked(measure, results, len(pools))


class _Ranking:
    """The declaration every ranking measure shares: its kind and its call (:func:`score_pools`)."""

    kind: Literal["ranking"] = "ranking"

    def score(self: Any, gateway: Gateway | None, items: Sequence[RankedPool], **options: Any) -> list[Result]:
        return score_pools(self, items)


@dataclass(frozen=True)
class Hit(_Ranking):
    """Hit@k (g ≥ t) — ir_measures ``Success(rel=t, judged_only=True)@k``."""

    cutoff: int
    min_grade: int

    @property
    def name(self) -> str:
        relation = "=" if self.min_grade == max(GRADES) else "≥"
        return f"Hit@{self.cutoff} (g{relation}{self.min_grade})"

    @property
    def aliases(self) -> tuple[str, ...]:
        return (f"Success(rel={self.min_grade})@{self.cutoff}",)

    @property
    def construct(self) -> str:
        return f"whether the top {self.cutoff} shows a candidate of grade ≥ {self.min_grade}"

    @property
    def scale(self) -> Scale:
        return Scale.of(0, 1)

    @property
    def description(self) -> str:
        return f"1 if some candidate in the top {self.cutoff} has g ≥ {self.min_grade}, else 0 (judged only)"

    @property
    def citation(self) -> str:
        return "trec_eval success@k (ir_measures Success)"

    @property
    def ir_measure(self) -> Any:
        return ir_measures.Success(rel=self.min_grade * GAIN_SCALE, judged_only=True) @ self.cutoff

    def random_expectation(self, gains: Sequence[float]) -> float:
        """1 − C(n − r, k) / C(n, k) with r = #{g ≥ t}: one minus the chance that the top k hold none of the r."""
        n, k = len(gains), self.cutoff
        r = sum(g >= self.min_grade for g in gains)
        return 1.0 - math.comb(n - r, k) / math.comb(n, k) if k <= n else float(r > 0)


@dataclass(frozen=True)
class NDCG(_Ranking):
    """NDCG@k with linear gains — ir_measures ``nDCG(judged_only=True)@k``; scoreable when some g ≥ 1 (a pool the
    judge finds wholly irrelevant has nothing worth ranking)."""

    cutoff: int
    min_grade: int = 1

    @property
    def name(self) -> str:
        return f"NDCG@{self.cutoff}"

    @property
    def aliases(self) -> tuple[str, ...]:
        return (f"nDCG@{self.cutoff}",)

    @property
    def construct(self) -> str:
        return f"how close the order of the top {self.cutoff} is to the best order by gain"

    @property
    def scale(self) -> Scale:
        return Scale(0, 1)

    @property
    def description(self) -> str:
        return f"DCG@{self.cutoff} / IDCG@{self.cutoff}, linear gains, discount 1/log2(i + 1) (judged only)"

    @property
    def citation(self) -> str:
        return "Järvelin & Kekäläinen 2002"

    @property
    def ir_measure(self) -> Any:
        return ir_measures.nDCG(judged_only=True) @ self.cutoff

    def random_expectation(self, gains: Sequence[float]) -> float:
        """Each rank's expected gain is the pool mean ḡ, so E[DCG@k] = ḡ · Σ_{i ≤ min(k, n)} 1/log2(i + 1),
        divided by the (fixed) IDCG@k; NaN when IDCG = 0."""
        n, k = len(gains), self.cutoff
        discounts = [1 / math.log2(i + 1) for i in range(1, min(k, n) + 1)]
        ideal = sum(g * d for g, d in zip(sorted(gains, reverse=True), discounts, strict=False))
        return float(np.mean(gains) * sum(discounts) / ideal) if ideal > 0 else float("nan")


MEASURES: Mapping[str, RankingMeasure] = of_kind("ranking")  # the order of registration is the order of tables

for _measure in (Hit(1, 1), Hit(3, 1), Hit(1, 2), Hit(3, 2), NDCG(3), NDCG(5)):
    register(_measure)

HEADLINE_MEASURE = "NDCG@3"  # the measure of the sensitivity checks and the headline figures


def _qrels(labelled: pd.DataFrame) -> list[Qrel]:
    return [Qrel(r.entry_id, r.candidate_id, round(float(r.label) * GAIN_SCALE)) for r in labelled.itertuples()]


def scoreable_entries(labels: pd.DataFrame, measure: RankingMeasure) -> set[str]:
    """Entries with at least one labelled candidate of grade ≥ the measure's threshold."""
    return set(labels.loc[labels.label >= measure.min_grade, "entry_id"])


def per_entry(rankings: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per (ranker, run, entry, measure) value over the scoreable entries.

    ``rankings``: ranker, run, entry_id, rank, candidate_id; ``labels``: entry_id, candidate_id, label
    (nullable int; null = unjudged). Returns columns ranker, run, entry_id, measure, value.
    """
    labelled = labels.dropna(subset=["label"])
    qrels = _qrels(labelled)
    by_ir_measure = {str(m.ir_measure): name for name, m in MEASURES.items()}
    frames = []
    for (ranker, run), group in rankings.groupby(["ranker", "run"], sort=False):
        scored = [ScoredDoc(r.entry_id, r.candidate_id, -float(r.rank)) for r in group.itertuples()]
        values = pd.DataFrame([(m.query_id, by_ir_measure[str(m.measure)], m.value) for m in
                               ir_measures.iter_calc([x.ir_measure for x in MEASURES.values()], qrels, scored)],
                              columns=["entry_id", "measure", "value"])
        frames.append(values.assign(ranker=ranker, run=run))
    table = pd.concat(frames, ignore_index=True)
    keep: pd.Series = pd.Series(False, index=table.index)
    for name, measure in MEASURES.items():
        keep |= (table.measure == name) & table.entry_id.isin(scoreable_entries(labelled, measure))
    return table.loc[keep, ["ranker", "run", "entry_id", "measure", "value"]].reset_index(drop=True)


def rankers_in(rankings: pd.DataFrame, order: Sequence[str] = RANKER_ORDER) -> list[str]:
    """The rankers of a rankings table in ``order`` (``lib.rankers.RANKER_ORDER``); a ranker the order does not
    name follows, alphabetically, so a new ranker is never silently dropped."""
    present = set(rankings["ranker"])
    return [m for m in order if m in present] + sorted(present - set(order))


def value_range(labels: pd.DataFrame) -> pd.DataFrame:
    """Per (measure, scoreable entry): the value of the pool's best order (labels descending) and worst order
    (ascending) over its labelled candidates, and ``informative`` = they differ (by more than 1e−12).
    Columns measure, entry_id, best, worst, informative; computed with the measures' own ir_measures objects."""
    labelled = labels.dropna(subset=["label"])
    qrels = _qrels(labelled)
    by_ir_measure = {str(m.ir_measure): name for name, m in MEASURES.items()}
    measures = [m.ir_measure for m in MEASURES.values()]
    ends = {}
    for end, sign in (("best", 1.0), ("worst", -1.0)):
        run = [ScoredDoc(r.entry_id, r.candidate_id, sign * float(r.label)) for r in labelled.itertuples()]
        ends[end] = pd.DataFrame([(by_ir_measure[str(m.measure)], m.query_id, m.value)
                                  for m in ir_measures.iter_calc(measures, qrels, run)],
                                 columns=["measure", "entry_id", end])
    table = ends["best"].merge(ends["worst"], on=["measure", "entry_id"])
    keep: pd.Series = pd.Series(False, index=table.index)
    for name, measure in MEASURES.items():
        keep |= (table.measure == name) & table.entry_id.isin(scoreable_entries(labelled, measure))
    table = table[keep].assign(informative=lambda t: (t.best - t.worst).abs() > 1e-12,
                               _order=lambda t: t.measure.map({name: i for i, name in enumerate(MEASURES)}))
    return table.sort_values(["_order", "entry_id"]).drop(columns="_order").reset_index(drop=True)


def unorderable_pools(labels: pd.DataFrame) -> tuple[int, int, int]:
    """(pools of one labelled candidate, pools of several whose candidates all carry the same label, pools with a
    label): on both kinds every order scores the same, so no ranker can win or lose there."""
    per_pool = labels.dropna(subset=["label"]).groupby("entry_id").label.agg(["size", "nunique"])
    single = per_pool["size"] == 1
    return int(single.sum()), int(((per_pool["nunique"] == 1) & ~single).sum()), len(per_pool)


def average_runs(values: pd.DataFrame) -> pd.DataFrame:
    """One value per (ranker, entry, measure): a ranker with several runs (random seeds) is averaged over them."""
    return values.groupby(["ranker", "entry_id", "measure"], as_index=False, sort=False)["value"].mean()


def coverage(rankings: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per measure: its relevance threshold; the ranked entries it scores and excludes (no relevant candidate);
    of the scored, the informative ones (the order can change the value, :func:`value_range`); and the labelled
    candidates graded below its threshold."""
    labelled = labels.dropna(subset=["label"])
    total = rankings.entry_id.nunique()
    informative = value_range(labelled).groupby("measure", sort=False).informative.sum()
    return pd.DataFrame({name: {"relevance_threshold": f"g ≥ {m.min_grade}",
                                "entries_scored": len(scoreable_entries(labelled, m)),
                                "entries_excluded": total - len(scoreable_entries(labelled, m)),
                                "entries_informative": int(informative.get(name, 0)),
                                "candidates_below_threshold": int((labelled.label < m.min_grade).sum())}
                         for name, m in MEASURES.items()}).T.rename_axis("measure (counts)")


def random_expected_rows(labels: pd.DataFrame) -> pd.DataFrame:
    """Per measure: the mean over scoreable entries of its random-order expectation (ranker ``RANDOM_EXPECTED``)."""
    labelled = labels.dropna(subset=["label"])
    gains = labelled.groupby("entry_id").label.apply(lambda s: [float(g) for g in s])
    rows = []
    for name, measure in MEASURES.items():
        scored = sorted(scoreable_entries(labelled, measure))
        rows.append({"measure": name, "ranker": RANDOM_EXPECTED, "entries": len(scored),
                     "mean": float(np.mean([measure.random_expectation(gains[e]) for e in scored]))
                     if scored else float("nan")})
    return pd.DataFrame(rows)
