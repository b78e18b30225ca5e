"""Ranker summaries and paired comparisons of the system with each baseline over the same entries.

A *comparison* is system − baseline on one measure. The statistics are chosen for what the values are: few
entries, many ties, values at the ceiling, differences that take a handful of discrete values.

* Only *informative* entries are compared — those whose value the order of the pool can change
  (:func:`lib.analysis.ranking.value_range`; e.g. a pool whose labels are all equal scores the same under
  every ranker). Which entries are informative depends on the labels only, never on a ranker's ranking, so
  the selection is the same for system and baseline and leaves the sign-flip null distribution intact.
* A measure with no informative entry, or on which every ranker scores the same on every entry, has zero
  variance across rankers: it is reported as such (:func:`measure_status`) and not tested.
* Per comparison: wins / losses / ties over the informative entries; the mean difference with a
  percentile-bootstrap CI over entries and a cluster-bootstrap CI over personas (the unit of the value
  treatment). Effects are reported on the scale of the ranker means (the mean over every entry both rankers
  score): an uninformative entry's difference is 0 under any pair of rankers, so that mean is exactly
  (n_informative / n_entries) × the mean over the informative entries, and its CIs and MDE are the informative
  entries' ones scaled by the same factor (conditional on which entries are informative, a property of the
  fixed labels). ONE test, the exact paired sign-flip permutation test of the mean difference
  (:func:`lib.analysis.stats.sign_flip_test`): two-sided in :func:`compare_to_baselines`'s table (a description),
  one-sided in the declared direction and the other way in :func:`one_sided_tests` (what chapter 04's verdicts
  rest on); the exact sign test is shown beside it as a description of the win/loss counts, not used for
  decisions.
* The family is declared before looking at the results: the *primary* comparison (system vs one named
  baseline on one named measure, a parameter of chapter 04) is a family of one and is tested at α; every
  other comparison of the system with a baseline on a tested measure is *secondary*, and Holm's step-down
  correction is applied over that family (statsmodels).
* Power is reported as the minimum detectable effect at the current n and the family's most stringent Holm
  level α/m (:func:`lib.analysis.stats.minimum_detectable_effect`), never as post-hoc power from the observed
  effect; none where the smallest attainable p is not below that level (no effect of any size is detectable).

The CIs describe the sampling of entries (or personas) only: they take the labels as fixed and ignore the
judge's label noise, which chapter 04 probes separately (:mod:`lib.analysis.sensitivity`).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from lib.analysis.ranking import MEASURES, RANDOM_EXPECTED, average_runs, rankers_in, value_range
from lib.analysis.stats import (
    MIN_CI_UNITS,
    Alternative,
    min_attainable_p,
    minimum_detectable_effect,
    sign_flip_test,
    sign_test,
    unit_bootstrap,
    win_loss_tie,
)
from lib.analysis.text import count_text
from lib.rankers import RANKER_ORDER

TIE_TOLERANCE = 1e-12  # |system − baseline| at or below this is a tie (run averages differ in the last bits)

# The columns of compare_to_baselines, in order (documented in lib.tables.SCHEMAS["ndcg_comparisons"]).
COMPARISON_COLUMNS = ("measure", "system", "baseline", "primary", "n_entries", "n_informative", "n_personas", "wins",
                      "losses", "ties", "mean_diff", "ci_low", "ci_high", "ci_over", "ci_low_persona",
                      "ci_high_persona", "ci_over_persona", "p_permutation", "permutation_exact", "p_sign", "min_p",
                      "family_size", "p_holm", "alpha", "significant", "mde", "power")


def paired_comparison(system: Sequence[float], baseline: Sequence[float], clusters: Sequence[object], seed: int,
                      n_resamples: int = 10_000) -> dict[str, Any]:
    """System − baseline over the same (informative) entries, ``clusters`` naming each entry's persona.

    Keys: n_informative, n_personas, wins, losses, ties (:func:`~lib.analysis.stats.win_loss_tie`; differences
    within ``TIE_TOLERANCE`` of 0 are ties), mean_diff, sd_diff, ci_low / ci_high / ci_over (percentile bootstrap
    over entries, the independent unit), ci_low_persona / ci_high_persona / ci_over_persona (cluster bootstrap
    over personas; both by :func:`~lib.analysis.stats.unit_bootstrap`, so neither exists over fewer than
    ``MIN_CI_UNITS`` entries or personas, nor when fewer than ``MIN_CI_UNITS`` differences are non-zero),
    p_permutation and permutation_exact (exact sign-flip test of the mean), p_sign (exact sign test of wins vs
    losses) and min_p (the smallest p the sign-flip test could give with this many non-tied differences)."""
    diff = np.asarray(system, dtype=float) - np.asarray(baseline, dtype=float)
    diff = np.where(np.abs(diff) <= TIE_TOLERANCE, 0.0, diff)
    wins, losses, ties = win_loss_tie(diff)
    n = len(diff)
    # A percentile interval over entries most of whose differences are 0 is made of the few nonzero ones and
    # zeros (one nonzero difference gives e.g. [-0.022, 0.000]), so none is given under MIN_CI_UNITS non-tied.
    too_few = wins + losses < MIN_CI_UNITS
    by_entry = unit_bootstrap(np.mean, [diff], np.arange(n), "entries", seed, n_resamples,
                              min_units=n + 1 if too_few else MIN_CI_UNITS)
    by_persona = unit_bootstrap(np.mean, [diff], list(clusters), "personas", seed, n_resamples,
                                min_units=len(set(clusters)) + 1 if too_few else MIN_CI_UNITS)
    flips = sign_flip_test(diff, seed, n_resamples)
    return {"n_informative": n, "n_personas": len(set(clusters)), "wins": wins, "losses": losses, "ties": ties,
            "mean_diff": float(diff.mean()) if n else float("nan"),
            "sd_diff": float(diff.std(ddof=1)) if n > 1 else float("nan"),
            "ci_low": by_entry.low, "ci_high": by_entry.high, "ci_over": by_entry.ci_over,
            "ci_low_persona": by_persona.low, "ci_high_persona": by_persona.high,
            "ci_over_persona": by_persona.ci_over,
            "p_permutation": flips.p, "permutation_exact": flips.exact, "p_sign": sign_test(wins, losses),
            "min_p": min_attainable_p(wins + losses)}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (Holm 1979) via statsmodels.multipletests: with the m p-values sorted,
    p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)). NaN stays NaN and does not count towards m."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        adjusted[ok] = multipletests(p[ok], method="holm")[1]
    return adjusted.tolist()


def holm_floor(tests: pd.DataFrame) -> float:
    """The smallest Holm-adjusted p a family of tests could reach, whatever the data: Holm multiplies the
    smallest p by the number of tests m (Holm 1979), so the floor is min(1, m · min_i min_p_i), over the rows of
    ``tests`` with a p (columns ``p`` and ``min_p``, the smallest p each test could give at its size). With a
    ``p_against`` column the family holds both directions of each test (:func:`holm_both_directions`), so m counts
    both. A floor at or above α means the family cannot reject anything at its size."""
    tested = tests[tests["p"].notna()]
    m = len(tested) + (int(tested["p_against"].notna().sum()) if "p_against" in tested else 0)
    return float(min(1.0, m * tested["min_p"].min())) if len(tested) else float("nan")


def holm_by_family(pvalues: Sequence[float], family: Sequence[Hashable]) -> tuple[list[float], list[int]]:
    """:func:`holm` applied within each family separately; returns the adjusted p-values and each p-value's
    family size m, both in input order."""
    p = pd.Series(np.asarray(pvalues, dtype=float))
    groups = pd.Series(list(family))
    adjusted, sizes = p.copy(), pd.Series(0, index=p.index)
    for _, index in groups.groupby(groups, sort=False).groups.items():
        adjusted[index] = holm(p[index].tolist())
        sizes[index] = int(p[index].notna().sum())
    return adjusted.tolist(), sizes.tolist()


def holm_both_directions(p: Sequence[float], p_against: Sequence[float]) -> tuple[list[float], list[float]]:
    """Holm (1979) over one family holding both one-sided tests of each of its k hypotheses (2k p-values): testing
    each hypothesis in the declared direction and the opposite one at level α each is a two-sided test at 2α, so
    both directions share one family (as a two-sided test at α would). NaN does not count towards the family.
    Returns the adjusted ``p`` and ``p_against`` in input order."""
    both = holm([*p, *p_against])
    return both[:len(p)], both[len(p):]


def ranker_summary(values: pd.DataFrame, seed: int, n_resamples: int = 10_000) -> pd.DataFrame:
    """Per (measure, ranker): runs, entries, mean over entries (a ranker's runs averaged per entry first) with
    its percentile-bootstrap 95% CI over entries (ci_low, ci_high, ci_over; none over fewer than
    ``MIN_CI_UNITS`` entries), and sd. For a ranker with one run, sd is the
    sd over entries (sd_over = "entries"); for a ranker with several runs (random seeds), sd is the sd over runs
    of each run's mean over entries (sd_over = "runs"): the spread a reader sees between two random rankers,
    not the spread of seed averages between entries."""
    runs = values.groupby(["measure", "ranker"], sort=False)["run"].nunique().to_dict()
    sd_over_runs = values.groupby(["measure", "ranker", "run"])["value"].mean().groupby(
        level=["measure", "ranker"]).std(ddof=1).to_dict()
    rows = []
    for (measure, ranker), group in average_runs(values).groupby(["measure", "ranker"], sort=False):
        interval = unit_bootstrap(np.mean, [group.value.to_numpy()], np.arange(len(group)), "entries", seed,
                                  n_resamples)
        k = int(runs[(measure, ranker)])
        sd = sd_over_runs[(measure, ranker)] if k > 1 else group.value.std(ddof=1)
        rows.append({"measure": measure, "ranker": ranker, "runs": k, "entries": len(group),
                     "mean": group.value.mean(), "sd": sd, "sd_over": "runs" if k > 1 else "entries",
                     "ci_low": interval.low, "ci_high": interval.high, "ci_over": interval.ci_over})
    return pd.DataFrame(rows)


def results_table(summary: pd.DataFrame, expected: pd.DataFrame, ranker_order: Sequence[str] = RANKER_ORDER,
                  measures: Sequence[str] | None = None) -> pd.DataFrame:
    """Ranker × measure cells "mean ± sd [ci_low, ci_high]" from :func:`ranker_summary`, with the random-order
    expectation rows (``lib.analysis.ranking.random_expected_rows``, "mean" only) right after "random".
    Columns name the measure and its n (entries scored); a ranker with several runs is labelled with their
    number and that its ± is the sd over runs. Methods in ``ranker_order`` that have no values are left out;
    ``measures`` defaults to every registered measure."""
    measures = list(MEASURES) if measures is None else list(measures)
    both = pd.concat([summary, expected], ignore_index=True)
    cell = both.apply(lambda r: f"{r['mean']:.3f} ± {r['sd']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                      if pd.notna(r.get("sd")) else f"{r['mean']:.3f}", axis=1)
    present = [m for m in ranker_order if m in set(summary.ranker)]
    rows = [name for m in present for name in ([m, RANDOM_EXPECTED] if m == "random" else [m])]
    table = both.assign(cell=cell).pivot(index="ranker", columns="measure", values="cell").reindex(
        index=rows, columns=measures)
    runs = summary.groupby("ranker").runs.max()
    table.index = [f"{m} ({runs[m]} runs; ± sd over runs)" if m in runs and runs[m] > 1 else m for m in rows]
    n = summary.groupby("measure").entries.max()
    table.columns = [f"{m} (n = {int(n[m])} entries)" if m in n else m for m in measures]
    return table.rename_axis("mean ± sd over entries [95% bootstrap CI]; values 0–1")


def by_entry(values: pd.DataFrame) -> pd.DataFrame:
    """Run-averaged values with one row per (measure, entry) and one column per ranker (NaN where unscored)."""
    return average_runs(values).pivot_table(index=["measure", "entry_id"], columns="ranker", values="value")


def measure_status(values: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per registered measure: entries scored, entries informative (:func:`lib.analysis.ranking.value_range`),
    the share of labelled candidates its relevance threshold counts as relevant (g ≥ t), whether it is tested,
    and why not. A measure is not tested when it has no informative entry (every order of every pool scores the
    same; e.g. a threshold every candidate meets, or none does) or when every ranker and run scores the same on
    every entry (zero variance across rankers)."""
    informative = value_range(labels).groupby("measure", sort=False).informative.sum()
    gains = labels.label.dropna().astype(float)
    rows = {}
    for name, measure in MEASURES.items():
        part = values[values.measure == name]
        scored = part.entry_id.nunique()
        n_inf = int(informative.get(name, 0))
        constant = part.groupby("entry_id").value.agg(lambda v: v.max() - v.min() <= TIE_TOLERANCE).all()
        if n_inf == 0:
            below = int((labels.dropna(subset=["label"]).label < measure.min_grade).sum())
            reason = (f"no informative entry: every order of every pool scores the same "
                      f"({below} labelled candidates graded below its threshold g ≥ {measure.min_grade})")
        elif constant:
            reason = "every ranker scores the same on every entry"
        else:
            reason = ""
        rows[name] = {"entries_scored": scored, "entries_informative": n_inf,
                      "relevant_share": float((gains >= measure.min_grade).mean()) if len(gains) else float("nan"),
                      "tested": not reason, "reason": reason}
    return pd.DataFrame(rows).T.rename_axis("measure")


def compare_to_baselines(values: pd.DataFrame, labels: pd.DataFrame, personas: Mapping[str, str], system: str,
                         primary_baseline: str, primary_measure: str, seed: int, n_resamples: int = 10_000,
                         alpha: float = 0.05, power: float = 0.8, rankers: Sequence[str] | None = None
                         ) -> pd.DataFrame:
    """:func:`paired_comparison` of ``system`` with every other ranker (``rankers``, default: those in
    ``values`` in RANKER_ORDER) on every tested measure (:func:`measure_status`), over the informative entries
    both score (``personas``: entry_id → persona_id, the clusters of the persona bootstrap).

    The comparison (``primary_measure``, ``primary_baseline``) is the primary family of one; every other row is
    in the secondary family. p_holm is Holm within the row's family; significant = p_holm < alpha;
    mde = :func:`~lib.analysis.stats.minimum_detectable_effect` at n_informative, the family's most stringent
    Holm level alpha / family_size, and ``power``. mean_diff, the CIs and mde are on the scale of the ranker
    means (every entry both score; the informative entries' values × n_informative / n_entries, see the module
    docstring), so mean_diff is the difference of the two rankers' means in :func:`ranker_summary`.
    Columns: ``COMPARISON_COLUMNS`` (schema ``lib.tables.SCHEMAS["ndcg_comparisons"]``)."""
    rankers = rankers_in(values) if rankers is None else list(rankers)
    for name, role in ((system, "system"), (primary_baseline, "primary baseline")):
        if name not in rankers:
            raise ValueError(f"{role} {name!r} is not among the rankers {rankers}")
    if primary_baseline == system:
        raise ValueError("the primary baseline must differ from the system")
    if primary_measure not in MEASURES:
        raise ValueError(f"primary measure {primary_measure!r} is not registered ({list(MEASURES)})")
    status = measure_status(values, labels)
    ranges = value_range(labels)
    wide = by_entry(values)
    rows = []
    for measure in [m for m in MEASURES if status.loc[m, "tested"]]:
        table = wide.loc[measure]
        informative = set(ranges.loc[(ranges.measure == measure) & ranges.informative, "entry_id"])
        for baseline in [m for m in rankers if m != system]:
            pair = table[[system, baseline]].dropna()
            kept = pair[pair.index.isin(informative)]
            missing = set(kept.index) - set(personas)
            if missing:
                raise ValueError(f"no persona for entries {sorted(missing)}")
            result = paired_comparison(kept[system].to_numpy(), kept[baseline].to_numpy(),
                                       [personas[e] for e in kept.index], seed, n_resamples)
            scale = len(kept) / len(pair) if len(pair) else float("nan")
            for key in ("mean_diff", "sd_diff", "ci_low", "ci_high", "ci_low_persona", "ci_high_persona"):
                result[key] *= scale
            rows.append({"measure": measure, "system": system, "baseline": baseline,
                         "primary": (measure, baseline) == (primary_measure, primary_baseline),
                         "n_entries": len(pair), "scale": scale, **result})
    result = pd.DataFrame(rows)
    if result.empty:
        return pd.DataFrame(columns=list(COMPARISON_COLUMNS))
    result["p_holm"], result["family_size"] = holm_by_family(result.p_permutation,
                                                             result.primary.map({True: "primary", False: "secondary"}))
    result["alpha"] = alpha
    result["significant"] = result.p_holm < alpha
    result["power"] = power
    # sd_diff is already scaled; the test's n (and the t quantiles' df) is the informative entries'
    # where no outcome can reach the family's level (min_p), no effect of any size is detectable: no MDE
    result["mde"] = [minimum_detectable_effect(sd, n, alpha / m, power) if min_p < alpha / m else float("nan")
                     for sd, n, m, min_p in zip(result.sd_diff, result.n_informative, result.family_size,
                                                result.min_p, strict=True)]
    order = result.primary.map({True: 0, False: 1})
    return result.assign(_order=order).sort_values("_order", kind="stable")[list(COMPARISON_COLUMNS)].reset_index(
        drop=True)


def paired_differences(values: pd.DataFrame, system: str, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long table of per-entry differences system − baseline: measure, entry_id, difference, baseline; with
    ``labels``, only the informative entries of each measure."""
    wide = by_entry(values)
    diffs = pd.concat([(wide[system] - wide[b]).rename("difference").reset_index().assign(baseline=b)
                       for b in wide.columns if b != system], ignore_index=True).dropna()
    if labels is not None:
        ranges = value_range(labels)
        keys = set(zip(ranges.loc[ranges.informative, "measure"], ranges.loc[ranges.informative, "entry_id"],
                       strict=True))
        diffs = diffs[[k in keys for k in zip(diffs.measure, diffs.entry_id, strict=True)]].reset_index(drop=True)
    return diffs


def one_sided_tests(differences: pd.DataFrame, comparisons: pd.DataFrame, seed: int, n_resamples: int = 10_000,
                    alternative: Alternative = "greater") -> pd.DataFrame:
    """The directional test of each comparison of :func:`compare_to_baselines`: the sign-flip test
    (:func:`~lib.analysis.stats.sign_flip_test`; exact up to ``MAX_EXACT_FLIPS`` non-tied entries) of system −
    baseline over its entries (``differences``: :func:`paired_differences`; differences within
    ``TIE_TOLERANCE`` of 0 are ties), one-sided in the declared direction ``alternative`` ("greater": the system
    ranks better) and one-sided the other way, each Holm-adjusted within the row's family (primary: a family of
    one; secondary: the rest; :func:`holm_by_family`). A significant result the other way is evidence against
    the declared direction, so both are kept. Columns measure, baseline, primary, nonzero, family_size, test (the
    method, with the Holm family), p and p_against (adjusted), p_unadjusted and p_against_unadjusted."""
    if alternative == "two-sided":
        raise ValueError("a directional test needs a declared direction: 'greater' or 'less'")
    against: Alternative = "less" if alternative == "greater" else "greater"
    rows = []
    for comparison in comparisons.itertuples():
        part = differences[(differences.measure == comparison.measure)
                           & (differences.baseline == comparison.baseline)].difference.to_numpy(dtype=float)
        part = np.where(np.abs(part) <= TIE_TOLERANCE, 0.0, part)
        declared = sign_flip_test(part, seed, n_resamples, alternative=alternative)
        rows.append({"measure": comparison.measure, "baseline": comparison.baseline,
                     "primary": bool(comparison.primary), "nonzero": declared.nonzero, "method": declared.method,
                     "p_unadjusted": declared.p,
                     "p_against_unadjusted": sign_flip_test(part, seed, n_resamples, alternative=against).p})
    columns = ["measure", "baseline", "primary", "nonzero", "family_size", "test", "p", "p_against", "p_unadjusted",
               "p_against_unadjusted"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows)
    family = table.primary.map({True: "primary", False: "secondary"})
    table["p"], table["p_against"], table["family_size"] = np.nan, np.nan, 0
    for _, index in family.groupby(family, sort=False).groups.items():
        p, p_against = holm_both_directions(table.p_unadjusted[index].tolist(),
                                            table.p_against_unadjusted[index].tolist())
        table.loc[index, "p"], table.loc[index, "p_against"] = p, p_against
        table.loc[index, "family_size"] = int(table.p_unadjusted[index].notna().sum())
    table["test"] = [f"{method}; Holm over both directions of {count_text(m, 'comparison')}"
                     for method, m in zip(table.method, table.family_size, strict=True)]
    return table[columns]


def above_random(values: pd.DataFrame, labels: pd.DataFrame, measures: Sequence[str], seed: int,
                 n_resamples: int = 10_000) -> pd.DataFrame:
    """Per (measure, ranker): the mean over entries of the ranker's value (its runs averaged) minus the entry's
    random-order expectation (the measure's ``random_expectation`` of the pool's gains), with a percentile-
    bootstrap 95% interval over entries (:func:`~lib.analysis.stats.unit_bootstrap`; none under ``MIN_CI_UNITS``).
    On this scale a ranker no better than chance sits at 0 whatever the pools' ceiling, so a difference between
    rankers can show where their raw means all lie near 1. Columns measure, ranker, entries, mean, ci_low,
    ci_high, ci_over; rankers in ``RANKER_ORDER``."""
    gains = labels.dropna(subset=["label"]).groupby("entry_id").label.apply(lambda s: [float(g) for g in s])
    averaged = average_runs(values)
    rows = []
    for measure in measures:
        part = averaged[averaged.measure == measure]
        expected = {e: MEASURES[measure].random_expectation(gains[e]) for e in set(part.entry_id)}
        for ranker in rankers_in(part):
            mine = part[part.ranker == ranker].sort_values("entry_id")
            excess = mine.value.to_numpy() - mine.entry_id.map(expected).to_numpy(dtype=float)
            interval = unit_bootstrap(np.mean, [excess], mine.entry_id.to_numpy(), "entries", seed, n_resamples)
            rows.append({"measure": measure, "ranker": ranker, "entries": interval.units, "mean": interval.value,
                         "ci_low": interval.low, "ci_high": interval.high, "ci_over": interval.ci_over})
    return pd.DataFrame(rows, columns=["measure", "ranker", "entries", "mean", "ci_low", "ci_high", "ci_over"])
