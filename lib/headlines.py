"""One headline sentence per chapter for the report's front page, built from the chapter's result tables.

The front page must carry no number typed by hand: each sentence here reads the tables its chapter wrote
(``outputs/tables``, schemas in :mod:`lib.tables`), so it follows the results when they change. A chapter
registers its headline with :func:`headline`, naming the tables it reads; the front page shows none for a
chapter without one or whose tables are missing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

Tables = Mapping[str, pd.DataFrame]
Sentence = Callable[[Tables], str]


@dataclass(frozen=True)
class Headline:
    tables: tuple[str, ...]
    sentence: Sentence


HEADLINES: dict[str, Headline] = {}


def headline(chapter: str, *tables: str) -> Callable[[Sentence], Sentence]:
    """Register the decorated function as the headline of notebook ``chapter``, built from ``tables``."""
    def register(sentence: Sentence) -> Sentence:
        HEADLINES[chapter] = Headline(tables, sentence)
        return sentence
    return register


@headline("01_nudge_candidates", "entries", "candidates")
def candidates_generated(tables: Tables) -> str:
    """How many candidates there are and how often generation gave a schema-valid answer."""
    entries, candidates = tables["entries"], tables["candidates"]
    valid = int(entries["generation_ok"].sum())
    return (f"{len(candidates)} candidate nudges for {len(entries)} journal entries: {valid} of {len(entries)} "
            f"generation calls ({valid / len(entries):.0%}) returned a schema-valid answer, and "
            f"{int(candidates['near_duplicate'].sum())} candidates are near-duplicates of an earlier one.")


@headline("02_baselines", "rankings")
def methods_ranked(tables: Tables) -> str:
    """Which ranking methods ranked how many pools (random with its number of seeds)."""
    rankings = tables["rankings"]
    runs = rankings.groupby("method", sort=False)["run"].nunique()
    methods = ", ".join(f"{method} ({n} seeds)" if n > 1 else method for method, n in runs.items())
    return (f"{len(runs)} ranking methods — {methods} — ranked the candidate pools of "
            f"{rankings['entry_id'].nunique()} journal entries.")


@headline("03_judge_labeling", "judge_validity")
def chosen_label(tables: Tables) -> str:
    """The label definition chosen for chapter 04 and its agreement with human grades, beside the others."""
    validity = tables["judge_validity"]
    chosen = validity[validity["chosen"]]
    if len(chosen) != 1:
        raise ValueError(f"judge_validity: {len(chosen)} rows marked chosen, expected 1")
    row = chosen.iloc[0]
    others = ", ".join(f"{r['weighted_kappa']:.2f} ({r['label_definition']})"
                       for _, r in validity[~validity["chosen"]].iterrows())
    return (f"The label used downstream is the {row['label_definition']} grade: quadratic-weighted κ = "
            f"{row['weighted_kappa']:.2f} (95% CI {row['weighted_kappa_ci_low']:.2f} to {row['weighted_kappa_ci_high']:.2f}) "
            f"with human grades on {int(row['n'])} passages ({row['dataset']})"
            + (f", against {others}." if others else "."))


@headline("04_ndcg_analysis", "ndcg_comparisons")
def primary_comparison(tables: Tables) -> str:
    """The declared primary comparison with direction, effect, CI, p and minimum detectable effect, and how many
    secondary comparisons are significant after Holm."""
    comparisons = tables["ndcg_comparisons"]
    primary = comparisons[comparisons["primary"].astype(bool)]
    secondary = comparisons[~comparisons["primary"].astype(bool)]
    rest = (f"; {int(secondary['significant'].sum())} of {len(secondary)} secondary comparisons are significant "
            f"after Holm." if len(secondary) else ".")
    if len(primary) != 1:
        return f"No primary comparison could be tested (no informative entry on its measure){rest}"
    row = primary.iloc[0]
    if row["significant"]:
        verdict = f"significant: {row['system']} ranks {'better' if row['mean_diff'] > 0 else 'worse'}"
    else:
        if row["min_p"] >= row["alpha"]:
            verdict = (f"not significant, and with {int(row['wins'] + row['losses'])} non-tied entries no outcome "
                       f"could have been significant")
        elif pd.notna(row["mde"]):
            verdict = f"not significant; this study can only detect differences of about ±{row['mde']:.3f} or more"
        else:
            verdict = "not significant"
    return (f"Primary comparison, {row['system']} − {row['baseline']} on {row['measure']}: "
            f"{row['mean_diff']:+.3f} (95% CI {row['ci_low']:+.3f} to {row['ci_high']:+.3f}) over "
            f"{int(row['n_entries'])} entries ({int(row['n_informative'])} informative; {int(row['wins'])} wins, "
            f"{int(row['losses'])} losses), exact sign-flip p = {row['p_permutation']:.2g} — {verdict}{rest}")


@headline("05_nugget_evaluation", "nugget_scores", "monitor_days")
def nugget_validity(tables: Tables) -> str:
    """How many ALCE answers have the declared vital score, the rank correlation of the all-nuggets score with
    human utility, and whether the monitor's overall mean separated the degraded day from the others."""
    from lib.analysis.stats import correlation_ci

    scores, days = tables["nugget_scores"], tables["monitor_days"]
    alce = scores[scores["dataset"].isin(["asqa", "eli5"])]
    rated = alce.dropna(subset=["all", "utility"])
    rho = correlation_ci(rated["all"], rated["utility"], "spearman", seed=0)
    degraded, normal = days[days["degraded"]], days[~days["degraded"]]
    return (f"ALCE: {int(alce['vital'].notna().sum())} of {len(alce)} answers have a vital-nugget score (the judge "
            f"labels few nuggets vital); the all-nuggets score ranks {int(rho['n'])} answers against human utility "
            f"with Spearman ρ = {rho['r']:.2f} (95% CI {rho['ci_low']:.2f} to {rho['ci_high']:.2f}). Monitor: overall "
            f"judge score {degraded['overall'].mean():.2f} on the degraded day vs {normal['overall'].min():.2f}–"
            f"{normal['overall'].max():.2f} on the {len(normal)} normal days.")


@headline("06_crs_simulation", "crs_checks", "crs_sessions")
def crs_known_behaviour(tables: Tables) -> str:
    """How many differences between systems of known behaviour the adaptation metrics reproduce, and the LLM
    recommender's recovery rate beside the adapting template's."""
    checks, sessions = tables["crs_checks"], tables["crs_sessions"]
    failing = checks.loc[~checks["holds"], "expectation"]
    recovery = sessions.groupby("model")["recovery_rate"].mean()
    llm = (f" The LLM recommender recovers from {recovery['llm']:.0%} of shifts within the window, the adapting "
           f"template from {recovery['retrieval_template']:.0%}." if {"llm", "retrieval_template"} <= set(recovery.index)
           else "")
    return (f"Over {sessions['session_id'].nunique()} simulated users, the adaptation metrics reproduce "
            f"{int(checks['holds'].sum())} of {len(checks)} expected differences between systems of known behaviour"
            + (f" (not: {'; '.join(failing)})" if len(failing) else "") + f".{llm}")


@headline("07_validity", "report_card")
def judge_report_card(tables: Tables) -> str:
    """The lifted judge's two test numbers against the targets of chapter 07, each with its interval and
    whether it reaches the target, and how many card rows there are."""
    from lib.analysis.report_card import CHOSEN, target_table

    card = tables["report_card"]
    targets = target_table(card)

    def said(t: pd.Series) -> str:
        has_interval = bool(np.isfinite([t["ci_low"], t["ci_high"]]).all())
        reached = ("reaches it" if t["reached_by_interval"] else "reaches it by the estimate, not by the interval"
                   if t["reached"] and has_interval else "misses it" if has_interval
                   else "without an interval, neither reached nor missed")
        interval = (f"95% CI {t['ci_low']:.2f} to {t['ci_high']:.2f}" if has_interval
                    else "too few units for an interval")
        return (f"{t['statistic']} = {t['value']:.2f} ({interval}, n = {int(t['n'])}) against a target of "
                f"{t['goal']:.2f}: it {reached}")

    relevance, geval = targets.iloc[0], targets.iloc[1]
    method = relevance["judge"].removesuffix(CHOSEN)
    return (f"Report card of {card['judge'].nunique()} judges and baselines in {len(card)} rows. On held-out TREC "
            f"DL19 queries the relevance method chosen on dev ({method}) has {said(relevance)}; G-Eval on held-out "
            f"SummEval documents has a summary-level {said(geval)}.")
