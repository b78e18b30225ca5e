"""G-Eval rubric metrics (Liu et al., "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment",
EMNLP 2023), for any (criteria, source, output) triple.

1. Task introduction + evaluation criteria define a metric (:class:`RubricMetric`, registered by name).
2. *Auto chain-of-thought*: the LLM writes the evaluation steps once from the introduction and criteria;
   they are stored in ``lib/prompts/geval_steps/<metric>.txt`` and reused, so runs are reproducible and a
   second run makes no step-generation call.
3. *Form filling*: introduction, criteria and steps, then the source and the output, then
   "Evaluation Form (scores ONLY)"; the answer is schema-constrained JSON ``{"score": s}``.
4. *Probability-weighted score*: score = Σ_s p(s)·s over the allowed score tokens, from ``top_logprobs``
   (:mod:`lib.judges.logprobs`). When the endpoint returns no logprobs, the paper's fallback: ``n_samples``
   answers at temperature 1 and their mean.
A metric may carry a documented *rule* that decides the score before any LLM call (ToneEmpathy's banned
words). A call that yields no score is a failure with its kind, never a default score.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Literal

import pandas as pd
from pydantic import BaseModel, create_model

from lib import paths
from lib.judges.logprobs import expected_score, score_distribution
from lib.llm.gateway import Gateway

STEPS_DIR = paths.PROMPTS / "geval_steps"
TOP_LOGPROBS = 5

STEPS_PROMPT = """{task_intro}

Evaluation Criteria:

{name} ({low}-{high}) - {criteria}

Write the Evaluation Steps a careful evaluator follows to assign this score: a numbered list of 3 to 5 short steps. Reply with the steps only."""

FORM_SYSTEM = """{task_intro}

Evaluation Criteria:

{name} ({low}-{high}) - {criteria}

Evaluation Steps:

{steps}"""

FORM_USER = """Source text:

{source}

Response:

{output}

Evaluation Form (scores ONLY):

- {name} ({low}-{high}):"""


@dataclass(frozen=True)
class RuleVerdict:
    score: int
    reason: str


@dataclass(frozen=True)
class RubricMetric:
    """A G-Eval metric: name, integer scale, task introduction, criteria, and an optional deciding rule."""

    name: str
    scale: tuple[int, int]
    task_intro: str
    criteria: str
    rule: Callable[[str], RuleVerdict | None] | None = field(default=None, compare=False)

    @property
    def scores(self) -> list[int]:
        return list(range(self.scale[0], self.scale[1] + 1))


@dataclass(frozen=True)
class GEvalResult:
    """``score`` is the probability-weighted (or sample-mean, or rule) score; None when ``ok`` is False."""

    metric: str
    ok: bool
    score: float | None = None
    argmax: int | None = None
    method: Literal["logprobs", "samples", "rule"] | None = None
    reason: str | None = None
    failure_kind: str | None = None
    samples_failed: int = 0


REGISTRY: dict[str, RubricMetric] = {}


def register(metric: RubricMetric) -> RubricMetric:
    if metric.name in REGISTRY:
        raise ValueError(f"metric {metric.name!r} is already registered")
    REGISTRY[metric.name] = metric
    return metric


BANNED_SHAME_WORDS = ("failed", "failure", "mistake", "wrong", "bad", "problem", "loser", "weak", "pathetic",
                      "gave up")
_BANNED = re.compile(r"\b(" + "|".join(re.escape(w) for w in BANNED_SHAME_WORDS) + r")\b", re.IGNORECASE)


def banned_shame_word(output: str) -> RuleVerdict | None:
    """ToneEmpathy rule: an output containing a banned shame word (whole word, any case) scores 1, with the
    word as the reason. Shaming vocabulary is what the criteria forbid outright, so no LLM is asked."""
    match = _BANNED.search(output)
    return RuleVerdict(score=1, reason=f"banned word: {match.group(1).lower()}") if match else None


NUDGE_TASK_INTRO = ("You will be given a person's journal entry (the source text) and a short message an assistant "
                    "wrote in response. Your task is to rate the message on one metric.")

TONE_EMPATHY = register(RubricMetric(
    name="ToneEmpathy", scale=(1, 5),
    task_intro=NUDGE_TASK_INTRO,
    criteria="How empathetic the tone is. The message validates the person's feelings, contains no shame, "
             "blame or lecturing, sounds like a supportive friend rather than a critical parent, and "
             "acknowledges that things are difficult while offering hope.",
    rule=banned_shame_word,
))

CULTURAL_SENSITIVITY = register(RubricMetric(
    name="CulturalSensitivity", scale=(1, 5),
    task_intro=NUDGE_TASK_INTRO,
    criteria="How culturally sensitive the message is. It respects family and community obligations as "
             "values rather than obstacles, avoids assuming one culture's norms (for example that "
             "independence from family is always the goal), and allows for collective as well as "
             "individual framing of the person's choices.",
))


COHERENCE = register(RubricMetric(
    name="Coherence", scale=(1, 5),
    task_intro="You will be given one summary written for a news article. Your task is to rate the summary on "
               "one metric.",
    # The G-Eval paper's coherence criterion (its prompts/summeval/coh_detailed.txt), for the SummEval check.
    criteria="the collective quality of all sentences. The summary should be well-structured and "
             "well-organized. The summary should not just be a heap of related information, but should build "
             "from sentence to sentence to a coherent body of information about a topic.",
))


@lru_cache(maxsize=None)
def score_schema(low: int, high: int) -> type[BaseModel]:
    return create_model(f"Score{low}to{high}", score=(Literal[tuple(range(low, high + 1))], ...))


def steps_path(metric: RubricMetric, folder: Path = STEPS_DIR) -> Path:
    return folder / f"{metric.name}.txt"


def evaluation_steps(metric: RubricMetric, gateway: Gateway, folder: Path = STEPS_DIR) -> str:
    """The stored evaluation steps of ``metric``; generated by the LLM and written to the repo only when absent."""
    path = steps_path(metric, folder)
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    prompt = STEPS_PROMPT.format(task_intro=metric.task_intro, name=metric.name, low=metric.scale[0],
                                 high=metric.scale[1], criteria=metric.criteria)
    result = gateway.complete([{"role": "user", "content": prompt}], None, label=f"geval-steps:{metric.name}",
                              max_tokens=300)
    if not result.ok:
        raise RuntimeError(f"could not generate evaluation steps for {metric.name}: {result.error}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.text.strip() + "\n", encoding="utf-8")
    return result.text.strip()


def form_messages(metric: RubricMetric, steps: str, source: str, output: str) -> list[dict[str, str]]:
    """System: intro, criteria, steps (shared by every call of the metric); user: source first, then output."""
    low, high = metric.scale
    return [{"role": "system", "content": FORM_SYSTEM.format(task_intro=metric.task_intro, name=metric.name,
                                                             low=low, high=high, criteria=metric.criteria,
                                                             steps=steps)},
            {"role": "user", "content": FORM_USER.format(source=source, output=output, name=metric.name,
                                                         low=low, high=high)}]


def geval(metric: RubricMetric, gateway: Gateway, steps: str, items: list[tuple[str, str]],
          n_samples: int = 10) -> list[GEvalResult]:
    """Score each (source, output) on ``metric``. Rule verdicts first; then one form-filling call per item
    with logprobs; items whose answer carries no usable logprobs fall back to ``n_samples`` samples at
    temperature 1 (mean of the valid ones; failed samples are counted)."""
    schema = score_schema(*metric.scale)
    results: list[GEvalResult | None] = [None] * len(items)
    pending = []
    for i, (source, output) in enumerate(items):
        verdict = metric.rule(output) if metric.rule else None
        if verdict:
            results[i] = GEvalResult(metric.name, True, float(verdict.score), verdict.score, "rule", verdict.reason)
        else:
            pending.append(i)
    calls = [{"messages": form_messages(metric, steps, *items[i]), "schema": schema, "label": f"{metric.name}:{i}",
              "max_tokens": 16, "top_logprobs": TOP_LOGPROBS} for i in pending]
    fallback = []
    for i, result in zip(pending, gateway.complete_many(calls, desc=metric.name)):
        if not result.ok:
            results[i] = GEvalResult(metric.name, False, failure_kind=result.failure_kind)
            continue
        dist = score_distribution(result.logprobs, "score", metric.scores)
        if dist is None:
            fallback.append(i)
        else:
            results[i] = GEvalResult(metric.name, True, expected_score(dist), result.value.score, "logprobs")
    for i in fallback:
        samples = gateway.complete_many(
            [{"messages": form_messages(metric, steps, *items[i]), "schema": schema, "temperature": 1.0,
              "seed": s, "max_tokens": 16, "label": f"{metric.name}:{i}:sample{s}"} for s in range(n_samples)],
            desc=f"{metric.name} samples")
        valid = [r.value.score for r in samples if r.ok]
        results[i] = (GEvalResult(metric.name, True, sum(valid) / len(valid), max(set(valid), key=valid.count),
                                  "samples", samples_failed=n_samples - len(valid)) if valid
                      else GEvalResult(metric.name, False, failure_kind="all_samples_failed",
                                       samples_failed=n_samples))
    return results  # type: ignore[return-value]


def results_frame(candidate_ids: list[str], results: dict[str, list[GEvalResult]]) -> pd.DataFrame:
    """Long table (schema ``lib.tables.SCHEMAS['geval_scores']``) of every metric's results per candidate."""
    return pd.concat([
        pd.DataFrame({"candidate_id": candidate_ids, "metric": name, "score": [r.score for r in rows],
                      "argmax": pd.array([r.argmax for r in rows], dtype="Int64"),
                      "method": [r.method for r in rows], "reason": [r.reason for r in rows],
                      "failed": [not r.ok for r in rows], "failure_kind": [r.failure_kind for r in rows]})
        for name, rows in results.items()], ignore_index=True)
