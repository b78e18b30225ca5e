"""How far the ranker comparison depends on the judge: other readings of the same calls, re-judged labels, and
labels moved by the judge's measured changes under another prompt layout.

Ranker orders are *weak* orders: rankers whose means agree to ``ORDER_DECIMALS`` decimals are tied, and two
orders are the same only when they rank and tie the same rankers alike (:func:`weak_order`) — a sort alone
would break ties arbitrarily and make "unchanged" depend on the sort algorithm.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import numpy as np
import pandas as pd

from lib.analysis.ranking import (
    HEADLINE_MEASURE,
    MEASURES,
    average_runs,
    per_entry,
    per_entry_draws,
    scoreable_entries,
)
from lib.analysis.validity import repeat_pairs
from lib.design import GRADES

ORDER_DECIMALS = 10  # means equal to this many decimals are tied (run averages differ in the last bits)


class LayoutChanges(TypedDict):
    """The gain's measured change under the alternate prompt layout: its column, the pairs compared, how many
    changed, and the changes (repeat − first) the perturbation check draws from."""
    column: str
    n: int
    changed: int
    changes: np.ndarray


def layout_changes(labels: pd.DataFrame, repeat: pd.DataFrame) -> LayoutChanges:
    """The ``label`` of each re-judged candidate under the alternate layout minus its first ``label``
    (:func:`lib.analysis.validity.repeat_pairs`, both present), with the gain's column (``labels.label_source``).
    A repeat table without a ``label`` column gives no changes."""
    sources = labels.label_source.dropna().unique()
    if len(sources) != 1:
        raise ValueError(f"labels.label_source has {len(sources)} distinct values, expected 1")
    if "label" not in repeat.columns:
        return {"column": str(sources[0]), "n": 0, "changed": 0, "changes": np.zeros(0)}
    pairs = repeat_pairs(labels, repeat).dropna(subset=["label_first", "label_repeat"])
    changes = (pairs.label_repeat.astype(float) - pairs.label_first.astype(float)).to_numpy()
    return {"column": str(sources[0]), "n": len(changes), "changed": int((changes != 0).sum()), "changes": changes}


def perturb_labels(labels: pd.DataFrame, changes: np.ndarray, seed: int,
                   scale: tuple[float, float] = (min(GRADES), max(GRADES))) -> pd.DataFrame:
    """Copy of ``labels`` in which every present label moves by a change drawn (seeded, with replacement) from
    the measured ``changes``, clipped to ``scale``: judge noise of the size and direction the layout repeat
    measured, whatever the label's type (a grade moves by the grade changes seen, E[g] by the E[g] changes)."""
    rng = np.random.default_rng(seed)
    gains = labels.label.to_numpy(dtype=float, na_value=np.nan, copy=True)
    present = ~np.isnan(gains)
    gains[present] = np.clip(gains[present] + rng.choice(changes, size=int(present.sum()), replace=True), *scale)
    return labels.assign(label=gains)


def mean_by_ranker(rankings: pd.DataFrame, labels: pd.DataFrame, measure: str = HEADLINE_MEASURE) -> pd.Series:
    """Mean of ``measure`` per ranker (random averaged over its runs) under the given labels."""
    values = per_entry(rankings, labels)
    return average_runs(values[values.measure == measure]).groupby("ranker").value.mean()


def means_by_draw(rankings: pd.DataFrame, labels: pd.DataFrame, draws: np.ndarray,
                  measure: str = HEADLINE_MEASURE) -> list[pd.Series]:
    """:func:`mean_by_ranker` under each row of ``draws`` (gains aligned with ``labels``' rows, NaN where its label
    is), all draws scored in one call (:func:`lib.analysis.ranking.per_entry_draws`); the means are taken in the
    same order as :func:`mean_by_ranker`'s, so a draw equal to the labels gives the same numbers to the bit."""
    values = per_entry_draws(rankings, labels, draws, {measure: MEASURES[measure]})
    by_entry = values.groupby(["draw", "ranker", "entry_id"], sort=False)["value"].mean()  # runs averaged
    means = {draw: part.droplevel("draw") for draw, part in by_entry.groupby(["draw", "ranker"]).mean().groupby(
        level="draw")}
    return [means.get(draw, pd.Series(dtype=float)).rename_axis("ranker").rename("value") for draw in range(len(draws))]


def weak_order(means: pd.Series, decimals: int = ORDER_DECIMALS) -> tuple[tuple[str, ...], ...]:
    """Methods grouped by mean (rounded to ``decimals``), groups from the highest mean down; a group holds the
    tied rankers, by name."""
    rounded = means.round(decimals)
    return tuple(tuple(sorted(rounded.index[rounded == v])) for v in sorted(rounded.unique(), reverse=True))


def order_text(means: pd.Series, decimals: int = ORDER_DECIMALS) -> str:
    """:func:`weak_order` as text: "a > b = c > d"."""
    return " > ".join(" = ".join(group) for group in weak_order(means, decimals))


def _sign(x: float, decimals: int = ORDER_DECIMALS) -> int:
    return int(np.sign(round(float(x), decimals)))


def label_variants(labels: pd.DataFrame, readings: Mapping[str, str], repeat: pd.DataFrame
                   ) -> dict[str, pd.DataFrame]:
    """The labels table with ``label`` := each reading (``readings``: column → name, columns of ``labels``), and
    the gain with the re-judged candidates' repeat labels (another prompt layout) in place of the first ones."""
    variants = {f"{name} (column {column})": labels.assign(label=labels[column]) for column, name in readings.items()}
    replaced = labels.set_index("candidate_id")
    replaced.loc[repeat.candidate_id, "label"] = repeat.set_index("candidate_id").label
    variants[f"the gain, {len(repeat)} re-judged under another prompt layout replaced"] = replaced.reset_index()
    return variants


def means_by_variant(rankings: pd.DataFrame, variants: dict[str, pd.DataFrame],
                     measure: str = HEADLINE_MEASURE) -> pd.DataFrame:
    """Variant × ranker table of :func:`mean_by_ranker`."""
    return pd.DataFrame({name: mean_by_ranker(rankings, table, measure) for name, table in variants.items()}).T


def entries_by_variant(variants: dict[str, pd.DataFrame], measure: str = HEADLINE_MEASURE) -> pd.Series:
    """Per variant: the entries ``measure`` scores under its labels (the n of :func:`means_by_variant`'s rows)."""
    return pd.Series({name: len(scoreable_entries(table.dropna(subset=["label"]), MEASURES[measure]))
                      for name, table in variants.items()}, name="entries")


def perturbation_check(rankings: pd.DataFrame, labels: pd.DataFrame, system: str, changes: np.ndarray,
                       repeats: int, seed: int, measure: str = HEADLINE_MEASURE) -> tuple[float, pd.Series]:
    """Move every label by a measured layout change ``repeats`` times (:func:`perturb_labels`, seeds
    seed..seed+repeats−1). Returns the share of repetitions in which the weak order of the rankers by mean
    ``measure`` (:func:`weak_order`, ties explicit) is unchanged, and per baseline the share in which the sign
    of (system − baseline) — +, − or tie — is unchanged. NaN shares when no change was measured or every
    measured change is 0 (no label would move), or ``repeats`` is 0."""
    base = mean_by_ranker(rankings, labels, measure)
    baselines = [b for b in base.index if b != system]
    if not len(changes) or not np.any(changes != 0) or repeats < 1:
        return float("nan"), pd.Series(float("nan"), index=baselines)
    base_order = weak_order(base)
    base_signs = {b: _sign(base[system] - base[b]) for b in baselines}
    draws = np.stack([perturb_labels(labels, changes, seed + r).label.to_numpy(dtype=float)
                      for r in range(repeats)])
    same_order, keeps = 0, pd.Series(0.0, index=baselines)
    for means in means_by_draw(rankings, labels, draws, measure):
        same_order += weak_order(means) == base_order
        keeps += [_sign(means[system] - means[b]) == base_signs[b] for b in baselines]
    return same_order / repeats, keeps / repeats
