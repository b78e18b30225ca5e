"""How far the method comparison depends on the judge: other label definitions, re-judged labels, and labels
perturbed at the judge's measured disagreement rate."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib.analysis.ranking import HEADLINE_MEASURE, average_runs, per_entry
from lib.design import GRADES


def flip_labels(labels: pd.DataFrame, fraction: float, seed: int, grades: Sequence[int] = GRADES) -> pd.DataFrame:
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


def mean_by_method(rankings: pd.DataFrame, labels: pd.DataFrame, measure: str = HEADLINE_MEASURE) -> pd.Series:
    """Mean of ``measure`` per method (random averaged over its runs) under the given labels."""
    values = per_entry(rankings, labels)
    return average_runs(values[values.measure == measure]).groupby("method").value.mean()


def label_variants(labels: pd.DataFrame, judge_validity: pd.DataFrame, repeat: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The labels table under each label definition of ``judge_validity`` (label := its column), and under the
    pointwise argmax grade with the re-judged candidates' repeat grades in place of the first ones."""
    variants = {f"{name} (column {column})": labels.assign(label=labels[column])
                for name, column in zip(judge_validity.label_definition, judge_validity.column)}
    replaced = labels.assign(label=labels.grade).set_index("candidate_id")
    replaced.loc[repeat.candidate_id, "label"] = repeat.set_index("candidate_id").grade
    variants[f"pointwise argmax, {len(repeat)} re-judged at T>0 replaced"] = replaced.reset_index()
    return variants


def means_by_variant(rankings: pd.DataFrame, variants: dict[str, pd.DataFrame],
                     measure: str = HEADLINE_MEASURE) -> pd.DataFrame:
    """Variant × method table of :func:`mean_by_method`."""
    return pd.DataFrame({name: mean_by_method(rankings, table, measure) for name, table in variants.items()}).T


def perturbation_check(rankings: pd.DataFrame, labels: pd.DataFrame, system: str, fraction: float, repeats: int,
                       seed: int, measure: str = HEADLINE_MEASURE, grades: Sequence[int] = GRADES
                       ) -> tuple[float, pd.Series]:
    """Flip ``fraction`` of the labels ``repeats`` times (:func:`flip_labels`, seeds seed..seed+repeats−1).
    Returns the share of repetitions in which the method order by mean ``measure`` is unchanged, and per
    baseline the share in which the sign of (system − baseline) is unchanged."""
    base = mean_by_method(rankings, labels, measure)
    base_order = list(base.sort_values(ascending=False).index)
    baselines = [b for b in base.index if b != system]
    same_order, keeps = 0, pd.Series(0.0, index=baselines)
    for r in range(repeats):
        means = mean_by_method(rankings, flip_labels(labels, fraction, seed + r, grades), measure)
        same_order += list(means.sort_values(ascending=False).index) == base_order
        keeps += [np.sign(means[system] - means[b]) == np.sign(base[system] - base[b]) for b in baselines]
    return same_order / repeats, keeps / repeats
