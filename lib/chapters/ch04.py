"""Chapter 04 (NDCG analysis): text generated from its result tables, so prose and numbers cannot drift apart,
and its front-page headline.

The text: which measures and entries carry information (:func:`measure_status_text`), the primary
and secondary comparisons (:func:`comparison_paragraph`), the perturbation check (:func:`perturbation_text`),
threats to validity (:func:`threats_to_validity`) and the conclusion (:func:`conclusion`). Every number and
every verdict in them is computed from the tables passed in; the only typed facts are what a data source or
model *is* (``MODEL_DESCRIPTIONS``, the entries' source) — not what it measured.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from lib import known_answers
from lib.analysis import power
from lib.analysis.ranking import unorderable_pools, value_range
from lib.analysis.stats import MIN_CI_UNITS, interval_text
from lib.chapters.headline import Tables, headline
from lib.llm.server import describe_model


def _p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3g}")


def _intervals(row: Mapping) -> str:
    """A comparison's two 95% CIs with what each resampled: "95% CI -0.022 to +0.004 resampling 40 entries, none
    resampling 5 personas"; "no 95% CI (3 non-tied of 20 entries; 5 personas)" when neither exists."""
    parts = [(interval_text(row[low], row[high], digits=3, signed=True, prefix="", undefined=""), row[over])
             for low, high, over in (("ci_low", "ci_high", "ci_over"),
                                     ("ci_low_persona", "ci_high_persona", "ci_over_persona"))]
    if not any(interval for interval, _ in parts):
        non_tied = int(row["wins"] + row["losses"])
        return (f"no 95% CI: {non_tied} non-tied of {row['ci_over']}, {row['ci_over_persona']}; an interval needs "
                f"{MIN_CI_UNITS} units with {MIN_CI_UNITS} non-tied differences")
    return "95% CI " + ", ".join(f"{interval or 'none'} resampling {over}" for interval, over in parts)


def _direction(diff: float) -> str:
    return "higher" if diff > 0 else "lower" if diff < 0 else "the same"


def _unorderable_text(labels: pd.DataFrame) -> str:
    single, constant, pools = unorderable_pools(labels)
    return (f"{single + constant} of {pools} pools score the same under every order ({single} hold one candidate, "
            f"{constant} carry one label on several)")


def primary_plan(comparisons: pd.DataFrame, difference: float, pilot_sd: float, pilot_entries: int, alpha: float,
                 power_: float) -> power.Plan:
    """The primary comparison's plan, declared before the run: entries for a paired t-test to detect
    ``difference`` at the pilot's sd of per-entry differences, beside the entries this run compares."""
    primary = comparisons[comparisons.primary.astype(bool)]
    row = primary.iloc[0] if len(primary) else None
    basis = (f"paired t-test at α = {alpha:g} and power {power_:.0%} for a difference of {difference:g} at the sd "
             f"{pilot_sd:g} of the per-entry differences in a pilot of {pilot_entries} entries; the exact sign-flip "
             f"test needs at least {power.min_nonzero_units(alpha)} non-tied entries to reach p < {alpha:g} at all")
    question = (f"Does {row['system']} rank differently from {row['baseline']} on {row['measure']}, by "
                f"{difference:g} or more?" if row is not None else "The primary comparison")
    return power.Plan(question, "entry", int(row["n_entries"]) if row is not None else 0,
                      power.units_for_t_test(difference, pilot_sd, alpha, power_), basis)


def detectable_text(comparisons: pd.DataFrame, labels: pd.DataFrame) -> str:
    """Which difference this run can detect on the primary comparison (its MDE, or that none is detectable), beside
    the range the pools themselves allow on its measure (best minus worst order, mean over the scored entries)."""
    primary = comparisons[comparisons.primary.astype(bool)]
    if not len(primary):
        return "The primary comparison was not tested, so no difference is detectable."
    row = primary.iloc[0]
    ranges = value_range(labels)
    ranges = ranges[ranges.measure == row["measure"]]
    span = (ranges.best - ranges.worst).mean()
    room = (f"; the pools themselves allow {span:.3f} on average between their best and worst order "
            f"({len(ranges)} entries)")
    if row["min_p"] >= row["alpha"]:
        return (f"With {int(row['wins'] + row['losses'])} non-tied entries the smallest attainable p is "
                f"{_p(row['min_p'])}: no outcome could reach α = {row['alpha']:g}, so no difference is detectable"
                f"{room}.")
    return (f"This run can decide the primary comparison: with {int(row['wins'] + row['losses'])} non-tied entries "
            f"the smallest attainable p is {_p(row['min_p'])} (< α = {row['alpha']:g}), and at the sd of its "
            f"per-entry differences it detects a difference of {row['mde']:.4f} on {row['measure']} with "
            f"{row['power']:.0%} power{room}.")


def discrimination_table(judge: pd.DataFrame, rankers: pd.DataFrame, reading: str) -> pd.DataFrame:
    """The judge's gain (``judge``: chapter 03's judge_discrimination rows, ``reading``'s) and every ranker
    (``rankers``: :func:`lib.known_answers.ranker_discrimination`) on the known answers: per (who, kind) the AUC of
    real over distractor with its interval over entries, and the reason a ranker's check holds by construction."""
    judged = judge[judge.reading == reading].drop(columns="reading").assign(who=f"judge ({reading})")
    both = pd.concat([judged, rankers.rename(columns={"ranker": "who"})], ignore_index=True)
    both["by construction"] = [known_answers.BY_CONSTRUCTION.get((who, kind), "")
                               for who, kind in zip(both.who, both.kind, strict=True)]
    return both.set_index(["who", "kind"])[["entries", "auc", "ci_low", "ci_high", "ci_over", "by construction"]]


def known_answer_text(table: pd.DataFrame, reading: str) -> str:
    """Markdown: which kinds of distractor the judge's gain sees (interval above 0.5), which it does not, and, per
    kind, the rankers that see it without holding by construction."""
    judge = table.loc[f"judge ({reading})"]
    seen = known_answers.sees(judge)
    lines = ["- **The judge** sees: " + (", ".join(f"{k.replace('_', ' ')} ({judge.at[k, 'auc']:.2f}, "
                                                   f"{interval_text(judge.at[k, 'ci_low'], judge.at[k, 'ci_high'])})"
                                                   for k in judge.index[seen]) or "no kind")
             + "; does not see: " + (", ".join(f"{k.replace('_', ' ')} ({judge.at[k, 'auc']:.2f}, "
                                               f"{interval_text(judge.at[k, 'ci_low'], judge.at[k, 'ci_high'])})"
                                               for k in judge.index[~seen]) or "none")
             + f" ({judge.ci_over.iloc[0]}). A difference of a kind it does not see cannot show in its labels."]
    rankers = table.drop(index=f"judge ({reading})", level="who")
    for kind in judge.index:
        part = rankers.xs(kind, level="kind")
        honest = part[(part["by construction"] == "") & known_answers.sees(part)]
        lines.append(f"- **{kind.replace('_', ' ')}**: rankers above 0.5 not by construction: "
                     + (", ".join(f"{who} {r.auc:.2f}" for who, r in honest.iterrows()) or "none") + ".")
    return "\n".join(lines)


def measure_status_text(status: pd.DataFrame, labels: pd.DataFrame) -> str:
    """Markdown: the pools with constant labels, the measures tested with their informative entries, and the
    measures not tested with the reason (``lib.analysis.comparisons.measure_status``)."""
    tested = status[status.tested.astype(bool)]
    lines = [f"{_unorderable_text(labels)}: no ranker can win or lose there."]
    if len(tested):
        lines.append("- Tested (informative entries / entries scored): " + "; ".join(
            f"{m} {int(r.entries_informative)} / {int(r.entries_scored)}" for m, r in tested.iterrows()) + ".")
    for m, r in status[~status.tested.astype(bool)].iterrows():
        lines.append(f"- Not tested — {m}: {r.reason}; every ranker has the same value on every entry "
                     f"(zero variance across rankers), so there is nothing to compare.")
    return "\n".join(lines)


def _comparison_sentence(row: Mapping) -> str:
    return (f"{row['system']} − {row['baseline']} on {row['measure']} = **{row['mean_diff']:+.3f}** "
            f"({_intervals(row)}) "
            f"over {int(row['n_entries'])} entries, {int(row['n_informative'])} of them informative: "
            f"{int(row['wins'])} wins, {int(row['losses'])} losses, {int(row['ties'])} ties; exact sign-flip "
            f"p = {_p(row['p_permutation'])}")


def _excluding_cis(row: Mapping) -> list[str]:
    """Which of the row's 95% CIs (by entry, by persona) exclude 0."""
    return [name for name, low, high in (("by entry", row["ci_low"], row["ci_high"]),
                                         ("by persona", row["ci_low_persona"], row["ci_high_persona"]))
            if low > 0 or high < 0]


def _compatibility(row: Mapping) -> str:
    """What a non-significant comparison's intervals allow, flagging CIs that exclude 0 against the exact test."""
    excluding = _excluding_cis(row)
    if excluding:
        return (f"The 95% CI {' and '.join(excluding)} excludes 0 although the exact test does not reject: "
                f"percentile-bootstrap intervals run narrow at this n (and the persona one rests on few clusters), "
                f"so the evidence is borderline, not a finding")
    if not (np.isfinite(row["ci_low"]) or np.isfinite(row["ci_low_persona"])):
        return "No interval bounds the difference at this size"
    return "The data are compatible with no difference and with differences anywhere in the CI"


def _cannot_detect(row: Mapping) -> str:
    """What a non-significant comparison does and does not say, from its MDE and attainable p."""
    level = row["alpha"] / row["family_size"]
    parts = []
    if row["min_p"] >= row["alpha"]:
        parts.append(f"with {int(row['wins'] + row['losses'])} non-tied entries no outcome could have reached "
                     f"p < {row['alpha']:g} (smallest attainable p = {_p(row['min_p'])}), so no effect of any "
                     f"size was detectable here")
    elif np.isfinite(row["mde"]):
        size = "smaller than" if abs(row["mean_diff"]) < row["mde"] else "at least as large as"
        parts.append(f"at this n a true difference would have to be about ±{row['mde']:.3f} to be detected with "
                     f"{row['power']:.0%} power at level {level:.3g} (minimum detectable effect); the observed "
                     f"difference is {size} that")
    else:
        parts.append("the differences have no spread, so no minimum detectable effect can be computed")
    return "; ".join(parts)


def comparison_paragraph(comparisons: pd.DataFrame) -> str:
    """Markdown summary of ``lib.analysis.comparisons.compare_to_baselines``: the primary comparison with its
    direction, effect, both CIs, W/L/T, p and what it can and cannot show; then the secondary family (Holm):
    how many are significant, the direction counts, the comparisons with no difference on any entry (named by
    measure and baseline), and their MDEs. Uses the system name from the table."""
    if comparisons.empty:
        return "No comparison could be tested: no measure has an informative entry."
    system = comparisons.system.iloc[0]
    alpha = float(comparisons.alpha.iloc[0])
    lines = []
    primary = comparisons[comparisons.primary.astype(bool)]
    if len(primary):
        row = primary.iloc[0]
        verdict = (f"significant at α = {alpha:g}: {system} ranks {'better' if row['mean_diff'] > 0 else 'worse'} "
                   f"than {row['baseline']} on {row['measure']} by this judge's labels"
                   if row["significant"] else
                   f"not significant at α = {alpha:g}. {_compatibility(row)}; {_cannot_detect(row)}. This is "
                   f"absence of evidence, not evidence that the rankers are equal")
        lines.append(f"**Primary comparison** (declared in the parameters, a family of one): "
                     f"{_comparison_sentence(row)} — {verdict}.")
    else:
        lines.append("**Primary comparison**: not tested (its measure has no informative entry, or the baseline "
                     "has no values).")
    secondary = comparisons[~comparisons.primary.astype(bool)]
    if len(secondary):
        m = int(secondary.family_size.iloc[0])
        level = alpha / m
        significant = secondary[secondary.significant.astype(bool)]
        identical = secondary[(secondary.wins == 0) & (secondary.losses == 0)]
        differing = secondary[(secondary.wins + secondary.losses) > 0]
        lines.append(
            f"\n**Secondary comparisons** ({system} vs each baseline on each tested measure; one family of {m}, "
            f"Holm-corrected): **{len(significant)}** significant at α = {alpha:g}. {system}'s mean is higher in "
            f"{int((differing.mean_diff > 0).sum())}, lower in {int((differing.mean_diff < 0).sum())}, equal in "
            f"{int((differing.mean_diff == 0).sum())} of the {len(differing)} that differ on some entry.")
        for _, row in significant.iterrows():
            lines.append(f"- {_comparison_sentence(row)}, Holm-adjusted p = {_p(row['p_holm'])}: "
                         f"{system} is {'better' if row['mean_diff'] > 0 else 'worse'}.")
        if len(identical):
            lines.append("- Identical on every entry (p = 1; not evidence that the rankers are equal beyond these "
                         "entries): "
                         + "; ".join(f"{r.measure} vs {r.baseline}" for r in identical.itertuples()) + ".")
        excludes = [(r, _excluding_cis(r)) for _, r in differing[~differing.significant.astype(bool)].iterrows()]
        excludes = [(r, names) for r, names in excludes if names]
        if excludes:
            lines.append("- Not significant after Holm, yet with a 95% CI that excludes 0 ("
                         + "; ".join(f"{r['measure']} vs {r['baseline']}: {' and '.join(names)}"
                                     for r, names in excludes)
                         + "): an unadjusted 95% interval is not a test at the family's level, and the persona "
                           "interval rests on a handful of clusters.")
        detectable = differing[differing.min_p < level]
        mdes = detectable.mde[np.isfinite(detectable.mde)]
        lines.append(f"- {int((differing.min_p >= alpha).sum())} of {len(differing)} have too few non-tied entries "
                     f"to reach p < {alpha:g} with any outcome, and {int((differing.min_p >= level).sum())} too few "
                     f"to clear α/{m} = {level:.3g}: for those no effect of any size was detectable"
                     + (f"; the minimum detectable effects of the others run from {mdes.min():.3f} to "
                        f"{mdes.max():.3f} (each on its measure's scale)." if len(mdes) else "."))
    return "\n".join(lines)


def perturbation_text(changes: Mapping, repeats: int, same_order: float, keeps: pd.Series, system: str,
                      measure: str) -> str:
    """Markdown report of the perturbation check: the measured layout changes of the gain it draws from, and how
    often the order and each sign held."""
    if not changes["n"]:
        return (f"No perturbation check: the repeat table has no `{changes['column']}` gain, so its change under "
                f"another layout is not measured.")
    if not changes["changed"]:
        return (f"No perturbation check: the gain (`{changes['column']}`) did not change on any of the {changes['n']} "
                f"candidates re-judged under another layout, so moving labels by those changes moves nothing. Its "
                f"robustness to judge noise is untested here — see how the order changes with the reading above.")
    spread = float(np.std(changes["changes"], ddof=1)) if changes["n"] > 1 else float("nan")
    return "\n".join([
        f"Each perturbation moves every gain by a change drawn from the {changes['n']} measured under the alternate "
        f"layout (`{changes['column']}`: {changes['changed']} of them non-zero, sd {spread:.3f}), clipped to the "
        f"0–2 scale; {repeats} perturbations.",
        f"- The order of all rankers by mean {measure} (ties kept as ties) is unchanged in **{same_order:.0%}** of "
        f"them.",
        "- The sign of " + "; ".join(f"{system} − {b}: {share:.0%}" for b, share in keeps.items())
        + " (share of perturbations in which it held)."])


def threats_to_validity(entries: pd.DataFrame, labels: pd.DataFrame, known: pd.DataFrame, changes: Mapping,
                        comparisons: pd.DataFrame, measure: str) -> str:
    """Markdown list of the threats to chapter 04's validity, with the measured numbers: generator and judge
    model, what the judge's gain sees on the known answers (``known``: :func:`discrimination_table` rows of the
    judge) and how it moves under another layout, the gain's distribution and constant pools, the personas
    (number, entries each), the entries' source and length, the generation runs, and what the CIs leave out."""
    generators = sorted(set(entries.model.dropna()))
    judges = sorted(set(labels.model.dropna()))
    if generators == judges and len(judges) == 1:
        model = (f"- **Same model as generator and judge.** One model — {describe_model(judges[0])} — wrote every "
                 f"candidate and labelled every candidate: the judge may prefer its own generations, and no second "
                 f"judge checks it.")
    else:
        model = (f"- **Models.** Generator: {', '.join(map(describe_model, generators))}; judge: "
                 f"{', '.join(map(describe_model, judges))}.")
    moved = (f"; re-judged with another layout of the same prompt, the gain changed on {changes['changed']} of "
             f"{changes['n']} candidates, by {float(np.mean(np.abs(changes['changes']))):.3f} on average (a formatting "
             f"change; other perturbations may move it more)"
             if changes["n"] else "; its change under another layout is not measured")
    blind = [k.replace("_", " ") for k, seen in known_answers.sees(known).items() if not seen]
    judge_line = (f"- **A weak judge, with no human labels for nudges.** Its agreement with human relevance grades "
                  f"is measured on TREC DL19 passages in chapter 07, not on nudges. On the known answers its gain "
                  f"does not tell real candidates from: {', '.join(blind) or 'none of the kinds'} "
                  f"({known.ci_over.iloc[0]}){moved}.")
    gains = labels.label.dropna()
    primary = comparisons[comparisons.primary.astype(bool)] if len(comparisons) else comparisons
    informative = (f"; {int(primary.n_informative.iloc[0])} of {int(primary.n_entries.iloc[0])} entries are "
                   f"informative for {measure}" if len(primary) else "")
    constant_text = _unorderable_text(labels)
    distribution = (f"- **Gains in a narrow band.** The {len(gains)} gains ({labels.label_source.iloc[0]}) take "
                    f"{gains.nunique()} distinct values from {gains.min():.2f} to {gains.max():.2f} (sd "
                    f"{gains.std(ddof=1):.3f}; {int(labels.label.isna().sum())} missing); {constant_text}"
                    f"{informative}.")
    per_persona = entries.groupby("persona_id").size()
    clusters = (f"; with {len(per_persona)} personas no interval resamples them (fewer than {MIN_CI_UNITS}), so no "
                f"claim here is about personas beyond these")
    similarity = (f" Each entry's persona is the one whose description is most similar to it (mean entry–persona "
                  f"MiniLM cosine {entries.persona_similarity.mean():.3f}): a topic match, not a biography."
                  if "persona_similarity" in entries else "")
    personas = (f"- **Personas, not people.** The value treatment rests on {len(per_persona)} personas "
                f"(design inputs, `lib.design.PERSONAS`) with {per_persona.min()}–{per_persona.max()} entries each"
                f"{clusters}.{similarity}")
    words = entries.text.str.split().str.len()
    splits = ", ".join(sorted(set(entries.split)))
    journal = (f"- **Stand-in journal entries.** The {len(entries)} entries are EmpatheticDialogues situation "
               f"prompts ({splits} split; median {words.median():.0f} words), written by crowd workers to set up "
               f"a dialogue, not journal entries.")
    sizes = labels.groupby("entry_id").size()
    pool = f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()}–{sizes.max()}"
    generation = (f"- **One generation run.** Each pool is the answer of one generation call ({pool} candidates; "
                  f"{int(entries.attempts.sum())} requests for {len(entries)} entries); how the comparison varies "
                  f"between generation runs is unmeasured.")
    cis = ("- **The CIs ignore label uncertainty.** They resample entries (or personas) with the labels held "
           "fixed; the judge's noise enters only through the perturbation check.")
    return "\n".join([model, judge_line, distribution, personas, journal, generation, cis])


def conclusion(comparisons: pd.DataFrame, summary: pd.DataFrame, known: pd.DataFrame, changes: Mapping,
               same_order: float, keeps: pd.Series, measure: str, required_kind: str, min_stability: float,
               variant_orders: Mapping[str, str]) -> str:
    """Markdown answer to chapter 04's question — does the system rank better than the primary baseline, and
    can this judge tell? — from the primary comparison, the secondary family, the perturbation check and the
    known-answer check (``known``: the judge's rows of :func:`discrimination_table`, indexed by kind).

    The judge *can rank these rankers* only when all hold: (a) the primary comparison is significant; (b) its
    sign holds in at least ``min_stability`` of the perturbations by the gain's measured layout changes; (c) the
    order of all rankers holds as often; (d) the judge's gain tells real candidates from the ``required_kind``
    of distractor (interval over entries above 0.5) — the difference the system is about; (e) the order of all
    rankers is the same under every reading (``variant_orders``: reading → order text). Layout changes that are
    all 0 test nothing, so (b) and (c) then count as unmet. Each unmet condition is named."""
    primary = comparisons[comparisons.primary.astype(bool)] if len(comparisons) else comparisons
    means = summary[summary.measure == measure].set_index("ranker")["mean"]
    if not len(primary):
        return (f"**Primary comparison:** not testable with these labels — {measure} has no informative entry.\n\n"
                f"**Can this judge rank these rankers?** No: with no informative entry it cannot separate them.")
    row = primary.iloc[0]
    system, baseline = row["system"], row["baseline"]
    effect = (f"{system} − {baseline} on {measure} = {row['mean_diff']:+.3f} "
              f"({_intervals(row)}; exact p = {_p(row['p_permutation'])}"
              f"; {int(row['wins'])} wins, {int(row['losses'])} losses, {int(row['ties'])} ties)")
    if row["significant"]:
        answer = (f"By this judge's labels, {'yes' if row['mean_diff'] > 0 else 'no — it does worse'}: {effect}.")
    else:
        both_ways = row["ci_low"] < 0 < row["ci_high"]
        answer = (f"We cannot tell. {effect}: {system}'s mean is {_direction(row['mean_diff'])}, but not "
                  f"significantly{', and the CI includes both a gain and a loss' if both_ways else ''}.")
        if _excluding_cis(row):
            answer += f" {_compatibility(row)}."
        if row["min_p"] >= row["alpha"]:
            answer += (f" With {int(row['wins'] + row['losses'])} non-tied entries no outcome could have reached "
                       f"p < {row['alpha']:g}: no effect of any size was detectable with these labels.")
        elif np.isfinite(row["mde"]):
            size = "smaller than" if abs(row["mean_diff"]) < row["mde"] else "not below"
            spread = means.max() - means.min() if len(means) else float("nan")
            share = (f" — {row['mde'] / spread:.0%} of the whole spread of the ranker means on {measure} "
                     f"({means.min():.3f} to {means.max():.3f})" if np.isfinite(spread) and spread > 0 else "")
            answer += (f" The observed difference is {size} the {row['mde']:.3f} this study could detect with "
                       f"{row['power']:.0%} power{share}.")
    perturbed = changes["changed"] > 0
    sign_share = float(keeps.get(baseline, float("nan"))) if perturbed else float("nan")
    same_order = same_order if perturbed else float("nan")
    untested = ("the gain did not change under another layout, so its robustness to judge noise is untested"
                if changes["n"] else "the gain's change under another layout is not measured, so robustness to "
                                     "judge noise is unknown")
    orders = sorted(set(variant_orders.values()))
    kind = known.loc[required_kind] if required_kind in known.index else None
    sees_kind = required_kind in known.index and bool(known_answers.sees(known).loc[required_kind])
    kind_text = (f"the judge's gain tells real candidates from {required_kind.replace('_', ' ')} distractors with "
                 f"AUC {kind['auc']:.2f} ({interval_text(kind['ci_low'], kind['ci_high'])}, {kind['ci_over']})"
                 if kind is not None else f"no {required_kind.replace('_', ' ')} distractor was judged")
    conditions = [
        (bool(row["significant"]), f"the primary comparison is {'' if row['significant'] else 'not '}significant "
                                   f"(p = {_p(row['p_permutation'])}, α = {row['alpha']:g})"),
        (np.isfinite(sign_share) and sign_share >= min_stability,
         f"moved by the gain's measured layout changes, the sign of {system} − {baseline} holds in {sign_share:.0%} "
         f"of perturbations" if np.isfinite(sign_share) else untested),
        (np.isfinite(same_order) and same_order >= min_stability,
         f"the order of all rankers holds in {same_order:.0%} of them" if np.isfinite(same_order) else
         "and so is the stability of the order of all rankers"),
        (sees_kind, kind_text),
        (len(orders) == 1,
         f"the order of all rankers is the same under each of the {len(variant_orders)} readings"
         if len(orders) == 1 else
         f"the order of all rankers changes with the reading ({len(orders)} different orders under "
         f"{len(variant_orders)} readings, e.g. " + "; ".join(f"{name}: {order}"
                                                             for name, order in list(variant_orders.items())[:2])
         + ")"),
    ]
    secondary = comparisons[~comparisons.primary.astype(bool)]
    secondary_text = (f" {int(secondary.significant.sum())} of {len(secondary)} secondary comparisons are "
                      f"significant after Holm." if len(secondary) else "")
    failed = [text for ok, text in conditions if not ok]
    thresholds = (f"(needed: significance, stability ≥ {min_stability:.0%} for the sign and the order, a judge that "
                  f"sees {required_kind.replace('_', ' ')} distractors, one order under every reading)")
    if failed:
        verdict = ("**No — with today's data, this judge cannot rank these rankers**: " + "; ".join(failed)
                   + f" {thresholds}.{secondary_text} Any ranking printed above is this judge's noisy opinion on "
                     f"these {int(row['n_entries'])} entries, not a finding about the rankers.")
    else:
        verdict = ("**Yes**: " + "; ".join(text for _, text in conditions) + f" {thresholds}.{secondary_text} "
                   f"The finding is still this judge's view; see the threats to validity.")
    return (f"**Does {system} rank better than {baseline} on {measure}?** {answer}\n\n"
            f"**Can this judge rank these rankers?** {verdict}")


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
            f"{row['mean_diff']:+.3f} ({interval_text(row['ci_low'], row['ci_high'], digits=3, signed=True)}) over "
            f"{int(row['n_entries'])} entries ({int(row['n_informative'])} informative; {int(row['wins'])} wins, "
            f"{int(row['losses'])} losses), exact sign-flip p = {row['p_permutation']:.2g} — {verdict}{rest}")
