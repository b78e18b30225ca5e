"""AutoNuggetizer steps against the fake endpoint, and the score formulas on hand-made assignments."""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from lib import nuggets as nug
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply, always, sequence


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=tmp_path / "cache.sqlite")


def user_text(body):
    return body["messages"][-1]["content"]


# --- score formulas (hand-computed) -------------------------------------------------------------------------

def test_scores_with_partial_support_by_hand():
    # nuggets: vital S, vital P, vital N, okay S, okay N
    assignment = ["support", "partial_support", "not_support", "support", "not_support"]
    importance = ["vital", "vital", "vital", "okay", "okay"]
    s = nug.answer_scores(assignment, importance)
    assert s["strict_vital"] == pytest.approx(1 / 3)
    assert s["vital"] == pytest.approx(1.5 / 3)
    assert s["strict_all"] == pytest.approx(2 / 5)
    assert s["all"] == pytest.approx(2.5 / 5)
    # weighted: (1·1 + 1·0.5 + 1·0 + 0.5·1 + 0.5·0) / (3·1 + 2·0.5) = 2 / 4
    assert s["weighted"] == pytest.approx(0.5)


def test_no_vital_nugget_gives_no_vital_score_not_zero():
    s = nug.answer_scores(["support", "not_support"], ["okay", "okay"])
    assert s["strict_vital"] is None and s["vital"] is None
    assert s["all"] == pytest.approx(0.5) and s["weighted"] == pytest.approx(0.5)


def test_failed_batch_leaves_the_answer_without_scores():
    s = nug.answer_scores(["support", None], ["vital", "okay"])
    assert all(v is None for v in s.values())


def test_missing_importance_leaves_only_the_importance_free_scores():
    s = nug.answer_scores(["support", "not_support"], ["vital", None])
    assert s["strict_all"] == pytest.approx(0.5) and s["all"] == pytest.approx(0.5)
    assert s["vital"] is None and s["weighted"] is None


def test_labels_and_nuggets_of_different_length_are_an_error():
    with pytest.raises(ValueError, match="2 support labels for 3 nuggets"):
        nug.answer_scores(["support", "support"], ["vital"] * 3)


def test_system_means_macro_average_and_counts():
    frame = pd.DataFrame({"system": ["a", "a", "a", "b"], "qid": ["1", "2", "3", "1"],
                          "strict_vital": [1.0, 0.0, None, 0.5], "vital": [1.0, 0.5, None, 0.5],
                          "strict_all": [0.5, 0.0, None, 1.0], "all": [0.5, 0.25, None, 1.0],
                          "weighted": [0.6, 0.2, None, 0.9]})
    out = nug.system_means(frame)
    assert out.loc["a", "vital"] == pytest.approx(0.75)
    assert out.loc["a", "n_vital"] == 2 and out.loc["a", "answers"] == 3
    assert out.loc["b", "weighted"] == pytest.approx(0.9)


# --- LLM steps against the fake endpoint ---------------------------------------------------------------------

def test_assignment_batch_of_wrong_length_is_a_recorded_failure(tmp_path):
    # 12 nuggets -> batches of 10 and 2; the first answer has 9 labels (schema violation, every attempt).
    def responder(body, n):
        listed = user_text(body).rsplit("Nuggets:", 1)[-1]
        count = sum(line.startswith("[") for line in listed.splitlines())
        k = 9 if count == 10 else count
        return Reply(content=json.dumps({"labels": ["support"] * k}))

    with FakeOpenAI(responder) as fake:
        labels, failures = nug.assign(gateway_for(fake, tmp_path), "q", "answer", [f"n{i}" for i in range(12)])
    assert labels[:10] == [None] * 10 and labels[10:] == ["support", "support"]
    assert len(failures) == 1 and failures[0].failure_kind == "schema_violation"
    assert failures[0].positions == tuple(range(10))
    assert nug.answer_scores(labels, ["vital"] * 12)["all"] is None


def test_assignment_schema_asks_for_exactly_n_labels_and_the_2grade_labels(tmp_path):
    with FakeOpenAI(always(json.dumps({"labels": ["support", "not_support"]}))) as fake:
        labels, failures = nug.assign(gateway_for(fake, tmp_path), "q", "a", ["x", "y"], grades=2)
        schema = fake.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["labels"]
    assert labels == ["support", "not_support"] and not failures
    assert schema["minItems"] == schema["maxItems"] == 2
    assert schema["items"]["enum"] == ["support", "not_support"]


def test_importance_label_outside_the_scale_is_a_failure_not_okay(tmp_path):
    with FakeOpenAI(always(json.dumps({"labels": ["vital", "important"]}))) as fake:
        found = nug.label_importance(gateway_for(fake, tmp_path), "q", ["a", "b"])
    assert found.labels == [None, None] and found.failures[0].step == "importance"
    assert found.probability("vital") == [None, None]


def test_importance_reads_p_vital_from_the_same_answer(tmp_path):
    tokens = [{"token": '{"labels": ["', "logprob": 0.0, "top_logprobs": []},
              {"token": "okay", "logprob": math.log(0.7),
               "top_logprobs": [{"token": "okay", "logprob": math.log(0.7)}, {"token": "v", "logprob": math.log(0.2)},
                                {"token": "x", "logprob": math.log(0.1)}]},
              {"token": '", "', "logprob": 0.0, "top_logprobs": []},
              {"token": "vital", "logprob": 0.0, "top_logprobs": [{"token": "vital", "logprob": 0.0}]},
              {"token": '"]}', "logprob": 0.0, "top_logprobs": []}]
    with FakeOpenAI(always(json.dumps({"labels": ["okay", "vital"]}), logprobs=tokens)) as fake:
        found = nug.label_importance(gateway_for(fake, tmp_path), "q", ["a", "b"])
        assert fake.requests[0]["top_logprobs"] == nug.IMPORTANCE_TOP_LOGPROBS
    assert found.labels == ["okay", "vital"]
    assert found.probability("vital") == pytest.approx([0.2 / 0.9, 1.0])  # "x" names no label
    with pytest.raises(ValueError, match="without logprobs"):
        nug.Labelled(["okay"], []).probability("vital")


def test_importance_of_several_lists_sends_the_requests_of_one_list_at_a_time(tmp_path):
    def reply(body, n):  # the query decides the labels, so each list's answer is told apart
        count = user_text(body).count("\n[")
        label = "vital" if "first query" in user_text(body) else "okay"
        return Reply(content=json.dumps({"labels": [label] * count}))

    lists = [("first query", ["a", "b"], "one"), ("second query", ["c"], "two")]
    with FakeOpenAI(reply) as fake:
        together = nug.label_importance_many(gateway_for(fake, tmp_path / "together"), lists)
        sent_together = sorted(json.dumps(r["messages"]) for r in fake.requests)
        fake.requests.clear()
        alone = [nug.label_importance(gateway_for(fake, tmp_path / "alone"), q, n, call_label=c) for q, n, c in lists]
        sent_alone = sorted(json.dumps(r["messages"]) for r in fake.requests)
    assert sent_together == sent_alone and len(sent_alone) == 2
    assert [t.labels for t in together] == [a.labels for a in alone] == [["vital", "vital"], ["okay"]]


def word_embed(texts):
    """A small stand-in for MiniLM: unit bag-of-words vectors (a word's dimension from its SHA-256), so texts
    sharing most words are near-duplicates and texts sharing none have cosine 0."""
    vectors = np.zeros((len(texts), 512))
    for row, text in enumerate(texts):
        for word in text.lower().replace(".", " ").split():
            vectors[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 512] += 1
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def create(fake, tmp_path, sources, **options):
    return nug.create_nuggets(gateway_for(fake, tmp_path), "why do cubs fans wait", sources, embed=word_embed,
                              **options)


SOURCE = "The Cubs won the World Series in 1908. They won again in 2016 after a long wait."


def test_creation_rewrites_the_whole_list_and_stops_when_a_pass_changes_nothing(tmp_path):
    # one window; call 1 writes two nuggets, call 2 edits one (the list is replaced, not appended to), call 3
    # returns the same set in another order -> unchanged after pass 3
    first = ["cubs won the world series in 1908", "cubs won in 2016"]
    replies = sequence(Reply(content=json.dumps({"nuggets": first})),
                       Reply(content=json.dumps({"nuggets": ["cubs won the world series in 1908",
                                                             "cubs won again in 2016 after a long wait"]})),
                       Reply(content=json.dumps({"nuggets": ["cubs won again in 2016 after a long wait",
                                                             "Cubs won the World Series in 1908."]})),
                       Reply(content=json.dumps({"nuggets": ["never asked"]})))
    with FakeOpenAI(replies) as fake:
        created = create(fake, tmp_path, [SOURCE, "  "], max_passes=5)
        second_prompt = user_text(fake.requests[1])
        sent = len(fake.requests)
    assert created.nuggets == ["cubs won again in 2016 after a long wait", "Cubs won the World Series in 1908."]
    assert created.stopped == "unchanged" and created.calls == created.passes == sent == 3
    assert "[1] cubs won the world series in 1908\n[2] cubs won in 2016" in second_prompt  # the current list
    assert "[2]" not in second_prompt.split("Current list")[0].split("Texts:")[1]  # the empty source is not sent


def test_creation_merges_near_duplicates_into_the_first(tmp_path):
    # the 2nd nugget shares 6 of its 7 words with the 1st (cosine 0.93 >= 0.8); the 3rd shares 2 (< 0.8)
    reply = {"nuggets": ["the cubs won the world series in 1908", "the cubs won the series in 1908",
                         "cubs won in 2016", "cubs won in 2016."]}
    with FakeOpenAI(always(json.dumps(reply))) as fake:
        created = create(fake, tmp_path, [SOURCE], max_passes=1)
    assert created.nuggets == ["the cubs won the world series in 1908", "cubs won in 2016"]
    assert created.merged == 2 and created.unsupported == 0 and created.stopped == "pass_limit"


def test_refusal_or_empty_sources_yield_no_nuggets(tmp_path):
    refusal = "There are no search results that provide an answer to the question."
    # beside a real answer, the model copies the refusal and invents a fact: neither is kept
    reply = {"nuggets": ["There are no search results that provide an answer to the question",
                         "urination can trigger arousal", "the cubs won the world series in 1908"]}
    with FakeOpenAI(always(json.dumps(reply))) as fake:
        created = create(fake, tmp_path, [refusal, SOURCE], max_passes=1)
        only_refusal = create(fake, tmp_path, [refusal, "  "])
        with_empty = create(fake, tmp_path, ["", "   "])
        sent = len(fake.requests)
    assert created.nuggets == ["the cubs won the world series in 1908"] and created.unsupported == 2
    assert only_refusal.nuggets == [] and only_refusal.stopped == "no_sources" and only_refusal.calls == 0
    assert with_empty.nuggets == [] and with_empty.stopped == "no_sources" and with_empty.calls == 0
    assert sent == 1  # nothing is sent for a refusal alone or for empty sources


def test_fact_sentences_leave_out_refusals():
    facts, vectors = nug.fact_sentences(["I cannot answer this question based on the provided documents. The Cubs "
                                         "won in 1908."], word_embed)
    assert facts == ["The Cubs won in 1908."] and vectors.shape == (1, 512)


def test_creation_stops_at_the_cap_and_keeps_long_nuggets_whole(tmp_path):
    long_nugget = "the cubs won the world series in 1908 and then waited until 2016 again"  # 14 words, not cut
    with FakeOpenAI(always(json.dumps({"nuggets": [long_nugget, "cubs won in 2016"]}))) as fake:
        created = create(fake, tmp_path, [SOURCE] * 25, max_nuggets=2)  # 3 windows; the first fills the list
        sent = len(fake.requests)
        schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert created.nuggets == [long_nugget, "cubs won in 2016"] and created.over_length == 1
    assert created.stopped == "cap" and created.calls == sent == 3  # a pass reads every window once
    assert schema["properties"]["nuggets"]["maxItems"] == 2 and "maxLength" not in json.dumps(schema)


def test_failed_creation_call_is_recorded_and_keeps_the_list(tmp_path):
    replies = sequence(Reply(content=json.dumps({"nuggets": ["cubs won in 2016"]})), Reply(content="not json"),
                       Reply(content="not json"), Reply(content="not json"),
                       Reply(content=json.dumps({"nuggets": ["cubs won in 2016"]})))
    with FakeOpenAI(replies) as fake:
        created = create(fake, tmp_path, [SOURCE] * 11, max_passes=2)  # 2 windows
    assert created.nuggets == ["cubs won in 2016"] and len(created.failures) == 1
    assert created.failures[0].positions == (10,) and created.stopped == "unchanged"


def test_embedding_match_is_the_best_cosine():
    auto = np.array([[1.0, 0.0], [0.0, 1.0]])
    ref = np.array([[0.6, 0.8], [1.0, 0.0]])
    assert nug.embedding_match(auto, ref).tolist() == pytest.approx([0.8, 1.0])
    assert nug.embedding_match(np.zeros((0, 2)), ref).tolist() == [0.0, 0.0]


def test_sentences_split_at_sentence_ends_only():
    assert nug.sentences("It costs $3.50 today. Prices rose in 2020! Why? \"Yes.\"") == [
        "It costs $3.50 today.", "Prices rose in 2020!", "Why?", "\"Yes.\""]
