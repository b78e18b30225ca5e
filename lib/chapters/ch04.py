"""Chapter 04 (NDCG analysis): its findings as one record (:func:`findings`) and the text formatted from it.

:func:`findings` makes every decision of the chapter, each a :class:`lib.verdicts.Verdict` decided by
:func:`lib.verdicts.verdict` from the chapter's tables:

* the **primary comparison** (``04.primary``): the system (the value-aware ranker) against the primary baseline
  (the embedding ranker, the system with mixing weight 0) on the primary measure. Declared direction: the system
  ranks better; one-sided exact sign-flip test over entries in that direction (``p``) and the other way
  (``p_against``); smallest difference of interest ``primary_difference``, so an interval within ± it rules such
  a difference out. It depends on the judge's known-answer verdict for the kind the question is about (chapter
  03's, key :func:`judge_key`) and on the system's own manipulation check: the caveats a headline must carry;
* the **secondary family** (``04.secondary.<measure>.<baseline>``): every other comparison of the system with a
  baseline on a tested measure, Holm over the family's one-sided p's (both directions);
* every ranker's **known-answer checks** (``04.known_answer.<ranker>.<kind>``): AUC of real candidates over each
  kind of distractor, chance 0.5 ± ``known_answer_margin``, flagged where it holds by construction
  (:data:`lib.known_answers.BY_CONSTRUCTION`), every kind with a row (0 entries for a kind chapter 01 did not
  build). The system's check on the kind the question is about (``known_answer_kind``) is its manipulation check;
  its value component alone (:data:`lib.known_answers.VALUE_COMPONENT`) is checked beside it. That kind was the
  value mismatch until issue #35's budget cut it (its construction could not be shown; :data:`BEFORE_THE_CUTS`);
  it is now the value contrast, built worse by construction for the same question.

The judge's own known-answer verdicts are chapter 03's: this chapter reads them, never writes them.

None of these verdicts is confirmatory. The question, its measure, baseline and the difference of 0.01 were
declared before the run (params.yaml), and the known answers were built in chapter 01 before any label; but the
one-sided rule, the equivalence reading of the interval and the known-answer margin were set after these data
were seen (issue #33).

The formatters — :func:`measure_status_text`, :func:`comparisons_text`, :func:`known_answer_text`,
:func:`perturbation_text`, :func:`threats_to_validity`, :func:`conclusion` — take the record (and display tables)
and decide nothing; where a phrase depends on a verdict it is looked up by the verdict's word. The only typed facts
are what a data source or model *is* (``describe_model``, the entries' source), never what it measured.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from lib import known_answers, verdicts
from lib.analysis import power
from lib.analysis.comparisons import one_sided_tests
from lib.analysis.ranking import unorderable_pools, value_range
from lib.analysis.sensitivity import order_text
from lib.analysis.stats import MIN_CI_UNITS
from lib.llm.server import describe_model
from lib.verdicts import Claim, Verdict

CHAPTER = "04"

# What the report at commit cd3530b (its executed outputs/notebooks/04_ndcg_analysis.ipynb) stated or implied for
# each question this chapter now decides as a verdict. A key it did not state is new and is left out.
EARLIER: dict[str, str] = {
    # cells 13 and 23: "We cannot tell … This is absence of evidence, not evidence that the rankers are equal"
    "04.primary": "undetermined",
    # cell 13: "0 significant at α = 0.05" in the secondary family, each read as not significant
    **{f"04.secondary.{measure}.{baseline}": "undetermined"
       for measure in ("NDCG@3", "NDCG@5")
       for baseline in ("random", "generator_order", "category", "self_confidence")},
    "04.secondary.NDCG@5.embedding": "undetermined",
    # cell 5: "rankers above 0.5 not by construction" (interval above 0.5)
    "04.known_answer.category.off_topic": "sees",
    "04.known_answer.embedding.tone": "sees",
    "04.known_answer.value_aware.tone": "sees",
}

# What each kind of known answer checks, as the construct of a ranker's verdict.
KNOWN_ANSWER_CONSTRUCTS: dict[str, str] = {
    "off_topic": "scores a real nudge above one written for another entry",
    "value_mismatch": "prefers the nudge written for the entry's values over one written for the opposite values",
    "value_contrast": "scores a real nudge above the same nudge followed by a sentence against the persona's top value",
    "tone": "scores a real nudge above the same nudge with a dismissive opener",
}

# What commit 5e38d9d (the last run with value-mismatch nudges, 40 entries) decided of the rankers on them, before
# issue #35's budget cut them (their construction was not shown without the judge, chapter 01).
BEFORE_THE_CUTS: dict[str, str] = {
    "04.known_answer.random.value_mismatch": "fails",                # 0.472 (0.445 to 0.499)
    "04.known_answer.generator_order.value_mismatch": "fails",       # 0.180 (0.146 to 0.219), by construction
    "04.known_answer.embedding.value_mismatch": "undetermined",      # 0.453 (0.324 to 0.585)
    "04.known_answer.category.value_mismatch": "undetermined",       # 0.493 (0.377 to 0.611)
    "04.known_answer.self_confidence.value_mismatch": "fails",       # 0.180 (0.142 to 0.224)
    "04.known_answer.value_aware.value_mismatch": "undetermined",    # 0.455 (0.320 to 0.588)
    "04.known_answer.value_component.value_mismatch": "undetermined",  # 0.478 (0.367 to 0.585)
}

# The phrases the formatters put beside a verdict, by its word (the verdict is decided in findings, never here).
PRIMARY_ANSWER: dict[str, str] = {
    "holds": "Yes, by this judge's labels: {system} ranks better than {baseline} on {measure}.",
    "fails": "No: by this judge's labels {system} ranks worse than {baseline} on {measure}, significantly — "
             "evidence against the claim.",
    "ruled out": "By this judge's labels the two rank alike: the interval lies within ±{margin:g}, so a difference "
                 "of {margin:g} or more either way is ruled out (the pools allow {span:.3f} on average between "
                 "their best and worst order).",
    "undetermined": "The data cannot decide it: neither one-sided test rejects and the interval does not lie "
                    "within ±{margin:g}.",
}
JUDGE_READING: dict[str, str] = {
    "sees": "the judge's gain tells a {kind} distractor from a real nudge, so its labels can carry the difference "
            "the system is built to make.",
    "blind": "the judge's gain cannot tell a {kind} distractor from a real nudge: its labels cannot carry the "
             "difference the system is built to make, so the comparison measures what the judge sees, not that "
             "difference.",
    "undetermined": "it is not shown that the judge's gain tells a {kind} distractor from a real nudge: its labels "
                    "may not carry the difference the system is built to make, so the comparison may measure what "
                    "the judge sees, not that difference.",
    "fails": "the judge's gain prefers the {kind} distractor to real nudges: its labels run against the difference "
             "the system is built to make.",
}
# How the system against a random order on the primary measure qualifies the primary verdict, by its word.
RANDOM_READING: dict[str, str] = {
    "holds": "the measure does tell the system from a random order on these pools.",
    "ruled out": "the measure cannot tell the system from a random order either: on these pools no ranker differs "
                 "from chance by the smallest difference of interest, so no comparison on it can separate rankers.",
    "undetermined": "whether the system beats a random order on this measure is undetermined.",
    "fails": "the system ranks worse than a random order on this measure.",
}
MANIPULATION_READING: dict[str, str] = {
    "sees": "its manipulation check passes: it makes the difference it is built to make.",
    "undetermined": "it does not pass its own manipulation check: it is not shown to make the difference it is "
                    "built to make.",
    "blind": "it fails its own manipulation check: it cannot tell the two apart.",
    "fails": "it fails its own manipulation check: it prefers the distractor.",
}


def judge_key(kind: str, reading: str) -> str:
    """The key of chapter 03's known-answer verdict for the judge's ``reading`` (a ``reading`` value of its
    judge_discrimination table, e.g. "expected_grade") on ``kind`` of distractor."""
    return f"03.known_answer.{kind}.{reading}"


def known_answer_key(ranker: str, kind: str) -> str:
    """The key of this chapter's known-answer verdict of ``ranker`` on ``kind`` of distractor."""
    return f"{CHAPTER}.known_answer.{ranker}.{kind}"


def _ranker_system(ranker: str, system: str) -> str:
    return f"{system} ranker's value component alone" if ranker == known_answers.VALUE_COMPONENT else f"{ranker} ranker"


@dataclass(frozen=True)
class Findings:
    """Chapter 04's decisions and the evidence its prose needs.

    ``primary``, ``secondary`` and ``known_answers`` are this chapter's verdicts (:meth:`verdicts`); ``judge`` holds
    chapter 03's known-answer verdicts for the gain's reading as found in the verdicts table (empty before chapter
    03 has written them). ``plan`` is the primary comparison's sample-size plan with its outcome; ``pool_span`` the
    mean over ``pool_span_entries`` entries of best − worst order on the primary measure; ``orders`` the weak order
    of the rankers by mean primary measure under each reading of the judge's calls."""

    system: str
    baseline: str
    measure: str
    gain: str
    required_kind: str
    primary: Verdict
    secondary: tuple[Verdict, ...]
    known_answers: tuple[Verdict, ...]
    judge: tuple[Verdict, ...]
    plan: power.Plan
    pool_span: float
    pool_span_entries: int
    orders: tuple[tuple[str, str], ...]

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict this chapter states, in the order of its table."""
        return (self.primary, *self.secondary, *self.known_answers)

    def known(self, key: str) -> Verdict:
        """This chapter's known-answer verdict with ``key``."""
        return next(v for v in self.known_answers if v.key == key)

    @property
    def manipulation_check(self) -> Verdict:
        """The system's known-answer verdict on the kind the question is about."""
        return self.known(known_answer_key(self.system, self.required_kind))

    @property
    def value_component(self) -> Verdict:
        """The same check of the system's value component alone."""
        return self.known(known_answer_key(known_answers.VALUE_COMPONENT, self.required_kind))


def primary_plan(comparisons: pd.DataFrame, difference: float, pilot_sd: float, pilot_entries: int, alpha: float,
                 power_: float) -> power.Plan:
    """The primary comparison's plan, declared before the run: entries for a paired t-test to detect
    ``difference`` at the pilot's sd of per-entry differences, beside the entries this run compares. Whether the
    design reaches that precision is :attr:`~lib.analysis.power.Plan.reaches_precision`; whether the result decides
    the question is set by ``with_outcome`` once the verdict exists (:func:`findings`)."""
    primary = comparisons[comparisons.primary.astype(bool)]
    row = primary.iloc[0] if len(primary) else None
    basis = (f"paired t-test at α = {alpha:g} and power {power_:.0%} for a difference of {difference:g} at the sd "
             f"{pilot_sd:g} of the per-entry differences in a pilot of {pilot_entries} entries; the exact sign-flip "
             f"test needs at least {power.min_nonzero_units(alpha)} non-tied entries to reach p < {alpha:g} at all")
    question = (f"Does {row['system']} rank differently from {row['baseline']} on {row['measure']}, by "
                f"{difference:g} or more?" if row is not None else "The primary comparison")
    return power.Plan(question, "entry", int(row["n_entries"]) if row is not None else 0,
                      power.units_for_t_test(difference, pilot_sd, alpha, power_), basis)


def _comparison_verdict(row: Mapping[str, Any], claim: Claim, primary: bool, depends_on: tuple[str, ...]
                        ) -> Verdict:
    """The verdict of one comparison row (the ndcg_comparisons row joined with its one-sided tests): the interval
    over the informative entries; no test under ``MIN_CI_UNITS`` of them, so such a row is undetermined."""
    units = int(row["n_informative"])
    tested = units >= MIN_CI_UNITS
    return verdicts.verdict(
        CHAPTER, "primary" if primary else f"secondary.{row['measure']}.{row['baseline']}", f"{row['system']} ranker",
        f"ranks better than {row['baseline']} on {row['measure']}", claim, "mean difference", row["mean_diff"],
        row["ci_low"], row["ci_high"], "entries", units, "ndcg_comparisons", test=str(row["test"]),
        p=row["p"] if tested else None, p_against=row["p_against"] if tested else None, primary=primary,
        depends_on=depends_on)


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Chapter 04's findings (rules in the module docstring).

    ``tables``: ``ndcg_comparisons`` (:func:`lib.analysis.comparisons.compare_to_baselines`), ``differences``
    (:func:`lib.analysis.comparisons.paired_differences` of the system over the informative entries),
    ``ranker_discrimination`` (:func:`lib.known_answers.ranker_discrimination` of the scores with the value
    component, :func:`lib.known_answers.with_value_component`), ``labels``, ``reading_means``
    (:func:`lib.analysis.sensitivity.means_by_variant`) and ``verdicts`` (the verdicts table as the earlier
    chapters wrote it). ``params``: the notebook's system, primary_baseline, primary_measure, primary_difference,
    known_answer_kind, known_answer_margin, alpha, power, pilot_sd, pilot_entries, seed, bootstrap_resamples, and
    ``gain`` (the labels' label_source)."""
    system, baseline, measure = params["system"], params["primary_baseline"], params["primary_measure"]
    gain, kind, alpha = params["gain"], params["known_answer_kind"], float(params["alpha"])
    comparisons = tables["ndcg_comparisons"]
    tests = one_sided_tests(tables["differences"], comparisons, int(params["seed"]),
                            int(params["bootstrap_resamples"]), alternative="greater")
    rows = comparisons.merge(tests[["measure", "baseline", "test", "p", "p_against"]], on=["measure", "baseline"],
                             how="left", validate="one_to_one")
    claim = Claim("comparison", 0.0, "higher", float(params["primary_difference"]), alpha)
    depends_on = (judge_key(kind, gain), known_answer_key(system, kind))
    primary_rows = rows[rows.primary.astype(bool)]
    nan = float("nan")
    primary_row = (primary_rows.iloc[0].to_dict() if len(primary_rows) else
                   {"system": system, "baseline": baseline, "measure": measure, "mean_diff": nan, "ci_low": nan,
                    "ci_high": nan, "n_informative": 0, "test": "", "p": nan, "p_against": nan})
    primary = _comparison_verdict(primary_row, claim, True, depends_on)
    secondary = tuple(_comparison_verdict(row, claim, False, ()) for row in rows[~rows.primary.astype(bool)]
                      .to_dict("records"))
    against_random = f"{CHAPTER}.secondary.{measure}.random"
    if any(v.key == against_random for v in secondary):  # the primary measure against chance qualifies it too
        primary = replace(primary, depends_on=(*primary.depends_on, against_random))

    known_claim = Claim("known answer", 0.5, "higher", float(params["known_answer_margin"]), alpha)
    known = tuple(verdicts.verdict(
        CHAPTER, f"known_answer.{row.ranker}.{row.kind}", _ranker_system(row.ranker, system),
        KNOWN_ANSWER_CONSTRUCTS[row.kind], known_claim, "AUC", row.auc, row.ci_low, row.ci_high, "entries",
        row.entries, "known_answer_scores", by_construction=(row.ranker, row.kind) in known_answers.BY_CONSTRUCTION)
        for row in tables["ranker_discrimination"].itertuples())
    missing = [key for key in (*depends_on[1:], known_answer_key(known_answers.VALUE_COMPONENT, kind))
               if key not in {v.key for v in known}]
    if missing:
        raise ValueError(f"no known-answer scores for {missing}: the primary comparison depends on them")

    earlier = verdicts.records(tables["verdicts"]) if len(tables.get("verdicts", ())) else []
    by_key = {v.key: v for v in earlier}
    if any(v.chapter == "03" for v in earlier) and depends_on[0] not in by_key:
        raise ValueError(f"chapter 03 wrote verdicts but none with key {depends_on[0]!r}: the keys disagree")
    judge = tuple(by_key[judge_key(k, gain)] for k in known_answers.DISTRACTOR_KINDS  # the kinds judged in this run
                  if judge_key(k, gain) in by_key and by_key[judge_key(k, gain)].units)

    ranges = value_range(tables["labels"])
    ranges = ranges[ranges.measure == measure]
    plan = primary_plan(comparisons, float(params["primary_difference"]), float(params["pilot_sd"]),
                        int(params["pilot_entries"]), alpha, float(params["power"])).with_outcome(primary.verdict)
    orders = tuple((str(name), order_text(means)) for name, means in tables["reading_means"].iterrows())
    return Findings(system=system, baseline=baseline, measure=measure, gain=gain, required_kind=kind,
                    primary=primary, secondary=secondary, known_answers=known, judge=judge, plan=plan,
                    pool_span=float((ranges.best - ranges.worst).mean()) if len(ranges) else nan,
                    pool_span_entries=len(ranges), orders=orders)


def discrimination_table(judge: pd.DataFrame, rankers: pd.DataFrame, reading: str) -> pd.DataFrame:
    """The judge's gain (``judge``: chapter 03's judge_discrimination rows, ``reading``'s) and every ranker
    (``rankers``: :func:`lib.known_answers.ranker_discrimination`) on the known answers: per (who, kind) the AUC of
    real over distractor with its interval over entries, and the reason a ranker's check holds by construction."""
    judged = judge[judge.reading == reading].drop(columns="reading").assign(who=f"judge ({reading})")
    both = pd.concat([judged, rankers.rename(columns={"ranker": "who"})], ignore_index=True)
    both["by construction"] = [known_answers.BY_CONSTRUCTION.get((who, kind), "")
                               for who, kind in zip(both.who, both.kind, strict=True)]
    return both.set_index(["who", "kind"])[["entries", "auc", "ci_low", "ci_high", "ci_over", "by construction"]]


def _kind(kind: str) -> str:
    return kind.replace("_", " ")


def _missing_judge(f: Findings) -> str:
    return (f"chapter 03's known-answer verdicts for the gain {f.gain} are not in the verdicts table (keys "
            f"{judge_key('<kind>', f.gain)}): chapter 03 has not written them")


def known_answer_text(f: Findings) -> str:
    """Markdown: the judge's known-answer verdicts (chapter 03's), per kind the rankers that see it (not by
    construction, then by construction), and the system's manipulation check with its value component alone."""
    judge = ("; ".join(f"{_kind(v.key.split('.')[2])}: **{v.verdict}** ({verdicts.evidence_text(v)})"
                       for v in f.judge) if f.judge else _missing_judge(f))
    lines = [f"- **The judge** (gain {f.gain}; chapter 03's verdicts): {judge}."]
    for kind in KNOWN_ANSWER_CONSTRUCTS:
        if not any(v.units for v in f.known_answers if v.key.endswith(f".{kind}")):
            lines.append(f"- **{_kind(kind)}**: no distractor of this kind in this run (0 entries).")
            continue
        rows = [v for v in f.known_answers if v.key.endswith(f".{kind}") and v.verdict == "sees"]
        honest = ", ".join(f"{v.system} {v.estimate:.2f}" for v in rows if not v.by_construction) or "none"
        built = ", ".join(f"{v.system} {v.estimate:.2f}" for v in rows if v.by_construction) or "none"
        lines.append(f"- **{_kind(kind)}** ({KNOWN_ANSWER_CONSTRUCTS[kind]}): seen by {honest}; seen by "
                     f"construction: {built}.")
    check = f.manipulation_check
    lines.append(f"- **{f.system}'s manipulation check**: {verdicts.sentence(check)} "
                 f"{MANIPULATION_READING[check.verdict].capitalize()} Its value component alone: "
                 f"{verdicts.sentence(f.value_component)}")
    return "\n".join(lines)


def _unorderable_text(labels: pd.DataFrame) -> str:
    single, constant, pools = unorderable_pools(labels)
    return (f"{single + constant} of {pools} pools score the same under every order ({single} hold one candidate, "
            f"{constant} carry one label on several)")


def measure_status_text(status: pd.DataFrame, labels: pd.DataFrame) -> str:
    """Markdown: the pools with constant labels, the measures tested with their informative entries, and the
    measures not tested with the share of candidates their threshold counts as relevant and the reason
    (``lib.analysis.comparisons.measure_status``)."""
    tested = status[status.tested.astype(bool)]
    labelled = int(labels.label.notna().sum())
    lines = [f"{_unorderable_text(labels)}: no ranker can win or lose there."]
    if len(tested):
        lines.append("- Tested (informative entries / entries scored): " + "; ".join(
            f"{m} {int(r.entries_informative)} / {int(r.entries_scored)}" for m, r in tested.iterrows()) + ".")
    for m, r in status[~status.tested.astype(bool)].iterrows():
        lines.append(f"- Not tested, tabled or plotted — {m}: its threshold counts {r.relevant_share:.0%} of the "
                     f"{labelled} labelled candidates as relevant; {r.reason}.")
    return "\n".join(lines)


def comparisons_text(f: Findings) -> str:
    """Markdown: the primary comparison's verdict, then the secondary family's verdicts by word."""
    counts = Counter(v.verdict for v in f.secondary)
    lines = [f"**Primary comparison** (declared before the run; a family of one): {verdicts.sentence(f.primary, 4)}"]
    if f.secondary:
        lines.append(f"\n**Secondary comparisons** ({len(f.secondary)}, one family; Holm over the one-sided p's in "
                     f"each direction): " + ", ".join(f"{n} {word}" for word, n in counts.items()) + ".")
        lines += [f"- {verdicts.sentence(v, 4)}" for v in f.secondary]
    return "\n".join(lines)


def perturbation_text(changes: Mapping, repeats: int, same_order: float, keeps: pd.Series, system: str,
                      measure: str) -> str:
    """Markdown report of the perturbation check: the measured layout changes of the gain it draws from, and how
    often the order and each sign held (a description: no verdict rests on it)."""
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


def threats_to_validity(f: Findings, entries: pd.DataFrame, labels: pd.DataFrame, changes: Mapping,
                        comparisons: pd.DataFrame) -> str:
    """Markdown list of the threats to chapter 04's validity, with the measured numbers: generator and judge
    model, the judge's known-answer verdicts (chapter 03's, from ``f``) and how its gain moves under another
    layout, the gain's distribution and constant pools, the personas (number, entries each), the entries' source
    and length, the generation runs, and what the CIs leave out."""
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
    known = (", ".join(f"{_kind(v.key.split('.')[2])} **{v.verdict}**" for v in f.judge) if f.judge
             else _missing_judge(f))
    judge_line = (f"- **A weak judge, with no human labels for nudges.** Its agreement with human relevance grades "
                  f"is measured on TREC DL19 passages in chapter 07, not on nudges. On the known answers its gain "
                  f"is: {known}{moved}.")
    gains = labels.label.dropna()
    primary = comparisons[comparisons.primary.astype(bool)] if len(comparisons) else comparisons
    informative = (f"; {int(primary.n_informative.iloc[0])} of {int(primary.n_entries.iloc[0])} entries are "
                   f"informative for {f.measure}" if len(primary) else "")
    distribution = (f"- **Gains in a narrow band.** The {len(gains)} gains ({labels.label_source.iloc[0]}) take "
                    f"{gains.nunique()} distinct values from {gains.min():.2f} to {gains.max():.2f} (sd "
                    f"{gains.std(ddof=1):.3f}; {int(labels.label.isna().sum())} missing); {_unorderable_text(labels)}"
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
    cis = ("- **The intervals ignore label uncertainty.** They resample entries with the labels held fixed; the "
           "judge's noise enters only through the sensitivity section.")
    return "\n".join([model, judge_line, distribution, personas, journal, generation, cis])


def _caveat(f: Findings, key: str, verdicts_by_key: Mapping[str, Verdict]) -> str:
    """One verdict the primary depends on, with the phrase for its word; a missing one named as missing."""
    v = verdicts_by_key.get(key)
    if v is None:
        return f"- {_missing_judge(f)}."
    if v.chapter == "03":
        reading = JUDGE_READING[v.verdict].format(kind=_kind(v.key.split(".")[2]))
    elif v.check == "comparison":
        reading = RANDOM_READING[v.verdict]
    else:
        reading = MANIPULATION_READING[v.verdict]
    return f"- {verdicts.sentence(v)} So {reading}"


def conclusion(f: Findings) -> str:
    """Markdown answer to chapter 04's question from the findings: the primary verdict with the phrase for its
    word, the plan and whether the result decided it, the verdicts it depends on (each with the phrase for its
    word), the secondary family's verdicts by word, and how many orders of the rankers the readings give."""
    margin = f.primary.margin
    answer = PRIMARY_ANSWER[f.primary.verdict].format(system=f.system, baseline=f.baseline, measure=f.measure,
                                                      margin=margin, span=f.pool_span)
    by_key = {v.key: v for v in (*f.known_answers, *f.judge, *f.secondary)}
    caveats = "\n".join(_caveat(f, key, by_key) for key in f.primary.depends_on)
    counts = Counter(v.verdict for v in f.secondary)
    secondary = (f"**Secondary comparisons** ({len(f.secondary)}, Holm): "
                 + ", ".join(f"{n} {word}" for word, n in counts.items()) + "." if f.secondary else "")
    orders = sorted({order for _, order in f.orders})
    readings = (f"**Other readings of the judge's calls** order the rankers by mean {f.measure} in {len(orders)} "
                f"different way{'s' if len(orders) != 1 else ''} under {len(f.orders)} readings (see the sensitivity "
                f"section)." if f.orders else "")
    confirmatory = ("" if f.primary.confirmatory else
                    " Not confirmatory: the question, measure, baseline and difference were declared before the "
                    "run, the one-sided rule and the equivalence reading after its data were seen.")
    return "\n\n".join(part for part in (
        f"**Does {f.system} rank better than {f.baseline} on {f.measure}?** {answer} "
        f"{verdicts.sentence(f.primary, 4)}{confirmatory}",
        f"**Its plan:** {f.plan.text()}",
        f"**How to read it** — the verdicts it depends on:\n{caveats}",
        secondary, readings) if part)
