"""LLM-judge rubric per conversation: coherence, personalisation and proactiveness, each on 1–5.

One schema-constrained call per conversation (``{"coherence", "personalisation", "proactiveness"}``, each
``Literal[1..5]``; prompt ``lib/prompts/crs_conversation_rubric.txt``, criteria in the system message so every
call shares that prefix, the transcript after it). Each stored score is G-Eval's probability-weighted score
Σ_s p(s)·s from the score token's ``top_logprobs`` (the study's reading of rubric scores, chapter 03), or the
written integer when the endpoint returns no logprobs (``scored_by``;
:func:`lib.judges.logprobs.weighted_fields`). A call that returns no valid scores is a judgment with
``ok=False`` and the gateway's ``failure_kind`` — never a default score. The judge is unvalidated against human
ratings in this chapter: its scores are compared with TAS (Spearman ρ), not taken as ground truth.
Each criterion is a metric of the study (kind ``CRS``, :mod:`lib.metrics`): ``score(gateway, conversations)``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel

from lib import metrics, prompts
from lib.crs.records import JudgeRecord
from lib.judges.logprobs import weighted_fields
from lib.llm.gateway import Gateway, LLMCall

RUBRIC_CRITERIA: tuple[str, ...] = ("coherence", "personalisation", "proactiveness")
SPEAKER_NAMES = {"USER": "User", "SYSTEM": "Recommender"}
FAILED_TEXT = "(no reply)"
Scale = Literal[1, 2, 3, 4, 5]
TOP_LOGPROBS = 5


class ConversationRubric(BaseModel):
    coherence: Scale
    personalisation: Scale
    proactiveness: Scale


def transcript(conversation: Sequence[Mapping[str, Any]]) -> str:
    """"User: …" / "Recommender: …" lines, one per turn; a failed system turn reads "(no reply)"."""
    return "\n".join(f"{SPEAKER_NAMES[turn['speaker']]}: {turn['text'] or FAILED_TEXT}" for turn in conversation)


def rubric_messages(conversation: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    system, user = prompts.parts("crs_conversation_rubric", 2)
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(transcript=transcript(conversation))}]


def judge_conversations(gateway: Gateway, conversations: Sequence[Sequence[Mapping[str, Any]]],
                        labels: Sequence[str] | None = None) -> list[JudgeRecord]:
    """One :class:`~lib.crs.records.JudgeRecord` per conversation, in order (``labels`` name the calls)."""
    labels = labels or [str(i) for i in range(len(conversations))]
    calls = [LLMCall(rubric_messages(c), ConversationRubric, call_label=f"crs-judge:{label}", max_tokens=40,
                     top_logprobs=TOP_LOGPROBS) for c, label in zip(conversations, labels, strict=True)]
    model = gateway.endpoint.identity
    records = []
    for result in gateway.complete_many(calls, desc="CRS judge"):
        if result.ok:
            scores, scored_by = weighted_fields(result.value, result.logprobs, RUBRIC_CRITERIA, list(get_args(Scale)))
            records.append(JudgeRecord.model_validate({"ok": True, "model": model, "scored_by": scored_by, **scores}))
        else:
            records.append(JudgeRecord(ok=False, failure_kind=result.failure_kind or "unknown", model=model))
    return records


def not_judged() -> JudgeRecord:
    """The judgment of a run without a judge gateway: failed, with failure_kind ``not_judged``."""
    return JudgeRecord(ok=False, failure_kind="not_judged")


def record_results(record: JudgeRecord) -> dict[str, metrics.Result]:
    """The judgment's three scores as results, or its failure for all three."""
    if not record.ok:
        return dict.fromkeys(RUBRIC_CRITERIA, metrics.Result.failure(record.failure_kind or "unknown"))
    return {c: metrics.Result.of(getattr(record, c)) for c in RUBRIC_CRITERIA}


def _metric(criterion: str, construct: str) -> metrics.FunctionMetric:
    name = f"conversation {criterion}"

    def call(gateway: Gateway | None, items: Sequence[Sequence[Mapping[str, Any]]], **options: Any
             ) -> list[metrics.Result]:
        judged = judge_conversations(metrics.judge_gateway(gateway, name), items, **options)
        return [record_results(record)[criterion] for record in judged]

    return metrics.FunctionMetric(
        name=name, kind="CRS", construct=construct, scale=metrics.Scale(1, 5), call=call,
        description="Σ_s p(s)·s of the criterion's 1–5 score, in one call scoring all three "
                    "(crs_conversation_rubric.txt); unvalidated against human ratings",
        citation="this study; weighting of Liu et al. 2023 (G-Eval)", aliases=(f"judge_{criterion}",))


JUDGE_METRICS = tuple(metrics.register(_metric(criterion, construct)) for criterion, construct in (
    ("coherence", "whether each reply follows from what the user said and the conversation so far"),
    ("personalisation", "whether the replies fit the user's stated wishes, including a change of mind"),
    ("proactiveness", "whether the recommender moves the conversation forward with concrete suggestions")))
