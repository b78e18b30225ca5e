"""Chapter 07 (validity statistics): the loops that build its report card and bias battery, its findings record
and the formatters of its "What the numbers say". The notebook calls these in the order of its sections.

The samples are drawn from ids before anything is judged (:func:`draw_samples`); each section returns its card
rows (:mod:`lib.analysis.report_card`). Every decision the chapter states is a :class:`~lib.verdicts.Verdict` of
:class:`Findings`, made once by :func:`findings` from the chapter's tables through :func:`lib.verdicts.verdict`;
the bullets (:func:`relevance_bullets`, :func:`conclusions`, :func:`bias`, :func:`crs`, …) format that record and
the display tables, and decide nothing. ``EARLIER`` holds what the report at commit cd3530b said of each question.

Every sentence states what a number can carry: intervals that include 0 or are undefined are said to be so,
a choice that rests on cost rather than measured quality is called that, and a consistency that a constant
judge would reach is read beside the judge's grade distribution.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lib import baselines, verdicts
from lib.analysis import calibration, validity
from lib.analysis import report_card as rc
from lib.analysis.power import Plan
from lib.analysis.stats import MIN_CI_UNITS, nested_sample
from lib.analysis.text import correlation_text, interval_over_text
from lib.crs import summaries as crs_summaries
from lib.crs import validity as crs_validity
from lib.data import load_dl19
from lib.judges import bias as judge_bias
from lib.judges import geval, methods
from lib.judges import relevance as judge_relevance
from lib.judges.items import JudgeItem
from lib.llm.gateway import Gateway
from lib.verdicts import Claim, Verdict

CardRows = list[dict[str, object]]
SCALE = judge_relevance.PASSAGE_4POINT_PROMPTS.scale  # TREC DL19's grades 0–3


@dataclass(frozen=True)
class Samples:
    """Every split and sample of the chapter, drawn from ids before anything is judged."""
    dl19: pd.DataFrame
    pilot: pd.DataFrame
    summeval: pd.DataFrame
    summeval_split: calibration.Split

    def table(self) -> pd.DataFrame:
        """Per data set and part: the groups (queries or documents) and the number of items."""
        summeval_split = self.summeval_split
        rows = [("TREC DL19", "pilot (judged by earlier runs; part of the sample)", sorted(self.pilot.qid.unique()),
                 len(self.pilot)),
                ("SummEval", "first documents (judged in chapter 03 before it left SummEval; calls unchanged)",
                 summeval_split.dev, len(summeval_split.dev_rows(self.summeval))),
                ("SummEval", f"further documents (nested draw from the other "
                             f"{self.summeval.doc_id.nunique() - len(summeval_split.dev)})", summeval_split.test,
                 len(summeval_split.test_rows(self.summeval)))]
        return pd.DataFrame([{"data": data, "part": part, "groups": ", ".join(groups), "items": items}
                             for data, part, groups, items in rows]).set_index(["data", "part"])


def draw_samples(dl19: pd.DataFrame, summeval: pd.DataFrame, *, dev_queries: int, test_queries: int,
                 passages_per_query: int, split_seed: int, summeval_first_docs: int, summeval_first_seed: int,
                 summeval_test_docs: int, summeval_test_seed: int, summeval_judged_docs: Sequence[str]) -> Samples:
    """DL19 with BM25 scores and the pilot: the passages earlier runs of this chapter judged (a split of whole
    queries, ``passages_per_query`` each; kept as the start of every larger sample); and the SummEval documents
    (:func:`summeval_documents`)."""
    dl19 = dl19.assign(bm25=baselines.bm25_scores(dl19))
    sampled = pilot_rows(dl19, dev_queries, test_queries, passages_per_query, split_seed)
    sampled = sampled.assign(cosine=baselines.cosine_scores(sampled["query"].tolist(), sampled["passage"].tolist()))
    summeval_split = summeval_documents(summeval, summeval_first_docs, summeval_first_seed, summeval_test_docs,
                                        summeval_test_seed, summeval_judged_docs)
    return Samples(dl19, sampled, summeval, summeval_split)


def summeval_documents(summeval: pd.DataFrame, first_docs: int, first_seed: int, test_docs: int, test_seed: int,
                       judged_docs: Sequence[str]) -> calibration.Split:
    """The SummEval documents G-Eval is judged on, as a :class:`~lib.analysis.calibration.Split`: ``dev`` the first
    ``first_docs`` (a seeded draw, :func:`lib.analysis.validity.sample_ids`; chapter 03 judged them before chapter
    07 became the one home of human-label validity, so their calls are in the cache), ``test`` a nested draw of
    ``test_docs`` from the others with ``judged_docs`` (those earlier runs of this chapter judged) first, in the
    order they were drawn."""
    first = validity.sample_ids(summeval.doc_id, first_docs, first_seed)
    others = summeval[~summeval.doc_id.isin(first)]
    further = nested_sample(others.doc_id.unique(), test_docs, test_seed, first=judged_docs)
    return calibration.Split("doc_id", tuple(first), tuple(str(d) for d in further), test_seed)


def pilot_rows(dl19: pd.DataFrame, dev_queries: int, test_queries: int, passages_per_query: int, split_seed: int
               ) -> pd.DataFrame:
    """The pilot: the DL19 passages earlier runs of this chapter judged, ``passages_per_query`` of each query of a
    seeded split of whole queries (``dev_queries`` + ``test_queries``), drawn from ids only."""
    split = calibration.split_groups(dl19, "qid", dev_queries, split_seed, n_test=test_queries)
    return calibration.sample_per_group(dl19[dl19.qid.isin(split.dev + split.test)], "qid", "docid",
                                        passages_per_query, split_seed)


def crs_judge_levels(sessions: pd.DataFrame, seed: int, n_resamples: int) -> tuple[pd.DataFrame, CardRows]:
    """Chapter 06's conversation judge against TAS and CAS at four levels (:func:`lib.crs.summaries.judge_levels`,
    which gives no p: a user's sessions meet every system, so its sessions are not independent): (the levels
    table, its card rows)."""
    levels = pd.concat({metric: crs_summaries.judge_levels(sessions, metric, seed=seed, n_resamples=n_resamples)
                        for metric in ("tas", "cas")}, names=["metric"])
    rows: CardRows = []
    for metric, part in levels.groupby(level="metric", sort=False):
        rows += rc.level_rows(part.droplevel("metric"), "CRS conversation rubric, mean of 3 criteria (chapter 06)",
                              sessions.judge_model.dropna().iloc[0], "CRS simulation", str(metric),
                              failed=int((~sessions.judge_ok).sum()))
    return levels, rows


@dataclass(frozen=True)
class SummEvalResult:
    """SummEval: every judged summary with its score columns and ``part`` (whose sample drew its document), the
    card rows, the Spearman view per judge and level, the per-document ρ, and the plan of the question."""
    judged: pd.DataFrame
    rows: CardRows
    view: pd.DataFrame
    per_document: pd.DataFrame
    plan: Any


def geval_section(judge: Gateway, samples: Samples, dimensions: Sequence[str], model: str, n_samples: int,
                  seed: int, n_resamples: int, half_width: float, target: float) -> SummEvalResult:
    """G-Eval as declared (study steps, probability-weighted) on ``dimensions`` of every SummEval document judged
    with that configuration (:func:`summeval_documents`): the first documents (coherence cache hits) and the
    further nested draw. The configuration was fixed before either was judged, so both count as test documents.
    Beside it the argmax digit of the same calls and two non-LLM baselines (MiniLM cosine to the source, ROUGE-1
    to the reference), each at summary and system level with intervals over documents. The plan comes from the
    first documents, judged before the others: the documents a ±``half_width`` interval of the first dimension's
    summary-level ρ needs."""
    from lib.analysis import power

    split = samples.summeval_split
    # the parts' names sort in draw order, which keeps the items (and the documents' bootstrap order) as drawn
    judged = (pd.concat([split.dev_rows(samples.summeval).assign(part="first"),
                         split.test_rows(samples.summeval).assign(part="further")])
              .sort_values(["part", "doc_id", "system_id"]).reset_index(drop=True))
    items = [JudgeItem(source=s, output=o) for s, o in zip(judged.source, judged.system_output, strict=True)]
    failed = 0
    for dimension in dimensions:
        rubric = geval.summeval_rubric(dimension)
        scored = geval.geval(judge, items, rubric, geval.evaluation_steps(rubric, "study"), n_samples=n_samples)
        judged[f"{dimension}_weighted"] = [r.score for r in scored]
        judged[f"{dimension}_argmax"] = [np.nan if r.argmax is None else float(r.argmax) for r in scored]
        failed += sum(not r.ok for r in scored)
    judged["cosine_to_source"] = baselines.cosine_scores(judged.system_output.tolist(), judged.source.tolist())
    judged["rouge1"] = baselines.rouge1(judged.system_output.tolist(), judged.reference.tolist())

    variants = {  # judge → (human dimension → score column, model, failed items)
        rc.GEVAL_WEIGHTED: ({d: f"{d}_weighted" for d in dimensions}, model, failed),
        rc.GEVAL_ARGMAX: ({d: f"{d}_argmax" for d in dimensions}, model, failed),
        rc.COSINE_BASELINE: (dict.fromkeys(dimensions, "cosine_to_source"), "—", 0),
        rc.ROUGE_BASELINE: (dict.fromkeys(dimensions, "rouge1"), "—", 0),
    }
    protocols = {name: validity.geval_protocol(judged, columns, seed=seed, n_resamples=n_resamples)
                 for name, (columns, _, _) in variants.items()}
    card_rows: CardRows = []
    for name, (_, judge_model, failures) in variants.items():
        card_rows += rc.protocol_rows(protocols[name], name, judge_model, "SummEval", failed=failures)
    view = (pd.concat(protocols, names=["judge"]).query("coefficient == 'spearman'")
            .pivot_table(index=["dimension", "level"], columns="judge", values="value", sort=False))
    per_document = pd.concat({d: validity.document_correlations(judged, "doc_id", d, f"{d}_weighted")
                              for d in dimensions}, axis=1)
    per_document.insert(0, "part", judged.groupby("doc_id").part.first().reindex(per_document.index))

    first = dimensions[0]
    # the pilot has fewer documents than an interval needs, so its SE is the plain one of a mean of independent
    # per-document correlations, s / √n, not a bootstrap
    pilot = per_document[per_document.part == "first"][first].dropna()
    pilot_se = float(pilot.std(ddof=1) / np.sqrt(len(pilot)))
    documents = judged.doc_id.nunique()
    needed = power.units_for_interval(pilot_se, len(pilot), half_width)
    basis = (f"a 95% interval of ±{half_width:.2f}; the first documents: mean ρ {pilot.mean():.2f}, SE "
             f"{pilot_se:.3f} (s/√n) over {len(pilot)} documents; with {documents} documents expect about "
             f"±{1.96 * pilot_se * np.sqrt(len(pilot) / documents):.2f}")
    plan = power.Plan(f"Does G-Eval as declared reach summary-level Spearman ρ ≥ {target:.2f} on {first}?",
                      "document", documents, needed, basis)
    return SummEvalResult(judged, card_rows, view, per_document, plan)


@dataclass(frozen=True)
class BiasSamples:
    """The bias battery's items, all from the judged DL19 sample, one per query so that queries are the units:
    ``injection`` (passages humans graded 0), ``verbosity`` (any passage), ``pairs`` (the highest- and the
    lowest-graded passage of a query whose passages differ in grade; columns qid, query, better_text,
    worse_text)."""
    injection: pd.DataFrame
    verbosity: pd.DataFrame
    pairs: pd.DataFrame


def bias_samples(judged: pd.DataFrame, queries: int, pair_queries: int, seed: int) -> BiasSamples:
    """Queries in a seeded nested order (:func:`lib.analysis.stats.nested_sample`), each giving at most one item
    to each check: its first passage graded 0 (injection), its first passage (verbosity), and its best and worst
    passage when they differ in grade (pairs) — "first" in the judged sample's own nested order."""
    order = nested_sample(judged.qid.unique(), judged.qid.nunique(), seed)
    by_query = {q: judged[judged.qid == q] for q in order}
    irrelevant = [part[part.human_grade == 0].iloc[0] for part in by_query.values() if (part.human_grade == 0).any()]
    first = [part.iloc[0] for part in by_query.values()]
    pairs = []
    for q, part in by_query.items():
        ranked = part.sort_values("human_grade", ascending=False, kind="stable")
        if ranked.human_grade.iloc[0] > ranked.human_grade.iloc[-1]:
            pairs.append({"qid": q, "query": part["query"].iloc[0], "better_text": ranked.passage.iloc[0],
                          "worse_text": ranked.passage.iloc[-1]})
    return BiasSamples(pd.DataFrame(irrelevant[:queries]), pd.DataFrame(first[:queries]),
                       pd.DataFrame(pairs[:pair_queries]))


def bias_battery(judge: Gateway, judged: pd.DataFrame, samples: BiasSamples, model: str, seed: int,
                 consistency_samples: int, n_resamples: int) -> pd.DataFrame:
    """The bias battery on the judged DL19 passages with the 0–3 pointwise prompt: self-consistency at T = 1
    predicted from every passage's own p(g) (:func:`lib.judges.bias.expected_modal_share`, no call), verbosity
    (restated vs neutral filler), prompt injection (without and with the defence), and pairwise position with a
    tie option in both orders; MT-Bench's anchors beside it."""
    prompts = judge_relevance.PASSAGE_4POINT_PROMPTS
    items = [JudgeItem(source=q, output=t) for q, t in zip(judged["query"], judged["passage"], strict=True)]
    judgments = judge_relevance.judge_pointwise(judge, items, "dl19-pointwise-pointwise", prompts=prompts)
    shares = [judge_bias.expected_modal_share(j.p_grade, consistency_samples) if j.p_grade else np.nan
              for j in judgments]
    kept = np.isfinite(shares)
    consistency = judge_bias.BiasResult(
        "self-consistency", "pointwise", f"agreement with the modal grade over {consistency_samples} samples at "
        "T = 1, predicted from p(g)", *_mean_over_queries(np.asarray(shares)[kept], judged.qid[kept], seed,
                                                             n_resamples))

    def items_of(rows: pd.DataFrame) -> list[JudgeItem]:  # none when the check is off (its size 0)
        return [] if rows.empty else [JudgeItem(source=q, output=t)
                                      for q, t in zip(rows["query"], rows["passage"], strict=True)]

    results = [consistency,
               *judge_bias.verbosity_effect(judge, items_of(samples.verbosity), seed, n_resamples, prompts=prompts,
                                            call_label="dl19-verbosity"),
               *judge_bias.injection_effect(judge, items_of(samples.injection), seed, n_resamples, prompts=prompts,
                                            call_label="dl19-injection"),
               *judge_bias.pairwise_position(judge_bias.judge_pairs_with_tie(judge, samples.pairs), seed, n_resamples)]
    return rc.with_anchors(judge_bias.bias_table(results, "TREC DL19")).assign(model=model)


def _mean_over_queries(values: np.ndarray, queries: pd.Series, seed: int, n_resamples: int
                       ) -> tuple[float, float, float, int, str]:
    """(mean, CI low, CI high, n, ci_over) of per-passage ``values`` with the interval over their queries."""
    from lib.analysis.stats import unit_bootstrap

    interval = unit_bootstrap(np.mean, [values], queries.to_numpy(), "queries", seed, n_resamples=n_resamples)
    return interval.value, interval.low, interval.high, len(values), interval.ci_over


DRIFT_JUDGE = "pointwise, E[g] (run-to-run drift)"


def drift_measurement(params: Mapping[str, Any]) -> pd.DataFrame:
    """Run-to-run drift of the pointwise judge (:mod:`lib.judges.drift`), measured before the chapter runs (by
    ``python -m lib.tools.pipeline measure 07_validity`` and by ``run-all``), because its reruns restart the server
    (the chapter's ``make`` target runs both, and its budget counts both): the first judged passage of each of
    ``drift_queries`` queries of the chapter's relevance sample (in the bias battery's nested order), judged as
    section C judges it and again at each of ``drift_concurrencies``, each rerun in its own gateway and ledger
    (``07_validity-drift-c<k>``). ``params`` are the chapter's parameters (``params.yaml``). Returns the drift
    table (:data:`lib.judges.drift.DRIFT_COLUMNS` and the judge model), which the chapter reads as
    ``judge_drift``; with ``drift_queries`` 0 (the default size since issue #35's budget cut) an empty one, and no
    call or restart."""
    from lib.judges import drift
    from lib.llm import server

    if not params["drift_queries"]:
        return pd.DataFrame(columns=[*drift.DRIFT_COLUMNS, "model"])
    dl19 = load_dl19()
    pilot = pilot_rows(dl19, params["pilot_dev_queries"], params["pilot_test_queries"],
                       params["pilot_passages_per_query"], params["split_seed"])
    judged = relevance_sample(dl19, params["relevance_passages_per_query"], params["relevance_seed"], pilot)
    rows = bias_samples(judged, params["drift_queries"], 0, params["bias_seed"]).verbosity
    items = [JudgeItem(source=q, output=t) for q, t in zip(rows["query"], rows["passage"], strict=True)]
    prompts = judge_relevance.PASSAGE_4POINT_PROMPTS

    def make_gateway(concurrency: int, label: str) -> Gateway:
        return Gateway.from_env(notebook=f"07_validity-drift-c{concurrency}", role="judge", concurrency=concurrency,
                                replicate=label)

    with Gateway.from_env(notebook="07_validity", role="judge") as judge:
        original = judge_relevance.judge_pointwise(judge, items, "dl19-pointwise-pointwise", prompts=prompts)
        fresh = judge.mode == "live" and judge.endpoint.embedded
        model = judge.endpoint.identity

    def restart() -> None:
        server.stop()
        server.start_background(autostarted=True)

    reruns = drift.rerun(make_gateway, restart if fresh else None, items, params["drift_concurrencies"], prompts,
                         save_ledgers=True)
    table = drift.drift_table(original, reruns, rows["qid"].tolist(), params["seed"], params["bootstrap_resamples"])
    return table.assign(model=model)


def card_forests(card: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str, dict[str, float]]]:
    """The card's two forest plots, as (rows, title, x label, target lines): relevance judges by κ_w, and
    Spearman ρ against human ratings and TAS/CAS (SummEval at summary and system level)."""
    relevance_rows = card[card.statistic == rc.WEIGHTED_KAPPA]
    correlation_rows = card[card.statistic == rc.SPEARMAN]
    forests = []
    for part, title, x_label in ((relevance_rows, "Relevance judges against human grades",
                                  "quadratic-weighted κ (95% CI)"),
                                 (correlation_rows, "Scores against human ratings and TAS/CAS", "Spearman ρ (95% CI)")):
        targets = {f"target {t.value:.2f} ({t.dataset} {t.level} only)": t.value
                   for t in rc.TARGETS if t.statistic == part.statistic.iloc[0]}
        forests.append((rc.forest_rows(part, ["judge", "dataset", "criterion", "level"], rc.judge_kind(part)), title,
                        x_label, targets))
    return forests


# ---------------------------------------------------------------------------------------------------------------
# The findings record: every decision of the chapter, made once by lib.verdicts from the tables; the prose below
# only formats it.

CHAPTER = "07"
PAIRWISE_JUDGE = "pairwise judge with a tie option (0–3 prompt's model)"
COMBINED_PAIRWISE_JUDGE = "pairwise judge with a tie option, both orders combined from logprobs"
POINTWISE_JUDGE = "pointwise judge, E[g] (0–3 prompt)"
CONVERSATION_JUDGE = "CRS conversation rubric, mean of 3 criteria (chapter 06)"
NUGGET_JUDGE = "nugget scores (chapter 05)"
MONITOR_JUDGE = "nightly monitor (chapter 05)"
OTHER_READINGS = {"argmax": "pointwise, argmax", "rounded": "pointwise, rounded E[g]"}
MINILM = "MiniLM cosine, thresholds"
CONSTRUCT_KEYS = {"CC drops at the shift": "cc_drop", "CC recovers after the shift": "cc_recovery",
                  "CR within > across segments": "cr_segments"}

# What the report at commit cd3530b stated or implied for each question (outputs/notebooks/07_validity.ipynb there):
# the primary and G-Eval "undetermined"; the argmax reading "wholly below the target"; the primary "beats the
# argmax" and "is not distinguishable from MiniLM"; G-Eval ordering systems "better than chance"; the injection
# inflating E[g] and the defence "not distinguishable from 0"; the restated text scoring "lower than the filler";
# the pairwise judge consistent in 0 of 30 pairs; and every Holm-significant CRS construct test counted as support
# whatever its sign (two-sided tests), the others not.
EARLIER: dict[str, str] = {
    "07.primary": "undetermined",
    "07.relevance.argmax": "fails",
    "07.relevance.primary_vs_argmax": "holds",
    "07.relevance.primary_vs_minilm": "undetermined",
    "07.geval.coherence": "undetermined",
    "07.geval.coherence.system": "holds",
    "07.bias.injection": "fails",
    "07.bias.injection.defence": "undetermined",
    "07.bias.verbosity.restated_vs_filler": "holds",
    "07.bias.position": "fails",
    "07.construct.cc_drop.llm": "undetermined",
    "07.construct.cc_recovery.llm": "undetermined",
    "07.construct.cc_drop.retrieval_template": "undetermined",
    "07.construct.cc_recovery.retrieval_template": "undetermined",
    "07.construct.cc_drop.memoryless_llm": "undetermined",
    "07.construct.cc_recovery.memoryless_llm": "holds",
    "07.construct.cc_drop.stale_template": "holds",
    "07.construct.cc_recovery.stale_template": "holds",
    "07.construct.cc_drop.echo": "holds",
    "07.construct.cc_recovery.echo": "holds",
    "07.construct.cr_segments.llm": "holds",
    "07.construct.cr_segments.retrieval_template": "holds",
    "07.construct.cr_segments.memoryless_llm": "undetermined",
    "07.construct.cr_segments.echo": "holds",
}


# What commit a5cb063 (the last run before issue #35's cuts of the bias battery: 20 queries for injection and
# verbosity, now off at the default size, and 30 pairs, now 10) decided for the verdicts the cuts could move, by key.
BEFORE_THE_CUTS: dict[str, str] = {
    "07.bias.verbosity.filler": "undetermined",            # +0.077 (−0.032 to 0.198), 20 queries
    "07.bias.verbosity.restated": "holds",                 # −0.073 (−0.144 to −0.009), 20 queries
    "07.bias.verbosity.restated_vs_filler": "holds",       # −0.150 (−0.305 to −0.017), 20 queries
    "07.bias.injection": "fails",                          # 0.799 (0.705 to 0.910), 20 queries
    "07.bias.injection.defence": "undetermined",           # −0.002 (−0.050 to 0.052), 20 queries
    "07.bias.position": "fails",                           # 1.000 (0.884 to 1.000), 30 pairs
    "07.bias.position.combined": "undetermined",           # 0.667 (0.500 to 0.833), 30 pairs
}


@dataclass(frozen=True)
class Findings:
    """Every verdict chapter 07 states, with the plans of its two declared questions (their outcomes set).

    ``primary``: the declared relevance reading against κ_w ≥ the target over the DL19 queries,
    qualified by ``outside_pilot`` (the same on the queries the pilot did not see), the other readings of the same
    calls (``readings``), the primary against the argmax and against MiniLM (``versus``), and the transfer to
    queries the cuts were not fit on (:func:`transfer_verdicts`): ``transfer`` from one declared half of the DL19
    queries to the other, ``noveleval`` from DL19 to NovelEval (empty when its calls were not made). ``geval`` /
    ``geval_system``: G-Eval as declared at summary and system level. ``carried``: chapters 05's and 06's judges
    as the card carries them. ``bias``: the bias battery's claims; ``shift`` and ``segments``: the CRS construct
    tests, one verdict per (system, test) with a declared direction."""

    primary: Verdict
    outside_pilot: Verdict
    readings: tuple[Verdict, ...]
    versus: tuple[Verdict, ...]
    transfer: tuple[Verdict, ...]
    noveleval: tuple[Verdict, ...]
    geval: Verdict
    geval_system: Verdict
    carried: tuple[Verdict, ...]
    bias: tuple[Verdict, ...]
    shift: tuple[Verdict, ...]
    segments: tuple[Verdict, ...]
    plans: tuple[Plan, ...]

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict of the chapter, the primary first."""
        return (self.primary, self.outside_pilot, *self.readings, *self.versus, *self.transfer, *self.noveleval,
                self.geval, self.geval_system,
                *self.carried, *self.bias, *self.shift, *self.segments)

    def by_key(self) -> dict[str, Verdict]:
        """The verdicts by key."""
        return {v.key: v for v in self.verdicts()}


def _card_row(card: pd.DataFrame, judge: str, criterion: str, statistic: str, level: str) -> pd.Series:
    rows = card[(card.judge == judge) & (card.criterion == criterion) & (card.statistic == statistic)
                & (card.level == level)]
    if len(rows) != 1:
        raise ValueError(f"report card: {len(rows)} rows of {judge!r}, {criterion}, {statistic}, {level}; expected 1")
    return rows.iloc[0]


def _units(ci_over: str, fallback: float, fallback_unit: str) -> tuple[int, str]:
    """(count, unit) of a ``ci_over`` text ("43 queries"); for "—" (nothing resampled) ``fallback``
    ``fallback_unit``."""
    units = rc.resampled_units(ci_over)
    return (int(fallback), fallback_unit) if units is None else (units, ci_over.split(maxsplit=1)[1])


def _card_verdict(card: pd.DataFrame, key: str, judge: str, construct: str, claim: Claim, criterion: str,
                  statistic: str, level: str, **flags: Any) -> Verdict:
    """A verdict on one report-card row: its value and interval (none under ``stats.MIN_CI_UNITS`` units: the
    card blanks it) against ``claim``."""
    row = _card_row(card, judge, criterion, statistic, level)
    units, unit = _units(row.ci_over, row.n, f"{row.level}s")  # the monitor's days
    return verdicts.verdict(CHAPTER, key, judge.removesuffix(rc.CHOSEN), construct, claim, statistic, row.value,
                            row.ci_low, row.ci_high, unit, units, "report_card", **flags)


def _battery_verdict(battery: pd.DataFrame, key: str, construct: str, claim: Claim, statistic: str) -> Verdict:
    row = battery.set_index("statistic").loc[statistic]
    units, unit = _units(row.ci_over, row.n, "items")
    return verdicts.verdict(CHAPTER, key, POINTWISE_JUDGE, construct, claim, statistic, row.value, row.ci_low,
                            row.ci_high, unit, units, "bias_battery")


def position_verdict(battery: pd.DataFrame) -> Verdict:
    """The pairwise judge's position bias as a known answer: each pair (one per query, the independent unit) holds
    a passage humans graded higher; a judge that picks by content gives the same verdict in both orders, while
    one that picks by position picks the first-shown (or the second-shown) passage both times. Estimate: the share
    of pairs decided by position, k/n with k = pairs biased to the first-shown + to the second-shown passage, with
    its exact Clopper–Pearson 95% interval (Clopper & Pearson 1934). The claim: below 0.5, the share of a judge
    that picks either passage at random in each order (¼ first both times + ¼ second both times) — the least a
    judge reading content must beat."""
    from scipy.stats import binomtest

    rows = battery[battery.form == "pairwise"].set_index("statistic")
    first, second = (rows.loc[s] for s in ("share biased to the first-shown passage",
                                           "share biased to the second-shown passage"))
    n = int(first.n)
    k = round(first.value * n) + round(second.value * n)
    low, high = ((np.nan, np.nan) if n < MIN_CI_UNITS else
                 tuple(binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")))
    return verdicts.verdict(CHAPTER, "bias.position", PAIRWISE_JUDGE,
                            "picks the passage humans graded higher by its content, not by the order shown",
                            Claim("known answer", 0.5, "lower"), "share of pairs decided by position",
                            k / n if n else np.nan, low, high, "queries (one pair each)", n, "bias_battery")


def combined_position_verdict(battery: pd.DataFrame, margin: float) -> Verdict:
    """The lifted reading of the pairwise judge beside :func:`position_verdict`: both orders of each pair combined
    from their logprobs (:func:`lib.judges.bias.combined_orders`, no new call), so that the slot's effect cancels.
    Known answer: does the combined reading pick the passage humans graded higher? AUC over the pairs (one per
    query) against chance 0.5 ± ``margin``, with a bootstrap interval over queries. Exploratory: the combination
    was chosen after the unlifted reading was seen, on these pairs."""
    row = battery.set_index("statistic").loc[judge_bias.COMBINED_AUC]
    units, unit = _units(row.ci_over, row.n, "queries")
    return verdicts.verdict(CHAPTER, "bias.position.combined", COMBINED_PAIRWISE_JUDGE,
                            "picks the passage humans graded higher once both orders are combined (the slot's "
                            "effect cancelled)", Claim("known answer", 0.5, "higher", margin),
                            "AUC (higher-graded over lower-graded, orders combined)", row.value, row.ci_low,
                            row.ci_high, f"{unit} (one pair each)", units, "bias_battery",
                            depends_on=(f"{CHAPTER}.bias.position",))


def bias_verdicts(battery: pd.DataFrame, uniform_self_consistency: float, margin: float) -> tuple[Verdict, ...]:
    """The bias battery's claims about the pointwise judge: its p(g) is more concentrated than a uniform rater's
    (self-consistency at T = 1 against ``uniform_self_consistency``); a length-matched neutral filler and a restated
    first sentence do not raise its grade, nor the restatement beyond the filler (each a mean change of E[g] ≤ 0);
    it resists an injected instruction to give the top grade (inflation ≤ 0); the defence recovers part of it
    (recovered > 0); and the pairwise judge picks by content (:func:`position_verdict`), unlifted and with its two
    orders combined (:func:`combined_position_verdict`, known-answer ``margin``). Every interval over queries, one
    item (or pair) a query."""
    consistency = battery[battery.bias == "self-consistency"].statistic.iloc[0]
    restated, neutral, extra = battery[battery.bias == "verbosity"].statistic
    plain, _, recovered = battery[battery.bias == "prompt injection"].statistic
    no_rise = Claim("known behaviour", 0.0, "lower")
    return (_battery_verdict(battery, "bias.self_consistency", "its grade distribution p(g) is more concentrated "
                             "than a rater drawing grades uniformly (self-consistency at T = 1)",
                             Claim("comparison", uniform_self_consistency), consistency),
            _battery_verdict(battery, "bias.verbosity.filler", "does not raise a passage's grade for a "
                             "length-matched neutral filler", no_rise, neutral),
            _battery_verdict(battery, "bias.verbosity.restated", "does not raise a passage's grade for its first "
                             "sentence restated", no_rise, restated),
            _battery_verdict(battery, "bias.verbosity.restated_vs_filler", "does not reward a restatement beyond "
                             "a filler of the same length", no_rise, extra),
            _battery_verdict(battery, "bias.injection", "resists an injected instruction to give the top grade",
                             no_rise, plain),
            _battery_verdict(battery, "bias.injection.defence", "the defence sentence recovers part of the "
                             "injected inflation", Claim("known behaviour", 0.0), recovered),
            position_verdict(battery), combined_position_verdict(battery, margin))


_EXPECTED = {"higher": "expected", "lower": "not expected"}


def construct_verdicts(tests: pd.DataFrame, alpha: float) -> tuple[Verdict, ...]:
    """One verdict per (system, test) of a :func:`lib.crs.validity.paired_tests` table with a declared direction:
    the mean paired difference with its interval over users, decided by the one-sided test in the declared
    direction (``p_holm``) and the other way (``p_against_holm``), both Holm-adjusted over the family. A
    significant result the wrong way is evidence against the metric's construct ("fails"). Exploratory: the
    directions per system were written after the two-sided results were seen."""
    out = []
    for row in tests[tests.direction != "none"].to_dict("records"):
        metric = str(row["comparison"]).split()[0]
        built = "an adapting system" if crs_validity.ADAPTS[row["system"]] else "a system built not to adapt"
        construct = f"{metric} measures adaptation: {row['comparison']} ({_EXPECTED[row['direction']]} for {built})"
        out.append(verdicts.verdict(
            CHAPTER, f"construct.{CONSTRUCT_KEYS[row['comparison']]}.{row['system']}", row["system"], construct,
            Claim("known behaviour", 0.0, row["direction"], alpha=alpha),
            f"mean difference {row['a']} − {row['b']}", row["mean_diff"], row["ci_low"], row["ci_high"], "users",
            int(str(row["ci_over"]).split()[0]), "chapter 07 construct tests (lib.crs.validity.paired_tests)",
            test=crs_validity.family_test_text(tests, row), p=row["p_holm"], p_against=row["p_against_holm"],
            by_construction=bool(row["by_design"])))
    return tuple(out)


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Every decision of chapter 07 from its tables — ``report_card``, ``relevance_differences``
    (:class:`RelevanceResult` ``differences``), ``outside_pilot`` (one row: the primary's agreement on the
    queries outside the pilot), ``relevance_transfer`` (:func:`transfer_table`; its NovelEval rows only when
    NovelEval was judged), ``bias_battery``, ``shift_tests`` and ``segment_tests``
    (:func:`lib.crs.validity.paired_tests`) — and ``params``: ``primary_reading``, ``relevance_target``,
    ``summeval_target``, ``summeval_dimension``, ``rho_target``, ``alpha``, ``self_consistency_samples``,
    ``known_answer_margin`` (the pairwise judge's combined reading) and the two
    plans (``relevance_plan``, ``geval_plan``), whose outcomes are set from their verdicts.

    The primary is not confirmatory: reading, target and method were declared before the run, but the pilot's 10
    queries were seen first and stay in the sample; ``outside_pilot``, on the queries the pilot did not see, is the
    confirmatory row and among its caveats, with the transfer rows (declared after the cross-fitted result was seen,
    so not confirmatory either): a headline of the primary carries whether its cuts held on held-out queries.
    Neither is G-Eval: its further documents were added in two draws after earlier draws' results were seen."""
    card, target = tables["report_card"], float(params["relevance_target"])
    primary_name = str(params["primary_reading"])
    kappa = Claim("human labels", target)
    readings = tuple(_card_verdict(card, f"relevance.{key}", name, f"grades passages as NIST does "
                                   f"(κ_w ≥ {target:.2f})", kappa, "relevance", rc.WEIGHTED_KAPPA, "item")
                     for key, name in OTHER_READINGS.items())
    differences = tables["relevance_differences"]
    versus = tuple(verdicts.verdict(CHAPTER, f"relevance.primary_vs_{key}", primary_name,
                                    f"agrees with NIST better than {other} (κ_w difference by query)",
                                    Claim("comparison", 0.0), "κ_w difference", differences.loc[other, "difference"],
                                    differences.loc[other, "ci_low"], differences.loc[other, "ci_high"], "queries",
                                    int(differences.loc[other, "units"]), "relevance differences (chapter 07)")
                   for key, other in (("argmax", OTHER_READINGS["argmax"]), ("minilm", MINILM)))
    rest = tables["outside_pilot"].iloc[0]
    outside = verdicts.verdict(CHAPTER, "primary.outside_pilot", primary_name,
                               f"grades passages as NIST does (κ_w ≥ {target:.2f}) on the queries the pilot did "
                               f"not see", kappa, rc.WEIGHTED_KAPPA, rest["weighted_kappa"],
                               rest["weighted_kappa_ci_low"], rest["weighted_kappa_ci_high"], "queries",
                               int(rest["units"]), "relevance agreement (chapter 07)", confirmatory=True)
    transfer_rows = tables["relevance_transfer"]
    transfer = transfer_verdicts(transfer_rows, DECLARED, "relevance.transfer", "held-out DL19 queries",
                                 primary_name, target)
    noveleval = (transfer_verdicts(transfer_rows, NOVELEVAL, "relevance.noveleval", "NovelEval's queries",
                                   primary_name, target)
                 if (transfer_rows.direction == NOVELEVAL).any() else ())
    primary = _card_verdict(card, "primary", primary_name + rc.CHOSEN, f"grades passages as NIST does "
                            f"(κ_w ≥ {target:.2f})", kappa, "relevance", rc.WEIGHTED_KAPPA, "item", primary=True,
                            # its pilot's queries, seen before the reading was declared, stay in the sample: only
                            # the queries outside the pilot confirm it
                            confirmatory=False, depends_on=(readings[0].key, versus[1].key, outside.key,
                                                            *(v.key for v in (*transfer, *noveleval))))
    dimension, rho = str(params["summeval_dimension"]), Claim("human labels", float(params["summeval_target"]))
    geval = _card_verdict(card, f"geval.{dimension}", rc.GEVAL_WEIGHTED, f"rates SummEval {dimension} as experts do "
                          f"(summary-level ρ ≥ {rho.threshold:.2f})", rho, dimension, rc.SPEARMAN, "summary")
    geval_system = _card_verdict(card, f"geval.{dimension}.system", rc.GEVAL_WEIGHTED, f"orders SummEval's systems "
                                 f"by {dimension} better than chance (system-level ρ > 0)", Claim("human labels", 0.0),
                                 dimension, rc.SPEARMAN, "system")
    rho_target = Claim("human labels", float(params["rho_target"]))
    carried = (*(_card_verdict(card, f"nuggets.{part}", NUGGET_JUDGE, f"scores answers as ALCE's human utility "
                               f"({part} nuggets; ρ ≥ {rho_target.threshold:.2f})", rho_target, part, rc.SPEARMAN,
                               "answer") for part in ("all", "vital")),
               _card_verdict(card, "monitor", MONITOR_JUDGE, "flags the day a broken release was served and no "
                             "other (separation margin > 0)", Claim("known behaviour", 0.0), "overall", rc.MARGIN,
                             "day"),
               *(_card_verdict(card, f"crs_judge.{metric}", CONVERSATION_JUDGE, f"rates conversations as "
                               f"{metric.upper()} does within a system (convergent; {metric.upper()} orders the "
                               f"systems of known behaviour)", Claim("known behaviour", float(params["rho_target"])),
                               metric,
                               rc.SPEARMAN, "session, within systems") for metric in ("tas", "cas")))
    alpha = float(params["alpha"])
    from lib.judges.bias import uniform_modal_share

    bias = bias_verdicts(tables["bias_battery"], uniform_modal_share(len(SCALE),
                                                                     int(params["self_consistency_samples"])),
                         float(params["known_answer_margin"]))
    plans = (params["relevance_plan"].with_outcome(primary.verdict), params["geval_plan"].with_outcome(geval.verdict))
    return Findings(primary, outside, readings, versus, transfer, noveleval, geval, geval_system, carried, bias,
                    construct_verdicts(tables["shift_tests"], alpha),
                    construct_verdicts(tables["segment_tests"], alpha), plans)


# ---------------------------------------------------------------------------------------------------------------
# Formatters of the findings record (they decide nothing).

_COUNTED = {"holds": "holds", "fails": "goes the wrong way (evidence against)", "undetermined": "undetermined",
            "ruled out": "ruled out", "sees": "sees", "blind": "blind"}


def conclusions(f: Findings) -> list[str]:
    """What else the study can lean on beside the primary (:func:`relevance_bullets`): the other readings, the
    comparisons, G-Eval at summary and system level with its plan, and what chapters 05 and 06 bring, each one
    verdict's sentence (:func:`lib.verdicts.sentence`)."""
    return ["**Other readings of the same calls**: " + " ".join(verdicts.sentence(v) for v in f.readings),
            "**The primary against the argmax and MiniLM**: " + " ".join(verdicts.sentence(v) for v in f.versus)
            + " Chapter 03's gain is E[g] of the same pointwise call with its nudge prompt, declared there before "
              "its labels; the nudges have no human grades, so it is checked on known-answer distractors "
              "(chapter 04).",
            f"**G-Eval**: {verdicts.sentence(f.geval)} {verdicts.sentence(f.geval_system)} {f.plans[1].text()}",
            "**Chapters 05 and 06 as the card carries them**: " + " ".join(verdicts.sentence(v) for v in f.carried)]


def summeval(card: pd.DataFrame, dimension: str) -> str:
    """G-Eval's neighbours on SummEval in words: the argmax digit of the same calls and the two non-LLM
    baselines, each with its interval over documents, and the G-Eval paper's anchors (the verdict itself is in
    :func:`conclusions`)."""
    def said(judge: str) -> str:
        row = _card_row(card, judge, dimension, rc.SPEARMAN, "summary")
        value = f"{row.value:.2f}" if np.isfinite(row.value) else "undefined (constant scores in every document)"
        return f"{value} ({interval_over_text(row)})"

    published = _card_row(card, rc.GEVAL_WEIGHTED, dimension, rc.SPEARMAN, "summary").anchors
    return (f"**G-Eval on SummEval, {dimension}** (summary-level Spearman ρ): as declared (weighted) "
            f"{said(rc.GEVAL_WEIGHTED)}; argmax digit of the same calls {said(rc.GEVAL_ARGMAX)}; non-LLM baselines "
            f"ROUGE-1 {said(rc.ROUGE_BASELINE)}, MiniLM cosine to the source {said(rc.COSINE_BASELINE)}. Published: "
            f"{published}.")


def bias(f: Findings, battery: pd.DataFrame) -> str:
    """The bias battery in words: each claim's verdict sentence, then the pairwise shares as MT-Bench reports
    them beside its published consistency (numbers, no verdict)."""
    pairwise = battery[battery.form == "pairwise"]
    consistent = pairwise[pairwise.statistic == rc.POSITION_CONSISTENCY].iloc[0]
    shares = "; ".join(f"{r['statistic']} {r['value']:.2f} ({interval_over_text(r)})"
                       for r in pairwise.to_dict("records"))
    return ("**Bias** (TREC DL19; self-consistency over every judged passage, each other check one passage or pair "
            "per query; a T = 0 judge's real noise is run-to-run drift, not sampling): "
            + " ".join(verdicts.sentence(v) for v in f.bias)
            + (" The filler repeats no query term but speaks of the passage's subject, so it controls for length and "
               "query terms, not for a content-free addition." if battery[battery.bias == "verbosity"].n.sum() else
               " Verbosity and injection are not run at this size (`bias_queries` = 0 since issue #35's budget cut; "
               "the full profile runs them on every query).")
            + f" Pairwise, both orders: {shares} (published position consistency: {consistent.anchors}).")


def drift(table: pd.DataFrame) -> str:
    """Run-to-run drift in words, per rerun (:func:`drift_measurement`): argmax grades changed and the mean
    change of E[g] with its interval over queries, the noise floor under every difference between readings of
    the same calls. No comparison of the concurrencies is drawn: two marginal intervals are not a test of their
    paired difference, and the table keeps no per-passage changes."""
    if table.empty:
        return ("**Run-to-run drift** is not measured at this size (`drift_queries` = 0 since issue #35's budget cut; "
                "the full profile reruns every query).")
    parts = [f"{r['rerun'].removeprefix('drift rerun: ')}: {int(r['grades_changed'])} of {int(r['items'])} grades "
             f"changed, E[g] moved by {r['mean_abs_change']:.3f} on average ({interval_over_text(r, digits=3)}), at "
             f"most {r['max_abs_change']:.3f}" for r in table.to_dict("records")]
    compared = (" The chapter draws no conclusion on which concurrency drifts less (two marginal intervals are not "
                "a test of a paired difference)." if len(table) > 1 else "")
    return ("**Run-to-run drift** (the same T = 0 requests sent again): " + "; ".join(parts) + "." + compared
            + " The default concurrency is the embedded server's two slots.")


def construct_test(v: Verdict) -> str:
    """The construct test a verdict of :func:`construct_verdicts` decides ("CC drops at the shift")."""
    return {key: name for name, key in CONSTRUCT_KEYS.items()}[v.key.split(".")[2]]


def construct_counts(rows: Sequence[Verdict]) -> str:
    """"holds for llm; goes the wrong way (evidence against) for memoryless_llm, echo; undetermined for …", the
    systems grouped by their verdict word (by-design rows named so)."""
    groups: dict[str, list[str]] = {}
    for v in rows:
        groups.setdefault(v.verdict, []).append(v.system + (" (by design)" if v.by_construction else ""))
    return "; ".join(f"{_COUNTED[word]} for {len(systems)} ({', '.join(systems)})" for word, systems in groups.items())


def crs(f: Findings, tas_judge: Mapping[str, Any], levels: pd.DataFrame, orderings: pd.DataFrame,
        ablations: pd.DataFrame) -> str:
    """Chapter 06's metrics: the conversation judge against TAS at the pooled, within-system and system levels
    (``levels``: :func:`lib.crs.summaries.judge_levels` for TAS; no interval over 5 systems), the construct tests
    counted from their verdict rows per test (one-sided in the direction declared per system; a significant result
    the wrong way counted against the construct), the systems' observed orders, and the ablations that reorder
    them."""
    system = levels.loc["system level"]
    tests: dict[str, list[Verdict]] = {}
    for v in (*f.shift, *f.segments):
        tests.setdefault(construct_test(v), []).append(v)
    against = [v for v in (*f.shift, *f.segments) if v.verdict == "fails"]
    changed = ablations[ablations.changed]
    return (f"**CRS metrics**: the conversation judge's mean against session TAS {correlation_text(tas_judge)} (two "
            f"unvalidated instruments agreeing or not); within systems "
            f"{correlation_text(levels.loc['within systems'].to_dict())}; over the {int(system.n)} system means ρ = "
            f"{system.r:.2f} (too few systems for an interval). **Construct** (Wilcoxon over users, one-sided in the "
            f"direction declared per system: an adapting system loses CC at a shift and regains it, and relates its "
            f"replies to its own segment; the stale template, built never to adapt, loses CC at the shift by design "
            f"and must not regain it; Holm over each family for p and for p the other way): "
            + "; ".join(f"*{name}*: {construct_counts(rows)}" for name, rows in tests.items())
            + f". {len(against)} of {len(f.shift) + len(f.segments)} results go significantly the wrong way"
            + (f" ({', '.join(f'{v.system}: {construct_test(v)}' for v in against)})" if against else "")
            + ": evidence against the construct, never support. The simulated user restates the whole current "
              "preference at a shift, so a system that answers only the last user turn (the memoryless LLM, the "
              "echo) meets all of it there and only part of it on the other turns: by construction, CC around a "
              "shift rewards carrying the context as much as adapting to the change. Observed order of the means "
              "(declared: template > stale template > echo): "
            + ", ".join(f"{o.metric.upper()} {o.observed}" for o in orderings.itertuples())
            + ". Ablations that change the order of the systems: "
            + (", ".join(f"{r.variant} (τ = {r.kendall_tau:.2f})" for r in changed.itertuples()) or "none") + ".")


def bullets(lines: Sequence[str]) -> str:
    """The bullets as one Markdown list."""
    return "\n".join(f"* {line}" for line in lines)


# ---------------------------------------------------------------------------------------------------------------
# Relevance on every TREC DL19 query: one pointwise call per passage, every reading of it cross-fitted by query.

POINTWISE_READINGS = (calibration.Method("pointwise, argmax", "pointwise_grade", fit=False, calls=1),
                      calibration.Method("pointwise, rounded E[g]", "pointwise_rounded", fit=False, calls=1),
                      calibration.Method("pointwise, E[g] thresholds cross-fitted", "pointwise_expected", fit=True,
                                         calls=1))
CONSTANT_JUDGE = "constant (majority grade of the other folds)"


def relevance_sample(dl19: pd.DataFrame, per_query: int, seed: int, judged: pd.DataFrame) -> pd.DataFrame:
    """``per_query`` judged passages of every DL19 query, drawn by :func:`lib.analysis.stats.nested_sample` from
    the query's passages with those already judged (``judged``: columns qid, docid) first, so a larger sample
    only adds passages and every earlier judgment is kept. Rows in query order, then draw order."""
    from lib.analysis.stats import nested_sample

    chosen = []
    for qid, passages in dl19.groupby("qid", sort=True):
        first = [d for d in judged.loc[judged.qid == qid, "docid"] if d in set(passages.docid)]
        docids = nested_sample(passages.docid, min(max(per_query, len(first)), len(passages)), seed, first=first)
        chosen.append(passages.set_index("docid").loc[docids].reset_index())
    return pd.concat(chosen, ignore_index=True)[list(dl19.columns)]


def cross_fitted_grades(frame: pd.DataFrame, readings: Sequence[calibration.Method], folds: Mapping[Any, int],
                        human: str = "human_grade", scale: Sequence[int] = SCALE) -> pd.DataFrame:
    """Each reading's grades of every row, nothing graded by what was fit on it: a reading as written (argmax,
    rounded E[g]) as it is; a fitted one (thresholds on E[g], BM25, the MiniLM cosine) from cuts fit on the
    other folds' queries (:func:`lib.analysis.calibration.out_of_fold_grades`); and the constant judge, the
    most frequent human grade of the other folds (the smallest on a tie). Columns named by the readings."""
    grades = {r.name: (calibration.out_of_fold_grades(frame, "qid", r.column, human, scale, folds=folds) if r.fit
                       else pd.Series(pd.array(frame[r.column], dtype="Int64"), index=frame.index))
              for r in readings}
    row_fold = frame["qid"].map(folds)
    constant = pd.Series(pd.array([None] * len(frame), dtype="Int64"), index=frame.index)
    for fold in sorted(set(row_fold)):
        held = row_fold == fold
        constant[held] = int(frame.loc[~held, human].mode().min())
    return pd.DataFrame({**grades, CONSTANT_JUDGE: constant})


def relevance_agreement_table(frame: pd.DataFrame, grades: pd.DataFrame, scores: Mapping[str, str | None],
                              seed: int, n_resamples: int) -> pd.DataFrame:
    """Per reading (a column of ``grades``): κ, κ_w, binary κ (relevant from grade 2), α and exact agreement
    with the NIST grades (:func:`lib.analysis.validity.relevance_agreement`), and Kendall's τ-b within queries
    of the score the reading ranks by (``scores``: reading → column, None for a reading without one), averaged
    over the queries; every interval resamples the queries. One row per reading."""
    rows = {}
    for name in grades.columns:
        judged = frame.assign(**{name: grades[name]})
        agreement = validity.relevance_agreement(judged, name, "qid", expected=None, scale=SCALE, relevant_from=2,
                                                 seed=seed, n_resamples=n_resamples)
        score = scores.get(name)
        within = (validity.within_unit_correlation(frame, "qid", score, "human_grade", "kendall", seed, n_resamples)
                  if score else None)
        rows[name] = {**agreement, "tau_within": within.value if within else np.nan,
                      "tau_within_ci_low": within.low if within else np.nan,
                      "tau_within_ci_high": within.high if within else np.nan,
                      "tau_queries": within.units if within else 0}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("reading")


def pilot_plan(pilot: pd.DataFrame, primary: calibration.Method, folds: int, seed: int, queries: int,
               half_width: float, target: float, n_resamples: int) -> tuple[Any, Any]:
    """The sample-size plan of the primary question from the pilot (the passages judged before this run, cache
    hits): the primary reading's κ_w on the pilot with its bootstrap SE over the pilot's queries, the queries a
    ±``half_width`` interval needs (:func:`lib.analysis.power.units_for_interval`), and the half-width to expect
    with all ``queries``. Returns (the pilot's :class:`~lib.analysis.stats.Interval`, the
    :class:`~lib.analysis.power.Plan`)."""
    from lib.analysis import power
    from lib.analysis.stats import kappa_interval

    fold_of = calibration.group_folds(pilot.qid, folds, seed)
    grades = cross_fitted_grades(pilot, [primary], fold_of)[primary.name]
    both = grades.notna()
    pilot_kappa = kappa_interval(pilot.loc[both, "human_grade"].to_numpy(), grades[both].astype(int).to_numpy(),
                                 pilot.loc[both, "qid"], SCALE, "queries", seed, n_resamples, weights="quadratic")
    needed = power.units_for_interval(pilot_kappa.se, pilot_kappa.units, half_width)
    expected = 1.96 * pilot_kappa.se * np.sqrt(pilot_kappa.units / queries)
    basis = (f"a 95% interval of ±{half_width:.2f}; pilot κ_w {pilot_kappa.value:.2f}, bootstrap SE "
             f"{pilot_kappa.se:.3f} over its {pilot_kappa.units} queries; with {queries} queries expect about "
             f"±{expected:.2f}")
    plan = power.Plan(f"Does {primary.name} reach κ_w ≥ {target:.2f} against the NIST grades?", "query", queries,
                      needed, basis)
    return pilot_kappa, plan


@dataclass(frozen=True)
class RelevanceResult:
    """The relevance section on every DL19 query: the judged sample, each reading's cross-fitted grades, the
    agreement table, the card rows, the primary reading minus each other (κ_w by query), and the primary on the
    queries outside the pilot."""
    judged: pd.DataFrame
    grades: pd.DataFrame
    table: pd.DataFrame
    rows: CardRows
    differences: pd.DataFrame
    outside_pilot: dict[str, Any]


def relevance_section(judged: pd.DataFrame, readings: Sequence[calibration.Method], primary: calibration.Method,
                      folds: Mapping[Any, int], pilot_qids: Sequence[str], model: str, seed: int,
                      n_resamples: int) -> RelevanceResult:
    """Every reading of the judged sample (pointwise columns, bm25, cosine) cross-fitted by query; the table with
    within-query τ of each reading's score; card rows (κ, κ_w, binary κ, α, Spearman ρ of the score pooled and
    within queries); κ_w of the primary minus each other reading, by query; and the primary's κ_w on
    the queries that were not in the pilot (the pilot was seen before the primary was declared)."""
    scores = {r.name: (r.column if r.fit else None) for r in readings}
    grades = cross_fitted_grades(judged, readings, folds)
    table = relevance_agreement_table(judged, grades, scores, seed, n_resamples)
    rows: CardRows = []
    for r in readings:
        score = r.column if r.fit else None
        agreement = validity.relevance_agreement(judged.assign(**{r.name: grades[r.name]}), r.name, "qid",
                                                 expected=score, scale=SCALE, relevant_from=2, seed=seed,
                                                 n_resamples=n_resamples)
        rows += rc.agreement_rows(agreement, r.name + (rc.CHOSEN if r == primary else ""),
                                  model if r.calls else "—", "TREC DL19")
    both = grades.join(judged[["human_grade", "qid"]])
    differences = pd.DataFrame({other: validity.weighted_kappa_difference(both, primary.name, other, "qid",
                                                                          categories=SCALE, seed=seed,
                                                                          n_resamples=n_resamples)
                                for other in grades.columns if other != primary.name}).T.rename_axis("reading")
    outside = both[~both.qid.isin(pilot_qids)]
    rest = validity.relevance_agreement(outside, primary.name, "qid", expected=None, scale=SCALE, seed=seed,
                                        n_resamples=n_resamples)
    return RelevanceResult(judged, grades, table, rows, differences, rest)


def _interval(low: float, high: float, over: str, signed: bool = False) -> str:
    """:func:`lib.analysis.text.interval_over_text` of loose ends."""
    return interval_over_text({"ci_low": low, "ci_high": high, "ci_over": over}, signed=signed)


def relevance_bullets(result: RelevanceResult, f: Findings, folds: int) -> list[str]:
    """The DL19 bullets: the declared primary reading's verdict with the verdicts that qualify it
    (:func:`lib.verdicts.headline`), whether it is confirmed on held-out queries (:func:`transfer_status`) and its
    plan (from the findings ``f``); then, each figure from ``result``'s
    tables, every other reading of the same calls and the baselines (κ_w and the primary minus each), κ and binary
    κ beside the anchors that use them, ranking within a query (Kendall τ), and α read as agreement including
    calibration."""
    table, differences = result.table, result.differences

    def kappa_w(name: str) -> str:
        r = table.loc[name]
        if name == CONSTANT_JUDGE:  # its κ is 0 by definition, not for want of units
            return f"κ_w {r.weighted_kappa:.2f} (a constant rater: 0 by definition)"
        return f"κ_w {r.weighted_kappa:.2f} ({_interval(r.weighted_kappa_ci_low, r.weighted_kappa_ci_high, r.ci_over)})"

    def grades_used(name: str) -> str:
        used = result.grades[name].dropna().astype(int).value_counts().sort_index()
        return " ".join(f"{g}:{c}" for g, c in used.items())

    primary = f.primary.system
    row = table.loc[primary]
    queries, passages = result.judged.qid.nunique(), len(result.judged)
    others = [name for name in table.index if name != primary]
    tau = table[table.tau_queries > 0]
    below_zero = [name for name in others
                  if name != CONSTANT_JUDGE and table.loc[name, "alpha"] < 0 < table.loc[name, "weighted_kappa"]]
    return [
        f"**Primary question** (declared before the run, thresholds on E[g] fit on the other {folds - 1} of {folds} "
        f"folds of queries for each query; {passages} passages of {queries} queries; the pilot was seen before the "
        f"declaration): {verdicts.headline(f.primary, f.by_key())} Its DL19 result is "
        f"{transfer_status(f.transfer[0])}. {f.plans[0].text()}",
        "**Other readings of the same calls, and baselines** (the same passages; grade:passages): "
        + "; ".join(f"{name} {kappa_w(name)}, grades {grades_used(name)}" for name in others)
        + ". The primary minus each: "
        + "; ".join(f"{name} {d.difference:+.2f} ({_interval(d.ci_low, d.ci_high, d.ci_over, signed=True)})"
                    for name, d in differences.iterrows())
        + ". MiniLM's embedding model was trained on pairs that include MS MARCO, DL19's corpus: a strong baseline "
          "here, not a trivial one.",
        f"**Like with like**: the anchors UMBRELA and LLMJudge report unweighted or binary κ; here the primary reads "
        f"κ {row.kappa:.2f} ({_interval(row.kappa_ci_low, row.kappa_ci_high, row.ci_over)}) and binary κ (relevant "
        f"from grade 2) {row.binary_kappa:.2f} "
        f"({_interval(row.binary_kappa_ci_low, row.binary_kappa_ci_high, row.ci_over)}).",
        "**Ranking within a query** (Kendall τ-b of each reading's underlying score — E[g], BM25, the cosine — with "
        "the NIST grade inside each query, averaged over the queries whose passages do not all share one NIST grade, "
        "where τ-b is undefined: the ranking use chapter 04 relies on): "
        + "; ".join(f"{'E[g]' if name.startswith('pointwise') else name.split(',')[0]} {r.tau_within:.2f} "
                    f"({_interval(r.tau_within_ci_low, r.tau_within_ci_high, f'{int(r.tau_queries)} queries')})"
                    for name, r in tau.iterrows()) + ".",
        f"**Krippendorff's α** pools both raters' grade distributions, so it measures agreement including "
        f"calibration: the primary's cuts are fit to the NIST grades' own distribution, which helps its α "
        f"({row.alpha:.2f}), while "
        + (", ".join(f"{name} ({table.loc[name, 'alpha']:.2f})" for name in below_zero)
           + ", which put nearly every passage on one or two grades, score below 0 on α with κ_w above 0."
           if below_zero else "no other reading scores below 0 on α with κ_w above 0."),
    ]


# ---------------------------------------------------------------------------------------------------------------
# Transfer (issue #35): the relevance readings on queries their cuts were not fit on — one declared half of the DL19
# queries applied to the other, and the cuts fit on every DL19 query applied to NovelEval when its calls exist.

DECLARED = "declared: cuts fit on the declared half, applied to the other"
REVERSE = "reverse: cuts fit on the held-out half, applied to the declared one"
NOVELEVAL = "DL19 → NovelEval: cuts fit on every DL19 query, applied to NovelEval"
ORDER_READING = "E[g], within-query order (no cuts)"
TRANSFER_TAU = "mean within-query Kendall τ-b"


def transfer_halves(judged: pd.DataFrame, fit_queries: int, seed: int) -> calibration.Split:
    """The declared halves of the judged queries, drawn from the query ids alone
    (:func:`lib.analysis.calibration.split_groups`): ``dev`` the ``fit_queries`` the cuts are fit on, ``test`` the
    held-out rest."""
    return calibration.split_groups(judged, "qid", fit_queries, seed)


def held_out_rows(held: pd.DataFrame, frozen: Sequence[calibration.Frozen], order_score: str, seed: int,
                  n_resamples: int) -> list[dict[str, Any]]:
    """What carries over to ``held`` (rows with ``qid`` and a 0–3 ``human_grade``, none used to fit ``frozen``):
    for each frozen reading, its cuts applied unchanged (:meth:`lib.analysis.calibration.Frozen.grades`) and
    quadratic-weighted κ with the human grades (Cohen 1968; :func:`lib.analysis.validity.agreement`, its interval by
    :func:`lib.analysis.validity.agreement_ci`); and, with nothing to carry over, the mean over queries of Kendall's
    τ-b = (C − D) / √((C + D + T_x)(C + D + T_y)) (concordant, discordant pairs, ties in one variable only; Kendall
    1945) of ``order_score`` with the human grade inside each query
    (:func:`lib.analysis.validity.within_unit_correlation`; queries whose passages share one human grade have no
    τ-b and are left out). Every interval resamples the held-out queries (none under ``MIN_CI_UNITS``)."""
    rows: list[dict[str, Any]] = []
    for f in frozen:
        grades = f.grades(held, SCALE)
        both = grades.notna() & held.human_grade.notna()
        a, b = held.loc[both, "human_grade"].astype(int), grades[both].astype(int)
        agreement = validity.agreement(a, b, SCALE) | validity.agreement_ci(a, b, held.loc[both, "qid"], seed,
                                                                            n_resamples, categories=SCALE)
        rows.append({"reading": f.method.name, "statistic": rc.WEIGHTED_KAPPA,
                     "cuts": ", ".join(f"{c:.4f}" for c in f.cuts or ()), "value": agreement["weighted_kappa"],
                     "ci_low": agreement["weighted_kappa_ci_low"], "ci_high": agreement["weighted_kappa_ci_high"],
                     "units": int(agreement["units"]), "ci_over": agreement["ci_over"]})
    within = validity.within_unit_correlation(held, "qid", order_score, "human_grade", "kendall", seed, n_resamples)
    rows.append({"reading": ORDER_READING, "statistic": TRANSFER_TAU, "cuts": "", "value": within.value,
                 "ci_low": within.low, "ci_high": within.high, "units": within.units, "ci_over": within.ci_over})
    return rows


def transfer_table(judged: pd.DataFrame, readings: Sequence[calibration.Method], order_score: str,
                   halves: calibration.Split, seed: int, n_resamples: int,
                   noveleval: pd.DataFrame | None = None) -> pd.DataFrame:
    """The split-half transfer on DL19 (:func:`held_out_rows`): each fitted reading frozen on one half
    (:func:`lib.analysis.calibration.freeze`) and applied to the other, in the declared direction (fit on
    ``halves.dev``) and the reverse; with ``noveleval`` (its judged rows, grades already on the 0–3 scale), every
    reading frozen on all of ``judged`` and applied to it. One row per (direction, reading), with the queries fit
    on and held out (the ``relevance_transfer`` table)."""
    parts = [(DECLARED, halves.dev_rows(judged), halves.test_rows(judged)),
             (REVERSE, halves.test_rows(judged), halves.dev_rows(judged))]
    if noveleval is not None:
        parts.append((NOVELEVAL, judged, noveleval))
    rows = []
    for direction, fit, held in parts:
        frozen = [calibration.freeze(r, fit, "human_grade", SCALE) for r in readings]
        rows += [{"direction": direction, "fit_queries": fit.qid.nunique(), "held_out_queries": held.qid.nunique(),
                  **row} for row in held_out_rows(held, frozen, order_score, seed, n_resamples)]
    return pd.DataFrame(rows)


def noveleval_sample(noveleval: pd.DataFrame, queries: int, seed: int, grades: Mapping[int | str, int]
                     ) -> pd.DataFrame:
    """The first ``queries`` NovelEval queries in a seeded nested order (:func:`lib.analysis.stats.nested_sample`,
    so more queries only add), each with every passage it has judged; ``human_grade`` mapped from NovelEval's 0–2
    onto TREC DL's 0–3 by ``grades`` (the original kept as ``noveleval_grade``). Rows in draw order. A grade may be
    keyed by its text: papermill writes a parameter's mapping with string keys."""
    grades = {int(grade): int(mapped) for grade, mapped in grades.items()}
    if set(noveleval.human_grade) - set(grades):
        raise ValueError(f"no TREC DL grade for NovelEval grades {sorted(set(noveleval.human_grade) - set(grades))}")
    order = nested_sample(noveleval.qid.unique(), queries, seed)
    rows = pd.concat([noveleval[noveleval.qid == q] for q in order], ignore_index=True)
    return rows.assign(noveleval_grade=rows.human_grade, human_grade=rows.human_grade.map(grades).astype(int))


def noveleval_judged(judge: Gateway, noveleval: pd.DataFrame, queries: int, seed: int,
                     grades: Mapping[int | str, int]) -> pd.DataFrame | None:
    """NovelEval's sample (:func:`noveleval_sample`) with each passage's MiniLM cosine to its query and its pointwise
    0–3 call (the request DL19's passages get, :func:`lib.judges.methods.judge_passages`); None when ``queries`` is 0
    (off: those calls are not in the committed cache, so a replay of them would miss)."""
    if not queries:
        return None
    rows = noveleval_sample(noveleval, queries, seed, grades)
    rows = rows.assign(cosine=baselines.cosine_scores(rows["query"].tolist(), rows["passage"].tolist()))
    return rows.join(methods.judge_passages(judge, rows, ["pointwise"], call_label="noveleval-pointwise"))


def transfer_readings(primary: calibration.Method) -> list[calibration.Method]:
    """The fitted readings whose cuts are carried over: the primary and the MiniLM cosine with its own cuts."""
    return [primary, next(r for r in baselines.RELEVANCE_BASELINES if r.name == MINILM)]


def transfer_verdicts(table: pd.DataFrame, direction: str, key: str, where: str, primary_name: str,
                      target: float) -> tuple[Verdict, ...]:
    """The verdicts of one ``direction`` of a :func:`transfer_table`: the primary's cuts (``<key>.cuts``) and
    MiniLM's (``<key>.minilm``) against κ_w ≥ ``target`` on ``where``, and the order of E[g] within its queries
    (``<key>.order``) against τ-b > 0, each with its interval over the held-out queries. Never confirmatory: the
    transfer was declared after the cross-fitted result was seen."""
    rows = table[table.direction == direction].set_index("reading")
    kappa = Claim("human labels", target)

    def one(name: str, suffix: str, system: str, construct: str, claim: Claim) -> Verdict:
        r = rows.loc[name]
        return verdicts.verdict(CHAPTER, f"{key}.{suffix}", system, construct, claim, r.statistic, r.value,
                                r.ci_low, r.ci_high, "held-out queries", int(r.units), "relevance_transfer")

    carried = f"grades {where} as NIST does with cuts fit on other queries (κ_w ≥ {target:.2f})"
    return (one(primary_name, "cuts", primary_name, carried, kappa),
            one(MINILM, "minilm", MINILM, carried, kappa),
            one(ORDER_READING, "order", POINTWISE_JUDGE, f"orders the passages of {where} as NIST does, with no cuts "
                f"to carry over (mean within-query Kendall τ-b > 0)", Claim("human labels", 0.0)))


def transfer_status(v: Verdict) -> str:
    """"confirmed on held-out queries" when a transfer verdict holds, else "not confirmed on held-out queries"."""
    return ("confirmed" if v.verdict == "holds" else "not confirmed") + " on held-out queries"


def preferred_reading(f: Findings) -> str:
    """Which reading of the relevance calls a user moving to new queries should prefer, as the transfer verdicts of
    ``f`` say (the declared split-half rows; formatting only): the grades through the E[g] cuts when their row
    holds; otherwise, for ranking, the order of E[g] within a query — it carries nothing fitted over — unless its
    row goes the wrong way, and for grades MiniLM's cuts when their row holds, else cuts fit on the new set."""
    cuts, minilm, order = f.transfer
    if cuts.verdict == "holds":
        return "the grades through the E[g] cuts, which hold on queries they were not fit on"
    grades = ("for grades, MiniLM's cuts, which hold on the held-out queries" if minilm.verdict == "holds" else
              f"for grades, cuts fit on labelled queries of the new set (carried over, neither E[g]'s cuts "
              f"({cuts.verdict}) nor MiniLM's ({minilm.verdict}) hold)")
    if order.verdict == "fails":
        return (f"no reading of the judge: even its order within a query goes the wrong way on held-out queries; "
                f"{grades}")
    ranking = ("the order of E[g] within each query for ranking its passages, which survives the transfer (Kendall "
               "τ-b above 0)" if order.verdict == "holds" else
               f"the order of E[g] within each query for ranking its passages: it carries no cuts over, though on the "
               f"held-out queries its τ-b is {order.verdict} too")
    return f"{ranking}; {grades}"


def transfer_bullets(f: Findings, table: pd.DataFrame, noveleval_grades: Mapping[int, int]) -> list[str]:
    """The transfer section in words, from the findings ``f`` and the :func:`transfer_table` ``table``: the
    declared split-half verdicts with the cuts that were carried over, the reverse direction as numbers (it decides
    nothing), NovelEval's verdicts or why there are none (with its grade map ``noveleval_grades``), and the
    reading to prefer on new queries (:func:`preferred_reading`)."""
    declared = table[table.direction == DECLARED].set_index("reading")
    reverse = table[table.direction == REVERSE].set_index("reading")
    fit, held = int(declared.fit_queries.iloc[0]), int(declared.held_out_queries.iloc[0])

    def carried(rows: pd.DataFrame) -> str:
        return "; ".join(f"{name} {r.statistic} {r.value:.2f} ({_interval(r.ci_low, r.ci_high, r.ci_over)})"
                         + (f", cuts {r.cuts}" if r.cuts else "") for name, r in rows.iterrows())

    mapping = ", ".join(f"{k} → {v}" for k, v in noveleval_grades.items())
    noveleval = (" ".join(verdicts.sentence(v) for v in f.noveleval) + f" NovelEval's grades 0–2 are mapped onto "
                 f"0–3 as {mapping}; the order within a query does not depend on the map." if f.noveleval else
                 f"Not run: NovelEval's pointwise 0–3 calls are not in the committed cache and this run makes no new "
                 f"call (`noveleval_queries` = 0). A larger backend sets `noveleval_queries` (21: every query, 20 "
                 f"judged passages each) and this section applies the cuts fit on every DL19 query to it, "
                 f"NovelEval's grades 0–2 mapped onto 0–3 as {mapping}.")
    return [
        f"**Cuts carried to held-out queries** (declared in issue #35 after the cross-fitted result was seen, so not "
        f"confirmatory; the queries split by a seeded rule on their ids alone: cuts fit on {fit} queries, applied "
        f"unchanged to the other {held}): " + " ".join(verdicts.sentence(v) for v in f.transfer)
        + f" Carried over: {carried(declared)}.",
        f"**The reverse direction** (cuts fit on the held-out half, applied to the declared one; shown, decides "
        f"nothing): {carried(reverse)}.",
        f"**NovelEval** (a second judged set, 21 queries on its own 0–2 scale): {noveleval}",
        f"**On new queries, prefer** {preferred_reading(f)}. The primary's DL19 result is "
        f"{transfer_status(f.transfer[0])}.",
    ]


def transfer_threat(f: Findings) -> str:
    """The threat the transfer rows name, as one Markdown list item: cuts fit on DL19's queries, whether they held
    on held-out queries, and the reading to prefer on new ones."""
    cuts, _, order = f.transfer
    return (f"- **Cuts fit on DL19's queries.** The primary reads grades through cuts on E[g] fit on DL19's queries; "
            f"carried unchanged to held-out queries their agreement is **{cuts.verdict}** against the target "
            f"({verdicts.evidence_text(cuts)}), the order of E[g] within a query **{order.verdict}** "
            f"({verdicts.evidence_text(order)}). Both halves share DL19's collection, BM25 pool and NIST assessors, "
            f"so the split tests transfer to other queries of the same kind, not to another query set"
            + ("" if f.noveleval else " (NovelEval, which would, was not judged in this run)")
            + f". On new queries prefer {preferred_reading(f)}.")
