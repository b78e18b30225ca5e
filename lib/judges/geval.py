"""G-Eval rubrics (Liu et al., "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", EMNLP 2023),
for any (rubric, source, output): a *rubric* is one criterion scored on an integer scale by the LLM.

1. Task introduction + evaluation criteria define a rubric (:class:`Rubric`, a metric of kind ``G-Eval rubric``
   registered by name in the study's registry, :mod:`lib.metrics`; ``RUBRICS`` is the registry's view of them).
2. *Auto chain-of-thought*: the LLM writes the evaluation steps once from the introduction and criteria
   (``python -m lib.judges.geval steps``); they are committed in ``lib/prompts/geval_steps/<rubric>.txt`` and
   only read during a run, so runs are reproducible and a run never writes into ``lib/``. A small model's
   steps can drift from the criteria, so the study also writes steps that follow each criterion
   (``lib/prompts/geval_steps_study/``); :func:`evaluation_steps` takes ``author="model"`` or ``"study"``.
   For a rubric of your own, :func:`model_steps` generates the steps once into a folder you name and reads them.
3. *Form filling*: introduction, criteria and steps, then (for a rubric that needs it) what is known about
   the person, the source and the output, then "Evaluation Form (scores ONLY)"
   (``lib/prompts/geval_form.txt``); the answer ``{"score": s}`` is pre-filled up to the score, so the score
   token is read at a fixed position whatever whitespace the model would have written.
4. *Probability-weighted score*: score = Σ_s p(s)·s over the allowed score tokens, from ``top_logprobs``
   (:mod:`lib.judges.logprobs`). When the endpoint returns no logprobs, the paper's fallback: ``n_samples``
   answers at temperature 1 and their mean.
A rubric may carry a documented *rule* that decides the score before any LLM call (ToneEmpathy's shaming
rule, :func:`lib.judges.guardrails.shaming_rule`). A call that yields no score is a failure with its
kind, never a default score. ``rubric.score(gateway, items)`` gives the :class:`lib.metrics.Result` of each item
(with the study's steps): the one call every metric of the study has.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

import pandas as pd
from pydantic import BaseModel, create_model

from lib import metrics, paths, prompts
from lib.judges.guardrails import RuleVerdict, shaming_rule
from lib.judges.items import JudgeItem
from lib.judges.logprobs import expected_score, score_distribution
from lib.llm.cache import chapter_run
from lib.llm.gateway import Gateway, LLMCall

STEPS_DIR = paths.PROMPTS / "geval_steps"
STUDY_STEPS_DIR = paths.PROMPTS / "geval_steps_study"
StepsAuthor = Literal["model", "study"]
STEPS_AUTHORS: tuple[StepsAuthor, ...] = get_args(StepsAuthor)
SCORE_PREFILL = '{"score": '
STEPS_COMMAND = "python -m lib.judges.geval steps"
TOP_LOGPROBS = 5
CITATION = "Liu et al. 2023, G-Eval (EMNLP)"


@dataclass(frozen=True)
class Rubric:
    """A G-Eval rubric: name, the integer ``points`` (lowest, highest) the form asks for, task introduction,
    criteria, an optional deciding rule, and ``context_label``: when set, the item's context (e.g. the persona) is
    shown under that heading, for criteria that cannot be judged without it. As a metric (:class:`lib.metrics.Metric`)
    its ``construct`` is what the criteria ask (the criteria themselves unless given) and its scale the interval
    between its points (the score is probability-weighted). With ``reasons`` the form asks for a one-sentence
    reason after the score, in the same answer: the score token is still read first, at the prefilled position,
    so the reason cannot move the score (the metrics of the G-Eval specification return ``{score, reason}``).
    ``steps_folder``: for a rubric of one's own, where :meth:`score` keeps the model's evaluation steps
    (:func:`model_steps`: written on the first call, read on every later one); without it, the study's steps."""

    name: str
    points: tuple[int, int]
    task_intro: str
    criteria: str
    rule: Callable[[str], RuleVerdict | None] | None = field(default=None, compare=False)
    context_label: str | None = None
    construct: str = ""
    aliases: tuple[str, ...] = ()
    reasons: bool = False
    steps_folder: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.construct:
            object.__setattr__(self, "construct", self.criteria)

    @property
    def scores(self) -> list[int]:
        return list(range(self.points[0], self.points[1] + 1))

    @property
    def kind(self) -> Literal["G-Eval rubric"]:
        return "G-Eval rubric"

    @property
    def scale(self) -> metrics.Scale:
        return metrics.Scale(*self.points)

    @property
    def description(self) -> str:
        rule = " A rule decides some outputs first." if self.rule else ""
        return f"Σ_s p(s)·s over the form's scores {self.points[0]}–{self.points[1]}: {self.criteria}{rule}"

    @property
    def citation(self) -> str:
        return CITATION

    def score(self, gateway: Gateway | None, items: Sequence[JudgeItem], **options: Any) -> list[metrics.Result]:
        """Each item's :class:`lib.metrics.Result` (score and reason, or the failure) by :func:`geval`, with the
        evaluation steps given as ``steps=``, else the model's steps in :attr:`steps_folder` when the rubric has one,
        else the study's (and ``n_samples=``, ``reasons=``)."""
        judge = metrics.judge_gateway(gateway, self.name)
        steps = options.pop("steps", None)
        if steps is None:
            steps = (evaluation_steps(self, "study") if self.steps_folder is None
                     else model_steps(self, judge, self.steps_folder))
        return metrics.checked(self, [r.result() for r in geval(judge, items, self, steps, **options)], len(items))


@dataclass(frozen=True)
class GEvalResult:
    """``score`` is the probability-weighted (or sample-mean, or rule) score; None when ``ok`` is False."""

    rubric: str
    ok: bool
    score: float | None = None
    argmax: int | None = None
    scored_by: Literal["logprobs", "samples", "rule"] | None = None
    reason: str | None = None
    failure_kind: str | None = None
    samples_failed: int = 0

    @property
    def failed(self) -> bool:
        return not self.ok

    def result(self) -> metrics.Result:
        """The protocol's result: the score and its reason (the rule's, or the model's when the rubric asks for
        one), or the failure."""
        if not self.ok or self.score is None:
            return metrics.Result.failure(self.failure_kind or "unknown")
        return metrics.Result(self.score, self.reason or "")


RUBRICS: Mapping[str, Rubric] = metrics.of_kind("G-Eval rubric")  # the registry's view, in the order registered


NUDGE_TASK_INTRO = ("You will be given a person's journal entry (the source text) and a short message an assistant "
                    "wrote in response. Your task is to rate the message on one metric.")

TONE_EMPATHY = metrics.register(Rubric(
    name="ToneEmpathy", points=(1, 5),
    task_intro=NUDGE_TASK_INTRO,
    criteria="How empathetic the tone is. The message validates the person's feelings, contains no shame, "
             "blame or lecturing, sounds like a supportive friend rather than a critical parent, and "
             "acknowledges that things are difficult while offering hope.",
    rule=shaming_rule,
    construct="empathy of the message's tone (validating, no shame or blame)",
    reasons=True,
))

# The criteria, scale anchors and indicators of the G-Eval metrics specification (../shared/specs/001_geval_metrics.md),
# in the study's words; its financial setting is kept where the indicators need it (family transfers, rotating
# savings groups).
CULTURAL_SENSITIVITY = metrics.register(Rubric(
    name="CulturalSensitivity", points=(1, 5),
    task_intro=NUDGE_TASK_INTRO,
    criteria="How culturally appropriate the message is for a person whose family and community ties carry "
             "weight. It treats obligations to family as values, not as problems or costs; it does not assume "
             "Western norms about money, saving or independence; it is open to the Ubuntu view that a person "
             "exists through others (I am because we are); it can see support given to family as an "
             "investment in social capital; and it understands success as collective as well as individual. "
             "1: dismisses these values and treats family support as a problem; 2: neutral, no cultural "
             "awareness; 3: somewhat aware; 4: sensitive with small gaps; 5: fully understands the person's "
             "setting. Signs for: family comes first, social capital, Ubuntu, community savings groups such as "
             "Ajo or Esusu, no judgement of family transfers. Signs against: family support called an "
             "unnecessary expense, telling the person to set boundaries with family, a purely individual frame "
             "of success, saving-rate norms assumed without context.",
    context_label="About the person",
    construct="respect for the person's family and community values (the specification's indicators)",
    reasons=True,
))


SUMMARY_TASK_INTRO = ("You will be given one summary written for a news article. Your task is to rate the summary on "
                      "one metric.")

# The SummEval rubrics with the G-Eval paper's criteria (its prompts/summeval/*_detailed.txt and, for consistency,
# the criterion of con_scorer.txt), for the validity checks of chapters 03 and 07. Fluency keeps the paper's
# 1–3 scale and anchors. Each is found by its SummEval dimension too (alias "SummEval <dimension>",
# :func:`summeval_rubric`). Consistency, Fluency and Relevance have study-written steps only;
# `python -m lib.judges.geval steps Consistency` writes their model steps when wanted.
COHERENCE = metrics.register(Rubric(
    name="Coherence", points=(1, 5),
    task_intro=SUMMARY_TASK_INTRO,
    criteria="the collective quality of all sentences. The summary should be well-structured and "
             "well-organized. The summary should not just be a heap of related information, but should build "
             "from sentence to sentence to a coherent body of information about a topic.",
    construct="SummEval coherence: how well the summary's sentences build a coherent whole",
    aliases=("SummEval coherence",),
))

CONSISTENCY = metrics.register(Rubric(
    name="Consistency", points=(1, 5),
    task_intro=SUMMARY_TASK_INTRO,
    criteria="the factual alignment between the summary and the summarized source. A factually consistent summary "
             "contains only statements that are entailed by the source document. Annotators were also asked to "
             "penalize summaries that contained hallucinated facts.",
    construct="SummEval consistency: factual alignment of the summary with its source",
    aliases=("SummEval consistency",),
))

FLUENCY = metrics.register(Rubric(
    name="Fluency", points=(1, 3),
    task_intro=SUMMARY_TASK_INTRO,
    criteria="the quality of the summary in terms of grammar, spelling, punctuation, word choice, and sentence "
             "structure. 1: Poor. The summary has many errors that make it hard to understand or sound unnatural. "
             "2: Fair. The summary has some errors that affect the clarity or smoothness of the text, but the main "
             "points are still comprehensible. 3: Good. The summary has few or no errors and is easy to read and "
             "follow.",
    construct="SummEval fluency: grammar, spelling, word choice and sentence structure",
    aliases=("SummEval fluency",),
))

RELEVANCE = metrics.register(Rubric(
    name="Relevance", points=(1, 5),
    task_intro=SUMMARY_TASK_INTRO,
    criteria="selection of important content from the source. The summary should include only important "
             "information from the source document. Annotators were instructed to penalize summaries which "
             "contained redundancies and excess information.",
    construct="SummEval relevance: selection of the source's important content",
    aliases=("SummEval relevance",),
))

SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")  # SummEval's human columns


def summeval_rubric(dimension: str) -> Rubric:
    """The rubric that scores SummEval's human ``dimension`` (a column of ``load_summeval``)."""
    rubric: Rubric = RUBRICS[f"SummEval {dimension}"]
    return rubric


@cache
def score_schema(low: int, high: int, reason: bool = False) -> type[BaseModel]:
    """The form's answer: ``score`` among the integer points and, with ``reason``, a ``reason`` after it."""
    # the scores are known only at run time, so no static type names this Literal
    score = (Literal[tuple(range(low, high + 1))], ...)
    if reason:
        return create_model(f"Score{low}to{high}Reason", score=score, reason=(str, ...))  # type: ignore[arg-type]
    return create_model(f"Score{low}to{high}", score=score)  # type: ignore[arg-type]


def steps_path(rubric: Rubric, folder: Path = STEPS_DIR) -> Path:
    return folder / f"{rubric.name}.txt"


def evaluation_steps(rubric: Rubric, author: StepsAuthor = "model", folder: Path | None = None) -> str:
    """The committed evaluation steps of ``rubric``: the model's (auto-CoT) or the study's; missing model
    steps are an error naming the command that writes them. Only reads: :func:`model_steps` generates the
    steps of a rubric of your own. Any ``author`` other than ``"model"`` or ``"study"`` is an error, since a
    mistyped author (or a gateway passed where it once went) would otherwise quietly give the study's steps."""
    if not isinstance(author, str):
        raise TypeError(f"author must be one of {', '.join(map(repr, STEPS_AUTHORS))}, not a "
                        f"{type(author).__name__}; evaluation_steps only reads stored steps "
                        f"(model_steps(rubric, gateway, folder) generates them)")
    if author not in STEPS_AUTHORS:
        raise ValueError(f"author must be one of {', '.join(map(repr, STEPS_AUTHORS))}, not {author!r}")
    folder = folder or (STEPS_DIR if author == "model" else STUDY_STEPS_DIR)
    path = steps_path(rubric, folder)
    if not path.exists():
        how = (f"generate them with `{STEPS_COMMAND} {rubric.name}`" if author == "model"
               else "write them to follow the rubric's criteria")
        raise FileNotFoundError(f"no {author} evaluation steps for rubric {rubric.name} ({path}); {how} "
                                "and commit the file")
    return prompts.load(rubric.name, folder).strip()


def generate_steps(rubric: Rubric, gateway: Gateway, folder: Path = STEPS_DIR) -> Path:
    """G-Eval's auto-CoT: ask the LLM for the rubric's evaluation steps and write them to :func:`steps_path`
    (overwriting stored ones; ``python -m lib.judges.geval steps`` and :func:`model_steps` call it)."""
    (prompt,) = prompts.parts("geval_evaluation_steps", 1)
    text = prompt.format(task_intro=rubric.task_intro, name=rubric.name, low=rubric.points[0],
                         high=rubric.points[1], criteria=rubric.criteria)
    result = gateway.complete([{"role": "user", "content": text}], None, call_label=f"geval-steps:{rubric.name}",
                              max_tokens=300)
    if not result.ok:
        raise RuntimeError(f"could not generate evaluation steps for {rubric.name}: {result.error}")
    path = steps_path(rubric, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.text.strip() + "\n", encoding="utf-8")
    return path


def model_steps(rubric: Rubric, gateway: Gateway, folder: Path) -> str:
    """The model's evaluation steps of ``rubric`` (G-Eval's auto-CoT) for scoring with :func:`geval`: read from
    ``folder`` when they were generated there before, else generated with ``gateway`` (:func:`generate_steps`)
    and written there first. Every later run reads the same file, so the steps, and with them the scores, stay
    fixed until the file is deleted; read the file, since a small model's steps can drift from the criteria.
    ``folder`` has no default: the study's own steps in ``lib/prompts`` are only written by the command."""
    if not steps_path(rubric, folder).exists():
        generate_steps(rubric, gateway, folder)
    return evaluation_steps(rubric, "model", folder)


STEPS_HEADING = "Evaluation Steps:"


FORM_HEADINGS = {False: "scores ONLY", True: "the score, then a reason of at most 12 words"}
REASON_MAX_TOKENS = 128  # the reasons asked for run 20–60 tokens; a longer one (a repetition loop) is cut and kept


def form_messages(rubric: Rubric, steps: str, item: JudgeItem, reasons: bool | None = None) -> list[dict[str, str]]:
    """System: intro, criteria, steps (shared by every call of the rubric); user: the context under the
    rubric's ``context_label`` (if it has one), the source, then the output, then the form (scores only, or with
    :attr:`Rubric.reasons`, or ``reasons`` when given, the score and then a reason). Empty ``steps`` leave the
    steps section out (G-Eval's "−CoT" ablation)."""
    system, user = prompts.parts("geval_form", 2)
    form = FORM_HEADINGS[rubric.reasons if reasons is None else reasons]
    low, high = rubric.points
    context_block = f"{rubric.context_label}:\n\n{item.context}\n\n" if rubric.context_label else ""
    system_text = system.format(task_intro=rubric.task_intro, name=rubric.name, low=low, high=high,
                                criteria=rubric.criteria, steps=steps)
    if not steps.strip():
        system_text = system_text.rsplit(STEPS_HEADING, 1)[0].rstrip()
    return [{"role": "system", "content": system_text},
            {"role": "user", "content": user.format(context_block=context_block, source=item.source,
                                                    output=item.output, name=rubric.name, low=low, high=high,
                                                    form=form)}]


def geval(gateway: Gateway, items: Sequence[JudgeItem], rubric: Rubric, steps: str,
          n_samples: int = 10, reasons: bool | None = None) -> list[GEvalResult]:
    """Score each item's output on ``rubric`` (its context shown only under the rubric's ``context_label``).
    Rule verdicts first; then one
    form-filling call per item with logprobs; items whose answer carries no usable logprobs fall back to
    ``n_samples`` samples at temperature 1 (mean of the valid ones; failed samples are counted). ``reasons``
    overrides :attr:`Rubric.reasons` (a reason costs generated tokens: a chapter may read the score alone)."""
    reasons = rubric.reasons if reasons is None else reasons
    schema = score_schema(*rubric.points, reasons)
    max_tokens = REASON_MAX_TOKENS if reasons else 4
    results: dict[int, GEvalResult] = {}
    pending = []
    for i, item in enumerate(items):
        verdict = rubric.rule(item.output) if rubric.rule else None
        if verdict:
            results[i] = GEvalResult(rubric.name, True, float(verdict.score), verdict.score, "rule", verdict.reason)
        else:
            pending.append(i)
    calls = [LLMCall(form_messages(rubric, steps, items[i], reasons), schema, call_label=f"{rubric.name}:{i}",
                     max_tokens=max_tokens, cut_text_ok=reasons, top_logprobs=TOP_LOGPROBS, prefill=SCORE_PREFILL)
             for i in pending]
    fallback = []
    for i, result in zip(pending, gateway.complete_many(calls, desc=rubric.name), strict=True):
        if not result.ok:
            results[i] = GEvalResult(rubric.name, False, failure_kind=result.failure_kind)
            continue
        dist = score_distribution(result.logprobs, "score", rubric.scores, prefill=SCORE_PREFILL)
        if dist is None:
            fallback.append(i)
        else:
            results[i] = GEvalResult(rubric.name, True, expected_score(dist), result.value.score, "logprobs",
                                     getattr(result.value, "reason", None))
    for i in fallback:
        samples = gateway.complete_many(
            [LLMCall(form_messages(rubric, steps, items[i], reasons), schema, temperature=1.0, seed=s,
                     max_tokens=max_tokens, cut_text_ok=reasons, prefill=SCORE_PREFILL,
                     call_label=f"{rubric.name}:{i}:sample{s}")
             for s in range(n_samples)],
            desc=f"{rubric.name} samples")
        valid = [r.value for r in samples if r.ok]
        if not valid:
            results[i] = GEvalResult(rubric.name, False, failure_kind="all_samples_failed", samples_failed=n_samples)
            continue
        scores = [v.score for v in valid]
        mode = max(set(scores), key=scores.count)
        reason = next((getattr(v, "reason", None) for v in valid if v.score == mode), None)
        results[i] = GEvalResult(rubric.name, True, sum(scores) / len(scores), mode, "samples", reason,
                                 samples_failed=n_samples - len(valid))
    return [results[i] for i in range(len(items))]


def results_frame(candidate_ids: Sequence[str], results: dict[str, list[GEvalResult]], model: str) -> pd.DataFrame:
    """Long table (schema ``lib.tables.SCHEMAS['geval_scores']``) of every rubric's results per candidate,
    with the judge ``model``'s identity."""
    return pd.concat([
        pd.DataFrame({"candidate_id": list(candidate_ids), "rubric": name, "score": [r.score for r in rows],
                      "argmax": pd.array([r.argmax for r in rows], dtype="Int64"),
                      "scored_by": [r.scored_by for r in rows], "reason": [r.reason for r in rows],
                      "failed": [not r.ok for r in rows], "failure_kind": [r.failure_kind for r in rows],
                      "model": model})
        for name, rows in results.items()], ignore_index=True)


def steps_table(rubrics: Sequence[Rubric]) -> pd.DataFrame:
    """Each rubric's criteria beside its model-written (auto-CoT) and study-written evaluation steps, so a
    reader can see where the model's steps drift from the criteria."""
    return pd.DataFrame([{"rubric": r.name, "criteria": r.criteria, "model steps": evaluation_steps(r, "model"),
                          "study steps": evaluation_steps(r, "study")} for r in rubrics]).set_index("rubric")


def score_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per rubric of a ``geval_scores`` table: n, mean, sd, min, max of the score, failures, scores decided by
    the rule, and distinct score values."""
    return scores.groupby("rubric").agg(
        n=("score", "size"), mean=("score", "mean"), sd=("score", "std"), min=("score", "min"), max=("score", "max"),
        failed=("failed", "sum"), decided_by_rule=("scored_by", lambda s: int((s == "rule").sum())),
        distinct_scores=("score", "nunique"))


def main(argv: list[str] | None = None) -> None:
    """``python -m lib.judges.geval steps [RUBRIC ...] [--force]``: write the evaluation steps of the named
    registered rubrics (default: those whose model steps are stored, which only ``--force`` regenerates) with the
    LLM of the environment."""
    parser = argparse.ArgumentParser(prog="python -m lib.judges.geval")
    sub = parser.add_subparsers(dest="command", required=True)
    steps_cmd = sub.add_parser("steps", help="generate and store G-Eval evaluation steps")
    known = {name: RUBRICS[name] for name in RUBRICS}
    steps_cmd.add_argument("rubrics", nargs="*", metavar="RUBRIC", help=f"one of {', '.join(known)}")
    steps_cmd.add_argument("--force", action="store_true", help="regenerate steps that are already stored")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.rubrics) - set(known))
    if unknown:
        parser.error(f"unknown rubric(s) {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = ([known[name] for name in args.rubrics] if args.rubrics
              else [r for r in known.values() if steps_path(r).exists()])
    todo = [r for r in chosen if args.force or not steps_path(r).exists()]
    for rubric in chosen:
        if rubric not in todo:
            print(f"{rubric.name}: already stored in {steps_path(rubric)} (--force regenerates)")
    if todo:
        # The steps are the chapters' input, kept in the committed cache (make prune-cache keeps geval-steps); its
        # ledger is not saved: no chapter's cost.
        with chapter_run("geval-steps"), Gateway.from_env(notebook="geval-steps") as gateway:
            for rubric in todo:
                print(f"{rubric.name}: wrote {generate_steps(rubric, gateway)}")
        print("Review and commit the steps; `make stop` ends an embedded server the gateway started.")


if __name__ == "__main__":
    main()
