"""Ranking metrics of the study, computed by ir_measures (pytrec_eval provider), one declarative object per
metric, registered by name. tests/test_metrics.py cross-checks them with an independent implementation.

Definitions (rank i = 1 is shown first; g_i the graded label 0/1/2 of the candidate at rank i):
* Hit@k (g ≥ t) = 1 if some candidate in the top k has g ≥ t, else 0  — ir_measures ``Success(rel=t)@k``.
  Two relevance definitions are reported: t = 1 (okay or better) and t = 2 (highly relevant only).
* NDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} g_i / log2(i + 1) (Järvelin & Kekäläinen 2002), linear gains
  — ir_measures ``nDCG@k`` (trec_eval's definition). Linear rather than exponential (2^g − 1) gains because
  the labels come from a weak judge whose 2-vs-1 distinction is the least reliable part of its output;
  exponential gains would triple the weight of exactly that distinction.
An entry whose pool has no candidate meeting a metric's relevance threshold has IDCG = 0 (or cannot be hit by
any method): it is excluded from that metric, and the count is reported — never scored 0.
Candidates without a label (the judge failed) are removed from every ranking before scoring (condensed
lists, Sakai 2007), so a failure never counts as "irrelevant".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Qrel, ScoredDoc


@dataclass(frozen=True)
class RankingMetric:
    name: str
    measure: object  # an ir_measures measure
    min_grade: int  # the relevance threshold that decides whether an entry can score at all
    cutoff: int


METRICS: dict[str, RankingMetric] = {m.name: m for m in [
    RankingMetric("Hit@1 (g≥1)", ir_measures.Success(rel=1) @ 1, 1, 1),
    RankingMetric("Hit@3 (g≥1)", ir_measures.Success(rel=1) @ 3, 1, 3),
    RankingMetric("Hit@1 (g=2)", ir_measures.Success(rel=2) @ 1, 2, 1),
    RankingMetric("Hit@3 (g=2)", ir_measures.Success(rel=2) @ 3, 2, 3),
    RankingMetric("NDCG@3", ir_measures.nDCG @ 3, 1, 3),
    RankingMetric("NDCG@5", ir_measures.nDCG @ 5, 1, 5),
]}


def scoreable_entries(labels: pd.DataFrame, metric: RankingMetric) -> set[str]:
    """Entries with at least one labelled candidate of grade ≥ the metric's threshold."""
    return set(labels.loc[labels.label >= metric.min_grade, "entry_id"])


def per_entry(rankings: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per (method, run, entry, metric) value over the scoreable entries.

    ``rankings``: method, run, entry_id, rank, candidate_id; ``labels``: entry_id, candidate_id, label
    (nullable int). Returns columns method, run, entry_id, metric, value.
    """
    labelled = labels.dropna(subset=["label"])
    qrels = [Qrel(r.entry_id, r.candidate_id, int(r.label)) for r in labelled.itertuples()]
    condensed = rankings[rankings.candidate_id.isin(labelled.candidate_id)]
    frames = []
    for (method, run), group in condensed.groupby(["method", "run"], sort=False):
        scored = [ScoredDoc(r.entry_id, r.candidate_id, -float(r.rank)) for r in group.itertuples()]
        values = pd.DataFrame([(m.query_id, str(m.measure), m.value) for m in
                               ir_measures.iter_calc([x.measure for x in METRICS.values()], qrels, scored)],
                              columns=["entry_id", "measure", "value"])
        frames.append(values.assign(method=method, run=run))
    table = pd.concat(frames, ignore_index=True)
    by_measure = {str(m.measure): m for m in METRICS.values()}
    table["metric"] = table.measure.map(lambda s: by_measure[s].name)
    keep = np.zeros(len(table), dtype=bool)
    for metric in METRICS.values():
        keep |= (table.metric == metric.name) & table.entry_id.isin(scoreable_entries(labelled, metric))
    return table.loc[keep, ["method", "run", "entry_id", "metric", "value"]].reset_index(drop=True)


def random_expectation(gains: list[int], metric: RankingMetric) -> float:
    """Expected value of ``metric`` for a uniformly random order of a pool with these gains.

    Hit@k (g ≥ t): 1 − C(n − r, k) / C(n, k), r = #{g ≥ t}.
    NDCG@k: each rank's expected gain is the pool mean ḡ, so E[DCG@k] = ḡ · Σ_{i ≤ min(k, n)} 1/log2(i + 1),
    divided by the (fixed) IDCG@k.
    """
    n, k = len(gains), metric.cutoff
    if metric.name.startswith("Hit"):
        r = sum(g >= metric.min_grade for g in gains)
        return 1.0 - math.comb(n - r, k) / math.comb(n, k) if k <= n else float(r > 0)
    discounts = [1 / math.log2(i + 1) for i in range(1, min(k, n) + 1)]
    ideal = sum(g * d for g, d in zip(sorted(gains, reverse=True), discounts))
    return float(np.mean(gains) * sum(discounts) / ideal) if ideal > 0 else float("nan")


def average_runs(values: pd.DataFrame) -> pd.DataFrame:
    """One value per (method, entry, metric): a method with several runs (random seeds) is averaged over them."""
    return values.groupby(["method", "entry_id", "metric"], as_index=False, sort=False)["value"].mean()


def method_summary(values: pd.DataFrame, seed: int, n_resamples: int = 10_000) -> pd.DataFrame:
    """Per (metric, method): entries, mean, sd and percentile-bootstrap 95% CI of the mean over entries."""
    from lib.stats import bootstrap_ci

    rows = []
    for (metric, method), group in average_runs(values).groupby(["metric", "method"], sort=False):
        low, high = bootstrap_ci(group.value.to_numpy(), seed, n_resamples)
        rows.append({"metric": metric, "method": method, "entries": len(group), "mean": group.value.mean(),
                     "sd": group.value.std(ddof=1), "ci low": low, "ci high": high})
    return pd.DataFrame(rows)


def compare_to_baselines(values: pd.DataFrame, system: str, seed: int, n_resamples: int = 10_000) -> pd.DataFrame:
    """Paired comparisons of ``system`` with every other method on every metric (same entries), with Holm
    adjustment over the whole family for each test and the entries a paired test would need."""
    from lib.stats import entries_needed, holm, paired_comparison

    wide = average_runs(values).pivot_table(index=["metric", "entry_id"], columns="method", values="value")
    rows = []
    for metric, table in wide.groupby(level="metric", sort=False):
        for baseline in [m for m in table.columns if m != system]:
            pair = table[[system, baseline]].dropna()
            out = paired_comparison(pair[system].to_numpy(), pair[baseline].to_numpy(), seed, n_resamples)
            sd = float((pair[system] - pair[baseline]).std(ddof=1))
            rows.append({"metric": metric, "baseline": baseline, **out,
                         "entries needed": entries_needed(out["mean diff"], sd)})
    result = pd.DataFrame(rows)
    for test in ("t-test", "wilcoxon", "permutation"):
        result[f"p holm {test}"] = holm(result[f"p {test}"].tolist())
    result["p holm"] = result["p holm permutation"]
    return result


def flip_labels(labels: pd.DataFrame, fraction: float, seed: int, grades: tuple[int, ...] = (0, 1, 2)) -> pd.DataFrame:
    """Copy of ``labels`` with a seeded ``fraction`` of the present labels replaced by a different grade,
    drawn uniformly — a simple model of judge noise at a measured disagreement rate."""
    rng = np.random.default_rng(seed)
    flipped = labels.copy()
    present = np.flatnonzero(flipped.label.notna().to_numpy())
    chosen = rng.choice(present, size=int(round(fraction * len(present))), replace=False)
    for i in chosen:
        current = int(flipped.label.iloc[i])
        flipped.iloc[i, flipped.columns.get_loc("label")] = int(rng.choice([g for g in grades if g != current]))
    return flipped


def mean_by_method(rankings: pd.DataFrame, labels: pd.DataFrame, metric: str = "NDCG@3") -> pd.Series:
    """Mean of ``metric`` per method (random averaged over its runs) under the given labels."""
    values = per_entry(rankings, labels)
    return average_runs(values[values.metric == metric]).groupby("method").value.mean()


def perturbation_check(rankings: pd.DataFrame, labels: pd.DataFrame, system: str, fraction: float, repeats: int,
                       seed: int, metric: str = "NDCG@3") -> tuple[float, pd.Series]:
    """Flip ``fraction`` of the labels ``repeats`` times (:func:`flip_labels`, seeds seed..seed+repeats−1).
    Returns the share of repetitions in which the method order by mean ``metric`` is unchanged, and per
    baseline the share in which the sign of (system − baseline) is unchanged."""
    base = mean_by_method(rankings, labels, metric)
    base_order = list(base.sort_values(ascending=False).index)
    baselines = [b for b in base.index if b != system]
    same_order, keeps = 0, pd.Series(0.0, index=baselines)
    for r in range(repeats):
        means = mean_by_method(rankings, flip_labels(labels, fraction, seed + r), metric)
        same_order += list(means.sort_values(ascending=False).index) == base_order
        keeps += [np.sign(means[system] - means[b]) == np.sign(base[system] - base[b]) for b in baselines]
    return same_order / repeats, keeps / repeats


def random_expected_rows(labels: pd.DataFrame) -> pd.DataFrame:
    """Per metric: the mean over scoreable entries of :func:`random_expectation` (method "random (expected)")."""
    labelled = labels.dropna(subset=["label"])
    gains = labelled.groupby("entry_id").label.apply(lambda s: [int(g) for g in s])
    rows = []
    for name, metric in METRICS.items():
        scored = sorted(scoreable_entries(labelled, metric))
        rows.append({"metric": name, "method": "random (expected)", "entries": len(scored),
                     "mean": float(np.mean([random_expectation(gains[e], metric) for e in scored]))})
    return pd.DataFrame(rows)
