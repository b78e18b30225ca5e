"""Judges against the fake OpenAI server: relevance (pointwise/listwise), G-Eval, and the rule metrics."""
from __future__ import annotations

import json
import math

import pytest

from lib.judges import geval, relevance
from lib.judges.guardrails import FINANCIAL_PATTERNS, financial_safety
from lib.judges.outcomes import OutcomeRecord, intervention_success, stake_effectiveness
from lib.llm.gateway import RETRY_SEED_STRIDE, Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply, always


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_dir=tmp_path / "cache")


def digit_logprobs(field, probs):
    """Tokens of '{"<field>": d}' with top_logprobs at the digit from ``probs`` {digit: p}."""
    best = max(probs, key=probs.get)
    return [{"token": f'{{"{field}": ', "logprob": 0.0, "top_logprobs": []},
            {"token": str(best), "logprob": math.log(probs[best]),
             "top_logprobs": [{"token": str(d), "logprob": math.log(p)} for d, p in probs.items()]},
            {"token": "}", "logprob": 0.0, "top_logprobs": []}]


def test_pointwise_relevance_gives_grade_and_expected_grade(tmp_path):
    reply = always('{"grade": 2}', logprobs=digit_logprobs("grade", {2: 0.6, 1: 0.3, 0: 0.1}))
    with FakeOpenAI(reply) as fake:
        [judgment] = relevance.judge_pointwise(gateway_for(fake, tmp_path), [("a nurse", "I am tired.", "Rest.")])
    assert judgment.ok and judgment.grade == 2
    assert judgment.p_grade == pytest.approx((0.1, 0.3, 0.6)) and judgment.expected_grade == pytest.approx(1.5)
    body = fake.requests[0]
    assert body["top_logprobs"] == 5 and body["response_format"]["json_schema"]["schema"]["properties"]["grade"]["enum"] == [0, 1, 2]
    # Shared context before the item, so a pool's calls share the server's cached prefix.
    user = body["messages"][1]["content"]
    assert user.index("I am tired.") < user.index("Rest.")


def test_unparseable_relevance_is_a_failure_not_a_grade(tmp_path):
    with FakeOpenAI(always('{"grade": "very"}')) as fake:
        [judgment] = relevance.judge_pointwise(gateway_for(fake, tmp_path), [("p", "entry", "nudge")])
    assert not judgment.ok and judgment.grade is None and judgment.expected_grade is None
    assert judgment.failure_kind == "schema_violation"


def test_listwise_maps_shuffled_grades_back_to_input_order(tmp_path):
    def responder(body, n):
        # Grade each shown nudge by its text: "good" -> 2, "meh" -> 1, "off" -> 0.
        listing = body["messages"][1]["content"].split("Nudges:\n")[1]
        shown = [line.split('"')[1] for line in listing.splitlines() if line.startswith("[")]
        return Reply(json.dumps({"grades": [{"good": 2, "meh": 1, "off": 0}[t] for t in shown]}))

    outputs = ["good", "off", "meh", "off", "good"]
    with FakeOpenAI(responder) as fake:
        gateway = gateway_for(fake, tmp_path)
        straight = relevance.judge_listwise(gateway, [("p", "e", outputs)])
        shuffled = relevance.judge_listwise(gateway, [("p", "e", outputs)], order_seed=3)
    assert [j.grade for j in straight[0]] == [j.grade for j in shuffled[0]] == [2, 0, 1, 0, 2]
    listing = fake.requests[1]["messages"][1]["content"].split("Nudges:\n")[1]
    shown = [line.split('"')[1] for line in listing.splitlines() if line.startswith("[")]
    assert shown != outputs and sorted(shown) == sorted(outputs)


def test_geval_steps_are_generated_once_and_reused(tmp_path):
    with FakeOpenAI(always("1. Read the entry.\n2. Read the message.\n3. Score it.")) as fake:
        gateway = gateway_for(fake, tmp_path)
        steps = geval.evaluation_steps(geval.CULTURAL_SENSITIVITY, gateway, folder=tmp_path / "steps")
        again = geval.evaluation_steps(geval.CULTURAL_SENSITIVITY, gateway, folder=tmp_path / "steps")
    assert steps == again == "1. Read the entry.\n2. Read the message.\n3. Score it."
    assert len(fake.requests) == 1 and "Evaluation Steps" in fake.requests[0]["messages"][0]["content"]
    assert (tmp_path / "steps" / "CulturalSensitivity.txt").read_text().startswith("1. Read the entry.")


def test_geval_probability_weighted_score(tmp_path):
    reply = always('{"score": 4}', logprobs=digit_logprobs("score", {4: 0.5, 3: 0.25, 5: 0.25}))
    with FakeOpenAI(reply) as fake:
        [result] = geval.geval(geval.CULTURAL_SENSITIVITY, gateway_for(fake, tmp_path), "1. Score.",
                               [("My family needs me.", "Your family matters.")])
    assert result.ok and result.method == "logprobs" and result.argmax == 4
    assert result.score == pytest.approx(4 * 0.5 + 3 * 0.25 + 5 * 0.25)
    system, user = fake.requests[0]["messages"]
    assert "Evaluation Steps:\n\n1. Score." in system["content"]
    assert user["content"].endswith("- CulturalSensitivity (1-5):")


def test_geval_falls_back_to_samples_without_logprobs(tmp_path):
    def responder(body, n):
        return Reply('{"score": 3}') if body.get("temperature") == 0.0 else Reply(
            json.dumps({"score": [2, 4, 4, 5][body["seed"] % 4]}) if body["seed"] % RETRY_SEED_STRIDE != 7 else "broken")

    with FakeOpenAI(responder) as fake:
        [result] = geval.geval(geval.CULTURAL_SENSITIVITY, gateway_for(fake, tmp_path), "1. Score.",
                               [("src", "out")], n_samples=8)
    # seeds 0..7 -> 2,4,4,5,2,4,4,(seed 7 fails in all 3 attempts) -> mean of 7 valid samples
    assert result.ok and result.method == "samples" and result.samples_failed == 1
    assert result.score == pytest.approx((2 + 4 + 4 + 5 + 2 + 4 + 4) / 7) and result.argmax == 4


def test_geval_parse_failure_is_recorded_not_scored(tmp_path):
    with FakeOpenAI(always("I would say four")) as fake:
        [result] = geval.geval(geval.CULTURAL_SENSITIVITY, gateway_for(fake, tmp_path), "1. Score.", [("s", "o")])
    assert not result.ok and result.score is None and result.argmax is None
    assert result.failure_kind == "invalid_json"


@pytest.mark.parametrize("text, word", [
    ("You failed, but tomorrow is new.", "failed"), ("That was a BAD day.", "bad"),
    ("No shame that you gave up early.", "gave up"), ("Every mistake teaches.", "mistake"),
])
def test_banned_shame_word_forces_score_one_without_llm(tmp_path, text, word):
    with FakeOpenAI(always('{"score": 5}')) as fake:
        [result] = geval.geval(geval.TONE_EMPATHY, gateway_for(fake, tmp_path), "1. Score.", [("entry", text)])
    assert (result.ok, result.score, result.method, result.reason) == (True, 1.0, "rule", f"banned word: {word}")
    assert fake.requests == []


@pytest.mark.parametrize("text", ["A badger visited the garden.", "That sounds really hard.", "Unweakened, unfailing."])
def test_banned_words_match_whole_words_only(text):
    assert geval.banned_shame_word(text) is None


def test_registry_holds_both_rubric_metrics():
    assert set(geval.REGISTRY) >= {"ToneEmpathy", "CulturalSensitivity"}
    with pytest.raises(ValueError, match="already registered"):
        geval.register(geval.TONE_EMPATHY)


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
    assert [v.split(":")[0] for v in verdict.violations] == ["invest_everything", "guaranteed_return", "skip_essentials"]


def test_outcome_metrics_treat_missing_action_as_no_data():
    records = [OutcomeRecord("r1", "small", "saved"), OutcomeRecord("r2", "small", "spent"),
               OutcomeRecord("r3", "small", None), OutcomeRecord("r4", "large", "saved"),
               OutcomeRecord("r5", "medium", None)]
    assert [intervention_success(r) for r in records] == [1, 0, None, 1, None]
    table = stake_effectiveness(records)
    assert table["small"] == {"records": 3, "with_data": 2, "success_rate": 0.5, "effectiveness": 0.5 / 0.6}
    assert table["large"]["effectiveness"] == 1.0  # 1.0 / 0.2 capped at 1
    assert table["medium"] == {"records": 1, "with_data": 0, "success_rate": None, "effectiveness": None}
    with pytest.raises(ValueError, match="r9: action must be"):
        intervention_success(OutcomeRecord("r9", "small", "donated"))


def test_geval_results_frame_matches_the_table_schema():
    from lib.tables import SCHEMAS

    frame = geval.results_frame(["a", "b"], {"ToneEmpathy": [
        geval.GEvalResult("ToneEmpathy", True, 3.4, 3, "logprobs"),
        geval.GEvalResult("ToneEmpathy", False, failure_kind="invalid_json")]})
    assert sorted(frame.columns) == sorted(SCHEMAS["geval_scores"])
    assert frame.failed.tolist() == [False, True] and frame.score.isna().tolist() == [False, True]
