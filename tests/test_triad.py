"""The traditional and nuggetized RAG triad against the fake endpoint (weights and normalisation by hand)."""
from __future__ import annotations

import json

import pytest

from lib.judges import triad
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_dir=tmp_path / "cache")


def test_sentences_split_at_sentence_ends_only():
    assert triad.sentences("It costs $3.50 today. Prices rose in 2020! Why? \"Yes.\"") == [
        "It costs $3.50 today.", "Prices rose in 2020!", "Why?", "\"Yes.\""]


def scripted(body, n):
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    listed = user.rsplit("Statements:", 1)[-1]
    count = sum(line.startswith("[") for line in listed.splitlines())
    if "atomic nuggets" in system:
        return Reply(content=json.dumps({"nuggets": ["fact one", "fact two"]}))
    if "vital" in system:
        return Reply(content=json.dumps({"labels": ["vital", "okay"]}))
    if "supports each statement" in system:
        return Reply(content=json.dumps({"scores": [3, 0][:count] if count == 2 else [3] * count}))
    return Reply(content=json.dumps({"scores": [2] * count}))


def test_traditional_triad_averages_and_normalises(tmp_path):
    with FakeOpenAI(scripted) as fake:
        legs = triad.traditional_triad(gateway_for(fake, tmp_path), "q?", "First claim. Second claim.",
                                       ["passage a", "passage b"])
    assert legs["answer_relevance"] == pytest.approx(2 / 3)
    assert legs["context_relevance"] == pytest.approx(2 / 3)
    assert legs["groundedness"] == pytest.approx((3 + 0) / 2 / 3)


def test_traditional_triad_without_context_judges_only_answer_relevance(tmp_path):
    with FakeOpenAI(scripted) as fake:
        legs = triad.traditional_triad(gateway_for(fake, tmp_path), "q?", "An answer.", None)
        sent = len(fake.requests)
    assert legs["context_relevance"] is None and legs["groundedness"] is None and sent == 1


def test_nuggetized_triad_weights_vital_twice(tmp_path):
    with FakeOpenAI(scripted) as fake:
        legs, breakdown = triad.nuggetized_triad(gateway_for(fake, tmp_path), "q?", "An answer.", ["ctx"],
                                                 context_relevance=0.5)
    # groundedness: vital 3, okay 0 -> (2·3 + 1·0) / (3·3) ; relevance: both 2 -> 2/3
    assert legs["groundedness"] == pytest.approx(6 / 9)
    assert legs["answer_relevance"] == pytest.approx(2 / 3)
    assert legs["context_relevance"] == 0.5
    frame = breakdown.frame()
    assert frame.weight.tolist() == [2.0, 1.0] and frame.groundedness.tolist() == [3, 0]


def test_failed_scoring_leaves_the_leg_empty_not_zero(tmp_path):
    def responder(body, n):
        if "atomic nuggets" in body["messages"][0]["content"] or "vital" in body["messages"][0]["content"]:
            return scripted(body, n)
        return Reply(content="{\"scores\": [9]}")
    with FakeOpenAI(responder) as fake:
        legs, _ = triad.nuggetized_triad(gateway_for(fake, tmp_path), "q?", "An answer.", ["ctx"])
    assert legs["groundedness"] is None and legs["answer_relevance"] is None


def test_empty_answer_is_irrelevant_without_a_call(tmp_path):
    with FakeOpenAI(scripted) as fake:
        gw = gateway_for(fake, tmp_path)
        traditional = triad.traditional_triad(gw, "q?", "  ", None)
        nuggetized, breakdown = triad.nuggetized_triad(gw, "q?", "", None)
        sent = len(fake.requests)
    assert traditional["answer_relevance"] == 0.0 and nuggetized["answer_relevance"] == 0.0
    assert nuggetized["groundedness"] is None and breakdown.nuggets == [] and sent == 0
