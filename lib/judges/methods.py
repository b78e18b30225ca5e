"""Ways of grading relevance with a small judge that the literature reports to help, for users of the library
(chapter 07 reads one pointwise call three ways: :mod:`lib.chapters.ch07`).

Every method sends its calls through :func:`lib.judges.relevance.judge_messages` (pre-filled grade, logprobs); a
failed call is a failed judgment, never a grade.

1. *Expected grade over the scale's tokens*: E[g] = Σ_g p(g)·g with p renormalised over the grade tokens among
   the top log-probabilities — what :func:`lib.judges.relevance.judge_pointwise` already returns
   (``expected_grade``); rounded (``rounded_expected``) or thresholded (2).
2. *Ordinal thresholds on E[g]* fit on labelled rows: :func:`lib.analysis.calibration.fit_on_dev`, or cross-fitted
   by group with :func:`lib.analysis.calibration.out_of_fold_grades`.
3. *Few-shot*: :func:`fewshot_examples` draws one graded example per grade from the dev rows by a seeded rule;
   :func:`judge_fewshot` shows them before the query (the examples are the same in every call, so they are part
   of the shared prompt prefix).
4. *Criteria decomposition*: each criterion of ``CRITERIA`` (after UMBRELA's intent-match aspect, Upadhyay et al.
   2024 / Thomas et al. 2024, and the topicality and exactness criteria of Farzi & Dietz 2024, "Best in Tau@
   LLMJudge") graded 0–3 in its own short call; :func:`combine_criteria` averages their expected grades.

:func:`judge_kinds` runs the calls of 1, 3 and 4 on items and returns their columns ``<kind>_grade`` (argmax),
``<kind>_expected`` (E[g]; the criteria mean for ``criteria``) and ``<kind>_rounded``; :func:`lifting_methods`
names every way of grading from those columns (:class:`lib.analysis.calibration.Method`) for a dev comparison,
and :func:`call_kind` says which calls a method needs. :class:`FrozenChoice` is a method frozen with what it
learnt as a JSON file (chapter 07 writes its primary reading to ``CHOICE_FILE``), to grade new items without the
chapter.

Few-shot grading, each criterion and the criteria mean are metrics of the study (kind ``LLM judge``,
:mod:`lib.metrics`); like every judge here they take the gateway first, then the items, then the options.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, model_validator

from lib import metrics, paths
from lib.analysis.calibration import Frozen, Method
from lib.judges.items import JudgeItem
from lib.judges.relevance import (
    PASSAGE_4POINT_PROMPTS,
    Judgment,
    RelevancePrompts,
    judge_messages,
    judge_pointwise,
    pointwise_messages,
    truncate,
)
from lib.llm.gateway import Gateway
from lib.prompts import parts as prompt_parts

# Criterion -> the question its call asks (graded 0–3: fully, mostly, slightly, not at all).
CRITERIA: dict[str, str] = {
    "Topicality": "is the passage about the subject of the query?",
    "Intent match": "does the passage give what the person searching most likely wants to know?",
    "Exactness": "does the passage state the exact answer to the query, not only related facts?",
}
CRITERION_SCALE = (0, 1, 2, 3)


def fewshot_examples(dev: pd.DataFrame, scale: Sequence[int], seed: int, human: str = "human_grade",
                     order: Sequence[str] = ("qid", "docid")) -> pd.DataFrame:
    """One example per grade of ``scale``, drawn from the ``dev`` rows only: the rows of each grade sorted by
    ``order``, one chosen by ``default_rng([seed, grade])``; returned lowest grade first. A grade without a dev
    row is an error (the prompt would silently lack it)."""
    rows = []
    for grade in scale:
        pool = dev[dev[human] == grade].sort_values(list(order))
        if pool.empty:
            raise ValueError(f"no dev row has grade {grade}: cannot draw a few-shot example for it")
        rows.append(pool.iloc[int(np.random.default_rng([seed, grade]).integers(len(pool)))])
    return pd.DataFrame(rows)


def examples_block(examples: pd.DataFrame, max_chars: int, human: str = "human_grade") -> str:
    """The examples as shown (``passage_relevance_examples.txt``): a heading, then query, passage (cut at
    ``max_chars`` by :func:`lib.judges.relevance.truncate`) and grade of each."""
    heading, template = prompt_parts("passage_relevance_examples", 2)
    shown = [template.format(source=r["query"], output=truncate(r["passage"], max_chars), grade=int(r[human]))
             for _, r in examples.iterrows()]
    return "\n\n".join([heading, *shown])


def fewshot_messages(item: JudgeItem, block: str, prompts: RelevancePrompts = PASSAGE_4POINT_PROMPTS
                     ) -> list[dict[str, str]]:
    """The pointwise messages of ``prompts`` with the examples ``block`` before the query in the user message."""
    system, user = pointwise_messages(item, prompts)
    return [system, {"role": "user", "content": f"{block}\n\n{user['content']}"}]


def judge_fewshot(gateway: Gateway, items: Sequence[JudgeItem], examples: pd.DataFrame, max_chars: int = 300,
                  prompts: RelevancePrompts = PASSAGE_4POINT_PROMPTS, call_label: str = "fewshot") -> list[Judgment]:
    """Pointwise judgments with the few-shot ``examples`` (:func:`fewshot_examples`) in every prompt."""
    block = examples_block(examples, max_chars)
    return judge_messages(gateway, [fewshot_messages(item, block, prompts) for item in items], call_label,
                          scale=prompts.scale)


def criterion_messages(item: JudgeItem, criterion: str) -> list[dict[str, str]]:
    system, shared, template = prompt_parts("passage_relevance_criterion", 3)
    question = CRITERIA[criterion]
    return [{"role": "system", "content": system.format(criterion=criterion, question=question)},
            {"role": "user", "content": shared.format(source=item.source) + "\n"
             + template.format(output=item.output, criterion=criterion)}]


def judge_criteria(gateway: Gateway, items: Sequence[JudgeItem], criteria: Sequence[str] = tuple(CRITERIA),
                   call_label: str = "criteria") -> dict[str, list[Judgment]]:
    """Per criterion, one pointwise judgment (0–3, with E[g]) per item; all calls of a criterion share its system
    prompt, so they are sent criterion after criterion."""
    return {c: judge_messages(gateway, [criterion_messages(item, c) for item in items], f"{call_label}:{c}",
                              scale=CRITERION_SCALE) for c in criteria}


def combine_criteria(judgments: dict[str, list[Judgment]]) -> pd.Series:
    """Mean over the criteria of each item's expected grade (on 0–3); NaN where any criterion has no E[g] (a
    failure is never averaged away)."""
    frame = pd.DataFrame({c: [j.expected_grade if j.expected_grade is not None else np.nan for j in js]
                          for c, js in judgments.items()})
    return frame.mean(axis=1, skipna=False).rename("criteria_mean")


CALL_KINDS = ("pointwise", "fewshot", "criteria")
CRITERIA_CITATION = "Farzi & Dietz 2024; Upadhyay et al. 2024 (UMBRELA)"


def _fewshot_call(gateway: Gateway | None, items: Sequence[JudgeItem], **options: Any) -> list[metrics.Result]:
    if options.get("examples") is None:
        raise ValueError("few-shot relevance needs examples= (fewshot_examples on the dev rows)")
    return [j.result() for j in judge_fewshot(metrics.judge_gateway(gateway, "few-shot passage relevance"), items,
                                              **options)]


FEWSHOT_RELEVANCE = metrics.register(metrics.FunctionMetric(
    name="few-shot passage relevance", kind="LLM judge",
    construct="how well a passage answers a search query, on TREC DL's 0–3, after one graded example per grade",
    scale=metrics.Scale(0, 3), citation="Brown et al. 2020 (few-shot); Upadhyay et al. 2024 (UMBRELA)",
    description="E[g] of the 4-point pointwise call with the examples (examples=) before the query",
    call=_fewshot_call))


def _criterion_metric(criterion: str) -> metrics.FunctionMetric:
    def call(gateway: Gateway | None, items: Sequence[JudgeItem], **options: Any) -> list[metrics.Result]:
        judged = judge_criteria(metrics.judge_gateway(gateway, criterion), items, (criterion,), **options)
        return [j.result() for j in judged[criterion]]

    return metrics.FunctionMetric(
        name=criterion, kind="LLM judge", construct=f"{criterion} of a passage for a query: {CRITERIA[criterion]}",
        scale=metrics.Scale(min(CRITERION_SCALE), max(CRITERION_SCALE)), citation=CRITERIA_CITATION,
        description="E[g] of one short call grading the criterion 0–3", call=call)


def _criteria_mean_call(gateway: Gateway | None, items: Sequence[JudgeItem], **options: Any
                        ) -> list[metrics.Result]:
    mean = combine_criteria(judge_criteria(metrics.judge_gateway(gateway, "criteria mean"), items, **options))
    return [metrics.Result.of(None if pd.isna(m) else float(m), "criterion_failed") for m in mean]


CRITERION_METRICS = tuple(metrics.register(_criterion_metric(c)) for c in CRITERIA)
CRITERIA_MEAN = metrics.register(metrics.FunctionMetric(
    name="criteria mean", kind="LLM judge", construct="relevance of a passage as the mean of its criteria",
    scale=metrics.Scale(min(CRITERION_SCALE), max(CRITERION_SCALE)), citation=CRITERIA_CITATION,
    description="mean over the criteria of each one's E[g]; no score when a criterion has none",
    call=_criteria_mean_call))


def _rounded(expected: pd.Series) -> pd.Series:
    """E[g] rounded half up to a grade (as :func:`lib.judges.relevance.rounded_expected`); missing stays missing."""
    return pd.Series(pd.array([None if pd.isna(x) else int(np.floor(x + 0.5)) for x in expected], dtype="Int64"),
                     index=expected.index)


def judge_kinds(gateway: Gateway, items: Sequence[JudgeItem], kinds: Sequence[str], *,
                examples: pd.DataFrame | None = None, example_chars: int = 300,
                criteria: Sequence[str] = tuple(CRITERIA), prompts: RelevancePrompts = PASSAGE_4POINT_PROMPTS,
                call_label: str = "lifting") -> pd.DataFrame:
    """The calls of each distinct kind of ``kinds`` (``CALL_KINDS``) on ``items``, one row per item: pointwise
    with ``prompts``; few-shot with ``examples`` (:func:`fewshot_examples`, passages cut at ``example_chars``);
    each criterion of ``criteria`` (0–3) and their mean (:func:`combine_criteria`). Columns
    ``<kind>_grade`` (argmax; not for criteria), ``<kind>_expected`` and ``<kind>_rounded`` (half up); a
    failed call leaves its item's values missing."""
    columns = []
    for kind in dict.fromkeys(kinds):
        if kind == "criteria":
            mean = combine_criteria(judge_criteria(gateway, items, criteria, f"{call_label}-criteria"))
            columns.append(pd.DataFrame({"criteria_expected": mean, "criteria_rounded": _rounded(mean)}))
            continue
        if kind == "pointwise":
            judged = judge_pointwise(gateway, items, f"{call_label}-pointwise", prompts=prompts)
        elif kind == "fewshot":
            if examples is None:
                raise ValueError("few-shot calls need examples (fewshot_examples on the dev rows)")
            judged = judge_fewshot(gateway, items, examples, example_chars, prompts, f"{call_label}-fewshot")
        else:
            raise ValueError(f"unknown call kind {kind!r}; one of {CALL_KINDS}")
        expected = pd.Series([np.nan if j.expected_grade is None else j.expected_grade for j in judged], dtype=float)
        columns.append(pd.DataFrame({f"{kind}_grade": pd.array([j.grade for j in judged], dtype="Int64"),
                                     f"{kind}_expected": expected, f"{kind}_rounded": _rounded(expected)}))
    return pd.concat(columns, axis=1)


class KindOptions(TypedDict, total=False):
    """The keyword options of :func:`judge_kinds`, passed on by :func:`judge_passages`."""

    examples: pd.DataFrame | None
    example_chars: int
    criteria: Sequence[str]
    prompts: RelevancePrompts
    call_label: str


def judge_passages(gateway: Gateway, rows: pd.DataFrame, kinds: Sequence[str], query: str = "query",
                   passage: str = "passage", **options: Unpack[KindOptions]) -> pd.DataFrame:
    """:func:`judge_kinds` on each row's (``query``, ``passage``), the result indexed like ``rows``."""
    items = [JudgeItem(source=q, output=t) for q, t in zip(rows[query], rows[passage], strict=True)]
    return judge_kinds(gateway, items, kinds, **options).set_axis(rows.index)


REFERENCE_METHOD = Method("pointwise, argmax", "pointwise_grade", fit=False, calls=1)


def lifting_methods(n_criteria: int) -> list[Method]:
    """Every way of grading compared on dev, the plain judge (``REFERENCE_METHOD``) first: for pointwise and
    few-shot calls the argmax grade, the rounded E[g] and thresholds on E[g] fit on dev; for the criteria (one
    call per criterion and item) the rounded mean and thresholds on the mean."""
    return [REFERENCE_METHOD,
            Method("pointwise, rounded E[g]", "pointwise_rounded", fit=False, calls=1),
            Method("pointwise, thresholds on E[g]", "pointwise_expected", fit=True, calls=1),
            Method("few-shot, argmax", "fewshot_grade", fit=False, calls=1),
            Method("few-shot, rounded E[g]", "fewshot_rounded", fit=False, calls=1),
            Method("few-shot, thresholds on E[g]", "fewshot_expected", fit=True, calls=1),
            Method("criteria, rounded mean", "criteria_rounded", fit=False, calls=n_criteria),
            Method("criteria, thresholds on the mean", "criteria_expected", fit=True, calls=n_criteria)]


def expected_column(method: Method) -> str | None:
    """The E[g] column of the calls ``method`` grades from (its Spearman ρ with the human grade is reported),
    None for a method that makes no LLM call."""
    return f"{call_kind(method)}_expected" if method.calls else None


def call_kind(method: Method) -> str:
    """The kind of calls (``CALL_KINDS``) whose columns ``method`` grades from."""
    kind = method.column.split("_", 1)[0]
    if kind not in CALL_KINDS:
        raise ValueError(f"method {method.name!r} grades from {method.column!r}, which no LLM call kind writes")
    return kind


CHOICE_FILE: Path = paths.TABLES / "judge_choice.json"  # beside the tables chapter 07 writes


class FewShotExample(BaseModel):
    """One graded example a few-shot call shows before the query (:func:`examples_block`)."""

    model_config = ConfigDict(frozen=True)

    query: str
    passage: str
    grade: int


class FrozenChoice(BaseModel):
    """A chosen way of grading relevance with everything it learnt on dev, as a value that outlives the notebook.

    Chapter 07 compares methods on dev, chooses one and freezes it (:func:`lib.analysis.calibration.freeze`); the
    result is only meaningful together with what it was fit for, so the record keeps all of it: the method (its
    calls and the column it grades from), the cuts fit on dev (None for a method that grades from its column as
    written), the scale, the identity of the judge model whose answers the cuts were fit on, the prompt wording,
    and what its calls show (criteria for criteria calls, examples for few-shot calls). :meth:`save` and
    :meth:`load` keep it as JSON; :meth:`apply` grades new items with the same calls, :meth:`grades` grades
    columns judged earlier."""

    model_config = ConfigDict(frozen=True)

    method: Method
    cuts: tuple[float, ...] | None
    scale: tuple[int, ...]
    model: str
    prompts: RelevancePrompts = PASSAGE_4POINT_PROMPTS
    criteria: tuple[str, ...] = ()
    examples: tuple[FewShotExample, ...] = ()
    example_chars: int = 300

    @model_validator(mode="after")
    def _consistent(self) -> FrozenChoice:
        kind = call_kind(self.method)
        if self.prompts.scale != self.scale:
            raise ValueError(f"the wording {self.prompts.pointwise!r} grades on {self.prompts.scale}, not {self.scale}")
        if self.method.fit != (self.cuts is not None):
            raise ValueError(f"method {self.method.name!r} {'needs' if self.method.fit else 'takes no'} cuts")
        if self.cuts is not None and len(self.cuts) != len(self.scale) - 1:
            raise ValueError(f"{len(self.cuts)} cuts for the {len(self.scale)} grades of {self.scale}")
        if kind == "fewshot" and not self.examples:
            raise ValueError("a few-shot choice needs the examples its calls show")
        if kind == "criteria" and not self.criteria:
            raise ValueError("a criteria choice needs the criteria its calls ask")
        return self

    @classmethod
    def of(cls, frozen: Frozen, model: str, scale: Sequence[int], *,
           prompts: RelevancePrompts = PASSAGE_4POINT_PROMPTS, criteria: Sequence[str] = (),
           examples: pd.DataFrame | None = None, example_chars: int = 300, human: str = "human_grade"
           ) -> FrozenChoice:
        """The choice of ``frozen`` for the judge ``model`` (``gateway.endpoint.identity``). ``criteria``,
        ``examples`` (with the ``human`` grade column) and ``example_chars`` are those given to
        :func:`judge_kinds`; only what the method's calls show is kept. A non-LLM baseline is an error."""
        kind = call_kind(frozen.method)
        shown = () if kind != "fewshot" or examples is None else tuple(
            FewShotExample(query=r["query"], passage=r["passage"], grade=int(r[human])) for _, r in examples.iterrows())
        return cls(method=frozen.method, cuts=frozen.cuts, scale=tuple(scale), model=model, prompts=prompts,
                   criteria=tuple(criteria) if kind == "criteria" else (), examples=shown, example_chars=example_chars)

    def save(self, path: Path | str) -> Path:
        """Write the choice as JSON to ``path`` (folders created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path | str) -> FrozenChoice:
        """The choice saved at ``path``, validated as when it was made."""
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))

    def grades(self, judged: pd.DataFrame) -> pd.Series:
        """The method's grades of rows judged by :func:`judge_kinds` (its ``<kind>_*`` columns), the cuts applied
        unchanged (nullable Int64, indexed like ``judged``)."""
        return Frozen(self.method, self.cuts).grades(judged, self.scale)

    def apply(self, gateway: Gateway, items: Sequence[JudgeItem], call_label: str = "choice") -> pd.DataFrame:
        """Judge ``items`` with the method's calls and grade them: the :func:`judge_kinds` columns and ``grade``.

        The gateway's model must be the choice's: cuts on E[g] and the dev comparison behind the choice hold for
        the model they were measured on, not for another (choose and freeze again on dev labels for that one)."""
        if gateway.endpoint.identity != self.model:
            raise ValueError(f"this choice was made for the judge model {self.model!r}, the gateway's is "
                             f"{gateway.endpoint.identity!r}: freeze a choice on dev labels judged by that model")
        examples = pd.DataFrame([{"query": e.query, "passage": e.passage, "human_grade": e.grade}
                                 for e in self.examples]) if self.examples else None
        judged = judge_kinds(gateway, items, [call_kind(self.method)], examples=examples,
                             example_chars=self.example_chars, criteria=self.criteria, prompts=self.prompts,
                             call_label=call_label)
        return judged.assign(grade=self.grades(judged))
