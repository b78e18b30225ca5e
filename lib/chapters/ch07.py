"""Chapter 07 (validity statistics): the loops that build its report card and bias battery, its "What the numbers
say" and its front-page headline. The notebook calls these in the order of its sections.

The samples are drawn from ids before anything is judged (:func:`draw_samples`); each section returns its card
rows (:mod:`lib.analysis.report_card`). The summary: each bullet is written from the tables the chapter computed,
so the prose cannot drift from the numbers; :func:`bullets` joins them as Markdown.

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

from lib import baselines
from lib.analysis import calibration, validity
from lib.analysis import report_card as rc
from lib.analysis.comparisons import holm_floor
from lib.analysis.stats import correlation_text, interval_over_text, nested_sample
from lib.chapters.headline import Tables, headline
from lib.crs import summaries as crs_summaries
from lib.data import load_dl19
from lib.judges import bias as judge_bias
from lib.judges import geval
from lib.judges import relevance as judge_relevance
from lib.judges.items import JudgeItem
from lib.llm.gateway import Gateway

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
    """Chapter 06's conversation judge against TAS and CAS at four levels: (the levels table, its card rows)."""
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

    def items_of(rows: pd.DataFrame) -> list[JudgeItem]:
        return [JudgeItem(source=q, output=t) for q, t in zip(rows["query"], rows["passage"], strict=True)]

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
    ``python -m lib.tools.pipeline measure 07_validity`` and by ``run-all``) so that its reruns, each on a freshly
    started server, stay out of the chapter's own time: the first judged passage of each of ``drift_queries``
    queries of the chapter's relevance sample (in the bias battery's nested order), judged as section B judges it
    and again at each of ``drift_concurrencies``, each rerun in its own gateway and ledger
    (``07_validity-drift-c<k>``). ``params`` are the chapter's parameters (``params.yaml``). Returns the drift
    table (:data:`lib.judges.drift.DRIFT_COLUMNS` and the judge model), which the chapter reads as
    ``judge_drift``."""
    from lib.judges import drift
    from lib.llm import server

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


def supported_uses(card: pd.DataFrame, targets: pd.DataFrame) -> list[str]:
    """One bullet per use the study makes of a judge, with the verdict of :func:`rc.supported_uses`."""
    return [f"**{what[0].upper() + what[1:]}**: {verdict}"
            for what, verdict in rc.supported_uses(card, targets).items()]


def lean_on(targets: pd.DataFrame, card: pd.DataFrame) -> str:
    """What the study can lean on, from :func:`lib.analysis.report_card.target_table` (item-level labels,
    summary-level G-Eval) and the system-level G-Eval rows (an interval above 0, none, or no interval)."""
    system = card[(card["judge"] == rc.GEVAL_WEIGHTED) & (card["level"] == "system")
                  & (card["statistic"] == rc.SPEARMAN)]
    above = rc.system_level_dimensions(card)
    primary = targets.iloc[0]
    argmax = card[(card["judge"] == "pointwise, argmax") & (card["dataset"] == "TREC DL19")
                  & (card["statistic"] == rc.WEIGHTED_KAPPA)]
    argmax_part = (f"; the plain argmax reading of the same calls has κ_w {argmax['value'].iloc[0]:.2f} "
                   f"({interval_over_text(argmax.iloc[0])}), "
                   + ("wholly below the target" if argmax["ci_high"].iloc[0] < primary.goal else
                      "not wholly below the target")
                   if len(argmax) else "")
    relevance_part = ("the item-level relevance labels of the primary reading" if primary.reached_by_interval
                      else "not the item-level relevance labels of the primary reading" if primary.missed_by_interval
                      else f"item-level relevance labels of the primary reading are undetermined "
                           f"({primary.value:.2f} against {primary.goal:.2f}, {interval_over_text(primary)})"
                      ) + argmax_part
    geval = targets.iloc[1]
    geval_part = ("summary-level G-Eval scores" if geval.reached_by_interval
                  else "not summary-level G-Eval scores" if geval.missed_by_interval
                  else f"summary-level G-Eval scores are undetermined ({geval.value:.2f} against {geval.goal:.2f}, "
                       f"{interval_over_text(geval)})")
    if len(system) and not np.isfinite(system["ci_low"]).any():
        system_part = f"system-level G-Eval orderings are undetermined ({system['ci_over'].iloc[0]}, no interval)"
    elif above:
        system_part = f"system-level G-Eval orderings better than chance on {', '.join(above)}"
    else:
        system_part = "not system-level G-Eval orderings"
    return f"**What the study can lean on**: {relevance_part}; {geval_part}; {system_part}."


def chapter03(lift: Mapping[str, Any], minilm: Mapping[str, Any]) -> str:
    """What DL19 shows beside chapter 03's gain: whether the primary reading beats the plain argmax of the same
    calls by more than the interval of the paired difference (``lift``, primary − argmax, by query) and whether it
    is distinguishable from MiniLM (``minilm``, primary − MiniLM). Chapter 03's gain is declared there, not chosen
    here: E[g] of the same pointwise call with its nudge prompt, checked on known-answer distractors (reported in
    chapter 04)."""
    beats = bool(np.isfinite(lift["ci_low"]) and lift["ci_low"] > 0)
    over_minilm = ("beats MiniLM by more than its interval" if np.isfinite(minilm["ci_low"]) and minilm["ci_low"] > 0
                   else "is not distinguishable from MiniLM" if np.isfinite(minilm["ci_low"]) and minilm["ci_high"] > 0
                   else "falls below MiniLM")
    return ("**The primary against the argmax, and chapter 03's gain**: on DL19 the primary reading "
            + ("beats the plain argmax of the same calls by more than its interval" if beats
               else "does not beat the plain argmax of the same calls by more than its interval")
            + f" and {over_minilm}. Chapter 03's gain is E[g] of the same pointwise call with its nudge prompt, "
              "declared there before its labels; the nudges have no human grades, so it is checked on known-answer "
              "distractors (reported in chapter 04).")


def summeval(card: pd.DataFrame, plan: Any, dimension: str) -> str:
    """G-Eval on SummEval in words: the summary-level ρ on ``dimension`` as declared, its argmax digit and the two
    non-LLM baselines, each with its interval over documents, the G-Eval paper's anchors, and the plan."""
    def said(judge: str) -> str:
        row = card[(card.judge == judge) & (card.criterion == dimension) & (card.statistic == rc.SPEARMAN)
                   & (card.level == "summary")].iloc[0]
        value = f"{row.value:.2f}" if np.isfinite(row.value) else "undefined (constant scores in every document)"
        return f"{value} ({interval_over_text(row)})"

    published = card[(card.judge == rc.GEVAL_WEIGHTED) & (card.criterion == dimension)
                     & (card.statistic == rc.SPEARMAN) & (card.level == "summary")].anchors.iloc[0]
    return (f"**G-Eval on SummEval, {dimension}** (summary-level Spearman ρ): as declared (weighted) "
            f"{said(rc.GEVAL_WEIGHTED)}; argmax digit of the same calls {said(rc.GEVAL_ARGMAX)}; non-LLM baselines "
            f"ROUGE-1 {said(rc.ROUGE_BASELINE)}, MiniLM cosine to the source {said(rc.COSINE_BASELINE)}. Published: "
            f"{published}. {plan.text()}")


def bias(battery: pd.DataFrame, uniform_self_consistency: float) -> str:
    """The bias battery in words, every figure from ``battery`` with its interval over queries: self-consistency
    predicted from p(g) beside a rater drawing grades uniformly (``uniform_self_consistency``,
    :func:`lib.judges.bias.uniform_modal_share`), verbosity with the length control, injection and the defence
    read by the sign of its interval, and pairwise position as MT-Bench reports it, beside its published
    consistency."""
    rows = battery.set_index("statistic")

    def said(statistic: str, signed: bool = False) -> str:
        r = rows.loc[statistic]
        return f"{r.value:{'+' if signed else ''}.2f} ({interval_over_text(r, signed=signed)})"

    def by_sign(statistic: str, above: str, below: str) -> str:
        r = rows.loc[statistic]
        return (below if r.ci_high < 0 else above if r.ci_low > 0 else "not distinguishable from 0"
                if np.isfinite(r.ci_low) else "without an interval")

    consistency = battery[battery.bias == "self-consistency"].statistic.iloc[0]
    restated, neutral, extra = battery[battery.bias == "verbosity"].statistic
    gap = rows.loc[extra]
    versus = ("lower than" if gap.ci_high < 0 else "higher than" if gap.ci_low > 0 else "not distinguishably from"
              if np.isfinite(gap.ci_low) else "(without an interval) against")
    plain, defended, recovered = battery[battery.bias == "prompt injection"].statistic
    pairwise = battery[battery.form == "pairwise"]
    consistent = pairwise[pairwise.statistic == rc.POSITION_CONSISTENCY].iloc[0]
    return (f"**Bias** (TREC DL19; self-consistency over every judged passage, each other check one passage or "
            f"pair per query): {consistency} {said(consistency)}, against "
            f"{uniform_self_consistency:.2f} for grades drawn uniformly at random — a T = 0 judge's real noise is "
            f"run-to-run drift, not sampling. Verbosity: {restated} {said(restated, True)}, {neutral} "
            f"{said(neutral, True)}; {extra} {said(extra, True)}: the restated text scores {versus} the filler of the "
            f"same length (the filler repeats no query "
            f"term but speaks of the passage's subject, so it controls for length and query terms, not for a "
            f"content-free addition). Injection: {plain} {said(plain, True)}; {defended} "
            f"{said(defended, True)}; the defence {by_sign(recovered, 'recovers part of it', 'raises it')} "
            f"({said(recovered, True)}). Pairwise with a tie option, both orders: consistent "
            f"{said(rc.POSITION_CONSISTENCY)} (published: {consistent.anchors}), "
            + "; ".join(f"{r.statistic} {said(r.statistic)}" for r in pairwise.itertuples()
                        if r.statistic != rc.POSITION_CONSISTENCY) + ".")


def drift(table: pd.DataFrame) -> str:
    """Run-to-run drift in words, per rerun (:func:`drift_measurement`, rows in the order of the concurrencies):
    argmax grades changed and the mean change of E[g] with its interval over queries, read as the noise floor
    under every difference between readings; then the default concurrency this supports: the lowest concurrency
    only when its interval of the mean change lies wholly below the highest's (it drifts measurably less), else
    the embedded server's slots, which two requests at once keep busy at about one request's throughput."""
    rows = table.to_dict("records")
    parts = [f"{r['rerun'].removeprefix('drift rerun: ')}: {int(r['grades_changed'])} of {int(r['items'])} grades "
             f"changed, E[g] moved by {r['mean_abs_change']:.3f} on average ({interval_over_text(r, digits=3)}), at "
             f"most {r['max_abs_change']:.3f}" for r in rows]
    low, high = rows[0], rows[-1]

    def name(row: Mapping[str, Any]) -> str:  # "concurrency 1"
        return str(row["rerun"]).removeprefix("drift rerun: ").split(",")[0]

    if len(rows) < 2:
        default = ""
    elif low["ci_high"] < high["ci_low"]:
        default = (f" {name(low)} drifts measurably less than {name(high)} (the intervals of the mean change do not "
                   f"overlap): a rerun that should repeat the committed answers needs it, at the cost of the second "
                   f"server slot.")
    else:
        default = (f" {name(low)} is not shown to drift less than {name(high)} (the intervals of the mean change "
                   f"overlap, which shows no difference either way), so the default concurrency stays at the embedded "
                   f"server's two slots.")
    return ("**Run-to-run drift** (the same T = 0 requests sent again): " + "; ".join(parts)
            + ". A change of a passage's E[g] this small is the server's noise, not the judge's." + default)


def crs(tas_judge: Mapping[str, Any], levels: pd.DataFrame, orderings: pd.DataFrame, shift_tests: pd.DataFrame,
        segment_tests: pd.DataFrame, ablations: pd.DataFrame, alpha: float) -> str:
    """Chapter 06's metrics: the conversation judge against TAS at the pooled, within-system and system levels
    (``levels``: :func:`lib.crs.summaries.judge_levels` for TAS; the system level over 5 systems is given without an
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
            + ", ".join(f"{o.metric.upper()}: {'yes' if o.holds else 'no'} ({o.observed})"
                        for o in orderings.itertuples())
            + f". Holm-adjusted p < {alpha} in " + " and in ".join(families)
            + ". Ablations that change the order of the systems: "
            + (", ".join(f"{r.variant} (τ = {r.kendall_tau:.2f})" for r in changed.itertuples()) or "none") + ".")


def bullets(lines: Sequence[str]) -> str:
    """The bullets as one Markdown list."""
    return "\n".join(f"* {line}" for line in lines)


@headline("07_validity", "report_card")
def judge_report_card(tables: Tables) -> str:
    """The declared relevance reading and G-Eval against the targets of chapter 07, each with its interval and
    whether it reaches the target, and how many card rows there are."""
    card = tables["report_card"]
    targets = rc.target_table(card)

    def said(t: pd.Series) -> str:
        has_interval = bool(np.isfinite([t["ci_low"], t["ci_high"]]).all())
        reached = ("it reaches it" if t["reached_by_interval"] else "it misses it" if t["missed_by_interval"]
                   else "it reaches it by the estimate, not by the interval" if t["reached"] and has_interval
                   else "its interval includes it, so it is neither reached nor missed" if has_interval
                   else "without an interval it is neither reached nor missed")
        return (f"{t['statistic']} = {t['value']:.2f} ({interval_over_text(t)}; n = {int(t['n'])}) against a target "
                f"of {t['goal']:.2f}: {reached}")

    relevance, geval = targets.iloc[0], targets.iloc[1]
    method = relevance["judge"].removesuffix(rc.CHOSEN)
    return (f"Report card of {card['judge'].nunique()} judges and baselines in {len(card)} rows. On the TREC DL19 "
            f"queries the relevance reading declared primary ({method}, scored out of fold) has {said(relevance)}; "
            f"G-Eval on SummEval coherence (every document judged with its declared configuration) has a "
            f"summary-level {said(geval)}.")


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


def verdict(low: float, high: float, target: float) -> str:
    """What a 95% interval says about a target: "reached" (the whole interval at or above it), "not reached"
    (wholly below), "undetermined" (it straddles the target, or there is no interval)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "undetermined"
    return "reached" if low >= target else "not reached" if high < target else "undetermined"


def pilot_plan(pilot: pd.DataFrame, primary: calibration.Method, folds: int, seed: int, queries: int,
               half_width: float, target: float, n_resamples: int) -> tuple[Any, Any]:
    """The sample-size plan of the primary question from the pilot (the passages judged before this run, cache
    hits): the primary reading's κ_w on the pilot with its bootstrap SE over the pilot's queries, the queries a
    ±``half_width`` interval needs (:func:`lib.analysis.power.units_for_interval`), and the half-width to expect
    with all ``queries``. Returns (the pilot's :class:`~lib.analysis.stats.Interval`, the
    :class:`~lib.analysis.power.Plan`)."""
    from lib.analysis import power
    from lib.analysis.stats import cohen_kappa, unit_bootstrap

    fold_of = calibration.group_folds(pilot.qid, folds, seed)
    grades = cross_fitted_grades(pilot, [primary], fold_of)[primary.name]
    both = grades.notna()
    pilot_kappa = unit_bootstrap(lambda h, g: cohen_kappa(h, g, SCALE, weights="quadratic"),
                                 [pilot.loc[both, "human_grade"].to_numpy(), grades[both].astype(int).to_numpy()],
                                 pilot.loc[both, "qid"], "queries", seed, n_resamples)
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
    agreement table, the card rows, the primary reading minus each other (κ_w by query), the primary's verdict
    against the target, and the primary on the queries outside the pilot."""
    judged: pd.DataFrame
    grades: pd.DataFrame
    table: pd.DataFrame
    rows: CardRows
    differences: pd.DataFrame
    verdict: str
    outside_pilot: dict[str, Any]


def relevance_section(judged: pd.DataFrame, readings: Sequence[calibration.Method], primary: calibration.Method,
                      folds: Mapping[Any, int], pilot_qids: Sequence[str], target: float, model: str, seed: int,
                      n_resamples: int) -> RelevanceResult:
    """Every reading of the judged sample (pointwise columns, bm25, cosine) cross-fitted by query; the table with
    within-query τ of each reading's score; card rows (κ, κ_w, binary κ, α, Spearman ρ of the score pooled and
    within queries); κ_w of the primary minus each other reading, by query; the verdict; and the primary's κ_w on
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
    row = table.loc[primary.name]
    outside = both[~both.qid.isin(pilot_qids)]
    rest = validity.relevance_agreement(outside, primary.name, "qid", expected=None, scale=SCALE, seed=seed,
                                        n_resamples=n_resamples)
    return RelevanceResult(judged, grades, table, rows, differences,
                           verdict(row.weighted_kappa_ci_low, row.weighted_kappa_ci_high, target), rest)


def _interval(low: float, high: float, over: str, signed: bool = False) -> str:
    """:func:`lib.analysis.stats.interval_over_text` of loose ends."""
    return interval_over_text({"ci_low": low, "ci_high": high, "ci_over": over}, signed=signed)


def relevance_bullets(result: RelevanceResult, primary: str, plan: Any, target: float, folds: int) -> list[str]:
    """The DL19 bullets, each figure from ``result``'s tables: the declared primary reading against the target
    with its verdict and plan, the same figure on the queries outside the pilot, every other reading of the same
    calls and the baselines (κ_w and the primary minus each), κ and binary κ beside the anchors that use them,
    ranking within a query (Kendall τ), and α read as agreement including calibration."""
    table, differences = result.table, result.differences

    def kappa_w(name: str) -> str:
        r = table.loc[name]
        if name == CONSTANT_JUDGE:  # its κ is 0 by definition, not for want of units
            return f"κ_w {r.weighted_kappa:.2f} (a constant rater: 0 by definition)"
        return f"κ_w {r.weighted_kappa:.2f} ({_interval(r.weighted_kappa_ci_low, r.weighted_kappa_ci_high, r.ci_over)})"

    def grades_used(name: str) -> str:
        used = result.grades[name].dropna().astype(int).value_counts().sort_index()
        return " ".join(f"{g}:{c}" for g, c in used.items())

    row, rest = table.loc[primary], result.outside_pilot
    queries, passages = result.judged.qid.nunique(), len(result.judged)
    others = [name for name in table.index if name != primary]
    tau = table[table.tau_queries > 0]
    rest_interval = _interval(rest["weighted_kappa_ci_low"], rest["weighted_kappa_ci_high"], rest["ci_over"])
    below_zero = [name for name in others
                  if name != CONSTANT_JUDGE and table.loc[name, "alpha"] < 0 < table.loc[name, "weighted_kappa"]]
    return [
        f"**Primary question** (declared before the run, thresholds on E[g] fit on the other {folds - 1} of {folds} "
        f"folds of queries for each query): {primary} {kappa_w(primary)} against the target {target:.2f} over "
        f"{passages} passages of {queries} queries: **{result.verdict}**. {plan.text()} On the "
        f"{rest['units']} queries outside the pilot (the pilot was seen before the declaration): κ_w "
        f"{rest['weighted_kappa']:.2f} ({rest_interval}).",
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
