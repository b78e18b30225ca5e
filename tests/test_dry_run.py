"""The dry run: the fake endpoint answers every kind of request the study makes validly (and as the chapters read
it), and the driver records each chapter's calls from its ledgers in the shape ``make plan`` reads, or stops
naming the chapter that failed."""
from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from lib import prompts
from lib.crs.judge import ConversationRubric
from lib.crs.simulator import UserUtterance
from lib.crs.systems import LLMRecommendation, recommend_messages
from lib.judges.bias import PAIR_PREFILL, PreferenceOrTie, verdict_probabilities
from lib.judges.geval import SCORE_PREFILL, score_schema
from lib.judges.logprobs import label_distributions, score_distribution, weighted_fields
from lib.judges.relevance import GRADE_PREFILL, Grade, grade_schema
from lib.llm.gateway import Endpoint, Gateway, LLMCall
from lib.monitor import MonitorScores
from lib.nudges import candidate_set_schema
from lib.nuggets import ASSIGNMENT_LABELS, creation_messages, labels_schema, nugget_list_schema, sentences
from lib.tools import dry_run, profiles
from lib.tools.fake_endpoint import FakeEndpoint, UnanswerableRequest, answer
from tests.crs_tiny import tiny_universe

USER = [{"role": "user", "content": "Is the passage about coral reefs relevant to how reefs bleach in warm water?"}]
SOURCES = ["Coral bleaches when the water is too warm. The algae leave the coral.",
           "Reefs cover one percent of the sea."]


def body_of(call: LLMCall) -> dict:
    return call.body("fake", 1)


def validated(call: LLMCall):
    """The fake's answer to ``call`` validated as the gateway validates it (prefill + continuation)."""
    content, logprobs = answer(body_of(call))
    assert call.schema is not None
    return call.schema.model_validate_json((call.prefill or "") + content), logprobs


@pytest.mark.parametrize("schema", [candidate_set_schema(5), nugget_list_schema(10),
                                    labels_schema(("vital", "okay"), 3), labels_schema(ASSIGNMENT_LABELS[3], 4),
                                    MonitorScores, ConversationRubric, UserUtterance, LLMRecommendation],
                         ids=lambda s: s.__name__)
def test_schema_answers_are_valid(schema):
    # the semantic schemas need their prompt's parts; every other is answered from its schema alone
    messages = {"NuggetList10": creation_messages("why do reefs bleach?", SOURCES, [], 10),
                "UserUtterance": [{"role": "user", "content": prompts.parts("crs_user_utterance", 2)[1].format(
                    wishes="comedy (genre); Tom Hanks (star)", situation="first turn")}],
                "LLMRecommendation": recommend_messages([], ["1", "2", "3"], "something fun", tiny_universe())}
    value, _ = validated(LLMCall(messages.get(schema.__name__, USER), schema))
    assert isinstance(value, schema)


def test_graded_fields_carry_logprobs_the_readers_use():
    for scale in [(0, 1, 2), (0, 1, 2, 3)]:
        value, logprobs = validated(LLMCall(USER, grade_schema(scale), prefill=GRADE_PREFILL, top_logprobs=5))
        dist = score_distribution(logprobs, "grade", list(scale), prefill=GRADE_PREFILL)
        assert value.grade in scale and dist is not None and max(dist, key=lambda g: dist[g]) == value.grade
    for low, high in [(1, 3), (1, 5)]:
        value, logprobs = validated(LLMCall(USER, score_schema(low, high), prefill=SCORE_PREFILL, top_logprobs=5))
        assert score_distribution(logprobs, "score", list(range(low, high + 1)), prefill=SCORE_PREFILL) is not None
    value, logprobs = validated(LLMCall(USER, PreferenceOrTie, prefill=PAIR_PREFILL, top_logprobs=5))
    probabilities = verdict_probabilities(logprobs)
    assert probabilities is not None and max(probabilities, key=lambda v: probabilities[v]) == value.better
    value, logprobs = validated(LLMCall(USER, MonitorScores, top_logprobs=5))
    assert weighted_fields(value, logprobs, list(MonitorScores.model_fields), [0, 1, 2, 3])[1] == "logprobs"
    value, logprobs = validated(LLMCall(USER, labels_schema(("vital", "okay"), 4), top_logprobs=5))
    distributions = label_distributions(logprobs, ("vital", "okay"), value.labels)
    assert all(d is not None and max(d, key=lambda label: d[label]) == written
               for d, written in zip(distributions, value.labels, strict=True))


def test_answers_are_deterministic_per_request_and_vary_between_requests():
    calls = [LLMCall(USER, Grade, prefill=GRADE_PREFILL, top_logprobs=5, seed=seed) for seed in range(20)]
    assert answer(body_of(calls[0])) == answer(body_of(calls[0]))
    # the OpenAI user field (a drift rerun's replicate label) is read by no server, so it changes no answer
    assert answer({**body_of(calls[0]), "user": "drift rerun"}) == answer(body_of(calls[0]))
    assert len({json.dumps(answer(body_of(c))[1]) for c in calls}) == 20  # p(g) differs between requests


def test_answers_that_must_come_from_the_prompt_do():
    shown = sentences(" ".join(SOURCES))
    nuggets, _ = validated(LLMCall(creation_messages("why do reefs bleach?", SOURCES, ["warm water"], 10),
                                   nugget_list_schema(10)))
    assert nuggets.nuggets[0] == "warm water" and set(nuggets.nuggets[1:]) <= set(shown) and len(nuggets.nuggets) > 1
    universe = tiny_universe()
    pick, _ = validated(LLMCall(recommend_messages([], ["1", "2", "3"], "anything", universe), LLMRecommendation))
    assert set(pick.titles) <= {"Heat (1995)", "Big (1988)", "Splash (1984)"}
    turn, _ = validated(LLMCall([{"role": "user", "content": "Wishes: comedy (genre); Tom Hanks (star)\nfirst"}],
                                UserUtterance))
    assert "comedy" in turn.text and "Tom Hanks" in turn.text


def test_an_unknown_prefill_is_refused_over_http(tmp_path):
    call = LLMCall(USER, Grade, prefill='{"verdict": ')
    with pytest.raises(UnanswerableRequest):
        answer(body_of(call))
    with FakeEndpoint() as fake, Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False),
                                         cache_path=tmp_path / "cache.sqlite") as gateway:
        good = gateway.complete(USER, Grade, prefill=GRADE_PREFILL, top_logprobs=5)
        with pytest.raises(Exception, match="dry-run fake"):
            gateway.complete(USER, Grade, prefill='{"verdict": ')
    assert good.ok and good.logprobs and fake.requests == 2


def test_ledger_totals_sum_a_chapter_and_its_side_ledgers_only(tmp_path):
    for name, calls, failures in [("07_x", 5, {"timeout": 1}), ("07_x-drift-c1", 2, {}), ("07_xy", 100, {})]:
        (tmp_path / f"{name}.json").write_text(json.dumps({"calls": calls, "requests": calls + 1,
                                                           "failures": failures, "prompt_tokens": 10 * calls,
                                                           "completion_tokens": calls}))
    assert profiles.ledger_totals("07_x", tmp_path) == {"calls": 7, "requests": 9, "failures": 1,
                                                        "prompt_tokens": 70, "completion_tokens": 7}


def notebook(path: Path, code: str) -> None:
    parameters = nbformat.v4.new_code_cell("n_calls = 1")
    parameters.metadata["tags"] = ["parameters"]
    nbformat.write(nbformat.v4.new_notebook(cells=[parameters, nbformat.v4.new_code_cell(code)], metadata={
        "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
        "language_info": {"name": "python"}}), path)


CALLING = """
from lib.judges.relevance import GRADE_PREFILL, Grade
from lib.llm.gateway import Gateway
with Gateway.from_env("01_tiny", role="judge") as gateway:
    for i in range(n_calls):
        assert gateway.complete([{"role": "user", "content": f"item {i}"}], Grade, prefill=GRADE_PREFILL).ok
    gateway.save_ledger()
"""


def test_record_counts_each_chapters_calls_in_the_shape_plan_reads(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook(notebooks / "01_tiny.ipynb", CALLING)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"01_tiny": {"n_calls": 2}}))
    (tmp_path / "params.small.yaml").write_text(yaml.safe_dump({"01_tiny": {"n_calls": 3}}))
    record = dry_run.dry_run("small", notebooks, params, committed=tmp_path / "none")
    row = record["chapters"]["01_tiny"]
    assert (row["calls"], row["requests"], row["http_requests"], row["failures"]) == (3, 3, 3, 0)
    assert row["wall_s"] > 0 and row["peak_rss_mib"] > 50  # a notebook kernel's, not the driver's
    assert {"profile", "parameters_sha256", "date", "cpus", "chapters"} <= set(record)
    dry_run.write_record(record, tmp_path / "profiles", ["01_tiny"])
    frame, source = profiles.plan(["01_tiny"], "small", 10.0, params, profiles=tmp_path / "profiles",
                                  bench=tmp_path / "none")
    assert frame.set_index("chapter").at["01_tiny", "LLM calls"] == 3 and "STALE" not in source


def test_a_failing_chapter_stops_the_run_naming_it(tmp_path, capsys):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook(notebooks / "01_tiny.ipynb", CALLING)
    notebook(notebooks / "02_broken.ipynb", "raise ValueError('broken on purpose')")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"01_tiny": {"n_calls": 1}}))
    with pytest.raises(SystemExit) as stopped:
        dry_run.main(["--notebooks", str(notebooks), "--params", str(params)])
    assert stopped.value.code == 1
    error = capsys.readouterr().err
    assert "chapter 02_broken failed" in error and "broken on purpose" in error


def test_a_chapter_past_the_limit_is_stopped_into_a_partial_record(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook(notebooks / "01_slow.ipynb", "import time\ntime.sleep(120)")
    params = tmp_path / "params.yaml"
    params.write_text("{}")
    started = time.monotonic()
    with pytest.raises(dry_run.ChapterStopped, match="chapter 01_slow stopped") as stopped:
        dry_run.dry_run(None, notebooks, params, committed=tmp_path / "none", limit_s=8)
    assert time.monotonic() - started < 60  # the kernel was stopped with its pipeline, not waited for
    assert stopped.value.record["chapters"]["01_slow"]["stopped_after_s"] >= 8
    path = dry_run.write_record(stopped.value.record, tmp_path / "profiles")
    assert path.name == "default.partial.json" and profiles.read_record("default", tmp_path / "profiles") is None


def test_records_of_some_chapters_join_into_a_complete_one(tmp_path):
    def record(rows, digest="same"):
        return {"profile": "full", "parameters_sha256": digest, "date": "2026-11-24", "cpus": 2, "chapters": rows,
                "complete": False}

    chapters = ["01_a", "02_b", "03_c"]
    stopped = dry_run.write_record(record({"01_a": {"calls": 1}, "02_b": {"stopped_after_s": 60.0}}), tmp_path,
                                   chapters)
    assert stopped.name == "full.partial.json"
    dry_run.write_record(record({"03_c": {"calls": 3}}, digest="other"), tmp_path, chapters)
    assert set(json.loads(stopped.read_text())["chapters"]) == {"03_c"}  # other parameters: nothing joined
    dry_run.write_record(record({"01_a": {"calls": 1}, "02_b": {"stopped_after_s": 60.0}}), tmp_path, chapters)
    assert dry_run.write_record(record({"03_c": {"calls": 3}}), tmp_path, chapters) == stopped  # 02_b stopped
    done = dry_run.write_record(record({"02_b": {"calls": 2}}), tmp_path, chapters)
    assert done.name == "full.json" and not stopped.exists()
    assert json.loads(done.read_text())["complete"] and set(json.loads(done.read_text())["chapters"]) == set(chapters)
