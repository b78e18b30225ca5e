"""Relevance judge (UMBRELA-style, Upadhyay et al. 2024): consider the writer's intent, then answer with a
grade on 0–2 (2 highly relevant, 1 okay, 0 irrelevant), as schema-constrained JSON.

Two forms over the same rubric: *pointwise* (one call per (context, source, output); the grade's top
log-probabilities give p(g) and the expected grade E[g] = Σ_g p(g)·g) and *listwise* (one call grades a
whole pool; argmax grades only). Two wordings of the rubric: nudges for a journal entry and a persona
(``NUDGE_PROMPTS``), and passages for a search query (``PASSAGE_PROMPTS``, to measure the judge against
human qrels). Each prompt file is split by ``---`` into the system part, the shared context (written first
so the server reuses its cached prefix) and the item(s).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, create_model

from lib import paths
from lib.judges.logprobs import expected_score, score_distribution
from lib.llm.gateway import Gateway

GRADES = [0, 1, 2]
TOP_LOGPROBS = 5


class Grade(BaseModel):
    grade: Literal[0, 1, 2]


@lru_cache(maxsize=None)
def grades_schema(n: int) -> type[BaseModel]:
    return create_model(f"Grades{n}", grades=(Annotated[list[Literal[0, 1, 2]], Field(min_length=n, max_length=n)], ...))


@dataclass(frozen=True)
class RelevancePrompts:
    """File stems in ``lib/prompts`` of the pointwise and listwise wording of one rubric."""

    pointwise: str
    listwise: str


NUDGE_PROMPTS = RelevancePrompts("relevance_pointwise", "relevance_listwise")
PASSAGE_PROMPTS = RelevancePrompts("passage_relevance_pointwise", "passage_relevance_listwise")


def _template(stem: str) -> tuple[str, str, str]:
    system, context, item = (part.strip() for part in (paths.PROMPTS / f"{stem}.txt").read_text().split("\n---\n"))
    return system, context, item


@dataclass(frozen=True)
class Judgment:
    """One relevance label. ``ok`` False means no grade (``failure_kind`` says why) — never a default."""

    ok: bool
    grade: int | None = None
    expected_grade: float | None = None
    p_grade: tuple[float, ...] | None = None  # p(0), p(1), p(2); None without usable logprobs
    failure_kind: str | None = None


def pointwise_messages(context: str, source: str, output: str, prompts: RelevancePrompts = NUDGE_PROMPTS
                       ) -> list[dict[str, str]]:
    system, shared, item = _template(prompts.pointwise)
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(context=context, source=source) + "\n"
             + item.format(output=output)}]


def listwise_messages(context: str, source: str, outputs: list[str], prompts: RelevancePrompts = NUDGE_PROMPTS
                      ) -> list[dict[str, str]]:
    system, shared, item = _template(prompts.listwise)
    listing = "\n".join(f"[{i}] \"{text}\"" for i, text in enumerate(outputs, start=1))
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(context=context, source=source) + "\n"
             + item.format(outputs=listing)}]


def judge_pointwise(gateway: Gateway, items: list[tuple[str, str, str]], label: str = "relevance",
                    temperature: float = 0.0, seed: int = 0, prompts: RelevancePrompts = NUDGE_PROMPTS
                    ) -> list[Judgment]:
    """Grade each (context, source, output) in its own call, with logprobs for the expected grade."""
    calls = [{"messages": pointwise_messages(*item, prompts=prompts), "schema": Grade, "label": f"{label}:{i}",
              "max_tokens": 16, "top_logprobs": TOP_LOGPROBS, "temperature": temperature, "seed": seed}
             for i, item in enumerate(items)]
    judgments = []
    for result in gateway.complete_many(calls, desc=label):
        if not result.ok:
            judgments.append(Judgment(ok=False, failure_kind=result.failure_kind))
            continue
        dist = score_distribution(result.logprobs, "grade", GRADES)
        judgments.append(Judgment(
            ok=True, grade=result.value.grade,
            expected_grade=expected_score(dist) if dist else None,
            p_grade=tuple(dist[g] for g in GRADES) if dist else None))
    return judgments


def judge_listwise(gateway: Gateway, pools: list[tuple[str, str, list[str]]], label: str = "relevance-list",
                   order_seed: int | None = None, prompts: RelevancePrompts = NUDGE_PROMPTS
                   ) -> list[list[Judgment]]:
    """Grade each pool (context, source, outputs) in one call. With ``order_seed`` the outputs are shown in a
    seeded random order (for the position-bias check) and the grades are mapped back to the input order."""
    calls, orders = [], []
    for i, (context, source, outputs) in enumerate(pools):
        order = (np.random.default_rng([order_seed, i]).permutation(len(outputs)) if order_seed is not None
                 else np.arange(len(outputs)))
        orders.append(order)
        calls.append({"messages": listwise_messages(context, source, [outputs[j] for j in order], prompts),
                      "schema": grades_schema(len(outputs)), "label": f"{label}:{i}", "max_tokens": 12 + 4 * len(outputs)})
    judged = []
    for order, result in zip(orders, gateway.complete_many(calls, desc=label)):
        if not result.ok:
            judged.append([Judgment(ok=False, failure_kind=result.failure_kind)] * len(order))
            continue
        back = [Judgment(ok=False)] * len(order)
        for shown_position, original in enumerate(order):
            back[original] = Judgment(ok=True, grade=result.value.grades[shown_position])
        judged.append(back)
    return judged


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut at the last word boundary within ``max_chars``, with "…" when cut."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0] + " …"


def rounded_expected(judgment: Judgment) -> int | None:
    """Expected grade rounded half up to the nearest grade: an integer label that uses p(g), not just argmax."""
    return None if judgment.expected_grade is None else int(np.floor(judgment.expected_grade + 0.5))


def judgments_frame(judgments: list[Judgment]) -> pd.DataFrame:
    """Columns grade, expected_grade, p_grade_0..2, rounded_expected, failed, failure_kind (row per judgment)."""
    return pd.DataFrame({
        "grade": pd.array([j.grade for j in judgments], dtype="Int64"),
        "expected_grade": [j.expected_grade if j.expected_grade is not None else np.nan for j in judgments],
        **{f"p_grade_{g}": [j.p_grade[g] if j.p_grade else np.nan for j in judgments] for g in GRADES},
        "rounded_expected": pd.array([rounded_expected(j) for j in judgments], dtype="Int64"),
        "failed": [not j.ok for j in judgments],
        "failure_kind": [j.failure_kind for j in judgments],
    })


def pool_grades(n_rows: int, pool_rows: list[np.ndarray], judged: list[list[Judgment]]) -> pd.api.extensions.ExtensionArray:
    """Listwise grades placed back on the rows of a flat table (null where a pool's call failed)."""
    grades: list[int | None] = [None] * n_rows
    for rows, pool in zip(pool_rows, judged, strict=True):
        for row, judgment in zip(rows, pool, strict=True):
            grades[row] = judgment.grade
    return pd.array(grades, dtype="Int64")
