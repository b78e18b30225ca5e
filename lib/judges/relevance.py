"""Relevance judge (UMBRELA-style, Upadhyay et al. 2024): consider the writer's intent, then answer with a
grade on the scale ``lib.design.GRADES`` (2 highly relevant, 1 okay, 0 irrelevant), as schema-constrained JSON.

One call per :class:`~lib.judges.items.JudgeItem` (pointwise): the answer is pre-filled up to the grade,
``{"grade": ``, so the grade token is read at a fixed position after a fixed prefix and its top log-probabilities
give p(g) and the expected grade E[g] = Σ_g p(g)·g as a property of the item, not of the whitespace the model
happened to write. (A listwise form, one call grading a whole pool, was measured in earlier runs of chapter 03 and
removed when no chapter used it any more.) Two wordings of the rubric: nudges for a
journal entry and a persona (``NUDGE_PROMPTS``), and passages for a search query (``PASSAGE_PROMPTS``, to
measure the judge against human qrels). A wording carries its grade scale: ``PASSAGE_4POINT_PROMPTS`` grades
passages 0–3 as TREC DL's assessors did (UMBRELA's scale). Each prompt file is split by ``---`` into the system
part, the shared context (written first so the server reuses its cached prefix) and the item.
Each wording is a metric of the study (kind ``LLM judge``, :mod:`lib.metrics`): ``score(gateway, items)`` gives
each item's E[g] (the written grade where the answer has no logprobs), or its failure.
:func:`judge_messages` sends prepared pointwise messages (few-shot, criteria, perturbed prompts of
``lib.judges.methods`` and ``lib.judges.bias``) through the same pre-filled, logprob-reading call.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, create_model

from lib import metrics
from lib.design import GRADES, PERSONAS_BY_ID, GradeValue
from lib.judges.items import JudgeItem
from lib.judges.logprobs import expected_score, score_distribution
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

TOP_LOGPROBS = 5
GRADE_PREFILL = '{"grade": '


class Grade(BaseModel):
    grade: GradeValue


@cache
def grade_schema(scale: tuple[int, ...] = GRADES) -> type[BaseModel]:
    """The pointwise answer schema ``{"grade": g}`` with g on ``scale`` (:class:`Grade` for the study's scale, so
    its requests and cache keys are those of earlier chapters)."""
    if scale == GRADES:
        return Grade
    # ``scale`` is known only at run time, so no static type names these Literals
    return create_model(f"Grade{min(scale)}to{max(scale)}", grade=(Literal[scale], ...))  # type: ignore[arg-type]


@dataclass(frozen=True)
class RelevancePrompts:
    """The file stem in ``lib/prompts`` of one rubric's wording, and the grade scale the wording asks for."""

    pointwise: str
    scale: tuple[int, ...] = GRADES


NUDGE_PROMPTS = RelevancePrompts("relevance_pointwise")
PASSAGE_PROMPTS = RelevancePrompts("passage_relevance_pointwise")
# TREC DL's 4-point scale (0 irrelevant, 1 related, 2 highly relevant, 3 perfectly relevant; UMBRELA's wording).
PASSAGE_4POINT_PROMPTS = RelevancePrompts("passage_relevance_4point_pointwise", scale=(0, 1, 2, 3))


@dataclass(frozen=True)
class Judgment:
    """One relevance grade. ``ok`` False means no grade (``failure_kind`` says why) — never a default.

    ``scale`` is the scale the judge was asked to grade on (the wording's), carried by the judgment so that a
    table of judgments knows its probability columns without being told (:func:`judgments_frame`)."""

    ok: bool
    grade: int | None = None
    expected_grade: float | None = None
    p_grade: tuple[float, ...] | None = None  # p(g) for g on ``scale``; None without usable logprobs
    failure_kind: str | None = None
    scale: tuple[int, ...] = GRADES

    def __post_init__(self) -> None:
        if self.p_grade is not None and len(self.p_grade) != len(self.scale):
            raise ValueError(f"{len(self.p_grade)} probabilities for the {len(self.scale)} grades of the scale "
                             f"{self.scale}: pass the judgment's scale")
        if self.grade is not None and self.grade not in self.scale:
            raise ValueError(f"grade {self.grade} is not on the scale {self.scale}: pass the judgment's scale")

    @property
    def failed(self) -> bool:
        return not self.ok

    def result(self) -> metrics.Result:
        """The protocol's result: E[g], or the written grade where the answer had no usable logprobs; the failure
        otherwise. The reason is empty (the judge is asked for the grade only)."""
        if not self.ok:
            return metrics.Result.failure(self.failure_kind or "unknown")
        return metrics.Result.of(self.expected_grade if self.expected_grade is not None else self.grade, "no_grade")


def nudge_items(entries: pd.DataFrame, candidates: pd.DataFrame) -> list[JudgeItem]:
    """One item per candidate row: its entry's text as source, the nudge as output, the persona as context."""
    by_entry = entries.set_index("entry_id")
    return [JudgeItem(source=by_entry.at[c.entry_id, "text"], output=c.nudge_text,
                      context=PERSONAS_BY_ID[by_entry.at[c.entry_id, "persona_id"]].description)
            for c in candidates.itertuples()]


@dataclass(frozen=True)
class Layout:
    """How the shared context and the item are joined into the user message. The alternate layout (a blank
    line between them, a final newline) changes nothing a reader would call content: the judge's answers
    under it measure how much its labels depend on formatting (chapter 03's repeatability check)."""

    separator: str = "\n"
    ending: str = ""


DEFAULT_LAYOUT = Layout()
ALTERNATE_LAYOUT = Layout(separator="\n\n", ending="\n")


def pointwise_messages(item: JudgeItem, prompts: RelevancePrompts = NUDGE_PROMPTS, layout: Layout = DEFAULT_LAYOUT
                       ) -> list[dict[str, str]]:
    system, shared, template = prompt_parts(prompts.pointwise, 3)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(context=item.context, source=item.source) + layout.separator
             + template.format(output=item.output) + layout.ending}]


def judge_pointwise(gateway: Gateway, items: Sequence[JudgeItem], call_label: str = "relevance",
                    temperature: float = 0.0, seed: int = 0, prompts: RelevancePrompts = NUDGE_PROMPTS,
                    layout: Layout = DEFAULT_LAYOUT) -> list[Judgment]:
    """Grade each item in its own call, with logprobs for the expected grade."""
    return judge_messages(gateway, [pointwise_messages(item, prompts, layout) for item in items], call_label,
                          temperature, seed, prompts.scale)


def judge_messages(gateway: Gateway, messages: Sequence[list[dict[str, str]]], call_label: str = "relevance",
                   temperature: float = 0.0, seed: int = 0, scale: tuple[int, ...] = GRADES) -> list[Judgment]:
    """One pointwise call per prepared message list: the answer pre-filled up to ``{"grade": ``, the grade on
    ``scale`` read at that fixed position, p(g) renormalised over the scale's tokens among the top
    log-probabilities (:func:`lib.judges.logprobs.score_distribution`) and E[g] = Σ_g p(g)·g."""
    return judge_variants(gateway, {call_label: messages}, temperature, seed, scale)[call_label]


def judge_variants(gateway: Gateway, variants: Mapping[str, Sequence[list[dict[str, str]]]],
                   temperature: float = 0.0, seed: int = 0, scale: tuple[int, ...] = GRADES
                   ) -> dict[str, list[Judgment]]:
    """:func:`judge_messages` of several variants of the same items (call label → one message list per item, all
    of the same length) in one batch, item by item: item i's variants go one after another, so when they share
    the item's prompt prefix the gateway schedules them on one server slot (:func:`lib.llm.gateway.prefix_groups`)
    and the server processes that prefix once. The requests are the same as judging each variant on its own."""
    sizes = {len(m) for m in variants.values()}
    if len(sizes) > 1:
        raise ValueError(f"variants of the same items need one message list per item each, got sizes {sorted(sizes)}")
    order = [(label, i) for i in range(sizes.pop() if sizes else 0) for label in variants]
    calls = [LLMCall(variants[label][i], grade_schema(scale), call_label=f"{label}:{i}", max_tokens=4,
                     top_logprobs=TOP_LOGPROBS, temperature=temperature, seed=seed, prefill=GRADE_PREFILL)
             for label, i in order]
    out: dict[str, list[Judgment]] = {label: [] for label in variants}
    for (label, _), result in zip(order, gateway.complete_many(calls, desc=" + ".join(variants)), strict=True):
        if not result.ok:
            out[label].append(Judgment(ok=False, failure_kind=result.failure_kind, scale=scale))
            continue
        dist = score_distribution(result.logprobs, "grade", list(scale), prefill=GRADE_PREFILL)
        out[label].append(Judgment(
            ok=True, grade=result.value.grade,
            expected_grade=expected_score(dist) if dist else None,
            p_grade=tuple(dist[g] for g in scale) if dist else None, scale=scale))
    return out


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut at the last word boundary within ``max_chars``, with "…" when cut."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0] + " …"


def rounded_expected(judgment: Judgment) -> int | None:
    """Expected grade rounded half up to the nearest grade: an integer label that uses p(g), not just argmax."""
    return None if judgment.expected_grade is None else int(np.floor(judgment.expected_grade + 0.5))


def grades(judgments: Sequence[Judgment]) -> pd.api.extensions.ExtensionArray:
    """The judgments' grades as a nullable integer column (null where a judgment failed)."""
    return pd.array([j.grade for j in judgments], dtype="Int64")


def judgments_frame(judgments: Sequence[Judgment], scale: tuple[int, ...] | None = None) -> pd.DataFrame:
    """Columns grade, expected_grade, p_grade_<g> for g on the judgments' scale, rounded_expected, failed,
    failure_kind (one row per judgment).

    The scale is the one the judgments carry: a default scale would silently drop p_grade_3 from 4-point
    judgments. ``scale``, when given, must be that scale; judgments on different scales do not share a table."""
    scales = {j.scale for j in judgments}
    if len(scales) > 1:
        raise ValueError(f"the judgments are on more than one scale ({sorted(scales)}): make one table per scale")
    own = scales.pop() if scales else scale or GRADES
    if scale is not None and tuple(scale) != own:
        raise ValueError(f"scale {tuple(scale)} given, but the judgments are on the scale {own}")
    scale = own
    return pd.DataFrame({
        "grade": grades(judgments),
        "expected_grade": [j.expected_grade if j.expected_grade is not None else np.nan for j in judgments],
        **{f"p_grade_{g}": [j.p_grade[i] if j.p_grade else np.nan for j in judgments] for i, g in enumerate(scale)},
        "rounded_expected": pd.array([rounded_expected(j) for j in judgments], dtype="Int64"),
        "failed": [not j.ok for j in judgments],
        "failure_kind": [j.failure_kind for j in judgments],
    })


def _wording_metric(name: str, prompts: RelevancePrompts, construct: str, citation: str, aliases: tuple[str, ...]
                    ) -> metrics.FunctionMetric:
    def call(gateway: Gateway | None, items: Sequence[JudgeItem], **options: Any) -> list[metrics.Result]:
        judge = metrics.judge_gateway(gateway, name)
        return [j.result() for j in judge_pointwise(judge, items, prompts=prompts, **options)]

    return metrics.FunctionMetric(
        name=name, kind="LLM judge", construct=construct, scale=metrics.Scale(min(prompts.scale), max(prompts.scale)),
        description=f"expected grade E[g] = Σ_g p(g)·g of one pre-filled pointwise call ({prompts.pointwise}.txt)",
        citation=citation, call=call, aliases=aliases)


UMBRELA = "Upadhyay et al. 2024, UMBRELA"
NUDGE_RELEVANCE = metrics.register(_wording_metric(
    "nudge relevance", NUDGE_PROMPTS, "how well a nudge fits the writer's journal entry and persona", UMBRELA,
    ("relevance_pointwise",)))
PASSAGE_RELEVANCE = metrics.register(_wording_metric(
    "passage relevance", PASSAGE_PROMPTS, "how well a passage answers a search query (0–2)", UMBRELA,
    ("passage_relevance_pointwise",)))
PASSAGE_4POINT_RELEVANCE = metrics.register(_wording_metric(
    "passage relevance 0-3", PASSAGE_4POINT_PROMPTS, "how well a passage answers a search query, on TREC DL's 0–3",
    f"{UMBRELA}; Craswell et al. 2020 (TREC DL)", ("passage_relevance_4point_pointwise",)))
