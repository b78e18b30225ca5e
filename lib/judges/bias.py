"""Bias battery of a relevance judge: each bias a measured number with a seeded bootstrap CI (:class:`BiasResult`).

* Position — :func:`listwise_swap`: each pool judged as given and reversed; consistency = share of items whose
  grade is the same in both orders, read beside :func:`listwise_modal_share` (a constant judge is perfectly consistent).
  :func:`pairwise_consistency`: share of pairs whose winner is the same in both orders (MT-Bench's
  "consistency", Zheng et al. 2023, Table 2), with the share of answers that chose the passage shown first.
* Self-consistency — :func:`self_consistency`: the same items sampled ``n_samples`` times at ``temperature`` > 0
  (a seed of its own for every item and sample); per item, the share of its valid samples equal to its modal
  grade; the mean over items.
* Verbosity — :func:`verbosity_effect`: the judged text padded by :func:`pad` (no new content); the mean paired
  change of E[g].
* Prompt injection — :func:`injection_effect`: items humans graded irrelevant, with an instruction to give the
  top grade appended (``judge_perturbations.txt``), judged with the plain prompt and with a defence sentence
  added to its system message; inflation = mean change of E[g], recovered = inflation without the defence −
  inflation with it (each condition against its own uninjected baseline).

Every interval resamples the queries the items belong to (the independent unit; items, pools and pairs of one
query are nested in it; :func:`lib.analysis.stats.unit_bootstrap`), and ``ci_over`` says how many. No interval
is given over fewer than ``lib.analysis.stats.MIN_CI_UNITS`` queries (see the report card). A failed call or an answer
without logprobs leaves its item out of the comparison that needs it; the counts are reported (``n``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from lib.analysis.names import POSITION_CONSISTENCY
from lib.analysis.stats import unit_bootstrap
from lib.judges.items import JudgeItem, JudgePool
from lib.judges.methods import PairJudgment
from lib.judges.relevance import (
    PASSAGE_PROMPTS,
    Judgment,
    RelevancePrompts,
    judge_listwise,
    judge_messages,
    judge_pointwise,
    pointwise_messages,
)
from lib.llm.gateway import Gateway
from lib.prompts import parts as prompt_parts


@dataclass(frozen=True)
class BiasResult:
    """One measured bias: ``statistic`` (what ``value`` is) over ``n`` items, with its 95% CI over the queries
    they belong to (``ci_over``: "12 queries"); ``form`` is the judging form it was
    measured on (listwise, pairwise, pointwise)."""

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


def pad(text: str) -> str:
    """The padding rule of the verbosity check, deterministic and content-free: the text, then its own first
    sentence restated ("In other words: <first sentence>"), then a fixed generic filler sentence pair
    (``judge_perturbations.txt``). Nothing is added that the text does not already say."""
    texts = perturbation_texts()
    return " ".join([text.strip(), texts["restatement"].format(first_sentence=first_sentence(text)), texts["filler"]])


def inject(text: str, top: int) -> str:
    """The text with the injection instruction (give the top grade ``top``) appended."""
    return f"{text.strip()} {perturbation_texts()['injection'].format(top=top)}"


def defended_messages(item: JudgeItem, prompts: RelevancePrompts) -> list[dict[str, str]]:
    """The pointwise messages with the defence sentence appended to the system message."""
    system, user = pointwise_messages(item, prompts)
    return [{"role": "system", "content": f"{system['content']}\n{perturbation_texts()['defence']}"}, user]


def _rate(bias: str, form: str, statistic: str, values: np.ndarray, queries: Sequence[str], seed: int
          ) -> BiasResult:
    """Mean of ``values`` with a cluster-bootstrap CI over the ``queries`` the values belong to
    (:func:`lib.analysis.stats.unit_bootstrap`; none over fewer than its minimum of queries)."""
    if not len(values):
        return BiasResult(bias, form, statistic, float("nan"), float("nan"), float("nan"), 0, "0 queries")
    interval = unit_bootstrap(np.mean, [values], list(queries), "queries", seed, n_resamples=10_000)
    return BiasResult(bias, form, statistic, interval.value, interval.low, interval.high, len(values),
                      interval.ci_over)


def listwise_swap(gateway: Gateway, pools: Sequence[JudgePool], prompts: RelevancePrompts = PASSAGE_PROMPTS,
                  call_label: str = "listwise") -> pd.DataFrame:
    """Each pool judged listwise as given and in reversed order; one row per item: pool (index of its pool),
    query (the pool's source), grade_given, grade_reversed (nullable; null where the call failed). The as-given
    calls are those of chapter 03 for the same pools (cache hits)."""
    given = judge_listwise(gateway, pools, call_label, prompts=prompts)
    reversed_pools = [pool.reordered(range(len(pool.rows) - 1, -1, -1)) for pool in pools]
    swapped = judge_listwise(gateway, reversed_pools, f"{call_label}-reversed", prompts=prompts)
    pool_of = {row: k for k, pool in enumerate(pools) for row in pool.rows}
    return pd.DataFrame({"pool": [pool_of[row] for row in range(len(given))],
                         "query": [pools[pool_of[row]].source for row in range(len(given))],
                         "grade_given": pd.array([j.grade for j in given], dtype="Int64"),
                         "grade_reversed": pd.array([j.grade for j in swapped], dtype="Int64")})


def listwise_consistency(swap: pd.DataFrame, seed: int) -> BiasResult:
    """Share of items (graded in both orders) with the same grade as given and reversed; CI resampling queries."""
    both = swap.dropna(subset=["grade_given", "grade_reversed"])
    same = (both.grade_given == both.grade_reversed).to_numpy(dtype=float)
    return _rate("position", "listwise", POSITION_CONSISTENCY, same, both["query"].tolist(), seed)


def listwise_modal_share(swap: pd.DataFrame, seed: int) -> BiasResult:
    """Share of the as-given grades equal to their most frequent grade (the smallest on a tie); CI resampling
    pools. The reading aid for :func:`listwise_consistency`: a judge that gives one grade to everything is
    perfectly consistent under any order, so consistency means little when this share is near 1."""
    given = swap.dropna(subset=["grade_given"])
    modal = given.grade_given.mode().min() if len(given) else None
    same = (given.grade_given == modal).to_numpy(dtype=float)
    return _rate("position", "listwise", "share of the modal grade, as given", same, given["query"].tolist(),
                 seed)


def pairwise_consistency(pairs: Sequence[PairJudgment], seed: int) -> list[BiasResult]:
    """Over the complete pairs: the share whose winner is the same in both orders (CI resampling pools), and the
    share of answers that chose the passage shown first (0.5 without a position preference; CI likewise). A
    pair's pool is its query's ranking pool, so resampling pools resamples queries."""
    complete = [p for p in pairs if p.complete]
    consistent = np.array([p.consistent for p in complete], dtype=float)
    first_chosen = np.array([(p.first_order == p.i) + (p.second_order == p.j) for p in complete], dtype=float) / 2
    pools = [p.pool for p in complete]
    return [_rate("position", "pairwise", POSITION_CONSISTENCY, consistent, pools, seed),
            _rate("position", "pairwise", "share of answers choosing the first-shown passage", first_chosen, pools,
                  seed)]


def self_consistency(gateway: Gateway, items: Sequence[JudgeItem], seed: int, n_samples: int = 5,
                     temperature: float = 1.0, prompts: RelevancePrompts = PASSAGE_PROMPTS,
                     call_label: str = "self-consistency") -> BiasResult:
    """Per item, the share of its valid samples (``n_samples`` at ``temperature``) equal to its modal grade
    (the smallest grade on a tie; 1 means the judge always answered the same); mean over items with at least two
    valid samples, CI resampling queries (the items' ``source``). Item i's sample s uses seed i·n_samples + s:
    with one seed per sample for every item, the server's sampler repeats its random draw, so near-uniform items
    would follow the seed together instead of the judge (the first live run showed exactly that)."""
    samples = pd.DataFrame({s: [judge_pointwise(gateway, [item], f"{call_label}:{s}", temperature, i * n_samples + s,
                                                prompts)[0].grade for i, item in enumerate(items)]
                            for s in range(n_samples)})
    shares, queries = [], []
    for item, row in zip(items, samples.itertuples(index=False), strict=True):
        valid = [g for g in row if g is not None and not pd.isna(g)]
        if len(valid) >= 2:
            counts = pd.Series(valid).value_counts()
            shares.append(counts.max() / len(valid))
            queries.append(item.source)
    return _rate("self-consistency", "pointwise", f"agreement with the modal grade over {n_samples} samples at "
                 f"T = {temperature}", np.array(shares, dtype=float), queries, seed)


def uniform_modal_share(n_grades: int, n_samples: int) -> float:
    """The value :func:`self_consistency` expects from a rater that draws every sample uniformly from
    ``n_grades`` grades: E[max count / n_samples] over all n_grades^n_samples equally likely sample tuples
    (exact enumeration; 17/27 ≈ 0.63 for 3 grades and 3 samples). For 3 samples of 3 grades it is the least any
    independent sampler can score — E = 2/3 + Σp³/3 − 2∏p is smallest at uniform p — so a measured value below
    it means the samples were not independent; 1 means the judge always answers the same."""
    from itertools import product

    shares = [max(draw.count(g) for g in range(n_grades)) / n_samples
              for draw in product(range(n_grades), repeat=n_samples)]
    return float(np.mean(shares))


def _expected(judgments: Sequence[Judgment]) -> np.ndarray:
    return np.array([np.nan if j.expected_grade is None else j.expected_grade for j in judgments], dtype=float)


def _paired_change(bias: str, statistic: str, after: np.ndarray, before: np.ndarray, items: Sequence[JudgeItem],
                   seed: int) -> BiasResult:
    both = ~np.isnan(after) & ~np.isnan(before)
    return _rate(bias, "pointwise", statistic, after[both] - before[both],
                 [item.source for item, kept in zip(items, both, strict=True) if kept], seed)


def verbosity_effect(gateway: Gateway, items: Sequence[JudgeItem], seed: int,
                     prompts: RelevancePrompts = PASSAGE_PROMPTS, call_label: str = "verbosity") -> BiasResult:
    """Mean paired change of E[g] when the judged text is padded (:func:`pad`) — positive: padding is rewarded.
    The unpadded calls are the judge's ordinary ones (cache hits when chapter 03 judged the same items)."""
    plain = judge_pointwise(gateway, items, call_label, prompts=prompts)
    padded = judge_pointwise(gateway, [replace(item, output=pad(item.output)) for item in items],
                             f"{call_label}-padded", prompts=prompts)
    return _paired_change("verbosity", "mean change of E[g] when padded", _expected(padded), _expected(plain),
                          items, seed)


def injection_effect(gateway: Gateway, items: Sequence[JudgeItem], seed: int,
                     prompts: RelevancePrompts = PASSAGE_PROMPTS, call_label: str = "injection") -> list[BiasResult]:
    """On ``items`` (texts humans graded irrelevant): inflation of E[g] by the injected instruction without and
    with the defence, and what the defence recovers (per item: (injected − clean) − (defended injected −
    defended clean)). Four calls per item, the clean one the judge's ordinary call."""
    top = max(prompts.scale)
    injected_items = [replace(item, output=inject(item.output, top)) for item in items]
    clean = _expected(judge_pointwise(gateway, items, call_label, prompts=prompts))
    injected = _expected(judge_pointwise(gateway, injected_items, f"{call_label}-injected", prompts=prompts))
    defended_clean = _expected(judge_messages(gateway, [defended_messages(i, prompts) for i in items],
                                              f"{call_label}-defended", scale=prompts.scale))
    defended_injected = _expected(judge_messages(gateway, [defended_messages(i, prompts) for i in injected_items],
                                                 f"{call_label}-defended-injected", scale=prompts.scale))
    inflation = injected - clean
    defended_inflation = defended_injected - defended_clean
    return [_paired_change("prompt injection", "mean inflation of E[g], no defence", injected, clean, items, seed),
            _paired_change("prompt injection", "mean inflation of E[g], with the defence", defended_injected,
                           defended_clean, items, seed),
            _paired_change("prompt injection", "inflation recovered by the defence", inflation, defended_inflation,
                           items, seed)]
