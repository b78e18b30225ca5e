"""Probability-weighted scores on hand-made logprob lists."""
from __future__ import annotations

import math

import pytest

from lib.judges.logprobs import expected_score, score_distribution, value_token_index


def tok(token, alternatives=()):
    return {"token": token, "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives]}


ANSWER = [tok("{"), tok(' "'), tok("score"), tok('":'), tok(" "),
          tok("3", [("3", math.log(0.5)), ("4", math.log(0.3)), ("x", math.log(0.1)), ("9", math.log(0.1))]),
          tok(" }")]


def test_value_position_is_found_after_the_field_name():
    assert value_token_index(ANSWER, "score") == 5
    assert value_token_index(ANSWER, "grade") is None


def test_distribution_renormalises_over_allowed_scores_only():
    dist = score_distribution(ANSWER, "score", [1, 2, 3, 4, 5])
    assert dist is not None
    # allowed tokens present: 3 (0.5) and 4 (0.3); '9' and 'x' are not allowed
    assert dist == pytest.approx({1: 0, 2: 0, 3: 0.625, 4: 0.375, 5: 0})
    assert expected_score(dist) == pytest.approx(3 * 0.625 + 4 * 0.375)


def test_same_score_in_two_token_forms_adds_up():
    answer = [tok('{"grade":'), tok("2", [("2", math.log(0.4)), (" 2", math.log(0.2)), ("0", math.log(0.2))]),
              tok("}")]
    dist = score_distribution(answer, "grade", [0, 1, 2])
    assert dist is not None and dist == pytest.approx({0: 0.25, 1: 0.0, 2: 0.75})
    assert expected_score(dist) == pytest.approx(1.5)


@pytest.mark.parametrize("tokens", [None, [], [tok('{"score":'), tok("7", [("7", -0.1), ("8", -2.0)])]])
def test_no_usable_logprobs_gives_none_not_a_default(tokens):
    assert score_distribution(tokens, "score", [1, 2, 3, 4, 5]) is None


def test_after_a_prefill_the_value_is_the_first_generated_token():
    continuation = [tok("1", [("1", math.log(0.6)), ("2", math.log(0.2)), ("0", math.log(0.2))]), tok("}")]
    assert value_token_index(continuation, "grade") is None  # without the prefill there is no field name
    assert value_token_index(continuation, "grade", prefill='{"grade": ') == 0
    dist = score_distribution(continuation, "grade", [0, 1, 2], prefill='{"grade": ')
    assert dist == pytest.approx({0: 0.2, 1: 0.6, 2: 0.2})


def test_weighted_fields_reads_every_field_or_none():
    import math
    from types import SimpleNamespace

    from lib.judges.logprobs import weighted_fields

    value = SimpleNamespace(a=3, b=1)
    pieces = [('{"a": ', []), ("3", [("3", 0.75), ("1", 0.25)]), (', "b": ', []), ("1", [("1", 1.0)]), ("}", [])]
    tokens = [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": d, "logprob": math.log(p)} for d, p in top]}
              for t, top in pieces]
    scores, how = weighted_fields(value, tokens, ["a", "b"], [1, 2, 3])
    assert how == "logprobs" and scores == {"a": pytest.approx(2.5), "b": pytest.approx(1.0)}
    scores, how = weighted_fields(value, tokens[:2], ["a", "b"], [1, 2, 3])  # b has no logprobs: no mixing
    assert how == "argmax" and scores == {"a": 3.0, "b": 1.0}


LABELS = ("vital", "okay")


def test_label_distributions_read_each_label_at_its_own_token():
    from lib.judges.logprobs import label_distributions

    # the second label's token carries the opening quote and a space before it; its alternatives must too
    tokens = [tok('{"labels": ["'), tok("okay", [("okay", math.log(0.6)), ("vital", math.log(0.3)), ("{", -5.0)]),
              tok('",'), tok(' "v', [(' "v', math.log(0.8)), (' "ok', math.log(0.2)), ("v", math.log(0.5))]),
              tok('ital"]}')]
    first, second = label_distributions(tokens, LABELS, ["okay", "vital"])
    assert first == pytest.approx({"vital": 1 / 3, "okay": 2 / 3})
    assert second == pytest.approx({"vital": 0.8, "okay": 0.2})  # "v" without the quote starts no label here


def test_label_distributions_are_none_without_logprobs_or_a_label_alternative():
    from lib.judges.logprobs import label_distributions

    assert label_distributions(None, LABELS, ["okay"]) == [None]
    tokens = [tok('{"labels": ["'), tok("okay", [("x", -0.1)]), tok('"]}')]
    assert label_distributions(tokens, LABELS, ["okay"]) == [None]
    assert label_distributions(tokens, LABELS, ["vital"]) == [None]  # no such label written
