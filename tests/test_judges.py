"""Judges against the fake OpenAI server: relevance (pointwise), G-Eval, and the rule-based scores."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lib import metrics
from lib.design import PERSONAS_BY_ID
from lib.judges import geval, relevance
from lib.judges.guardrails import FINANCIAL_PATTERNS, financial_safety
from lib.judges.items import JudgeItem
from lib.judges.outcomes import (
    EXPECTED_SUCCESS_RATE,
    OutcomeRecord,
    intervention_success,
    stake_effectiveness,
    stake_score,
)
from lib.llm.gateway import RETRY_SEED_STRIDE, Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply, always


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=tmp_path / "cache.sqlite")


def digit_logprobs(probs):
    """Tokens the model writes after the pre-filled '{"<field>": ': the digit (top_logprobs from ``probs``
    {digit: p}) and the closing brace, as llama.cpp reports them."""
    best = max(probs, key=probs.get)
    return [{"token": str(best), "logprob": math.log(probs[best]),
             "top_logprobs": [{"token": str(d), "logprob": math.log(p)} for d, p in probs.items()]},
            {"token": "}", "logprob": 0.0, "top_logprobs": []}]


def test_pointwise_relevance_gives_grade_and_expected_grade(tmp_path):
    reply = always('{"grade": 2}', logprobs=digit_logprobs({2: 0.6, 1: 0.3, 0: 0.1}))
    with FakeOpenAI(reply) as fake:
        [judgment] = relevance.judge_pointwise(gateway_for(fake, tmp_path),
                                               [JudgeItem(source="I am tired.", output="Rest.", context="a nurse")])
    assert judgment.ok and judgment.grade == 2
    assert judgment.p_grade == pytest.approx((0.1, 0.3, 0.6)) and judgment.expected_grade == pytest.approx(1.5)
    body = fake.requests[0]
    # The answer is pre-filled up to the grade, so the grade token sits at a fixed position.
    assert body["top_logprobs"] == 5 and body["messages"][-1] == {"role": "assistant", "content": '{"grade": '}
    # Shared context before the item, so a pool's calls share the server's cached prefix.
    user = body["messages"][1]["content"]
    assert user.index("a nurse") < user.index("I am tired.") < user.index("Rest.")


def test_unparseable_relevance_is_a_failure_not_a_grade(tmp_path):
    with FakeOpenAI(always('{"grade": "very"}')) as fake:
        [judgment] = relevance.judge_pointwise(gateway_for(fake, tmp_path), [JudgeItem("entry", "nudge", "p")])
    assert not judgment.ok and judgment.grade is None and judgment.expected_grade is None
    assert judgment.failure_kind == "schema_violation"


def shown_nudges(body):
    listing = body["messages"][1]["content"].split("Nudges:\n")[1]
    return [line.split('"')[1] for line in listing.splitlines() if line.startswith("[")]


def grade_by_text(body, n):
    """Grade each shown nudge by its text: "good" -> 2, "meh" -> 1, "off" -> 0."""
    return Reply(json.dumps({"grades": [{"good": 2, "meh": 1, "off": 0}[t] for t in shown_nudges(body)]}))


def test_judgments_frame_and_rounded_expected_by_hand():
    judged = [relevance.Judgment(ok=True, grade=2, expected_grade=1.5, p_grade=(0.1, 0.3, 0.6)),
              relevance.Judgment(ok=True, grade=1, expected_grade=1.49, p_grade=(0.2, 0.11, 0.69)),
              relevance.Judgment(ok=True, grade=0),  # no usable logprobs
              relevance.Judgment(ok=False, failure_kind="truncated")]
    # rounding half up: 1.5 -> 2, 1.49 -> 1; no expected grade -> no rounded label
    assert [relevance.rounded_expected(j) for j in judged] == [2, 1, None, None]
    assert relevance.rounded_expected(relevance.Judgment(ok=True, grade=1, expected_grade=0.5)) == 1
    frame = relevance.judgments_frame(judged)
    assert list(frame.columns) == ["grade", "expected_grade", "p_grade_0", "p_grade_1", "p_grade_2",
                                   "rounded_expected", "failed", "failure_kind"]
    assert frame.grade.tolist() == [2, 1, 0, pd.NA] and str(frame.grade.dtype) == "Int64"
    assert frame.rounded_expected.tolist() == [2, 1, pd.NA, pd.NA]
    assert frame.p_grade_2.iloc[:2].tolist() == [0.6, 0.69] and frame.p_grade_0.iloc[2:].isna().all()
    assert frame.failed.tolist() == [False, False, False, True]
    assert frame.failure_kind.isna().tolist() == [True, True, True, False] and frame.failure_kind.iloc[3] == "truncated"


def test_nudge_items_take_entry_text_and_persona():
    entries = pd.DataFrame({"entry_id": ["e1", "e2"], "text": ["I lost my job.", "I won."],
                            "persona_id": ["caregiver", "striver"]})
    candidates = pd.DataFrame({"entry_id": ["e2", "e1"], "nudge_text": ["Celebrate it.", "Be gentle."]})
    items = relevance.nudge_items(entries, candidates)
    assert items[0] == JudgeItem("I won.", "Celebrate it.", PERSONAS_BY_ID["striver"].description)
    assert items[1].source == "I lost my job." and items[1].context.startswith("a nurse")


def test_geval_steps_are_generated_by_the_command_and_only_read_in_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"python -m lib\.judges\.geval steps CulturalSensitivity"):
        geval.evaluation_steps(geval.CULTURAL_SENSITIVITY, folder=tmp_path / "steps")
    with FakeOpenAI(always("1. Read the entry.\n2. Read the message.\n3. Score it.\n")) as fake:
        path = geval.generate_steps(geval.CULTURAL_SENSITIVITY, gateway_for(fake, tmp_path), folder=tmp_path / "steps")
    assert path == tmp_path / "steps" / "CulturalSensitivity.txt"
    assert geval.evaluation_steps(geval.CULTURAL_SENSITIVITY, folder=tmp_path / "steps") == \
        "1. Read the entry.\n2. Read the message.\n3. Score it."
    prompt = fake.requests[0]["messages"][0]["content"]
    assert prompt.startswith(geval.NUDGE_TASK_INTRO) and "CulturalSensitivity (1-5) - How culturally" in prompt
    assert prompt.endswith("Reply with the steps only.")


def test_every_registered_rubric_has_committed_study_steps_and_the_nudge_rubrics_model_steps():
    assert list(geval.RUBRICS) == ["ToneEmpathy", "CulturalSensitivity", "Coherence", "Consistency", "Fluency",
                                   "Relevance"]
    for rubric in geval.RUBRICS.values():
        assert geval.evaluation_steps(rubric, "study").startswith("1. ")
    for rubric in (geval.TONE_EMPATHY, geval.CULTURAL_SENSITIVITY, geval.COHERENCE):
        assert geval.evaluation_steps(rubric, "model").startswith("1. ")


def test_a_rubric_without_context_label_shows_no_context():
    [_, user] = geval.form_messages(geval.TONE_EMPATHY, "1. Score.", JudgeItem("entry", "nudge", "a nurse"))
    assert user["content"].startswith("Source text:\n\nentry") and "a nurse" not in user["content"]


def test_geval_probability_weighted_score(tmp_path):
    reply = always('{"score": 4, "reason": "It sees the family as a value."}',
                   logprobs=digit_logprobs({4: 0.5, 3: 0.25, 5: 0.25}))
    with FakeOpenAI(reply) as fake:
        [result] = geval.geval(gateway_for(fake, tmp_path), [JudgeItem("My family needs me.", "Your family matters.",
                                                                        "a daughter who cares for her parents")],
                               geval.CULTURAL_SENSITIVITY, "1. Score.")
    assert result.ok and result.scored_by == "logprobs" and result.argmax == 4
    assert result.reason == "It sees the family as a value."  # written after the score, in the same answer
    assert result.score == pytest.approx(4 * 0.5 + 3 * 0.25 + 5 * 0.25)
    system, user, prefill = fake.requests[0]["messages"]
    assert "Evaluation Steps:\n\n1. Score." in system["content"]
    # CulturalSensitivity needs to know the person: the context comes first, under the rubric's heading.
    assert user["content"].startswith("About the person:\n\na daughter who cares for her parents\n\n"
                                      "Source text:\n\nMy family needs me.\n\nResponse:\n\nYour family matters.")
    assert user["content"].endswith("Evaluation Form (the score, then a reason of at most 12 words):\n\n"
                                    "- CulturalSensitivity (1-5):")
    assert prefill == {"role": "assistant", "content": '{"score": '}
    assert fake.requests[0]["max_tokens"] == geval.REASON_MAX_TOKENS


def test_geval_without_reasons_asks_for_the_score_only_and_a_missing_reason_is_a_failure(tmp_path):
    reply = always('{"score": 4}', logprobs=digit_logprobs({4: 1.0}))
    with FakeOpenAI(reply) as fake:
        gateway = gateway_for(fake, tmp_path)
        [scored] = geval.geval(gateway, [JudgeItem("s", "o")], geval.TONE_EMPATHY, "1. Score.", reasons=False)
        [missing] = geval.geval(gateway, [JudgeItem("s", "o")], geval.TONE_EMPATHY, "1. Score.")
    assert scored.ok and scored.reason is None and fake.requests[0]["max_tokens"] == 4
    assert fake.requests[0]["messages"][1]["content"].endswith("Evaluation Form (scores ONLY):\n\n- ToneEmpathy (1-5):")
    assert not missing.ok and missing.failure_kind == "schema_violation"  # the rubric asks for a reason


def test_geval_falls_back_to_samples_without_logprobs(tmp_path):
    def responder(body, n):
        return Reply('{"score": 3}') if body.get("temperature") == 0.0 else Reply(
            json.dumps({"score": [2, 4, 4, 5][body["seed"] % 4]}) if body["seed"] % RETRY_SEED_STRIDE != 7
            else "broken")

    with FakeOpenAI(responder) as fake:
        [result] = geval.geval(gateway_for(fake, tmp_path), [JudgeItem("src", "out")], geval.CULTURAL_SENSITIVITY,
                               "1. Score.", n_samples=8, reasons=False)
    # seeds 0..7 -> 2,4,4,5,2,4,4,(seed 7 fails in all 3 attempts) -> mean of 7 valid samples
    assert result.ok and result.scored_by == "samples" and result.samples_failed == 1
    assert result.score == pytest.approx((2 + 4 + 4 + 5 + 2 + 4 + 4) / 7) and result.argmax == 4


def test_geval_parse_failure_is_recorded_not_scored(tmp_path):
    with FakeOpenAI(always("I would say four")) as fake:
        [result] = geval.geval(gateway_for(fake, tmp_path), [JudgeItem("s", "o")], geval.CULTURAL_SENSITIVITY,
                               "1. Score.")
    assert not result.ok and result.score is None and result.argmax is None
    assert result.failure_kind == "invalid_json"


def test_tone_empathy_rule_decides_shaming_without_llm_and_sends_the_rest(tmp_path):
    reply = always('{"score": 4}', logprobs=digit_logprobs({4: 1.0}))
    with FakeOpenAI(reply) as fake:
        shamed, neutral = geval.geval(gateway_for(fake, tmp_path), [JudgeItem("entry", "You never learn."),
                                                                     JudgeItem("entry", "That was a bad day.")],
                                      geval.TONE_EMPATHY, "1. Score.", reasons=False)
    assert (shamed.ok, shamed.score, shamed.scored_by) == (True, 1.0, "rule")
    assert shamed.reason is not None and shamed.reason.startswith("shaming: ")
    assert (neutral.scored_by, neutral.argmax) == ("logprobs", 4)
    assert len(fake.requests) == 1 and "That was a bad day." in fake.requests[0]["messages"][1]["content"]


def test_register_adds_a_rubric_once_to_the_one_registry(monkeypatch):
    monkeypatch.setattr(metrics, "REGISTRY", {})
    monkeypatch.setattr(metrics, "ALIASES", {})
    rubric = metrics.register(geval.Rubric("Brevity", (1, 3), "Rate the message.", "How short it is."))
    assert dict(geval.RUBRICS) == {"Brevity": rubric} and rubric.scores == [1, 2, 3]
    assert rubric.construct == "How short it is." and str(rubric.scale) == "[1, 3]"
    with pytest.raises(ValueError, match="'Brevity' is already registered"):
        metrics.register(geval.Rubric("Brevity", (1, 5), "Another intro.", "Other criteria."))
    assert geval.RUBRICS["Brevity"] is rubric


GUARDRAIL_CASES = {
    "invest_everything": ("Invest all your savings in one stock.", "Investing a little each month can help."),
    "guaranteed_return": ("This fund has guaranteed returns of 20%.", "No investment can promise returns."),
    "get_rich_quick": ("Here is how to get rich quick.", "Wealth builds slowly over years."),
    "borrow_to_invest": ("Take out a loan and invest it in the market.", "Pay down the loan before you invest."),
    "skip_essentials": ("Skip rent this month and buy the course.", "Rent comes first, then savings."),
    "crypto_moon": ("This crypto coin is going to the moon!", "Crypto prices swing a lot."),
    "pyramid_mlm": ("Join my MLM and be your own boss.", "Marketing jobs can be rewarding."),
    "drain_emergency_fund": ("Drain your emergency fund for this deal.", "Keep your emergency fund untouched."),
}


def test_every_guardrail_pattern_has_a_case():
    assert set(GUARDRAIL_CASES) == set(FINANCIAL_PATTERNS)


@pytest.mark.parametrize("name", sorted(GUARDRAIL_CASES))
def test_guardrail_pattern_positive_and_negative(name):
    unsafe, safe = GUARDRAIL_CASES[name]
    verdict = financial_safety(unsafe)
    assert verdict.score == 0 and verdict.blocked and any(v.startswith(f"{name}:") for v in verdict.violations)
    assert not FINANCIAL_PATTERNS[name].search(safe)
    assert financial_safety(safe).score == 1 and financial_safety(safe).violations == ()


def test_guardrail_lists_every_violation():
    verdict = financial_safety("Guaranteed profit! Put everything in and skip your meds to afford it.")
    assert [v.split(":")[0] for v in verdict.violations] == ["invest_everything", "guaranteed_return",
                                                             "skip_essentials"]


def test_intervention_success_scores_the_action_with_the_specified_reason():
    saved, spent, missing = (intervention_success(OutcomeRecord(i, a)) for i, a in (("r1", "saved"),
                                                                                   ("r2", "spent"), ("r3", None)))
    assert (saved.score, saved.reason) == (1.0, "user chose to save instead of spend")
    assert (spent.score, spent.reason) == (0.0, "user proceeded with spending")
    # the specification scores a missing action 0; the study's protocol makes it a failure, never a score
    assert missing.failed and missing.failure_kind == "undefined" and missing.reason == "no user action recorded"
    with pytest.raises(ValueError, match="r9: action must be"):
        OutcomeRecord("r9", "donated")


@pytest.mark.parametrize("stake, rate", [("social", 0.78), ("anti_charity", 0.85), ("loss_pool", 0.72),
                                         ("none", 0.35)])
def test_stake_score_is_min_one_success_over_the_specified_rate(stake, rate):
    assert EXPECTED_SUCCESS_RATE[stake] == rate
    achieved = stake_score(OutcomeRecord("a", None, stake, True))
    missed = stake_score(OutcomeRecord("b", None, stake, False))
    # min(1, 1 / rate) = 1 for every rate below 1: the expected rate shows only in the reason
    assert achieved.score == 1.0 and achieved.reason == (f"goal achieved with {stake} stake "
                                                         f"(expected rate: {round(rate * 100)}%)")
    assert (missed.score, missed.reason) == (0.0, f"goal not achieved with {stake} stake")


def test_stake_score_is_undefined_without_stake_or_goal_and_refuses_unknown_stakes():
    for record in (OutcomeRecord("a", "saved", "social", None), OutcomeRecord("b", "saved", None, True)):
        result = stake_score(record)
        assert result.failed and result.reason == "missing stake or completion data"
    with pytest.raises(ValueError, match="unknown stake type 'small'"):
        stake_score(OutcomeRecord("c", "saved", "small", True))
    with pytest.raises(ValueError, match="unknown stake type"):  # even without a goal outcome
        stake_effectiveness([OutcomeRecord("d", "saved", "large", None)])


def test_stake_effectiveness_by_stake_type_on_hand_computed_records():
    records = [OutcomeRecord("r1", "saved", "social", True), OutcomeRecord("r2", "saved", "social", True),
               OutcomeRecord("r3", "spent", "social", False), OutcomeRecord("r4", None, "social", None),
               OutcomeRecord("r5", "spent", "none", False), OutcomeRecord("r6", "saved")]
    table = stake_effectiveness(records)
    assert list(table) == ["social", "none"]  # the specification's order; r6 has no stake
    assert table["social"] == {"records": 4, "with_data": 3, "StakeEffectiveness": 2 / 3, "expected_rate": 0.78}
    assert table["none"] == {"records": 1, "with_data": 1, "StakeEffectiveness": 0.0, "expected_rate": 0.35}
    # a rate above 1 (not the specification's) shows the cap is min(1, success / rate), not success alone
    assert stake_score(OutcomeRecord("x", None, "odd", True), {"odd": 2.0}).score == 0.5


def test_geval_results_frame_and_summary():
    from lib.tables import SCHEMAS

    frame = geval.results_frame(["a", "b", "c"], {"ToneEmpathy": [
        geval.GEvalResult("ToneEmpathy", True, 3.5, 3, "logprobs"),
        geval.GEvalResult("ToneEmpathy", True, 1.0, 1, "rule", "shaming: you_always_never: You never learn"),
        geval.GEvalResult("ToneEmpathy", False, failure_kind="invalid_json")]}, model="judge-x")
    assert sorted(frame.columns) == sorted(SCHEMAS["geval_scores"]) and set(frame.model) == {"judge-x"}
    assert frame.failed.tolist() == [False, False, True] and frame.score.isna().tolist() == [False, False, True]
    summary = geval.score_summary(frame).loc["ToneEmpathy"]
    # n counts every row; mean, sd, min, max over the two scores 3.5 and 1.0
    assert (summary.n, summary["mean"], summary["min"], summary["max"]) == (3, 2.25, 1.0, 3.5)
    assert summary.sd == pytest.approx(math.sqrt(2 * 1.25 ** 2))
    assert (summary.failed, summary.decided_by_rule, summary.distinct_scores) == (1, 1, 2)


def test_no_rubric_that_asks_for_a_reason_quotes_in_its_criteria():
    # The model copies the criteria into its reason unescaped: a double quote there breaks the JSON answer (one of 80
    # CulturalSensitivity answers did, quoting "I am because we are").
    assert not [r.name for r in geval.RUBRICS.values() if r.reasons and '"' in r.criteria + r.task_intro]


def test_a_reason_cut_by_max_tokens_keeps_its_score_and_marks_the_cut(tmp_path):
    looping = '{"score": 4, "reason": "It sees the family. It sees the family. It sees'
    with FakeOpenAI(always(looping, finish_reason="length", logprobs=digit_logprobs({4: 0.8, 3: 0.2}))) as fake:
        [result] = geval.geval(gateway_for(fake, tmp_path), [JudgeItem("s", "o", "p")], geval.CULTURAL_SENSITIVITY,
                               "1. Score.")
    assert result.ok and result.score == pytest.approx(3.8) and len(fake.requests) == 1  # no retry
    assert result.reason == "It sees the family. It sees the family. It sees…"
    with FakeOpenAI(always('{"score": 4}', finish_reason="length")) as fake:  # cut with no reason begun: a failure
        [cut] = geval.geval(gateway_for(fake, tmp_path / "b"), [JudgeItem("s", "o", "p")], geval.CULTURAL_SENSITIVITY,
                            "1. Score.")
    assert not cut.ok and cut.failure_kind == "schema_violation"  # no reason field at all
