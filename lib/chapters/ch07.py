"""Chapter 07 (validity statistics): its "What the numbers say" and its front-page headline. The summary: each bullet written from the tables the chapter computed, so the prose
cannot drift from the numbers. One function per part of the chapter; :func:`bullets` joins them as Markdown.

Every sentence states what a number can carry: intervals that include 0 or are undefined are said to be so,
a choice that rests on cost rather than measured quality is called that, and a consistency that a constant
judge would reach is read beside the judge's grade distribution.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lib.analysis import report_card as rc
from lib.analysis.stats import correlation_text, interval_text
from lib.analysis.comparisons import holm_floor
from lib.chapters.headline import Tables, headline


def relevance(dev_table: pd.DataFrame, chosen: str, reference: str, dev_queries: int, test_queries: int, test_card: pd.DataFrame,
              lift: Mapping[str, float], grades: pd.DataFrame, dev_majority: int, gap: Mapping[str, float],
              best_baseline: str, rho_rows: pd.DataFrame) -> list[str]:
    """The DL19 bullets: the dev choice (and whether it rested on quality or on cost,
    :func:`lib.analysis.calibration.tied_with_best`), the test κ_w of every frozen method, the chosen method's
    lift over the plain judge, and the trivial and non-LLM baselines beside it.

    ``dev_table``: :func:`lib.analysis.calibration.compare_on_dev`; ``test_card``: the card's DL19 κ_w rows
    indexed by judge; ``lift``/``gap``: :func:`lib.analysis.validity.weighted_kappa_difference` results (chosen −
    plain; ``best_baseline`` − chosen); ``reference``: the plain judge's name in ``dev_table``; ``grades``: :func:`lib.analysis.validity.grade_agreement_table` on test
    with the row "always <dev_majority>"; ``rho_rows``: the card's DL19 rows of Spearman's ρ of E[g] (or of a
    baseline's score), pooled and within queries."""
    from lib.analysis.calibration import tied_with_best

    row, plain = dev_table.loc[chosen], dev_table.loc[reference]
    tied = tied_with_best(dev_table)
    llm = int((dev_table["calls"] > 0).sum())
    chosen_test = test_card[test_card.index.str.endswith(rc.CHOSEN)].iloc[0]
    chosen_grades = grades.loc[chosen_test.name]
    constant = grades.loc[f"always {dev_majority}"]
    return [
        f"**Chosen on dev**: {chosen} ({int(row.calls)} call{'s' if row.calls > 1 else ''} per passage), dev κ_w "
        f"{row.weighted_kappa:.2f} ({interval_text(row.weighted_kappa_ci_low, row.weighted_kappa_ci_high)}) against the plain "
        f"judge's {plain.weighted_kappa:.2f}, over {int(row.n)} dev passages of {dev_queries} queries. "
        f"{len(tied)} of {llm} LLM methods are within the best one's interval on dev, so the rule "
        + ("chose by cost (fewest calls), not by a measured difference in quality." if len(tied) > 1
           else "had a single candidate."),
        f"**On test** ({test_queries} queries, {int(chosen_test.n)} passages): "
        + "; ".join(f"{name} κ_w {r.value:.2f} ({interval_text(r.ci_low, r.ci_high, label='')})"
                    for name, r in test_card.iterrows())
        + f". The chosen method minus the plain judge: {lift['difference']:+.2f} "
        f"({interval_text(lift['ci_low'], lift['ci_high'], signed=True)}).",
        f"**Baselines on the same test passages**: the chosen method agrees exactly on "
        f"{chosen_grades.exact_agreement:.2f} of them, always answering the dev majority grade {dev_majority} on "
        f"{constant.exact_agreement:.2f}; it uses the grades {chosen_grades['grades used']} (grade:passages). "
        f"{best_baseline} minus the chosen method: κ_w {gap['difference']:+.2f} "
        f"({interval_text(gap['ci_low'], gap['ci_high'], signed=True)}); it uses the grades "
        f"{grades.loc[best_baseline, 'grades used']}, its dev cuts leaving the others unreachable. Its embedding model "
        f"(all-MiniLM-L6-v2) was trained on pairs that include MS MARCO, DL19's corpus, so it is a strong baseline "
        f"here, not a trivial one.",
        "**Ranking within a query** (Spearman ρ of the score with the NIST grade, averaged over the test queries, "
        "against the same ρ pooled over queries): "
        + "; ".join(f"{judge} {part.set_index('statistic').value.get(rc.EXPECTED_RHO_WITHIN, np.nan):.2f} "
                    f"(pooled {part.set_index('statistic').value.get(rc.EXPECTED_RHO, np.nan):.2f})"
                    for judge, part in rho_rows.groupby("judge", sort=False))
        + ". Pooled over queries, ρ also credits telling easy queries from hard ones; ranking a query's passages "
          "is what chapter 04 uses.",
    ]


def lean_on(targets: pd.DataFrame, card: pd.DataFrame) -> str:
    """What the study can lean on, from :func:`lib.analysis.report_card.target_table` (item-level labels,
    summary-level G-Eval) and the system-level G-Eval rows (an interval above 0, none, or no interval)."""
    system = card[(card["judge"] == rc.GEVAL_WEIGHTED) & (card["level"] == "system")
                  & (card["statistic"] == rc.SPEARMAN)]
    above = rc.system_level_dimensions(card)
    relevance_part = ("the item-level relevance labels" if targets.reached_by_interval.iloc[0]
                      else "not the item-level relevance labels chapters 03–04 rank with (chapter 04's differences are "
                           "differences under this judge, not under human assessors)")
    geval = targets.iloc[1]
    geval_part = ("summary-level G-Eval scores" if geval.reached_by_interval
                  else "not summary-level G-Eval scores" if np.isfinite(geval.ci_low)
                  else f"summary-level G-Eval scores are undetermined ({geval.value:.2f} against {geval.goal:.2f} over "
                       f"{int(geval.n)} documents, no interval)")
    if len(system) and not np.isfinite(system["ci_low"]).any():
        system_part = f"system-level G-Eval orderings are undetermined ({system['ci_over'].iloc[0]}, no interval)"
    elif above:
        system_part = f"system-level G-Eval orderings better than chance on {', '.join(above)}"
    else:
        system_part = "not system-level G-Eval orderings"
    return f"**What the study can lean on**: {relevance_part}; {geval_part}; {system_part}."


def chapter03(chosen_is_reference: bool, lift: Mapping[str, float]) -> str:
    """Whether the chosen method goes back into chapter 03: only when it is not the plain judge and beats it on
    test by more than the interval of the paired difference (``lift``, chosen − plain)."""
    adopt = not chosen_is_reference and lift["ci_low"] > 0
    return ("**Chapter 03**: " + ("the chosen method beats the plain judge on test by more than its interval, so "
                                  "chapter 03 should adopt it as a method (its cuts refit on NovelEval's 0–2 dev rows, "
                                  "never taken from DL19)." if adopt else
                                  "the chosen method does not beat the plain judge on test by more than its interval, "
                                  "so chapter 03's label stays as it is."))


def geval_ablations(card: pd.DataFrame, with_steps: float, without_steps: float, nocot_docs: int) -> str:
    """The SummEval summary-level average ρ of G-Eval as declared, its argmax ablation and the two non-LLM
    baselines, with the G-Eval paper's anchors, and coherence with and without the evaluation steps on the
    ``nocot_docs`` document(s) scored both ways."""
    def average(judge: str) -> pd.Series:
        return card[(card.judge == judge) & (card.criterion == "average") & (card.statistic == rc.SPEARMAN)
                    & (card.level == "summary")].iloc[0]

    def value(row: pd.Series) -> str:
        return (f"{row.value:.2f}" if np.isfinite(row.value) else
                "undefined (on some dimension its scores are constant within every document)")

    weighted, argmax = average(rc.GEVAL_WEIGHTED), average(rc.GEVAL_ARGMAX)
    rouge, cosine = average(rc.ROUGE_BASELINE), average(rc.COSINE_BASELINE)
    return (f"**G-Eval on SummEval** (summary-level average ρ over {int(weighted.n)} documents, "
            f"{'no intervals' if not np.isfinite(weighted.ci_low) else 'see the card for intervals'}): as declared "
            f"(weighted) {value(weighted)}, argmax digit {value(argmax)}; non-LLM baselines ROUGE-1 "
            f"{value(rouge)}, MiniLM cosine to the source {value(cosine)}. Published: {weighted.anchors}. "
            f"Coherence on {nocot_docs} document(s) without an interval: {with_steps:.2f} with the evaluation steps, "
            f"{without_steps:.2f} without.")


def bias(battery: pd.DataFrame, pools: pd.DataFrame, uniform_self_consistency: float) -> str:
    """The bias battery in words: listwise position consistency beside the share of the modal grade (a constant
    judge is perfectly consistent), pairwise consistency beside the first-shown share and MT-Bench's judges,
    the pointwise rows, the defence read by its sign; ``pools``: :func:`lib.judges.methods.pool_ties` of the
    PRP pools; ``uniform_self_consistency``: :func:`lib.judges.bias.uniform_modal_share` for the self-consistency
    row (what a rater drawing grades uniformly at random would score)."""
    rows = battery.set_index(["form", "statistic"])

    def said(form: str, statistic: str) -> str:
        r = rows.loc[(form, statistic)]
        return f"{r.value:.2f} ({interval_text(r.ci_low, r.ci_high, label='')}, n = {int(r.n)})"

    pointwise = battery[battery.form == "pointwise"]
    parts = [f"{r.statistic} {r.value:.2f} ({interval_text(r.ci_low, r.ci_high, label='')}, n = {int(r.n)})"
             + (f" against {uniform_self_consistency:.2f}, the least an independent sampler can score (grades "
                f"drawn uniformly at random); the judge is used through its probabilities at T = 0, so this "
                f"describes how spread its sampling is" if r.bias == "self-consistency" else "")
             for r in pointwise.itertuples()]
    defence = pointwise[pointwise.statistic.str.startswith("inflation recovered")]
    reading = ""
    if len(defence):
        d = defence.iloc[0]
        reading = (f" The defence's effect ({d.value:+.2f}) rests on {int(d.n)} passages, too few for an interval."
                   if not np.isfinite(d.ci_low) else
                   " The defence sentence *raises* the inflation (its interval lies below 0)." if d.ci_high < 0
                   else " The defence sentence recovers part of the inflation (its interval lies above 0)."
                   if d.ci_low > 0 else " The defence's effect is not distinguishable from 0.")
    from scipy.stats import binomtest

    first = rows.loc[("pairwise", "share of answers choosing the first-shown passage")]
    answers = 2 * int(first.n)
    if answers:
        chose_first = int(round(first.value * answers))
        first_shown = (f"{chose_first} of {answers} answers (exact binomial p = "
                       f"{binomtest(chose_first, answers, 0.5).pvalue:.1g} against no preference; the answers share "
                       f"passages, so read it as a description)")
    else:
        first_shown = "no answer: no pair was judged in both orders"
    scored = pools.filter(like="distinct prp")
    relevant = int((pools["relevant (grade > 0)"] > 0).sum())
    return (f"**Bias**: listwise position consistency {said('listwise', rc.POSITION_CONSISTENCY)}, but the judge gave "
            f"its most frequent grade to {said('listwise', 'share of the modal grade, as given')} of the passages, "
            f"and a judge that always gives one grade is perfectly consistent; pairwise consistency "
            f"{said('pairwise', rc.POSITION_CONSISTENCY)} (published: "
            f"{rows.loc[('pairwise', rc.POSITION_CONSISTENCY)].anchors}), the first-shown passage chosen in "
            f"{first_shown}. PRP ranked "
            f"{len(pools)} pools, {relevant} with a relevant passage (nDCG needs one), with "
            f"{', '.join(str(int(v)) for v in scored.iloc[:, 0])} distinct scores for "
            f"{', '.join(str(int(v)) for v in pools.passages)} passages: its order is partly the docid tie-break. "
            + "Pointwise: " + "; ".join(parts) + "." + reading)


def crs(tas_judge: Mapping[str, float], levels: pd.DataFrame, orderings: pd.DataFrame, shift_tests: pd.DataFrame,
        segment_tests: pd.DataFrame, ablations: pd.DataFrame, alpha: float) -> str:
    """Chapter 06's metrics: the conversation judge against TAS at the pooled, within-system and system levels
    (``levels``: :func:`lib.crs.tables.judge_levels` for TAS; the system level over 5 systems is given without an
    interval), the expected orderings, the paired construct tests with each family's Holm floor
    (:func:`lib.analysis.comparisons.holm_floor`: when it is at or above ``alpha`` no result could be significant), and
    the ablations that reorder the systems."""
    system = levels.loc["system level"]
    families = []
    for name, tests in (("shift", shift_tests), ("within-vs-across", segment_tests)):
        significant = tests[tests.p_holm < alpha]
        floor = holm_floor(tests)
        families.append(f"{len(significant)} of {int(tests.p.notna().sum())} {name} tests (the smallest Holm-adjusted "
                        f"p this family could reach is {floor:.2f}"
                        + (", so it cannot reject at this size)" if floor >= alpha else ")"))
    changed = ablations[ablations.changed]
    return (f"**CRS metrics**: the conversation judge's mean against session TAS {correlation_text(tas_judge)} (two "
            f"unvalidated instruments agreeing or not); within systems "
            f"{correlation_text(levels.loc['within systems'].to_dict())}; over the {int(system.n)} system means ρ = "
            f"{system.r:.2f} (too few systems for an interval). Template > stale template > echo holds for "
            + ", ".join(f"{o.metric.upper()}: {'yes' if o.holds else 'no'} ({o.observed})" for o in orderings.itertuples())
            + f". Holm-adjusted p < {alpha} in " + " and in ".join(families)
            + ". Ablations that change the order of the systems: "
            + (", ".join(f"{r.variant} (τ = {r.kendall_tau:.2f})" for r in changed.itertuples()) or "none") + ".")


def bullets(lines: Sequence[str]) -> str:
    """The bullets as one Markdown list."""
    return "\n".join(f"* {line}" for line in lines)


@headline("07_validity", "report_card")
def judge_report_card(tables: Tables) -> str:
    """The lifted judge's two test numbers against the targets of chapter 07, each with its interval and
    whether it reaches the target, and how many card rows there are."""
    card = tables["report_card"]
    targets = rc.target_table(card)

    def said(t: pd.Series) -> str:
        has_interval = bool(np.isfinite([t["ci_low"], t["ci_high"]]).all())
        reached = ("reaches it" if t["reached_by_interval"] else "reaches it by the estimate, not by the interval"
                   if t["reached"] and has_interval else "misses it" if has_interval
                   else "without an interval, neither reached nor missed")
        interval = interval_text(t["ci_low"], t["ci_high"], undefined="too few units for an interval")
        return (f"{t['statistic']} = {t['value']:.2f} ({interval}, n = {int(t['n'])}) against a target of "
                f"{t['goal']:.2f}: it {reached}")

    relevance, geval = targets.iloc[0], targets.iloc[1]
    method = relevance["judge"].removesuffix(rc.CHOSEN)
    return (f"Report card of {card['judge'].nunique()} judges and baselines in {len(card)} rows. On held-out TREC "
            f"DL19 queries the relevance method chosen on dev ({method}) has {said(relevance)}; G-Eval on held-out "
            f"SummEval documents has a summary-level {said(geval)}.")
