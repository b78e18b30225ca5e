"""Ranking measures of the study as numpy kernels over whole runs: one small object per measure, registered by
name in ``MEASURES``; tests/test_ranking.py checks every value against ir_measures (pytrec_eval, trec_eval's
definitions) and an independent implementation.

Definitions (rank i = 1 is shown first; g_i the gain of the candidate at rank i: the labels table's ``label``, a grade
0/1/2 (``lib.design.GRADES``) or a graded gain such as the expected grade E[g] in [0, 2]):
* Hit@k (g ≥ t) = 1 if some candidate in the top k has g ≥ t, else 0  — trec_eval ``success_k`` at relevance
  level t (ir_measures ``Success(rel=t)@k``). Two relevance definitions are reported: t = 1 (okay or better)
  and t = 2 (highly relevant only).
* NDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} g_i / log2(i + 1) (Järvelin & Kekäläinen 2002), linear gains,
  IDCG@k the DCG@k of the pool's labelled candidates in descending gain — trec_eval ``ndcg_cut_k`` (ir_measures
  ``nDCG@k``). Linear rather than exponential (2^g − 1) gains because the labels come from a weak judge whose
  2-vs-1 distinction is the least reliable part of its output; exponential gains would triple the weight of
  exactly that distinction.
The kernels reproduce trec_eval to the bit, which the committed tables were computed with:
* gains are resolved to millionths, round(g × ``GAIN_SCALE``) (trec_eval takes integer relevance; NDCG does not
  change when every gain is multiplied by one number, and Hit's thresholds are scaled alike);
* DCG adds g_i / log2(i + 1) rank by rank, and only positive gains (``math.log2``, the C library's log2);
* a candidate without a label (the judge failed) is unjudged: it is removed from the ranking before scoring
  (trec_eval -J, ``judged_only``: condensed lists, Sakai 2007), so a failure never counts as "irrelevant";
* candidates of equal rank are ordered by candidate id, descending (trec_eval sorts by score, then docno
  descending).
An entry whose pool has no candidate meeting a measure's relevance threshold has IDCG = 0 (or cannot be hit by
any ranker): it is excluded from that measure, and the count is reported — never scored 0.
An entry is *informative* for a measure when the order of its pool can change the value: its labels' best order
(grades descending) and worst order (ascending) score differently (:func:`value_range`). Hit@k and NDCG@k of
any order lie between those two (for NDCG by the rearrangement inequality: the discounts do not increase with
rank), so on an uninformative entry every ranker scores the same — e.g. a pool whose labels are all equal, or
Hit@k (g ≥ t) when fewer than k candidates are graded below t.

Each measure is a metric of the study (:class:`lib.metrics.Metric`, kind ``ranking``) in the one registry
(:func:`lib.metrics.register`); ``MEASURES`` is the registry's view of the ranking measures, in the order of
registration. A new measure family registers the same way: an object with the metric's declaration, ``cutoff``,
``min_grade``, its kernel ``values`` and its ``random_expectation`` (:class:`RankingMeasure`). Its ``score(None,
pools)`` scores each :class:`RankedPool` on its own (an entry that cannot be scored is a failure, not 0).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import pandas as pd

from lib.design import GRADES
from lib.metrics import UNDEFINED, Metric, Result, Scale, checked, of_kind, register
from lib.rankers import RANKER_ORDER

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

GAIN_SCALE = 1_000_000  # gains are resolved to round(g × GAIN_SCALE), trec_eval's integer relevance
NOT_RANKED = -1.0  # the gain past the end of a condensed list (trec_eval's RELVALUE_NONPOOL): never relevant
RANDOM_EXPECTED = "random (expected)"  # the ranker name of the analytical random-order rows


def resolved(gains: np.ndarray) -> np.ndarray:
    """Gains in units of 1 / ``GAIN_SCALE``, rounded half to even (as Python's ``round``)."""
    return np.rint(np.asarray(gains, dtype=float) * GAIN_SCALE)


def dcg(ranked: np.ndarray, cutoff: int) -> np.ndarray:
    """DCG@k over the last axis (gains in rank order): Σ_{i ≤ k} g_i / log2(i + 1) over the positive g_i
    (Järvelin & Kekäläinen 2002; trec_eval ``ndcg_cut``), added rank by rank as trec_eval does."""
    total = np.zeros(ranked.shape[:-1])
    for i in range(min(cutoff, ranked.shape[-1])):
        gain = ranked[..., i]
        total = total + np.where(gain > 0, gain / math.log2(i + 2), 0.0)
    return total


class RankingMeasure(Metric, Protocol):
    @property
    def cutoff(self) -> int:
        """k: the rank the measure looks down to."""

    @property
    def min_grade(self) -> int:
        """The relevance threshold that decides whether an entry can score at all."""

    def values(self, ranked: np.ndarray, ideal: np.ndarray) -> np.ndarray:
        """The measure of every ranked list at once: ``ranked`` (..., lists, depth) the resolved gains of each
        condensed list in rank order (``NOT_RANKED`` past its end), ``ideal`` alike the gains of its pool's
        labelled candidates in descending order; depth ≥ ``cutoff``."""

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
    names = [str(i) for i in range(len(pools))]
    rankings = pd.DataFrame([(name, rank, c) for name, pool in zip(names, pools, strict=True)
                             for rank, c in enumerate(pool.ranking)], columns=["entry_id", "rank", "candidate_id"])
    labels = pd.DataFrame([(name, c, g) for name, pool in zip(names, pools, strict=True)
                           for c, g in pool.gains.items() if g is not None],
                          columns=["entry_id", "candidate_id", "label"])
    values = per_entry(rankings.assign(ranker="", run=0), labels, {measure.name: measure}).set_index("entry_id")
    return checked(measure, [Result(float(values.value[name])) if name in values.index else
                             Result.failure(UNDEFINED, f"no judged candidate has g ≥ {measure.min_grade}")
                             for name in names], len(pools))


class _Ranking:
    """The declaration every ranking measure shares: its kind and its call (:func:`score_pools`)."""

    kind: Literal["ranking"] = "ranking"

    def score(self: Any, gateway: Gateway | None, items: Sequence[RankedPool], **options: Any) -> list[Result]:
        return score_pools(self, items)


@dataclass(frozen=True)
class Hit(_Ranking):
    """Hit@k (g ≥ t) — trec_eval ``success_k`` at relevance level t, judged only (ir_measures
    ``Success(rel=t, judged_only=True)@k``)."""

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

    def values(self, ranked: np.ndarray, ideal: np.ndarray) -> np.ndarray:
        """max_{i ≤ k} [g_i ≥ t], with t resolved like the gains."""
        return (ranked[..., :self.cutoff] >= self.min_grade * GAIN_SCALE).any(axis=-1).astype(float)

    def random_expectation(self, gains: Sequence[float]) -> float:
        """1 − C(n − r, k) / C(n, k) with r = #{g ≥ t}: one minus the chance that the top k hold none of the r."""
        n, k = len(gains), self.cutoff
        r = sum(g >= self.min_grade for g in gains)
        return 1.0 - math.comb(n - r, k) / math.comb(n, k) if k <= n else float(r > 0)


@dataclass(frozen=True)
class NDCG(_Ranking):
    """NDCG@k with linear gains — trec_eval ``ndcg_cut_k``, judged only (ir_measures ``nDCG(judged_only=True)@k``);
    scoreable when some g ≥ 1 (a pool the judge finds wholly irrelevant has nothing worth ranking)."""

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

    def values(self, ranked: np.ndarray, ideal: np.ndarray) -> np.ndarray:
        """:func:`dcg` of the list / :func:`dcg` of its pool's best order; the DCG itself (0) where that is 0."""
        gained, best = dcg(ranked, self.cutoff), dcg(ideal, self.cutoff)
        return np.divide(gained, best, out=gained.copy(), where=best > 0)

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


def scoreable_entries(labels: pd.DataFrame, measure: RankingMeasure) -> set[str]:
    """Entries with at least one labelled candidate of grade ≥ the measure's threshold."""
    return set(labels.loc[labels.label >= measure.min_grade, "entry_id"])


@dataclass(frozen=True)
class RankedLists:
    """A rankings table condensed onto the labelled candidates of a labels table, as the index arrays the kernels
    read: ``lists`` (ranker, run, entry_id) one row per ranking of an entry that has a label — per (ranker, run) in
    the order they first appear, its entries in the order first ranked (the order ir_measures returned, which
    the bootstrap draws downstream depend on); ``ranked`` (lists, depth) the row of the labelled candidate at
    each condensed rank, −1 past the list's end; ``pools`` (entries, size) the rows of each entry's labelled
    candidates, −1 after them; ``pool_of`` (lists,) the row of ``pools`` of each list's entry."""

    lists: pd.DataFrame
    ranked: np.ndarray
    pools: np.ndarray
    pool_of: np.ndarray

    @classmethod
    def of(cls, rankings: pd.DataFrame, labelled: pd.DataFrame, depth: int) -> RankedLists:
        """``rankings``: ranker, run, entry_id, rank, candidate_id; ``labelled``: entry_id, candidate_id (every row
        judged; the rows the gains of :meth:`gains` follow). Ties in rank are ordered by candidate id, descending,
        and a candidate ranked twice in a list or labelled twice in a pool is an error (as in trec_eval)."""
        if labelled.duplicated(["entry_id", "candidate_id"]).any():
            raise ValueError("a candidate is labelled twice in its pool")
        keys = ["ranker", "run", "entry_id"]
        if rankings.duplicated([*keys, "candidate_id"]).any():
            raise ValueError("a ranking lists a candidate twice")
        entries = pd.Index(labelled.entry_id.unique())
        slot = labelled.groupby("entry_id", sort=False).cumcount().to_numpy()
        pools = np.full((len(entries), int(slot.max()) + 1 if len(slot) else 0), -1)
        pools[entries.get_indexer(labelled.entry_id), slot] = np.arange(len(labelled))

        ranked_rows = rankings[rankings.entry_id.isin(entries)]
        first_seen = ranked_rows.groupby(keys, sort=False).ngroup().to_numpy()  # lists by first appearance
        run_of = ranked_rows.groupby(["ranker", "run"], sort=False).ngroup().to_numpy()
        heads = np.unique(first_seen, return_index=True)[1]
        position: np.ndarray = np.empty(len(heads), dtype=int)
        position[np.argsort(run_of[heads], kind="stable")] = np.arange(len(heads))
        list_of = position[first_seen]
        lists = ranked_rows.iloc[heads[np.argsort(position)]][keys].reset_index(drop=True)

        row = pd.MultiIndex.from_frame(labelled[["entry_id", "candidate_id"]]).get_indexer(
            pd.MultiIndex.from_frame(ranked_rows[["entry_id", "candidate_id"]]))
        candidate = np.unique(ranked_rows.candidate_id.to_numpy(dtype=str), return_inverse=True)[1]
        order = np.lexsort((-candidate, ranked_rows["rank"].to_numpy(), list_of))
        order = order[row[order] >= 0]  # unjudged candidates leave the list: the ranks below move up
        in_list = pd.Series(list_of[order]).groupby(list_of[order]).cumcount().to_numpy()
        shown = in_list < depth
        ranked = np.full((len(lists), depth), -1)
        ranked[list_of[order][shown], in_list[shown]] = row[order][shown]
        return cls(lists, ranked, pools, entries.get_indexer(lists.entry_id))


def _padded(gains: np.ndarray, rows: np.ndarray, fill: float) -> np.ndarray:
    """``gains[..., rows]`` with ``fill`` where a row is −1."""
    return np.concatenate([gains, np.full((*gains.shape[:-1], 1), fill)], axis=-1)[..., rows]


def _to_depth(ordered: np.ndarray, depth: int) -> np.ndarray:
    """The first ``depth`` columns of ``ordered``, ``NOT_RANKED`` where it has fewer."""
    short = depth - ordered.shape[-1]
    return ordered[..., :depth] if short <= 0 else np.concatenate(
        [ordered, np.full((*ordered.shape[:-1], short), NOT_RANKED)], axis=-1)


def _best_orders(lists: RankedLists, gains: np.ndarray, depth: int) -> np.ndarray:
    """(..., entries, depth): each pool's resolved gains in descending order."""
    return _to_depth(-np.sort(-_padded(resolved(gains), lists.pools, NOT_RANKED), axis=-1), depth)


def _measures(measures: Mapping[str, RankingMeasure] | None) -> Mapping[str, RankingMeasure]:
    return MEASURES if measures is None else measures


def _depth(measures: Mapping[str, RankingMeasure]) -> int:
    return max(m.cutoff for m in measures.values())


def per_entry_draws(rankings: pd.DataFrame, labels: pd.DataFrame, draws: np.ndarray,
                    measures: Mapping[str, RankingMeasure] | None = None) -> pd.DataFrame:
    """:func:`per_entry` under each of several label columns at once: ``draws`` (draws, rows of ``labels``) holds
    the gains of each draw, NaN exactly where ``labels.label`` is (the same candidates judged). Returns columns
    draw, ranker, run, entry_id, measure, value; within a draw the rows of :func:`per_entry`, in its order."""
    measures = _measures(measures)
    draws = np.atleast_2d(np.asarray(draws, dtype=float))
    judged = labels.label.notna().to_numpy()
    if draws.shape[1] != len(labels) or (np.isnan(draws) != ~judged).any():
        raise ValueError("every draw must give a gain to exactly the labelled candidates")
    depth = _depth(measures)
    lists = RankedLists.of(rankings, labels[judged], depth)
    gains = draws[:, judged]
    ranked = _padded(resolved(gains), lists.ranked, NOT_RANKED)
    ideal = _best_orders(lists, gains, depth)[:, lists.pool_of]
    top = _padded(gains, lists.pools, -np.inf).max(axis=-1, initial=-np.inf)[:, lists.pool_of]
    values = np.stack([m.values(ranked, ideal) for m in measures.values()], axis=-1)
    scoreable = np.stack([top >= m.min_grade for m in measures.values()], axis=-1)
    n_draws, n_lists, n_measures = values.shape
    table = pd.DataFrame({"draw": np.repeat(np.arange(n_draws), n_lists * n_measures),
                          **{key: np.tile(np.repeat(lists.lists[key].to_numpy(), n_measures), n_draws)
                             for key in ("ranker", "run", "entry_id")},
                          "measure": np.tile(list(measures), n_draws * n_lists),
                          "value": values.reshape(-1)})
    return table[scoreable.reshape(-1)].reset_index(drop=True)


def per_entry(rankings: pd.DataFrame, labels: pd.DataFrame,
              measures: Mapping[str, RankingMeasure] | None = None) -> pd.DataFrame:
    """Per (ranker, run, entry, measure) value over the scoreable entries (default measures: ``MEASURES``).

    ``rankings``: ranker, run, entry_id, rank, candidate_id; ``labels``: entry_id, candidate_id, label
    (nullable; null = unjudged). Returns columns ranker, run, entry_id, measure, value: per ranked list
    (:class:`RankedLists`' order) its measures in registry order."""
    draws = labels.label.to_numpy(dtype=float, na_value=np.nan)[None, :]
    return per_entry_draws(rankings, labels, draws, measures).drop(columns="draw")


def rankers_in(rankings: pd.DataFrame, order: Sequence[str] = RANKER_ORDER) -> list[str]:
    """The rankers of a rankings table in ``order`` (``lib.rankers.RANKER_ORDER``); a ranker the order does not
    name follows, alphabetically, so a new ranker is never silently dropped."""
    present = set(rankings["ranker"])
    return [m for m in order if m in present] + sorted(present - set(order))


def value_range(labels: pd.DataFrame, measures: Mapping[str, RankingMeasure] | None = None) -> pd.DataFrame:
    """Per (measure, scoreable entry): the value of the pool's best order (labels descending) and worst order
    (ascending) over its labelled candidates, and ``informative`` = they differ (by more than 1e−12).
    Columns measure, entry_id, best, worst, informative; computed with the measures' own kernels."""
    measures = _measures(measures)
    labelled = labels.dropna(subset=["label"])
    depth = _depth(measures)
    empty = pd.DataFrame(columns=["ranker", "run", "entry_id", "rank", "candidate_id"])
    lists = RankedLists.of(empty, labelled, depth)
    gains = labelled.label.to_numpy(dtype=float)
    best = _best_orders(lists, gains, depth)
    worst = _to_depth(np.sort(_padded(resolved(gains), lists.pools, np.inf), axis=-1), depth)
    worst[np.isinf(worst)] = NOT_RANKED
    top = _padded(gains, lists.pools, -np.inf).max(axis=-1, initial=-np.inf)
    entries = labelled.entry_id.unique()
    order = np.argsort(entries.astype(str), kind="stable")
    frames = [pd.DataFrame({"measure": name, "entry_id": entries[order], "best": m.values(best, best)[order],
                            "worst": m.values(worst, best)[order]})[top[order] >= m.min_grade]
              for name, m in measures.items()]
    table = pd.concat(frames, ignore_index=True)
    return table.assign(informative=(table.best - table.worst).abs() > 1e-12)


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
