"""Judge validity: how a judge's grades agree with human grades and with themselves.

* :func:`label_validity` / :func:`choose_label` — each label definition against human grades; the label
  chapter 04 uses is the definition with the highest quadratic-weighted κ.
* :func:`per_group_correlation` / :func:`geval_correlations` — G-Eval's summary-level correlation protocol.
* :func:`judge_consistency` — listwise position bias and pointwise vs listwise agreement.
* :func:`repeatability` / :func:`repeat_disagreement` — the same candidates judged again at temperature > 0.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import pandas as pd

from lib.analysis.stats import cohen_kappa, krippendorff_alpha
from lib.design import GRADES

# Label definition -> the labels-table column that holds it; chapter 03 chooses among them (choose_label).
LABEL_DEFINITIONS: dict[str, str] = {"pointwise argmax": "grade", "pointwise rounded E[g]": "rounded_expected",
                                     "listwise argmax": "listwise_grade"}


def sample_ids(ids: Sequence[Hashable], n: int, seed: int, key: Callable | None = None) -> list:
    """A seeded sample of ``n`` distinct ids without replacement, drawn from the sorted distinct ids and
    returned sorted (``key`` orders both, e.g. ``int`` for numeric strings)."""
    pool = sorted(set(ids), key=key)
    chosen = np.random.default_rng(seed).choice(pool, size=n, replace=False).tolist()
    return sorted(chosen, key=key)


def agreement(a: Sequence[int], b: Sequence[int], categories: Sequence[int] = GRADES) -> dict[str, float]:
    """n, exact agreement, Cohen's κ and quadratic-weighted κ of two grade sequences."""
    a, b = list(a), list(b)
    return {"n": len(a), "exact_agreement": float(np.mean(np.equal(a, b))) if a else float("nan"),
            "kappa": cohen_kappa(a, b, categories) if a else float("nan"),
            "weighted_kappa": cohen_kappa(a, b, categories, weights="quadratic") if a else float("nan")}


def agreement_of_columns(frame: pd.DataFrame, a: str, b: str, categories: Sequence[int] = GRADES) -> dict[str, float]:
    """:func:`agreement` of two grade columns over the rows where both are present."""
    both = frame[a].notna() & frame[b].notna()
    return agreement(frame.loc[both, a].astype(int), frame.loc[both, b].astype(int), categories)


def label_validity(frame: pd.DataFrame, human: str = "human_grade") -> pd.DataFrame:
    """Per label definition: items without that label (failed) and :func:`agreement` with the ``human`` column."""
    return pd.DataFrame({name: {"failed": int(frame[column].isna().sum()), **agreement_of_columns(frame, human, column)}
                         for name, column in LABEL_DEFINITIONS.items()}).T.rename_axis("label_definition")


def choose_label(validity: pd.DataFrame) -> str:
    """The label definition with the highest quadratic-weighted κ with the human grades (first on a tie)."""
    return str(validity["weighted_kappa"].idxmax())


def judge_validity_table(validity: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """:func:`label_validity` as the ``judge_validity`` table: with each definition's column, the data set,
    and which definition was chosen."""
    table = validity.reset_index()
    table["column"] = table.label_definition.map(LABEL_DEFINITIONS)
    table["dataset"] = dataset
    table["chosen"] = table.label_definition == choose_label(validity)
    return table


def expected_grade_correlation(frame: pd.DataFrame, human: str = "human_grade") -> tuple[float, int]:
    """Spearman ρ between the expected grade E[g] and the human grade over the items with an E[g]; (ρ, n)."""
    present = frame.loc[frame.expected_grade.notna(), ["expected_grade", human]]
    return float(present.corr("spearman").iloc[0, 1]), len(present)


def grade_distribution(labels: pd.DataFrame) -> pd.DataFrame:
    """Count of each grade under each label definition (grades × definitions)."""
    return pd.DataFrame({name: labels[column].value_counts().reindex(list(GRADES), fill_value=0)
                         for name, column in LABEL_DEFINITIONS.items()}).rename_axis("grade")


def judge_consistency(labels: pd.DataFrame) -> pd.DataFrame:
    """:func:`agreement` of the judge with itself: the listwise judge on the pool in generator order vs shuffled
    (position bias), and each pointwise label definition vs listwise."""
    pairs = {"listwise: generator order vs shuffled (position bias)": ("listwise_grade", "listwise_shuffled_grade"),
             "pointwise argmax vs listwise": ("grade", "listwise_grade"),
             "pointwise rounded E[g] vs listwise": ("rounded_expected", "listwise_grade")}
    return pd.DataFrame({name: agreement_of_columns(labels, a, b) for name, (a, b) in pairs.items()}).T


def repeat_pairs(labels: pd.DataFrame, repeat: pd.DataFrame) -> pd.DataFrame:
    """The repeat sample (``labels_repeat`` rows, in their order) beside the first judgment of the same
    candidates: candidate_id, grade_first, grade_repeat, expected_grade_first, expected_grade_repeat."""
    columns = ["candidate_id", "grade", "expected_grade"]
    return repeat[columns].merge(labels[columns], on="candidate_id", how="left", suffixes=("_repeat", "_first"),
                                 validate="one_to_one")


def repeatability(labels: pd.DataFrame, repeat: pd.DataFrame) -> dict[str, float]:
    """:func:`agreement` of the first and the repeated argmax grades, and Krippendorff's α (interval) of the
    first and repeated expected grades (alpha_expected_grade)."""
    pairs = repeat_pairs(labels, repeat)
    alpha = krippendorff_alpha([pairs.expected_grade_first.tolist(), pairs.expected_grade_repeat.tolist()],
                               level="interval")
    return {**agreement_of_columns(pairs, "grade_first", "grade_repeat"), "alpha_expected_grade": alpha}


def repeat_disagreement(labels: pd.DataFrame, repeat: pd.DataFrame) -> float:
    """Share of re-judged candidates whose repeated argmax grade differs from the first (both present):
    the judge-noise rate the perturbation check of chapter 04 uses (= 1 − exact agreement of :func:`repeatability`)."""
    pairs = repeat_pairs(labels, repeat)
    both = pairs.grade_first.notna() & pairs.grade_repeat.notna()
    return float((pairs.grade_first[both] != pairs.grade_repeat[both]).mean())


def per_group_correlation(frame: pd.DataFrame, group: str, x: str, y: str, coefficient: str = "spearman"
                          ) -> tuple[float, int]:
    """G-Eval's summary-level protocol (meta_eval_summeval.py in nlpyang/geval): correlate x and y inside
    each group, skip groups where either is constant, and average over the groups kept.
    ``coefficient``: spearman, pearson or kendall (scipy; Kendall is τ-b). Returns (mean, groups kept)."""
    from scipy import stats as sps

    func = {"spearman": sps.spearmanr, "pearson": sps.pearsonr, "kendall": sps.kendalltau}[coefficient]
    values = [func(g[x], g[y]).statistic for _, g in frame.groupby(group)
              if g[x].nunique() > 1 and g[y].nunique() > 1]
    return (float(np.mean(values)) if values else float("nan")), len(values)


def geval_correlations(frame: pd.DataFrame, group: str, human: str, scores: Sequence[str],
                       coefficients: Sequence[str] = ("spearman", "kendall")) -> pd.DataFrame:
    """Per score column: :func:`per_group_correlation` with the ``human`` column for each coefficient, and the
    groups kept (documents_kept, counted with the first coefficient)."""
    table = pd.DataFrame({score: {c: per_group_correlation(frame, group, human, score, c)[0] for c in coefficients}
                          for score in scores}).T
    table["documents_kept"] = [per_group_correlation(frame, group, human, s, coefficients[0])[1] for s in scores]
    return table
