"""How far the ranker comparison depends on the judge: other label definitions, re-judged labels, and labels
perturbed at the judge's measured disagreement rate.

Ranker orders are *weak* orders: rankers whose means agree to ``ORDER_DECIMALS`` decimals are tied, and two
orders are the same only when they rank and tie the same rankers alike (:func:`weak_order`) — a sort alone
would break ties arbitrarily and make "unchanged" depend on the sort algorithm.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np
import pandas as pd

from lib.analysis.ranking import HEADLINE_MEASURE, MEASURES, average_runs, per_entry, scoreable_entries
from lib.analysis.validity import repeat_disagreement, repeat_pairs

ORDER_DECIMALS = 10  # means equal to this many decimals are tied (run averages differ in the last bits)


def label_grades(labels: pd.DataFrame) -> tuple[int, ...]:
    """The grades the label takes in ``labels.label`` (sorted): what a perturbed label may become."""
    return tuple(sorted(int(g) for g in labels.label.dropna().unique()))


class RepeatDisagreement(TypedDict):
    """The chosen label's measured repeat disagreement: the rate, the label definition's column, the pairs."""
    rate: float
    column: str
    n: int


def label_repeat_disagreement(labels: pd.DataFrame, repeat: pd.DataFrame) -> RepeatDisagreement:
    """Measured repeat disagreement of the label chapter 04 uses (:func:`lib.analysis.validity.repeat_disagreement`
    on the ``label`` columns chapter 03 writes into both tables), with the definition's column
    (``labels.label_source``) and n, the pairs compared. A repeat table without a ``label`` column gives NaN."""
    sources = labels.label_source.dropna().unique()
    if len(sources) != 1:
        raise ValueError(f"labels.label_source has {len(sources)} distinct values, expected 1")
    if "label" not in repeat.columns:
        return {"rate": float("nan"), "column": str(sources[0]), "n": 0}
    pairs = repeat_pairs(labels, repeat)
    n = int((pairs.label_first.notna() & pairs.label_repeat.notna()).sum())
    return {"rate": repeat_disagreement(labels, repeat) if n else float("nan"), "column": str(sources[0]), "n": n}


def flip_labels(labels: pd.DataFrame, fraction: float, seed: int, grades: Sequence[int]) -> pd.DataFrame:
    """Copy of ``labels`` with a seeded ``fraction`` of the present labels replaced by a different grade of
    ``grades``, drawn uniformly — a simple model of judge noise at a measured disagreement rate. ``grades`` is
    the set the label can take (:func:`label_grades`), so a perturbed label never takes a value the label never
    has; a chosen label whose grade is the only one in ``grades`` cannot flip (ValueError)."""
    rng = np.random.default_rng(seed)
    flipped = labels.copy()
    present = np.flatnonzero(flipped.label.notna().to_numpy())
    chosen = rng.choice(present, size=round(fraction * len(present)), replace=False)
    for i in chosen:
        current = int(flipped.label.iloc[i])
        others = [g for g in grades if g != current]
        if not others:
            raise ValueError(f"grade {current} has no other grade in {tuple(grades)} to flip to")
        flipped.iloc[i, flipped.columns.get_loc("label")] = int(rng.choice(others))
    return flipped


def mean_by_ranker(rankings: pd.DataFrame, labels: pd.DataFrame, measure: str = HEADLINE_MEASURE) -> pd.Series:
    """Mean of ``measure`` per ranker (random averaged over its runs) under the given labels."""
    values = per_entry(rankings, labels)
    return average_runs(values[values.measure == measure]).groupby("ranker").value.mean()


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


def label_variants(labels: pd.DataFrame, judge_validity: pd.DataFrame, repeat: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The labels table under each label definition of ``judge_validity`` (label := its column), and under the
    chosen label with the re-judged candidates' repeat labels (another prompt layout) in place of the first ones."""
    variants = {f"{name} (column {column})": labels.assign(label=labels[column])
                for name, column in zip(judge_validity.label_definition, judge_validity.column, strict=True)}
    replaced = labels.set_index("candidate_id")
    replaced.loc[repeat.candidate_id, "label"] = repeat.set_index("candidate_id").label
    variants[f"chosen label, {len(repeat)} re-judged under another prompt layout replaced"] = replaced.reset_index()
    return variants


def means_by_variant(rankings: pd.DataFrame, variants: dict[str, pd.DataFrame],
                     measure: str = HEADLINE_MEASURE) -> pd.DataFrame:
    """Variant × ranker table of :func:`mean_by_ranker`."""
    return pd.DataFrame({name: mean_by_ranker(rankings, table, measure) for name, table in variants.items()}).T


def entries_by_variant(variants: dict[str, pd.DataFrame], measure: str = HEADLINE_MEASURE) -> pd.Series:
    """Per variant: the entries ``measure`` scores under its labels (the n of :func:`means_by_variant`'s rows)."""
    return pd.Series({name: len(scoreable_entries(table.dropna(subset=["label"]), MEASURES[measure]))
                      for name, table in variants.items()}, name="entries")


def perturbation_check(rankings: pd.DataFrame, labels: pd.DataFrame, system: str, fraction: float, repeats: int,
                       seed: int, grades: Sequence[int], measure: str = HEADLINE_MEASURE
                       ) -> tuple[float, pd.Series]:
    """Flip ``fraction`` of the labels to another of ``grades`` ``repeats`` times (:func:`flip_labels`, seeds
    seed..seed+repeats−1). Returns the share of repetitions in which the weak order of the rankers by mean
    ``measure`` (:func:`weak_order`, ties explicit) is unchanged, and per baseline the share in which the sign
    of (system − baseline) — +, − or tie — is unchanged. NaN shares when ``fraction`` is not a number (no
    measured rate), ``grades`` has fewer than two grades (no label can change) or ``repeats`` is 0."""
    base = mean_by_ranker(rankings, labels, measure)
    baselines = [b for b in base.index if b != system]
    if not np.isfinite(fraction) or len(set(grades)) < 2 or repeats < 1:
        return float("nan"), pd.Series(float("nan"), index=baselines)
    base_order = weak_order(base)
    base_signs = {b: _sign(base[system] - base[b]) for b in baselines}
    same_order, keeps = 0, pd.Series(0.0, index=baselines)
    for r in range(repeats):
        means = mean_by_ranker(rankings, flip_labels(labels, fraction, seed + r, grades), measure)
        same_order += weak_order(means) == base_order
        keeps += [_sign(means[system] - means[b]) == base_signs[b] for b in baselines]
    return same_order / repeats, keeps / repeats
