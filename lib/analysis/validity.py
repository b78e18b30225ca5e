"""Judge validity: how a judge's grades agree with human grades and with themselves.

* :func:`label_validity` / :func:`choose_label` — each label definition against human grades, with item-
  bootstrap CIs; the label chapter 04 uses is the definition with the highest quadratic-weighted κ.
  :func:`constant_baselines` gives what "always grade g" scores on the same items, :func:`confusion` the
  human × judge table, :func:`near_cut` how many expected grades sit next to a rounding cut.
* :func:`per_group_correlation` / :func:`geval_correlations` — G-Eval's summary-level correlation protocol.
* :func:`judge_consistency` — listwise position bias and pointwise vs listwise agreement.
* :func:`repeatability` / :func:`repeat_disagreement` — the chosen label of the same candidates judged again
  under a perturbation (another prompt layout).
* :func:`first_position_rate` — how often the item shown first in a listwise call gets the top grade.
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


def agreement_ci(a: Sequence[int], b: Sequence[int], seed: int, n_resamples: int = 2000, level: float = 0.95,
                 categories: Sequence[int] = GRADES) -> dict[str, float]:
    """Percentile item-bootstrap CIs (Efron & Tibshirani 1993, §13.3) of Cohen's κ and quadratic-weighted κ:
    items are resampled with replacement, pairs kept together (scipy.stats.bootstrap, ``paired=True``, seeded).
    Resamples where κ is undefined (both raters constant) are dropped. Keys kappa_ci_low/high and
    weighted_kappa_ci_low/high."""
    from scipy.stats import bootstrap

    a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    out: dict[str, float] = {}
    for name, weights in (("kappa", None), ("weighted_kappa", "quadratic")):
        def statistic(x: np.ndarray, y: np.ndarray) -> float:
            return cohen_kappa(x, y, categories, weights=weights)

        result = bootstrap((a, b), statistic, paired=True, vectorized=False, n_resamples=n_resamples,
                           confidence_level=level, method="percentile", rng=np.random.default_rng(seed))
        distribution = result.bootstrap_distribution[~np.isnan(result.bootstrap_distribution)]
        tail = (1 - level) / 2 * 100
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = (float(v) for v in np.percentile(distribution, [tail, 100 - tail]))
    return out


def label_validity(frame: pd.DataFrame, human: str = "human_grade", seed: int = 0, n_resamples: int = 2000
                   ) -> pd.DataFrame:
    """Per label definition: items without that label (failed), :func:`agreement` with the ``human`` column
    and its :func:`agreement_ci`."""
    rows = {}
    for name, column in LABEL_DEFINITIONS.items():
        both = frame[human].notna() & frame[column].notna()
        a, b = frame.loc[both, human].astype(int), frame.loc[both, column].astype(int)
        rows[name] = {"failed": int(frame[column].isna().sum()), **agreement(a, b), **agreement_ci(a, b, seed, n_resamples)}
    return pd.DataFrame(rows).T.rename_axis("label_definition")


def constant_baselines(human: Sequence[int], categories: Sequence[int] = GRADES) -> pd.DataFrame:
    """What a judge that always answers grade g scores against ``human``, for each g: exact agreement equals
    the share of items humans graded g (the majority grade's row is the best a constant can do), and κ is 0
    or undefined (NaN) by construction — the floor every agreement figure should be read against."""
    human = list(human)
    counts = pd.Series(human).value_counts()
    majority = counts.idxmax()
    rows = {f"always {g}" + (" (majority)" if g == majority else ""): agreement(human, [g] * len(human), categories)
            for g in categories}
    return pd.DataFrame(rows).T.rename_axis("label_definition")


def confusion(frame: pd.DataFrame, human: str, judge: str, categories: Sequence[int] = GRADES) -> pd.DataFrame:
    """Human × judge grade counts over the rows where both are present, every grade shown."""
    both = frame[human].notna() & frame[judge].notna()
    table = pd.crosstab(frame.loc[both, human].astype(int), frame.loc[both, judge].astype(int))
    return table.reindex(index=list(categories), columns=list(categories), fill_value=0).rename_axis(
        index=f"human ({human})", columns=f"judge ({judge})")


def near_cut(expected: pd.Series, width: float = 0.05, categories: Sequence[int] = GRADES) -> dict[str, int]:
    """How many expected grades lie within ±``width`` of a rounding cut (g + 0.5 between neighbouring grades),
    per cut and in total: labels a small change of p(g) could flip."""
    values = expected.dropna().to_numpy()
    cuts = [g + 0.5 for g in list(categories)[:-1]]
    counts = {f"within ±{width} of {cut}": int(np.sum(np.abs(values - cut) <= width)) for cut in cuts}
    return {"n": len(values), **counts, "total": sum(counts.values())}


def choose_label(validity: pd.DataFrame) -> str:
    """The label definition with the highest quadratic-weighted κ with the human grades (first on a tie)."""
    return str(validity["weighted_kappa"].idxmax())


def judge_validity_table(validity: pd.DataFrame, dataset: str, model: str) -> pd.DataFrame:
    """:func:`label_validity` as the ``judge_validity`` table: with each definition's column, the data set,
    the judge ``model`` and which definition was chosen."""
    table = validity.reset_index()
    table["column"] = table.label_definition.map(LABEL_DEFINITIONS)
    table["dataset"] = dataset
    table["model"] = model
    table["chosen"] = table.label_definition == choose_label(validity)
    return table


def cut_effect(frame: pd.DataFrame, human: str, cut: str, full: str) -> pd.DataFrame:
    """What cutting the judged text costs: :func:`agreement` of the label on the cut text with the label on the
    full text, and of each with the ``human`` grade, on the same items."""
    pairs = {"label on cut text vs label on full text": (cut, full), "label on cut text vs human": (human, cut),
             "label on full text vs human": (human, full)}
    return pd.DataFrame({name: agreement_of_columns(frame, a, b) for name, (a, b) in pairs.items()}).T


def expected_grade_correlation(frame: pd.DataFrame, human: str = "human_grade") -> tuple[float, int]:
    """Spearman ρ between the expected grade E[g] and the human grade over the items with an E[g]; (ρ, n)."""
    present = frame.loc[frame.expected_grade.notna(), ["expected_grade", human]]
    return float(present.corr("spearman").iloc[0, 1]), len(present)


def grade_distribution(labels: pd.DataFrame) -> pd.DataFrame:
    """Count of each grade under each label definition (grades × definitions)."""
    return pd.DataFrame({name: labels[column].value_counts().reindex(list(GRADES), fill_value=0)
                         for name, column in LABEL_DEFINITIONS.items()}).rename_axis("grade")


def label_by_group(frame: pd.DataFrame, group: str, label: str = "label") -> pd.DataFrame:
    """Per value of ``group`` (e.g. whether a nudge keeps the 5–12 word limit): n and the share of each grade
    of ``label`` among its labelled rows — does the judge's label follow a property it was not asked about?"""
    labelled = frame.dropna(subset=[label])
    shares = pd.crosstab(labelled[group], labelled[label].astype(int), normalize="index")
    shares = shares.reindex(columns=list(GRADES), fill_value=0.0).rename(columns=lambda g: f"share_grade_{g}")
    return shares.assign(n=labelled.groupby(group).size()).rename_axis(group)


def judge_consistency(labels: pd.DataFrame) -> pd.DataFrame:
    """:func:`agreement` of the judge with itself: the listwise judge on the pool in generator order vs shuffled
    (position bias), and each pointwise label definition vs listwise."""
    pairs = {"listwise: generator order vs shuffled (position bias)": ("listwise_grade", "listwise_shuffled_grade"),
             "pointwise argmax vs listwise": ("grade", "listwise_grade"),
             "pointwise rounded E[g] vs listwise": ("rounded_expected", "listwise_grade")}
    return pd.DataFrame({name: agreement_of_columns(labels, a, b) for name, (a, b) in pairs.items()}).T


def repeat_pairs(labels: pd.DataFrame, repeat: pd.DataFrame) -> pd.DataFrame:
    """The repeat sample (``labels_repeat`` rows, in their order) beside the first judgment of the same
    candidates: candidate_id, label_first, label_repeat, expected_grade_first, expected_grade_repeat."""
    columns = ["candidate_id", "label", "expected_grade"]
    return repeat[columns].merge(labels[columns], on="candidate_id", how="left", suffixes=("_repeat", "_first"),
                                 validate="one_to_one")


def repeatability(labels: pd.DataFrame, repeat: pd.DataFrame) -> dict[str, float]:
    """:func:`agreement` of the first and the repeated label (the definition chapter 04 uses), and
    Krippendorff's α (interval) of the first and repeated expected grades (alpha_expected_grade)."""
    pairs = repeat_pairs(labels, repeat)
    alpha = krippendorff_alpha([pairs.expected_grade_first.tolist(), pairs.expected_grade_repeat.tolist()],
                               level="interval")
    return {**agreement_of_columns(pairs, "label_first", "label_repeat"), "alpha_expected_grade": alpha}


def repeat_disagreement(labels: pd.DataFrame, repeat: pd.DataFrame) -> float:
    """Share of re-judged candidates whose repeated label differs from the first (both present): the
    judge-noise rate the perturbation check of chapter 04 uses (= 1 − exact agreement of :func:`repeatability`)."""
    pairs = repeat_pairs(labels, repeat)
    both = pairs.label_first.notna() & pairs.label_repeat.notna()
    return float((pairs.label_first[both] != pairs.label_repeat[both]).mean())


def reshuffled_agreement(labels: pd.DataFrame, shown: Sequence, reshown: Sequence) -> dict[str, float]:
    """Position bias measured only where it can show: :func:`agreement` of ``listwise_grade`` and
    ``listwise_shuffled_grade`` over the rows of pools whose shuffled order differs from the first order (a
    shuffle that happens to be the identity sends the same prompt again). ``shown``/``reshown``: the pools as
    shown in each run (``relevance.shown_pools``), in the same pool order. Also counts the pools shown in a new
    order and those whose first-shown item is the same in both runs."""
    moved = [(a, b) for a, b in zip(shown, reshown, strict=True) if a.rows != b.rows]
    rows = [r for a, _ in moved for r in a.rows]
    subset = labels.iloc[rows]
    return {"pools": len(shown), "pools_reordered": len(moved),
            "same_first_item": sum(a.rows[0] == b.rows[0] for a, b in zip(shown, reshown)),
            **agreement_of_columns(subset, "listwise_grade", "listwise_shuffled_grade")}


def first_position_rate(grades: pd.Series, first_rows: Sequence[int], top: int = max(GRADES)) -> dict[str, float]:
    """Listwise position effect: the share of pools whose first-shown item got the ``top`` grade, beside the
    share of all graded items with that grade (what it would be without a position effect). ``first_rows``:
    the row (in ``grades``) of the item shown first in each pool."""
    first = grades.iloc[list(first_rows)].dropna()
    every = grades.dropna()
    return {"pools": len(first), "first_shown_top": int((first == top).sum()),
            "first_shown_top_share": float((first == top).mean()) if len(first) else float("nan"),
            "all_items_top_share": float((every == top).mean()) if len(every) else float("nan")}


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


def correlation_table(frame: pd.DataFrame, scores: Sequence[str], human: str, by: str, seed: int,
                      n_resamples: int = 2000) -> pd.DataFrame:
    """Spearman's ρ and Kendall's τ-b of each column in ``scores`` with ``human`` over the rows where both are
    present, per group of ``by`` and over all rows (group ``all``), each with its pair-bootstrap CI
    (:func:`lib.analysis.stats.correlation_ci`). Index (by, score, method)."""
    from lib.analysis.stats import correlation_ci

    rows = []
    for group, part in [*frame.groupby(by, sort=True), ("all", frame)]:
        for column in scores:
            both = part[[column, human]].dropna()
            for method in ("spearman", "kendall"):
                rows.append({by: group, "score": column, "method": method,
                             **correlation_ci(both[column], both[human], method, seed=seed, n_resamples=n_resamples)})
    return pd.DataFrame(rows).set_index([by, "score", "method"])
