"""Choosing on a dev split, reporting once on a disjoint test split: the split and the ordinal thresholds.

* :func:`split_groups` / :class:`Split` — a seeded split of whole groups (queries, documents), so the items of
  one query never straddle dev and test; drawn from the ids alone, before any judgment is looked at.
  :func:`sample_per_group` draws a seeded sample of items inside each group (e.g. 6 passages per query).
* :func:`fit_thresholds` / :func:`apply_thresholds` — ordinal cuts on a continuous score (a judge's expected
  grade, a BM25 score, a cosine) that map it to grades; fit on dev by maximising quadratic-weighted κ with the
  human grades, then applied unchanged to test. :func:`fit_on_dev` does both and hands the fit only dev rows.
* :class:`Method` / :func:`compare_on_dev` / :func:`choose_method` / :func:`freeze` — grading methods
  (a judged column as written, or thresholds on it) scored on dev, a fitted method by leave-one-group-out
  cuts (:func:`out_of_fold_grades`) so that no dev row is graded by cuts fit on it; one method chosen by a rule
  fixed in advance, frozen (:class:`Frozen`: its cuts fit on all of dev) and only then graded on test.

Cuts c_1 ≤ … ≤ c_{K−1} on scores s give the grade g(s) = g_0 + #{k : s ≥ c_k} on the scale g_0 < … < g_{K−1}
(ordinal regression by thresholds, as in McCullagh 1980, fit here by direct search rather than a likelihood).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class Split:
    """Disjoint dev and test group ids (sorted) of the ``group`` column, and the seed that drew them."""

    group: str
    dev: tuple[str, ...]
    test: tuple[str, ...]
    seed: int

    def __post_init__(self) -> None:
        if set(self.dev) & set(self.test):
            raise ValueError(f"dev and test share groups: {sorted(set(self.dev) & set(self.test))}")

    def dev_rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` whose group is in dev."""
        return frame[frame[self.group].isin(self.dev)]

    def test_rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` whose group is in test."""
        return frame[frame[self.group].isin(self.test)]


def split_groups(frame: pd.DataFrame, group: str, n_dev: int, seed: int, n_test: int | None = None,
                 key: Callable | None = None) -> Split:
    """A seeded split of the distinct values of ``frame[group]``: a random permutation of the sorted ids
    (``key`` orders them, e.g. ``int``; numpy ``default_rng(seed)``); the first ``n_dev`` are dev, the next
    ``n_test`` (default: all the rest) are test. Only ids are read, never grades or judgments."""
    ids = sorted(set(frame[group]), key=key)
    if n_dev < 1 or n_dev >= len(ids):
        raise ValueError(f"n_dev must be between 1 and {len(ids) - 1} ({len(ids)} groups), not {n_dev}")
    n_test = len(ids) - n_dev if n_test is None else n_test
    if n_test < 1 or n_dev + n_test > len(ids):
        raise ValueError(f"n_dev + n_test = {n_dev + n_test} groups asked for, {len(ids)} exist")
    order = np.random.default_rng(seed).permutation(len(ids))
    dev = sorted((ids[i] for i in order[:n_dev]), key=key)
    test = sorted((ids[i] for i in order[n_dev:n_dev + n_test]), key=key)
    return Split(group, tuple(dev), tuple(test), seed)


def sample_per_group(frame: pd.DataFrame, group: str, item: str, k: int, seed: int) -> pd.DataFrame:
    """Up to ``k`` rows of each group, drawn by id alone: per group (in sorted order, the i-th), ``k`` distinct
    ``item`` ids from its sorted ids with ``default_rng([seed, i])`` (all of them when it has fewer); the rows
    in ``frame`` order."""
    chosen = set()
    for i, (_, part) in enumerate(frame.groupby(group, sort=True)):
        ids = sorted(set(part[item]))
        picked = ids if len(ids) <= k else np.random.default_rng([seed, i]).choice(ids, size=k, replace=False)
        chosen |= {(part[group].iloc[0], x) for x in picked}
    keep = [(g, x) in chosen for g, x in zip(frame[group], frame[item], strict=True)]
    return frame[keep]


def apply_thresholds(scores: ArrayLike, cuts: Sequence[float], scale: Sequence[int]) -> pd.array:
    """g(s) = scale[#{k : s ≥ cuts[k]}] for each score (nullable Int64; a missing score gives a missing grade).
    ``cuts`` must be non-decreasing and one fewer than the grades of ``scale``."""
    bounds, grades = np.asarray(cuts, dtype=float), list(scale)
    if len(bounds) != len(grades) - 1 or np.any(np.diff(bounds) < 0):
        raise ValueError(f"need {len(grades) - 1} non-decreasing cuts for the scale {grades}, got {bounds.tolist()}")
    values = np.asarray(pd.to_numeric(pd.Series(scores), errors="coerce"), dtype=float)
    index = np.asarray(np.searchsorted(bounds, values, side="right"), dtype=int)
    return pd.array([None if np.isnan(v) else grades[i] for v, i in zip(values, index.tolist(), strict=True)],
                    dtype="Int64")


def candidate_cuts(scores: np.ndarray, grid_size: int) -> np.ndarray:
    """The midpoints between consecutive distinct scores (every way of separating the observed scores), thinned
    to at most ``grid_size`` evenly spaced ones (by rank) when there are more."""
    distinct = np.unique(scores)
    midpoints = (distinct[:-1] + distinct[1:]) / 2
    if len(midpoints) > grid_size:
        midpoints = midpoints[np.unique(np.linspace(0, len(midpoints) - 1, grid_size).round().astype(int))]
    return midpoints


def fit_thresholds(scores: ArrayLike, human: ArrayLike, scale: Sequence[int], grid_size: int = 40
                   ) -> tuple[float, ...]:
    """The non-decreasing cuts (:func:`apply_thresholds`) that maximise quadratic-weighted κ (Cohen 1968)
    between the thresholded ``scores`` and the ``human`` grades over the pairs where both are present.
    Exhaustive search over every non-decreasing choice of K − 1 cuts from :func:`candidate_cuts`, plus one
    cut below and one above every score (so a grade may stay unused); the first best in lexicographic order of
    the cuts wins a tie (a later choice must beat the best so far by more than 1e-12). With 40 candidates and 4
    grades that is C(44, 3) = 13,244 choices, scored at once: an item's grade under cuts at grid positions
    i_1 ≤ … ≤ i_{K−1} counts the cuts at or below its score, so the items graded at least r are those whose score
    lies at or above grid position i_r, and every choice's contingency table is a difference of cumulative counts
    of the items by grid position and human grade (:func:`_weighted_kappas`)."""
    scores = np.asarray(pd.to_numeric(pd.Series(scores), errors="coerce"), dtype=float)
    human = np.asarray(pd.to_numeric(pd.Series(human), errors="coerce"), dtype=float)
    both = ~np.isnan(scores) & ~np.isnan(human)
    scores, human = scores[both], human[both].astype(int)
    if len(scores) < 2:
        raise ValueError(f"{len(scores)} scored pairs: too few to fit thresholds")
    scale = list(scale)
    k = len(scale)
    grid = np.concatenate([[scores.min() - 1.0], candidate_cuts(scores, grid_size), [scores.max() + 1.0]])
    choices = np.array(list(itertools.combinations_with_replacement(range(len(grid)), k - 1)), dtype=int)
    # items at or above grid position q, per human grade: at_least[q, h] (q = 0 … len(grid))
    position = np.searchsorted(grid, scores, side="right")  # grid values at or below each score
    by_position = np.zeros((len(grid) + 1, k))
    np.add.at(by_position, (position, np.searchsorted(scale, human)), 1.0)
    at_least = by_position[::-1].cumsum(axis=0)[::-1]  # at_least[q] = items with position ≥ q
    graded = np.concatenate([np.broadcast_to(at_least[0], (len(choices), k))[:, None, :],
                             at_least[choices + 1]], axis=1)  # items graded ≥ r: (choices, k, human)
    counts = graded - np.concatenate([graded[:, 1:], np.zeros((len(choices), 1, k))], axis=1)
    kappas = _weighted_kappas(counts.transpose(0, 2, 1), len(scores))
    best, best_index = -np.inf, None
    for index, kappa in enumerate(kappas.tolist()):
        if kappa > best + 1e-12:
            best, best_index = kappa, index
    return tuple(float(c) for c in grid[choices[best_index]]) if best_index is not None else ()


def _weighted_kappas(counts: np.ndarray, n: int) -> np.ndarray:
    """κ_w = 1 − Σ w·O / Σ w·E of each (human × judge) count table in ``counts`` over ``n`` items, quadratic
    weights on category indices (equals :func:`lib.analysis.stats.cohen_kappa` with ``weights="quadratic"``,
    checked in the tests). −inf where the expected disagreement is 0 (κ undefined), so such cuts never win."""
    k = counts.shape[-1]
    weights = (np.subtract.outer(np.arange(k), np.arange(k)) ** 2).astype(float)
    observed = counts / n
    expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
    disagreement = (weights * expected).reshape(len(counts), k * k).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = 1 - (weights * observed).reshape(len(counts), k * k).sum(axis=1) / disagreement
    return np.where(disagreement > 0, kappa, -np.inf)


def fit_on_dev(frame: pd.DataFrame, split: Split, score: str, human: str, scale: Sequence[int],
               fit: Callable[..., tuple[float, ...]] = fit_thresholds) -> tuple[tuple[float, ...], pd.DataFrame]:
    """Cuts fit on the dev rows only (``fit(scores, human, scale)``), and the test rows with the thresholded
    grade in column ``<score>_grade`` (the cuts applied unchanged). The test rows' grades are never passed to
    ``fit``."""
    dev = split.dev_rows(frame)
    cuts = fit(dev[score].to_numpy(), dev[human].to_numpy(), scale)
    test = split.test_rows(frame).copy()
    test[f"{score}_grade"] = apply_thresholds(test[score].to_numpy(), cuts, scale)
    return tuple(cuts), test



@dataclass(frozen=True)
class Method:
    """A way to grade items from one column of a judged frame: the column's grades as written (``fit`` False:
    an argmax or a rounded E[g] grade), or ordinal thresholds fit on dev on the continuous column (``fit``
    True: E[g], a criteria mean, a BM25 score); ``calls``: LLM calls per item (0 for a non-LLM baseline)."""

    name: str
    column: str
    fit: bool
    calls: int


def group_folds(groups: Sequence[Any], k: int, seed: int) -> dict[Any, int]:
    """Each group's fold for K-fold cross-fitting: the groups in :func:`lib.analysis.stats.nested_sample` order
    (seeded; independent of the order ``groups`` come in), dealt round-robin into ``k`` folds of sizes that
    differ by at most one."""
    from lib.analysis.stats import nested_sample

    distinct = list(dict.fromkeys(groups))
    if not 2 <= k <= len(distinct):
        raise ValueError(f"{k} folds for {len(distinct)} groups: need 2 ≤ k ≤ groups")
    return {g: position % k for position, g in enumerate(nested_sample(distinct, len(distinct), seed))}


def out_of_fold_grades(dev: pd.DataFrame, group: str, score: str, human: str, scale: Sequence[int],
                       fit: Callable[..., tuple[float, ...]] = fit_thresholds,
                       folds: Mapping[Any, int] | None = None) -> pd.Series:
    """Cross-fitting by group: the grades of each fold's rows from cuts fit (``fit``) on the other folds' rows, so
    a fitted method is scored without grading the rows its cuts were fit on (index of ``dev``; nullable Int64).
    ``folds`` maps each group to its fold (:func:`group_folds`); without it every group is its own fold (leave one
    group out). Needs at least two folds."""
    fold_of = folds if folds is not None else {g: k for k, g in enumerate(sorted(set(dev[group])))}
    missing = set(dev[group]) - set(fold_of)
    if missing:
        raise ValueError(f"no fold for groups {sorted(missing)[:5]}")
    row_fold = dev[group].map(fold_of).to_numpy()
    if len(set(row_fold)) < 2:
        raise ValueError(f"{len(set(row_fold))} fold(s): cross-fitting needs at least two")
    out = pd.Series(pd.array([None] * len(dev), dtype="Int64"), index=dev.index)
    for held_out in sorted(set(row_fold)):
        held = row_fold == held_out
        cuts = fit(dev.loc[~held, score].to_numpy(), dev.loc[~held, human].to_numpy(), scale)
        out[held] = apply_thresholds(dev.loc[held, score].to_numpy(), cuts, scale)
    return out


def compare_on_dev(dev: pd.DataFrame, methods: Sequence[Method], group: str, human: str, scale: Sequence[int],
                   seed: int, n_resamples: int = 2000) -> pd.DataFrame:
    """Each method's agreement with the human grades on the dev rows: its grades as written, or
    :func:`out_of_fold_grades` for a fitted one; n (rows with both grades), failed (rows without a method
    grade), exact agreement, Cohen's κ and quadratic-weighted κ with CIs over the ``group`` units (the queries;
    :func:`lib.analysis.validity.agreement_ci`, seeded). One row per method, index ``method``."""
    from lib.analysis.validity import agreement, agreement_ci

    rows = {}
    for method in methods:
        grades = (out_of_fold_grades(dev, group, method.column, human, scale) if method.fit
                  else pd.Series(pd.array(dev[method.column], dtype="Int64"), index=dev.index))
        both = grades.notna() & dev[human].notna()
        a, b = dev.loc[both, human].astype(int), grades[both].astype(int)
        rows[method.name] = {"calls": method.calls, "fit": method.fit, "failed": int(grades.isna().sum()),
                             **agreement(a, b, scale),
                             **agreement_ci(a, b, dev.loc[both, group], seed, n_resamples, categories=scale)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")


def tied_with_best(table: pd.DataFrame) -> list[str]:
    """The LLM methods (calls > 0) of a :func:`compare_on_dev` table whose dev κ_w reaches the lower 95% bound
    of the best dev κ_w: on dev they cannot be told apart from the best. Without that bound (dev has fewer
    units than ``MIN_CI_UNITS``) none can be told apart. When that is nearly all of them, the choice of
    :func:`choose_method` rests on cost, not on measured quality."""
    llm = table[table["calls"] > 0]
    best = llm["weighted_kappa"].idxmax()
    bound = llm.at[best, "weighted_kappa_ci_low"]
    return llm.index[(llm["weighted_kappa"] >= bound) | (not np.isfinite(bound))].tolist()


def choose_method(table: pd.DataFrame) -> str:
    """The rule, fixed before any dev judgment is seen: among the LLM methods (calls > 0) of a
    :func:`compare_on_dev` table, those whose dev κ_w reaches the lower 95% bound of the best dev κ_w are
    indistinguishable from the best on dev; of those, the fewest calls per item wins (it is the cheapest to
    run on test and later), then the higher dev κ_w, then table order."""
    tied = table.loc[tied_with_best(table)]
    ranked = tied.assign(order=range(len(tied))).sort_values(["calls", "weighted_kappa", "order"],
                                                             ascending=[True, False, True], kind="stable")
    return str(ranked.index[0])


@dataclass(frozen=True)
class Frozen:
    """A method with everything it learnt from dev fixed before any test call: its cuts (None when it grades from
    its column as written)."""

    method: Method
    cuts: tuple[float, ...] | None

    def grades(self, rows: pd.DataFrame, scale: Sequence[int]) -> pd.Series:
        """The method's grades of ``rows`` (nullable Int64, indexed like ``rows``), the cuts applied unchanged."""
        values = rows[self.method.column].to_numpy()
        grades = (apply_thresholds(values, self.cuts, scale) if self.cuts is not None
                  else pd.array(values, dtype="Int64"))
        return pd.Series(grades, index=rows.index, name=self.method.name)


def freeze(method: Method, dev: pd.DataFrame, human: str, scale: Sequence[int],
           fit: Callable[..., tuple[float, ...]] = fit_thresholds) -> Frozen:
    """The method frozen on dev: a fitted method's cuts fit on every dev row (``fit``), else no cuts."""
    cuts = tuple(fit(dev[method.column].to_numpy(), dev[human].to_numpy(), scale)) if method.fit else None
    return Frozen(method, cuts)
