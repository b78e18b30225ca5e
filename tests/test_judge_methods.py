"""Chapter 07's lifting methods against the fake OpenAI server: few-shot examples from dev only, criteria
decomposition, PRP in both orders and the within-pool nDCG."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lib.analysis import calibration
from lib.analysis.calibration import split_groups
from lib.judges import methods, relevance
from lib.judges.items import JudgeItem
from tests.fakes import FakeOpenAI, Reply, always
from tests.test_judges import digit_logprobs, gateway_for


def dl_like():
    """Three queries with four passages each, one per NIST grade 0–3; passage text names its grade."""
    return pd.DataFrame([{"qid": f"q{q}", "query": f"query {q}", "docid": f"d{q}{g}", "human_grade": g,
                          "passage": f"passage of grade {g} for query {q}. " + "more words " * 80}
                         for q in range(3) for g in range(4)])


def test_fewshot_examples_come_from_dev_one_per_grade_seeded():
    frame = dl_like()
    split = split_groups(frame, "qid", n_dev=1, seed=0)
    examples = methods.fewshot_examples(split.dev_rows(frame), (0, 1, 2, 3), seed=4)
    assert examples.human_grade.tolist() == [0, 1, 2, 3] and set(examples.qid) <= set(split.dev)
    assert examples.equals(methods.fewshot_examples(split.dev_rows(frame), (0, 1, 2, 3), seed=4))
    with pytest.raises(ValueError, match="no dev row has grade 3"):
        methods.fewshot_examples(frame[frame.human_grade < 3], (0, 1, 2, 3), seed=0)


def test_fewshot_prompt_puts_the_examples_before_the_query_and_reads_a_4_point_grade(tmp_path):
    frame = dl_like()
    examples = methods.fewshot_examples(frame[frame.qid == "q0"], (0, 1, 2, 3), seed=0)
    reply = always('{"grade": 3}', logprobs=digit_logprobs({3: 0.5, 2: 0.25, 1: 0.25}))
    with FakeOpenAI(reply) as fake:
        [judgment] = methods.judge_fewshot(gateway_for(fake, tmp_path), [JudgeItem("query 1", "a passage")], examples,
                                           max_chars=40)
    assert judgment.grade == 3 and judgment.expected_grade == pytest.approx(0.5 * 3 + 0.25 * 2 + 0.25 * 1)
    system, user = fake.requests[0]["messages"][:2]
    assert system == relevance.pointwise_messages(JudgeItem("query 1", "a passage"),
                                                  relevance.PASSAGE_4POINT_PROMPTS)[0]
    text = user["content"]
    assert text.startswith("Examples of graded passages:")
    assert [f"Grade: {g}" in text for g in range(4)] == [True] * 4
    assert text.index("Grade: 3") < text.index('Query: "query 1"') < text.index('Passage: "a passage"')
    assert "more words more words more words more words" not in text  # example passages cut at 40 characters
    # Grade 3 is valid on the 4-point scale (the 0–2 schema would refuse it); 4 is not.
    with FakeOpenAI(always('{"grade": 4}')) as fake:
        [judgment] = methods.judge_fewshot(gateway_for(fake, tmp_path / "4"), [JudgeItem("q", "p")], examples)
    assert not judgment.ok and judgment.failure_kind == "schema_violation"


def grade_by_criterion(body, n):
    """Topicality 3, Intent match 2, Exactness 1 (certain); a passage containing "broken" fails Exactness."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    criterion = next(c for c in methods.CRITERIA if f"aspect of the passage, {c}," in system)
    if criterion == "Exactness" and "broken" in user:
        return Reply('{"grade": "x"}')
    grade = {"Topicality": 3, "Intent match": 2, "Exactness": 1}[criterion]
    return Reply(json.dumps({"grade": grade}), logprobs=digit_logprobs({grade: 1.0}))


def test_criteria_are_judged_separately_and_averaged_without_hiding_failures(tmp_path):
    items = [JudgeItem("q", "a fine passage"), JudgeItem("q", "a broken passage")]
    with FakeOpenAI(grade_by_criterion) as fake:
        judged = methods.judge_criteria(gateway_for(fake, tmp_path), items)
    assert list(judged) == list(methods.CRITERIA)
    assert [j.grade for j in judged["Topicality"]] == [3, 3]
    combined = methods.combine_criteria(judged)
    assert combined.iloc[0] == pytest.approx((3 + 2 + 1) / 3) and math.isnan(combined.iloc[1])
    assert not judged["Exactness"][1].ok
    # Calls of one criterion share its system prompt and come one after the other.
    systems = [r["messages"][0]["content"] for r in fake.requests]
    assert len(fake.requests) == 3 * 2 + 2  # the broken Exactness call is asked again (max_attempts)
    assert "Topicality" in systems[0] and "Topicality" in systems[1]


def test_summeval_rubrics_have_study_steps_and_the_no_cot_ablation_drops_the_steps_section():
    from lib.judges import geval

    rubrics = [geval.summeval_rubric(d) for d in geval.SUMMEVAL_DIMENSIONS]
    assert [r.points for r in rubrics] == [(1, 5), (1, 5), (1, 3), (1, 5)]
    for rubric in rubrics:
        assert geval.evaluation_steps(rubric, "study").startswith("1. ")
    item = JudgeItem("An article.", "A summary.")
    with_steps = geval.form_messages(geval.FLUENCY, "1. Read.", item)[0]["content"]
    without = geval.form_messages(geval.FLUENCY, "", item)[0]["content"]
    assert with_steps.endswith("Evaluation Steps:\n\n1. Read.") and "Evaluation Steps" not in without
    assert with_steps.startswith(without) and without.endswith("easy to read and follow.")


def grade_by_kind(body, n):
    """Pointwise 2 (p: 0.5 on 2 and 3), few-shot 3 (certain), Topicality 3, Exactness 1 (certain)."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if "rate one aspect" in system:
        grade = 3 if "Topicality" in system else 1
        return Reply(json.dumps({"grade": grade}), logprobs=digit_logprobs({grade: 1.0}))
    if user.startswith("Examples of graded passages"):
        return Reply('{"grade": 3}', logprobs=digit_logprobs({3: 1.0}))
    return Reply('{"grade": 2}', logprobs=digit_logprobs({2: 0.5, 3: 0.5}))


def test_judge_kinds_give_each_kinds_columns_and_the_methods_name_them(tmp_path):
    rows = dl_like().iloc[[1, 5, 10]]
    examples = methods.fewshot_examples(dl_like()[dl_like().qid == "q0"], (0, 1, 2, 3), seed=0)
    with FakeOpenAI(grade_by_kind) as fake:
        frame = methods.judge_passages(gateway_for(fake, tmp_path), rows,
                                       ["pointwise", "fewshot", "criteria", "pointwise"], examples=examples,
                                       criteria=["Topicality", "Exactness"])
    assert len(fake.requests) == 3 * (1 + 1 + 2)  # a kind named twice is judged once
    assert list(frame.index) == list(rows.index)
    assert frame.pointwise_grade.tolist() == [2] * 3 and frame.pointwise_expected.tolist() == [2.5] * 3
    assert frame.pointwise_rounded.tolist() == [3] * 3  # 2.5 rounds half up
    assert frame.fewshot_grade.tolist() == [3] * 3 and frame.criteria_expected.tolist() == [2.0] * 3
    assert "criteria_grade" not in frame and frame.criteria_rounded.tolist() == [2] * 3
    lifted = methods.lifting_methods(n_criteria=2)
    assert lifted[0] == methods.REFERENCE_METHOD and all(m.column in frame for m in lifted)
    assert [m.calls for m in lifted if methods.call_kind(m) == "criteria"] == [2, 2]
    assert methods.expected_column(lifted[3]) == "fewshot_expected"
    with pytest.raises(ValueError, match="no LLM call kind"):
        methods.call_kind(calibration.Method("BM25", "bm25", fit=True, calls=0))
    assert methods.expected_column(calibration.Method("BM25", "bm25", fit=True, calls=0)) is None
    with pytest.raises(ValueError, match="need examples"):
        methods.judge_kinds(gateway_for(fake, tmp_path), [JudgeItem("q", "p")], ["fewshot"])
