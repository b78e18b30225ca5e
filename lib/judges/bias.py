"""Bias battery of a relevance judge: each bias a measured number with a seeded bootstrap CI (:class:`BiasResult`).

* Self-consistency — :func:`expected_modal_share`: what sampling at T = 1 would give follows from the judge's own
  p(g) (read at T = 0), item by item, at no cost; :func:`uniform_modal_share` is the uniform rater beside it.
* Verbosity — :func:`verbosity_effect`: the judged text lengthened by restating its first sentence
  (:func:`restate`) and as much by a filler repeating no query term (:func:`neutral_pad`); the mean paired changes
  of E[g] and their difference.
* Prompt injection — :func:`injection_effect`: items humans graded irrelevant, with an instruction to give the
  top grade appended (``judge_perturbations.txt``), judged with the plain prompt and with a defence sentence
  added to its system message; inflation = mean change of E[g], recovered = inflation without the defence −
  inflation with it (each condition against its own uninjected baseline).
* Position — :func:`judge_pairs_with_tie` and :func:`pairwise_position`: MT-Bench's protocol (Zheng et al. 2023,
  §3.3, Table 2) with a tie option, each pair in both orders, p(first shown) from the answer's log-probabilities;
  the lifted reading combines the two orders' probabilities so the slot's effect cancels (:func:`combined_orders`).
  The pairwise judge itself is a metric of the study (``PAIRWISE_PREFERENCE``, :mod:`lib.metrics`): 1 when it
  prefers the first shown, 0 the second, 0.5 a tie.

Every interval resamples the queries the items belong to (the independent unit; :func:`lib.analysis.stats.
unit_bootstrap`), and ``ci_over`` says how many. No interval is given over fewer than
``lib.analysis.stats.MIN_CI_UNITS`` queries (see the report card). A failed call or an answer without logprobs
leaves its item out of the comparison that needs it; the counts are reported (``n``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from pydantic import BaseModel

from lib import metrics
from lib.analysis.names import POSITION_CONSISTENCY
from lib.analysis.stats import unit_bootstrap
from lib.judges.items import JudgeItem
from lib.judges.relevance import (
    PASSAGE_PROMPTS,
    Judgment,
    RelevancePrompts,
    judge_pointwise,
    judge_variants,
    pointwise_messages,
)
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts


@dataclass(frozen=True)
class BiasResult:
    """One measured bias: ``statistic`` (what ``value`` is) over ``n`` items, with its 95% CI over the queries
    they belong to (``ci_over``: "12 queries"); ``form`` is the judging form it was
    measured on (pairwise or pointwise)."""

    bias: str
    form: str
    statistic: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    ci_over: str


def bias_table(results: Sequence[BiasResult], dataset: str) -> pd.DataFrame:
    """The results as a table with the columns :func:`lib.analysis.report_card.with_anchors` matches on
    (dataset, criterion = the form, statistic, level = item)."""
    table = pd.DataFrame([r.__dict__ for r in results])
    return table.assign(dataset=dataset, criterion=table.form, level="item")


def perturbation_texts() -> dict[str, str]:
    """The texts of ``judge_perturbations.txt``: injection (with ``{top}``), defence, restatement (with
    ``{first_sentence}``) and filler."""
    injection, defence, restatement, filler = prompt_parts("judge_perturbations", 4)
    return {"injection": injection, "defence": defence, "restatement": restatement, "filler": filler}


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (. ! or ? followed by white space), or the whole text."""
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def restate(text: str) -> str:
    """The text, then its own first sentence restated ("In other words: <first sentence>",
    ``judge_perturbations.txt``): longer, nothing new, and repeating the text's own words (and so any query terms
    it holds)."""
    return f"{text.strip()} {perturbation_texts()['restatement'].format(first_sentence=first_sentence(text))}"


def neutral_pad(text: str, query: str) -> str:
    """The text padded by as many characters as :func:`restate` adds, with the generic filler sentence of
    ``judge_perturbations.txt`` (repeated as needed, cut at a word) from which every word sharing a term with
    ``query`` is left out: the length control of the verbosity check. It adds length and no query term, but its
    wording still speaks of "the subject described above", so it is not a content-free addition."""
    from lib.baselines import tokens

    added = len(restate(text)) - len(text.strip()) - 1
    query_terms = set(tokens(query))
    words = [w for w in perturbation_texts()["filler"].split() if not set(tokens(w)) & query_terms]
    filler = " ".join(words * (added // max(1, len(" ".join(words))) + 1))
    return f"{text.strip()} {filler[:added].rsplit(' ', 1)[0]}"


def inject(text: str, top: int) -> str:
    """The text with the injection instruction (give the top grade ``top``) appended."""
    return f"{text.strip()} {perturbation_texts()['injection'].format(top=top)}"


def defended_messages(item: JudgeItem, prompts: RelevancePrompts) -> list[dict[str, str]]:
    """The pointwise messages with the defence sentence appended to the system message."""
    system, user = pointwise_messages(item, prompts)
    return [{"role": "system", "content": f"{system['content']}\n{perturbation_texts()['defence']}"}, user]


def _rate(bias: str, form: str, statistic: str, values: np.ndarray, queries: Sequence[str], seed: int,
          n_resamples: int) -> BiasResult:
    """Mean of ``values`` with a cluster-bootstrap CI over the ``queries`` the values belong to
    (:func:`lib.analysis.stats.unit_bootstrap`; none over fewer than its minimum of queries)."""
    if not len(values):
        return BiasResult(bias, form, statistic, float("nan"), float("nan"), float("nan"), 0, "0 queries")
    interval = unit_bootstrap(np.mean, [values], list(queries), "queries", seed, n_resamples=n_resamples)
    return BiasResult(bias, form, statistic, interval.value, interval.low, interval.high, len(values),
                      interval.ci_over)


def _share(bias: str, form: str, statistic: str, hits: np.ndarray, queries: Sequence[str]) -> BiasResult:
    """The share of ``hits`` (one 0/1 outcome per query) with the exact Clopper–Pearson 95% interval of a binomial
    proportion (Clopper & Pearson 1934; ``scipy.stats.binomtest``): the queries are the independent units, one item
    each, and unlike a bootstrap the interval does not collapse to a point when every outcome is the same (0 of 30
    gives 0 to 0.116). None over fewer than the study's minimum of queries."""
    from scipy.stats import binomtest

    from lib.analysis.stats import MIN_CI_UNITS

    n, k = len(hits), int(np.sum(hits))
    if len(set(queries)) != n:
        raise ValueError(f"a share needs one outcome per query, got {n} outcomes from {len(set(queries))} queries")
    if n < MIN_CI_UNITS:
        return BiasResult(bias, form, statistic, k / n if n else float("nan"), float("nan"), float("nan"), n,
                          f"{n} queries")
    interval = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return BiasResult(bias, form, statistic, k / n, float(interval.low), float(interval.high), n, f"{n} queries")


def expected_modal_share(probabilities: ArrayLike, n_samples: int) -> float:
    """What :func:`self_consistency` expects from a rater that draws ``n_samples`` grades independently from
    ``probabilities`` (p(g) of each grade, e.g. the judge's own at T = 1 read from its T = 0 log-probabilities):
    E[max count / n_samples], by exact enumeration of the multinomial outcomes. So self-consistency at T = 1 costs
    no call: it follows from p(g), item by item. 1 when one grade has all the mass."""
    from itertools import combinations_with_replacement
    from math import factorial

    p = np.asarray(probabilities, dtype=float)
    if n_samples < 1 or len(p) == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"need n_samples ≥ 1 and probabilities summing to 1, got {n_samples} and {p.tolist()}")
    expected = 0.0
    for draw in combinations_with_replacement(range(len(p)), n_samples):
        counts = np.bincount(draw, minlength=len(p))
        ways = factorial(n_samples) / np.prod([factorial(c) for c in counts])
        expected += ways * float(np.prod(p ** counts)) * counts.max() / n_samples
    return expected


def uniform_modal_share(n_grades: int, n_samples: int) -> float:
    """:func:`expected_modal_share` of a rater that draws every sample uniformly from ``n_grades`` grades (17/27 ≈
    0.63 for 3 grades and 3 samples). For 3 samples of 3 grades it is the least any independent sampler can score
    — E = 2/3 + Σp³/3 − 2∏p is smallest at uniform p — so a measured value below it means the samples were not
    independent; 1 means the judge always answers the same."""
    return expected_modal_share(np.full(n_grades, 1 / n_grades), n_samples)


def _expected(judgments: Sequence[Judgment]) -> np.ndarray:
    return np.array([np.nan if j.expected_grade is None else j.expected_grade for j in judgments], dtype=float)


def _paired_change(bias: str, statistic: str, after: np.ndarray, before: np.ndarray, items: Sequence[JudgeItem],
                   seed: int, n_resamples: int) -> BiasResult:
    both = ~np.isnan(after) & ~np.isnan(before)
    return _rate(bias, "pointwise", statistic, after[both] - before[both],
                 [item.source for item, kept in zip(items, both, strict=True) if kept], seed, n_resamples)


def verbosity_effect(gateway: Gateway, items: Sequence[JudgeItem], seed: int, n_resamples: int = 2000,
                     prompts: RelevancePrompts = PASSAGE_PROMPTS, call_label: str = "verbosity") -> list[BiasResult]:
    """Mean paired change of E[g] when the judged text is lengthened by restating its first sentence
    (:func:`restate`) and when it is lengthened as much by filler that repeats no query term (:func:`neutral_pad`),
    and the restated minus the neutral change. Length alone shows in the neutral change; the restated one adds
    the repeated words (a soft echo of the query). The unpadded calls are the judge's ordinary ones (cache
    hits)."""
    plain = _expected(judge_pointwise(gateway, items, call_label, prompts=prompts))
    padded = judge_variants(gateway, {  # an item's two paddings share its text as a prompt prefix
        f"{call_label}-restated": [pointwise_messages(replace(item, output=restate(item.output)), prompts)
                                   for item in items],
        f"{call_label}-neutral": [pointwise_messages(replace(item, output=neutral_pad(item.output, item.source)),
                                                     prompts) for item in items]}, scale=prompts.scale)
    restated, neutral = (_expected(padded[f"{call_label}-{kind}"]) for kind in ("restated", "neutral"))
    return [_paired_change("verbosity", "mean change of E[g], first sentence restated", restated, plain, items, seed,
                           n_resamples),
            _paired_change("verbosity", "mean change of E[g], neutral filler of the same length", neutral, plain,
                           items, seed, n_resamples),
            _paired_change("verbosity", "restated minus neutral", restated - plain, neutral - plain, items, seed,
                           n_resamples)]


def injection_effect(gateway: Gateway, items: Sequence[JudgeItem], seed: int, n_resamples: int = 2000,
                     prompts: RelevancePrompts = PASSAGE_PROMPTS, call_label: str = "injection") -> list[BiasResult]:
    """On ``items`` (texts humans graded irrelevant): inflation of E[g] by the injected instruction without and
    with the defence, and what the defence recovers (per item: (injected − clean) − (defended injected −
    defended clean)). Four calls per item, the clean one the judge's ordinary call."""
    top = max(prompts.scale)
    injected_items = [replace(item, output=inject(item.output, top)) for item in items]
    clean = _expected(judge_pointwise(gateway, items, call_label, prompts=prompts))
    injected = _expected(judge_pointwise(gateway, injected_items, f"{call_label}-injected", prompts=prompts))
    defended = judge_variants(gateway, {  # an item's two defended calls share the defence and its text as a prefix
        f"{call_label}-defended": [defended_messages(i, prompts) for i in items],
        f"{call_label}-defended-injected": [defended_messages(i, prompts) for i in injected_items]},
        scale=prompts.scale)
    defended_clean = _expected(defended[f"{call_label}-defended"])
    defended_injected = _expected(defended[f"{call_label}-defended-injected"])
    inflation = injected - clean
    defended_inflation = defended_injected - defended_clean
    return [_paired_change("prompt injection", "mean inflation of E[g], no defence", injected, clean, items, seed,
                           n_resamples),
            _paired_change("prompt injection", "mean inflation of E[g], with the defence", defended_injected,
                           defended_clean, items, seed, n_resamples),
            _paired_change("prompt injection", "inflation recovered by the defence", inflation, defended_inflation,
                           items, seed, n_resamples)]


# Pairwise position with a tie option: MT-Bench's protocol (Zheng et al. 2023, §3.3 and Table 2) on passage pairs of
# different human grades, each asked in both orders, p(first shown) read from the answer token's log-probabilities.

Verdict = Literal["A", "B", "tie"]
PAIR_PREFILL = '{"better": "'  # the verdict is the first token the model writes


class PreferenceOrTie(BaseModel):
    better: Verdict


def tie_pair_messages(source: str, first: str, second: str) -> list[dict[str, str]]:
    system, shared, template = prompt_parts("passage_relevance_pairwise_tie", 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(source=source) + "\n" + template.format(first=first,
                                                                                           second=second)}]


def verdict_probabilities(logprobs: list[dict] | None) -> dict[str, float] | None:
    """p(A), p(B), p(tie) from the first answer token's top log-probabilities, renormalised over the three (a
    token starting "t" is the tie's first piece); None without logprobs or when none of the three is listed."""
    if not logprobs:
        return None
    mass = {"A": 0.0, "B": 0.0, "tie": 0.0}
    for candidate in logprobs[0].get("top_logprobs") or []:
        token = candidate["token"].strip()
        key = "A" if token == "A" else "B" if token == "B" else "tie" if token[:1] in ("t", "T") else None
        if key:
            mass[key] += float(np.exp(candidate["logprob"]))
    total = sum(mass.values())
    return {k: v / total for k, v in mass.items()} if total > 0 else None


def pair_call(source: str, first: str, second: str, call_label: str) -> LLMCall:
    """The pairwise call with a tie option on (``first``, ``second``) shown in that order."""
    return LLMCall(tie_pair_messages(source, first, second), PreferenceOrTie, max_tokens=6, prefill=PAIR_PREFILL,
                   top_logprobs=5, call_label=call_label)


class Pair(NamedTuple):
    """What the pairwise judge is shown: the query, then two passages in this order."""

    source: str
    first: str
    second: str


PREFERENCE_SCORE: dict[str, float] = {"A": 1.0, "B": 0.0, "tie": 0.5}


def _preference_call(gateway: Gateway | None, items: Sequence[Pair], call_label: str = "pairwise-tie"
                     ) -> list[metrics.Result]:
    judge = metrics.judge_gateway(gateway, "pairwise preference")
    results = judge.complete_many([pair_call(p.source, p.first, p.second, f"{call_label}:{i}")
                                   for i, p in enumerate(items)], desc=call_label)
    return [metrics.Result(PREFERENCE_SCORE[r.value.better]) if r.ok else metrics.Result.failure(r.failure_kind
                                                                                               or "unknown")
            for r in results]


PAIRWISE_PREFERENCE = metrics.register(metrics.FunctionMetric(
    name="pairwise preference", kind="LLM judge", construct="whether the first-shown passage answers the query better",
    scale=metrics.Scale.of(0, 0.5, 1), citation="Zheng et al. 2023 (MT-Bench), §3.3",
    description="one call with a tie option: 1 the first shown is better, 0 the second, 0.5 a tie",
    call=_preference_call))


def judge_pairs_with_tie(gateway: Gateway, pairs: pd.DataFrame, call_label: str = "pairwise-tie") -> pd.DataFrame:
    """Each pair (columns qid, query, better_text, worse_text: the passages of higher and lower human grade) asked
    with the better passage shown first and with it shown second (2 calls a pair, consecutive: shared prefix).
    One row per pair: the verdict in each order mapped to "better", "worse" or "tie" (None for a failed call)
    and p(first shown) in each order (NaN without logprobs)."""
    calls = []
    for r in pairs.itertuples():
        for order, (a, b) in (("better_first", (r.better_text, r.worse_text)),
                              ("worse_first", (r.worse_text, r.better_text))):
            calls.append(pair_call(r.query, a, b, f"{call_label}:{r.qid}:{order}"))
    results = gateway.complete_many(calls, desc=call_label)
    rows = []
    for k, r in enumerate(pairs.itertuples()):
        row: dict[str, Any] = {"qid": r.qid}
        for order, result, first in (("better_first", results[2 * k], "better"),
                                     ("worse_first", results[2 * k + 1], "worse")):
            second = "worse" if first == "better" else "better"
            row[order] = {"A": first, "B": second, "tie": "tie"}[result.value.better] if result.ok else None
            p = verdict_probabilities(result.logprobs) if result.ok else None
            row[f"p_first_{order}"] = p["A"] if p else np.nan
            row[f"p_tie_{order}"] = p["tie"] if p else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


# Two combined readings within this of ½ are a tie: float noise of exp(logprob), not a preference.
TIE_TOLERANCE = 1e-9
# The statistics of the combined reading in the bias battery (rows of pairwise_position).
COMBINED_PREFERENCE = "both orders combined: mean preference for the passage humans graded higher"
COMBINED_AUC = "both orders combined: AUC of the passage humans graded higher over the other"
POSITION_OUTWEIGHS = "share of pairs whose slot effect outweighs their content effect"


def combined_orders(judged: pd.DataFrame) -> pd.DataFrame:
    """Both orders of each pair of :func:`judge_pairs_with_tie` combined from their log-probabilities, no new call.
    With e(order) = p(first shown wins) + ½ p(tie), the expected preference for the first-shown passage
    (:data:`PREFERENCE_SCORE` averaged over p), and e_bf, e_wf for the higher-graded (better) and the lower-graded
    passage shown first:

    * ``combined`` = ½ [e_bf + (1 − e_wf)] — the better passage's expected preference averaged over its two
      slots. If the slot adds b to whatever is shown first (e_bf = ½ + c + b, e_wf = ½ − c + b), b cancels and
      combined = ½ + c: the position-free reading of the pair (Zheng et al. 2023, §3.3, swap positions and
      combine; here from the logprobs rather than the two verdicts);
    * ``position`` = ½ (e_bf + e_wf) − ½ = b, the slot's effect the combination removes;
    * ``auc`` = 1 when combined > ½, 0 when below, ½ within :data:`TIE_TOLERANCE` of ½ (the pair's AUC of the
      better over the worse passage under the combined reading);
    * ``position_outweighs`` = |b| > |c|: the slot moves the expected preference more than the content, so in one
      order the first-shown passage is preferred against the content — the pair is decided by position read one
      order at a time, and only the combination recovers an order.

    Rows with both orders' logprobs; columns qid, combined, position, auc, position_outweighs."""
    e_bf = judged.p_first_better_first + 0.5 * judged.p_tie_better_first
    e_wf = judged.p_first_worse_first + 0.5 * judged.p_tie_worse_first
    frame = pd.DataFrame({"qid": judged.qid, "combined": 0.5 * (e_bf + 1 - e_wf),
                          "position": 0.5 * (e_bf + e_wf) - 0.5}).dropna().reset_index(drop=True)
    content = frame.combined - 0.5
    tie = content.abs() <= TIE_TOLERANCE
    frame["auc"] = np.where(tie, 0.5, (content > 0).astype(float))
    frame["position_outweighs"] = frame.position.abs() > content.abs()
    return frame


def pairwise_position(judged: pd.DataFrame, seed: int, n_resamples: int = 2000) -> list[BiasResult]:
    """MT-Bench's position reading of :func:`judge_pairs_with_tie` over the pairs with both answers: the share
    consistent (the same verdict in both orders, a tie in both included), the share biased to the first-shown
    passage (it won both times), to the second-shown one, the share whose consistent verdict is the passage humans
    graded higher, and p(first shown) averaged over both orders (0.5 without a position preference); then the two
    orders combined from their logprobs (:func:`combined_orders`, pairs with both orders' logprobs): the mean
    combined preference for the passage humans graded higher, its AUC (0.5 by chance) and the share of pairs whose
    slot effect outweighs their content effect. CIs over the queries (one pair a query): exact binomial intervals
    for the shares (:func:`_share`), a bootstrap over queries for the means."""
    both = judged.dropna(subset=["better_first", "worse_first"])
    queries = both["qid"].tolist()
    first_won = ((both.better_first == "better") & (both.worse_first == "worse")).to_numpy(dtype=float)
    second_won = ((both.better_first == "worse") & (both.worse_first == "better")).to_numpy(dtype=float)
    consistent = (both.better_first == both.worse_first).to_numpy(dtype=float)
    correct = ((both.better_first == "better") & (both.worse_first == "better")).to_numpy(dtype=float)
    p_first = both[["p_first_better_first", "p_first_worse_first"]].mean(axis=1)
    kept = p_first.notna().to_numpy()
    combined = combined_orders(judged)
    combined_queries = combined.qid.tolist()
    return [_share("position", "pairwise", POSITION_CONSISTENCY, consistent, queries),
            _share("position", "pairwise", "share biased to the first-shown passage", first_won, queries),
            _share("position", "pairwise", "share biased to the second-shown passage", second_won, queries),
            _share("position", "pairwise", "share choosing the passage humans graded higher, in both orders", correct,
                   queries),
            _rate("position", "pairwise", "mean p(first shown)", p_first.to_numpy()[kept],
                  [q for q, k in zip(queries, kept, strict=True) if k], seed, n_resamples),
            _rate("position", "pairwise", COMBINED_PREFERENCE, combined.combined.to_numpy(), combined_queries, seed,
                  n_resamples),
            _rate("position", "pairwise", COMBINED_AUC, combined.auc.to_numpy(), combined_queries, seed, n_resamples),
            _share("position", "pairwise", POSITION_OUTWEIGHS, combined.position_outweighs.to_numpy(dtype=float),
                   combined_queries)]

