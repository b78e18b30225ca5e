"""Judge validity: how a judge's grades agree with human grades and with themselves.

* :func:`agreement` / :func:`agreement_ci` — κ, quadratic-weighted κ and exact agreement of two grade columns,
  with intervals over the independent unit; :func:`confusion` the human × judge table.
* :func:`per_group_correlation` / :func:`geval_correlations` — G-Eval's summary-level correlation protocol;
  :func:`summary_level` and :func:`system_level` add CIs by resampling documents, :func:`geval_protocol` is
  the long table of both levels for several dimensions and their average.
* :func:`relevance_agreement` — the agreement set of a relevance judge on one scale: κ, quadratic-weighted κ,
  binarised κ (:func:`binarise`), Krippendorff's α (:func:`alpha_ci`), Spearman of the expected grade, each
  with its item-bootstrap CI.
* :func:`repeat_pairs` — the same candidates judged again under a perturbation (another prompt layout), beside
  their first judgment.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lib.analysis.stats import (
    MIN_CI_UNITS,
    Interval,
    MeasurementLevel,
    cohen_kappa,
    kappa_cells,
    kappa_interval,
    kappa_of_tables,
    kendall_tau_b,
    krippendorff_alpha,
    resample_counts,
    spearman,
    table_bootstrap,
    unit_bootstrap,
)
from lib.design import GRADES


def sample_ids(ids: Iterable[Any], n: int, seed: int, key: Callable[[Any], Any] | None = None) -> list[Any]:
    """A seeded sample of ``n`` distinct ids without replacement, drawn from the sorted distinct ids and
    returned sorted (``key`` orders both, e.g. ``int`` for numeric strings)."""
    pool = sorted(set(ids), key=key)
    chosen = np.random.default_rng(seed).choice(pool, size=n, replace=False).tolist()
    return sorted(chosen, key=key)


def agreement(a: ArrayLike, b: ArrayLike, categories: Sequence[int] = GRADES) -> dict[str, float]:
    """n, exact agreement, Cohen's κ and quadratic-weighted κ of two grade sequences."""
    a, b = list(a), list(b)
    return {"n": len(a), "exact_agreement": float(np.mean(np.equal(a, b))) if a else float("nan"),
            "kappa": cohen_kappa(a, b, categories) if a else float("nan"),
            "weighted_kappa": cohen_kappa(a, b, categories, weights="quadratic") if a else float("nan")}


def agreement_ci(a: ArrayLike, b: ArrayLike, units: ArrayLike, seed: int, n_resamples: int = 2000,
                 level: float = 0.95, categories: Sequence[int] = GRADES, unit: str = "queries") -> dict[str, Any]:
    """Percentile cluster-bootstrap CIs of Cohen's κ and quadratic-weighted κ over the independent ``units`` the
    items are nested in (``units[i]``: the query of item i; :func:`lib.analysis.stats.kappa_interval`): units are
    resampled with replacement and keep all their items, the two grades of an item together. Resamples where κ
    is undefined (both raters constant) are dropped. A rater constant on the whole sample has κ = 0 by
    construction in every resample, and an interval "0 to 0" would read as a precise measurement: there is none
    (NaN); nor is there with fewer than ``MIN_CI_UNITS`` units. Keys kappa_ci_low/high, weighted_kappa_ci_low/high,
    units (distinct units) and ci_over ("6 queries")."""
    a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    n_units = len(set(np.asarray(units, dtype=object).astype(str).tolist()))
    out: dict[str, Any] = {"units": n_units, "ci_over": f"{n_units} {unit}"}
    if len(set(a.tolist())) < 2 or len(set(b.tolist())) < 2:
        return out | dict.fromkeys(("kappa_ci_low", "kappa_ci_high", "weighted_kappa_ci_low", "weighted_kappa_ci_high"),
                                   float("nan"))
    for name, weights in (("kappa", None), ("weighted_kappa", "quadratic")):
        interval = kappa_interval(a, b, units, categories, unit, seed, n_resamples, level, weights)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = interval.low, interval.high
        out["ci_over"] = interval.ci_over
    return out


def confusion(frame: pd.DataFrame, human: str, judge: str, categories: Sequence[int] = GRADES) -> pd.DataFrame:
    """Human × judge grade counts over the rows where both are present, every grade shown."""
    both = frame[human].notna() & frame[judge].notna()
    table = pd.crosstab(frame.loc[both, human].astype(int), frame.loc[both, judge].astype(int))
    return table.reindex(index=list(categories), columns=list(categories), fill_value=0).rename_axis(
        index=f"human ({human})", columns=f"judge ({judge})")


def repeat_pairs(labels: pd.DataFrame, repeat: pd.DataFrame) -> pd.DataFrame:
    """The repeat sample (``labels_repeat`` rows, in their order) beside the first judgment of the same
    candidates: candidate_id, label_first, label_repeat, expected_grade_first, expected_grade_repeat."""
    columns = ["candidate_id", "label", "expected_grade"]
    return repeat[columns].merge(labels[columns], on="candidate_id", how="left", suffixes=("_repeat", "_first"),
                                 validate="one_to_one")


def document_correlations(frame: pd.DataFrame, group: str, x: str, y: str, coefficient: str = "spearman"
                          ) -> pd.Series:
    """The correlation of x and y inside each group (document) where neither is constant, indexed by group;
    groups with fewer than two rows or a constant side are left out (G-Eval's rule).
    ``coefficient``: spearman, pearson or kendall (scipy; Kendall is τ-b)."""
    from scipy import stats as sps

    func = {"spearman": spearman, "pearson": lambda a, b: sps.pearsonr(a, b).statistic,
            "kendall": lambda a, b: sps.kendalltau(a, b).statistic}[coefficient]
    values = {name: float(func(g[x], g[y])) for name, g in frame.groupby(group, sort=True)
              if g[x].nunique() > 1 and g[y].nunique() > 1}
    return pd.Series(values, dtype=float, name=f"{coefficient}({x}, {y})").rename_axis(group)


def within_unit_correlation(frame: pd.DataFrame, unit: str, x: str, y: str, coefficient: str, seed: int,
                            n_resamples: int = 2000, unit_name: str = "queries") -> Interval:
    """The correlation of x and y inside each unit (query), averaged over the units where neither side is
    constant (:func:`document_correlations`; G-Eval's per-document protocol), with a percentile bootstrap
    interval over those units (:func:`lib.analysis.stats.unit_bootstrap`). Kendall's τ within queries is what a
    ranking evaluation relies on: it ignores how a judge's scale sits between queries."""
    per_unit = document_correlations(frame, unit, x, y, coefficient)
    return unit_bootstrap(np.mean, [per_unit.to_numpy()], per_unit.index.to_numpy(), unit_name, seed, n_resamples)


def per_group_correlation(frame: pd.DataFrame, group: str, x: str, y: str, coefficient: str = "spearman"
                          ) -> tuple[float, int]:
    """G-Eval's summary-level protocol (meta_eval_summeval.py in nlpyang/geval): correlate x and y inside
    each group, skip groups where either is constant, and average over the groups kept
    (:func:`document_correlations`). Returns (mean, groups kept)."""
    values = document_correlations(frame, group, x, y, coefficient)
    return (float(values.mean()) if len(values) else float("nan")), len(values)


def geval_correlations(frame: pd.DataFrame, group: str, human: str, scores: Sequence[str],
                       coefficients: Sequence[str] = ("spearman", "kendall")) -> pd.DataFrame:
    """Per score column: :func:`per_group_correlation` with the ``human`` column for each coefficient, and the
    groups kept (documents_kept, counted with the first coefficient)."""
    table = pd.DataFrame({score: {c: per_group_correlation(frame, group, human, score, c)[0] for c in coefficients}
                          for score in scores}).T
    table["documents_kept"] = [per_group_correlation(frame, group, human, s, coefficients[0])[1] for s in scores]
    return table


def correlation_table(frame: pd.DataFrame, scores: Sequence[str], human: str, by: str | None, seed: int,
                      unit: str, unit_name: str, n_resamples: int = 2000) -> pd.DataFrame:
    """Spearman's ρ and Kendall's τ-b of each column in ``scores`` with ``human`` over the rows where both are
    present, per group of ``by`` (None: no groups) and over all rows (group ``all``), each with its CI resampling
    the independent units named by column ``unit`` (``unit_name``, e.g. "questions" for answers nested in
    questions; :func:`lib.analysis.stats.correlation_ci`). Index (by or "group", score, method)."""
    from lib.analysis.stats import correlation_ci

    level = by or "group"
    rows = []
    for group, part in [*(frame.groupby(by, sort=True) if by else []), ("all", frame)]:
        for column in scores:
            both = part[[column, human, unit]].dropna(subset=[column, human])
            for method in ("spearman", "kendall"):
                rows.append({level: group, "score": column, "method": method,
                             **correlation_ci(both[column], both[human], method, seed=seed, n_resamples=n_resamples,
                                              units=both[unit], unit=unit_name)})
    return pd.DataFrame(rows).set_index([level, "score", "method"])


def _order_text(means: pd.Series) -> str:
    """Systems from best to worst, tied means joined by "=" (rounded to 12 digits so float noise breaks no tie)."""
    groups = means.round(12).groupby(means.round(12), sort=True)
    return " > ".join(" = ".join(sorted(part.index)) for _, part in reversed(list(groups)))


def system_orders(frame: pd.DataFrame, scores: Sequence[str], human: str, by: str, system: str = "system"
                  ) -> pd.DataFrame:
    """Do the scores order the systems as the human ratings do? Per group of ``by`` and score column: each
    system's mean score (over its rows with a score) and mean ``human`` rating, both orders (ties shown with
    "="), and Kendall's τ-b between the two sets of means over the systems with a score (τ-b corrects for ties;
    Kendall 1945; ``scipy.stats.kendalltau``; NaN with fewer than 2 systems or a constant side). Index (by,
    score)."""
    from scipy.stats import kendalltau

    rows = []
    for (group, column), part in frame.melt(id_vars=[by, system, human], value_vars=list(scores),
                                             var_name="score").groupby([by, "score"], sort=True):
        means = part.groupby(system)[["value", human]].mean()
        scored = means.dropna()
        tau = (kendalltau(scored["value"], scored[human]).statistic
               if len(scored) > 1 and scored["value"].nunique() > 1 and scored[human].nunique() > 1 else float("nan"))
        rows.append({by: group, "score": column, "systems scored": len(scored),
                     "order by score": _order_text(scored["value"]), f"order by {human}": _order_text(means[human]),
                     "kendall_tau": float(tau)})
    return pd.DataFrame(rows).set_index([by, "score"])


def _percentile_ci(distribution: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval of the finite bootstrap values (Efron & Tibshirani 1993, §13.3); NaN when none."""
    finite = distribution[np.isfinite(distribution)]
    if not len(finite):
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def summary_level(frame: pd.DataFrame, group: str, pairs: Sequence[tuple[str, str]], coefficient: str, seed: int,
                  n_resamples: int = 2000, level: float = 0.95) -> dict[str, float]:
    """G-Eval's summary-level correlation, averaged over ``pairs`` of (human, score) columns (one pair: the
    per-dimension number; the four SummEval dimensions: G-Eval's AVG column), with a document-bootstrap CI.

    value = mean over pairs p of mean over the documents kept for p of corr_d(p) (:func:`document_correlations`:
    documents where either side is constant are skipped, per pair). CI: documents are resampled with
    replacement (all pairs together, so the average keeps its dependence between dimensions); in a resample
    each pair's mean is taken over its kept documents as drawn (with multiplicity); percentile interval.
    Keys: value, documents (distinct documents kept by some pair: those the bootstrap draws from), ci_low, ci_high
    (NaN with fewer than ``MIN_CI_UNITS`` documents, the study's rule for every interval). Items that share no
    document (each its own group) have no within-document correlation: refused, not returned as NaN."""
    if frame[group].nunique() == len(frame):
        raise ValueError(f"every item is its own {group!r}: a within-{group} correlation needs several items per "
                         "group; correlate the items pooled (lib.analysis.stats.correlation_ci) instead")
    per_document = pd.concat([document_correlations(frame, group, human, score, coefficient).rename(i)
                              for i, (human, score) in enumerate(pairs)], axis=1)
    if per_document.empty:
        return {"value": float("nan"), "documents": 0, "ci_low": float("nan"), "ci_high": float("nan")}
    values = per_document.to_numpy(dtype=float)
    kept = ~np.isnan(values)
    counts = resample_counts(len(values), seed, n_resamples)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts @ np.where(kept, values, 0.0)) / (counts @ kept)
    distribution = means.mean(axis=1)
    # a pair without a kept document is undefined, and so is the average over pairs that includes it
    value = float(np.mean([values[kept[:, j], j].mean() if kept[:, j].any() else np.nan
                           for j in range(values.shape[1])]))
    documents = int(kept.any(axis=1).sum())
    low, high = (_percentile_ci(distribution, level) if documents >= MIN_CI_UNITS else (float("nan"), float("nan")))
    return {"value": value, "documents": documents, "ci_low": low, "ci_high": high}


def system_level(frame: pd.DataFrame, group: str, system: str, human: str, score: str, coefficient: str, seed: int,
                 n_resamples: int = 2000, level: float = 0.95) -> dict[str, float]:
    """System-level correlation: each system's mean score over the documents is correlated with its mean human
    score (what a leaderboard user reads), with a CI from resampling documents (a resample draws documents with
    replacement; each system's two means are recomputed over the drawn documents, with multiplicity, over the
    rows where the score is present). ``coefficient``: spearman or kendall (τ-b). Keys: value, systems,
    documents, ci_low, ci_high (NaN with fewer than ``MIN_CI_UNITS`` documents)."""
    if coefficient not in ("spearman", "kendall"):
        raise ValueError(f"coefficient must be spearman or kendall, not {coefficient!r}")
    rows = frame.dropna(subset=[score, human])
    scores = rows.pivot_table(index=group, columns=system, values=score, aggfunc="mean")
    humans = rows.pivot_table(index=group, columns=system, values=human,
                              aggfunc="mean").loc[scores.index, scores.columns]
    s, h = scores.to_numpy(dtype=float), humans.to_numpy(dtype=float)
    present = ~np.isnan(s)

    def correlations(score_means: np.ndarray, human_means: np.ndarray) -> np.ndarray:
        """One coefficient per row of systems' means, over the systems with both means; NaN with fewer than three
        such systems or a constant side (for τ-b: no pair ordered)."""
        ok = ~np.isnan(score_means) & ~np.isnan(human_means)
        if coefficient == "kendall":
            values = kendall_tau_b(score_means, human_means, ok)
        else:
            values = np.array([spearman(a[k], b[k]) if k.sum() > 2 else np.nan  # NaN for a constant side
                               for a, b, k in zip(score_means, human_means, ok, strict=True)])
        return np.where(ok.sum(axis=1) > 2, values, np.nan)

    value = float(correlations(np.nanmean(s, axis=0)[None], np.nanmean(h, axis=0)[None])[0]) if len(s) else np.nan
    counts = resample_counts(len(s), seed, n_resamples)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = counts @ present
        score_means = (counts @ np.where(present, s, 0.0)) / n
        human_means = (counts @ np.where(present, h, 0.0)) / n
    distribution = correlations(score_means, human_means)
    low, high = _percentile_ci(distribution, level) if len(s) >= MIN_CI_UNITS else (float("nan"), float("nan"))
    return {"value": value, "systems": int(scores.shape[1]), "documents": len(s), "ci_low": low, "ci_high": high}


def geval_protocol(frame: pd.DataFrame, dimensions: Mapping[str, str], group: str = "doc_id",
                   system: str = "system_id", seed: int = 0, n_resamples: int = 2000,
                   coefficients: Sequence[str] = ("spearman", "kendall")) -> pd.DataFrame:
    """G-Eval's table for one score variant: per dimension (``dimensions`` maps the human column to the score
    column) and for their average (``average``, summary level only, as G-Eval's AVG), the summary-level
    (:func:`summary_level`) and system-level (:func:`system_level`) correlations with CIs by resampling
    documents. Long table: dimension, level, coefficient, value, ci_low, ci_high, n (documents kept at summary
    level, systems at system level), documents (the documents the CI resamples, at both levels). No system-level
    row over fewer than two documents: it would repeat the one document's summary-level correlation."""
    rows = []
    for coefficient in coefficients:
        for human, score in dimensions.items():
            summary = summary_level(frame, group, [(human, score)], coefficient, seed, n_resamples)
            rows.append({"dimension": human, "level": "summary", "coefficient": coefficient,
                         "value": summary["value"], "ci_low": summary["ci_low"], "ci_high": summary["ci_high"],
                         "n": summary["documents"], "documents": summary["documents"]})
            systems = system_level(frame, group, system, human, score, coefficient, seed, n_resamples)
            if systems["documents"] < 2:  # over one document the system level is that document's correlation again
                continue
            rows.append({"dimension": human, "level": "system", "coefficient": coefficient,
                         "value": systems["value"], "ci_low": systems["ci_low"], "ci_high": systems["ci_high"],
                         "n": systems["systems"], "documents": systems["documents"]})
        if len(dimensions) > 1:
            average = summary_level(frame, group, list(dimensions.items()), coefficient, seed, n_resamples)
            rows.append({"dimension": "average", "level": "summary", "coefficient": coefficient,
                         "value": average["value"], "ci_low": average["ci_low"], "ci_high": average["ci_high"],
                         "n": average["documents"], "documents": average["documents"]})
    return pd.DataFrame(rows)


def binarise(grades: Sequence, relevant_from: int) -> pd.array:
    """1 where grade ≥ ``relevant_from`` (TREC DL's binary relevance: 2 and 3 of 0–3), else 0; missing stays
    missing (nullable Int64)."""
    values = pd.array(list(grades), dtype="Int64")
    return pd.array([None if pd.isna(g) else int(g >= relevant_from) for g in values], dtype="Int64")


def alpha_ci(a: ArrayLike, b: ArrayLike, units: ArrayLike, seed: int,
             level_of_measurement: MeasurementLevel = "ordinal", n_resamples: int = 2000, level: float = 0.95,
             unit: str = "queries") -> dict[str, float]:
    """Krippendorff's α of two raters (:func:`lib.analysis.stats.krippendorff_alpha`) with a percentile
    cluster-bootstrap CI over the ``units`` the items are nested in (:func:`lib.analysis.stats.unit_bootstrap`;
    the two ratings of an item kept together); resamples where α is undefined (a single value in the resample)
    are dropped. α pools both raters' grade distributions, so a judge that orders items as the humans do but on
    a shifted scale gets a low or negative α: it measures agreement including calibration. Keys alpha,
    alpha_ci_low, alpha_ci_high."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)

    def alpha(x: np.ndarray, y: np.ndarray) -> float:
        if len(np.unique(np.concatenate([x, y]))) < 2:
            return float("nan")
        return krippendorff_alpha([x.tolist(), y.tolist()], level=level_of_measurement)

    interval = unit_bootstrap(alpha, [a, b], units, unit, seed, n_resamples, level)
    return {"alpha": interval.value, "alpha_ci_low": interval.low, "alpha_ci_high": interval.high}


def relevance_agreement(frame: pd.DataFrame, judge: str, unit: str, human: str = "human_grade",
                        expected: str | None = "expected_grade", scale: Sequence[int] = GRADES,
                        relevant_from: int = 2, seed: int = 0, n_resamples: int = 2000) -> dict[str, Any]:
    """The agreement set of a relevance judge with human grades on one ``scale`` (the judge's and the humans'
    grades must share it), over the items with both grades: n, failed (items without a judge grade), exact
    agreement, Cohen's κ and quadratic-weighted κ (:func:`agreement` with :func:`agreement_ci`), κ of the
    grades binarised at ``relevant_from`` (:func:`binarise`) with its CI (keys binary_kappa, binary_kappa_ci_*),
    Krippendorff's α (ordinal, :func:`alpha_ci`), and Spearman's ρ of the ``expected`` grade with the human grade
    (keys expected_rho, expected_n, expected_rho_ci_*), pooled and *within* units, averaged over the units where
    neither side is constant (:func:`per_group_correlation`, G-Eval's per-document protocol; keys
    expected_rho_within, expected_groups, expected_rho_within_ci_*): pooled over queries, ρ also rewards a judge
    for telling easy queries from hard ones, which is not the ranking use.

    Every interval resamples the independent units named by column ``unit`` (the query), with all their items
    (:func:`lib.analysis.stats.unit_bootstrap`, seeded with ``seed``; keys units and ci_over); none with fewer
    than ``MIN_CI_UNITS`` units. A judge that gives one grade to every item (on the scale, or binarised) gets κ 0
    by construction and no κ interval (:func:`agreement_ci`)."""
    both = frame[human].notna() & frame[judge].notna()
    a, b = frame.loc[both, human].astype(int).to_numpy(), frame.loc[both, judge].astype(int).to_numpy()
    units = frame.loc[both, unit].to_numpy()
    out: dict[str, Any] = {"failed": int(frame[judge].isna().sum()), **agreement(a, b, scale),
                           **agreement_ci(a, b, units, seed, n_resamples, categories=scale)}
    binary_a, binary_b = (binarise(x, relevant_from).astype(int) for x in (a, b))
    binary = agreement_ci(binary_a, binary_b, units, seed, n_resamples, categories=(0, 1))
    out |= {"binary_kappa": cohen_kappa(list(binary_a), list(binary_b), (0, 1)),
            "binary_kappa_ci_low": binary["kappa_ci_low"], "binary_kappa_ci_high": binary["kappa_ci_high"]}
    out |= alpha_ci(a, b, units, seed, "ordinal", n_resamples)
    if expected is not None:
        present = frame[[expected, human, unit]].dropna()
        rho = unit_bootstrap(spearman, [present[expected].to_numpy(float), present[human].to_numpy(float)],
                             present[unit], "queries", seed, n_resamples)
        out |= {"expected_rho": rho.value, "expected_n": len(present), "expected_rho_ci_low": rho.low,
                "expected_rho_ci_high": rho.high}
        within = within_unit_correlation(present, unit, expected, human, "spearman", seed, n_resamples)
        out |= {"expected_rho_within": within.value, "expected_groups": within.units,
                "expected_rho_within_ci_low": within.low, "expected_rho_within_ci_high": within.high}
    return out


def weighted_kappa_difference(frame: pd.DataFrame, a: str, b: str, unit: str, human: str = "human_grade",
                              categories: Sequence[int] = GRADES, seed: int = 0, n_resamples: int = 2000,
                              level: float = 0.95) -> dict[str, Any]:
    """κ_w(human, a) − κ_w(human, b) (quadratic weights, :func:`lib.analysis.stats.cohen_kappa`) over the rows
    where the human grade and both judge grades are present, with a percentile cluster-bootstrap CI over the
    units named by column ``unit`` (:func:`lib.analysis.stats.table_bootstrap`): a resample keeps each drawn
    unit's rows with their three grades, so the two κ_w share their resample and the interval is that of the
    paired difference; resamples where either κ_w is undefined are dropped; no interval with fewer than
    ``MIN_CI_UNITS`` units. Keys n, units, difference, ci_low, ci_high, ci_over."""
    grades = frame[[human, a, b]].to_numpy(dtype=float)  # by position: a and b may name the same column
    present = ~np.isnan(grades).any(axis=1)
    h, x, y = grades[present].astype(int).T

    def difference(tables: np.ndarray) -> np.ndarray:
        return kappa_of_tables(tables[0], "quadratic") - kappa_of_tables(tables[1], "quadratic")

    interval = table_bootstrap([kappa_cells(h, x, categories), kappa_cells(h, y, categories)], len(categories),
                               difference, frame[unit].to_numpy()[present], "queries", seed, n_resamples, level)
    return {"n": int(present.sum()), "units": interval.units, "difference": interval.value, "ci_low": interval.low,
            "ci_high": interval.high, "ci_over": interval.ci_over}
