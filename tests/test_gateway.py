"""The LLM gateway against a fake OpenAI-compatible server over real HTTP on 127.0.0.1."""
from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from lib import paths
from lib.llm.cache import ResponseCache, request_key
from lib.llm.gateway import (
    RETRY_SEED_STRIDE,
    CacheMissError,
    Endpoint,
    EndpointUnreachable,
    Gateway,
    LLMCall,
    SenderPool,
    TransportFailure,
    _shared_prefix_chars,
    prefix_groups,
)
from tests.fakes import FakeOpenAI, Reply, always, free_port, sequence

SECRET = "fake-api-key-THISMUSTNEVERLEAK-0123456789"
MESSAGES = [{"role": "user", "content": "Rate it."}]


class Score(BaseModel):
    score: int = Field(ge=1, le=5)


def make_gateway(url: str, folder: Path, **kwargs) -> Gateway:
    """A gateway on the fake endpoint ``url`` with its cache in ``folder`` (``cache_of(folder)``)."""
    endpoint = Endpoint(base_url=url, model="fake-model", identity="fake-model", embedded=False,
                        api_key=kwargs.pop("api_key", None))
    return Gateway(endpoint, cache_path=cache_of(folder).path, notebook="test_nb", **kwargs)


def cache_of(folder: Path) -> ResponseCache:
    return ResponseCache(folder / "llm-cache.sqlite")


def test_cache_miss_then_hit(tmp_path):
    with FakeOpenAI(always('{"score": 4}')) as fake:
        gateway = make_gateway(fake.base_url, tmp_path)
        first = gateway.complete(MESSAGES, Score, call_label="rate")
        second = gateway.complete(MESSAGES, Score, call_label="rate")
    assert first.ok and second.ok and first.value == second.value == Score(score=4)
    assert len(fake.requests) == 1
    assert (gateway.ledger.cache_hits, gateway.ledger.live_requests, gateway.ledger.calls) == (1, 1, 2)
    assert gateway.ledger.prompt_tokens == 20 and gateway.ledger.completion_tokens == 10


def test_cache_key_covers_model_params_and_schema(tmp_path):
    with FakeOpenAI(always('{"score": 4}')) as fake:
        gateway = make_gateway(fake.base_url, tmp_path)
        gateway.complete(MESSAGES, Score)
        gateway.complete(MESSAGES, Score, temperature=0.7)
        gateway.complete(MESSAGES, None)
        gateway.complete(MESSAGES, Score, top_logprobs=5)
    assert len(fake.requests) == 4
    # The stored request names the model identity, not the endpoint's model alias.
    stored = dict(cache_of(tmp_path).items())
    assert len(stored) == 4 and all(e["request"]["model"] == "fake-model" for e in stored.values())
    assert {request_key(e["request"]) for e in stored.values()} == set(stored)


def test_replay_serves_cache_without_endpoint_and_names_call_on_miss(tmp_path):
    with FakeOpenAI(always('{"score": 2}')) as fake:
        make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score, call_label="rate")
    replay = make_gateway(fake.base_url, tmp_path, mode="replay")  # the fake server is down now
    assert replay.complete(MESSAGES, Score, call_label="rate").value == Score(score=2)
    with pytest.raises(CacheMissError, match=r"call 'other' of notebook 'test_nb'.*LLM_MODE=live"):
        replay.complete([{"role": "user", "content": "new"}], Score, call_label="other")


def test_invalid_json_is_retried_with_the_original_messages_and_the_next_seed(tmp_path):
    with FakeOpenAI(sequence(Reply("not json at all"), Reply('{"score": 3}'))) as fake:
        result = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score, call_label="rate", seed=7)
    assert result.ok and result.value.score == 3 and result.attempts == 2
    # The model never sees its broken answer: same messages, another seed.
    assert [r["messages"] for r in fake.requests] == [MESSAGES, MESSAGES]
    assert [r["seed"] for r in fake.requests] == [7, 7 + RETRY_SEED_STRIDE]
    assert [(a.seed, a.failure_kind) for a in result.attempt_log] == [(7, "invalid_json"),
                                                                      (7 + RETRY_SEED_STRIDE, None)]
    assert fake.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["score"]["maximum"] == 5


@pytest.mark.parametrize("reply, kind", [
    (Reply("{\"score\": "), "invalid_json"),
    (Reply('{"score": 9}'), "schema_violation"),
    (Reply('{"score": 3', finish_reason="length"), "truncated"),
])
def test_failure_is_recorded_after_bounded_retries_never_a_default(tmp_path, reply, kind):
    with FakeOpenAI(always(reply.content, finish_reason=reply.finish_reason)) as fake:
        gateway = make_gateway(fake.base_url, tmp_path)
        result = gateway.complete(MESSAGES, Score, max_attempts=3)
    assert not result.ok and result.value is None and result.failure_kind == kind
    assert result.attempts == 3 and len(fake.requests) == 3
    assert gateway.ledger.failures == {kind: 1} and gateway.ledger.retries == 2
    assert f"{kind}: 1" in gateway.ledger.report()


def test_complete_json_stopped_by_max_tokens_is_accepted(tmp_path):
    with FakeOpenAI(always('{"score": 2}', finish_reason="length")) as fake:
        result = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score)
    assert result.ok and result.value.score == 2 and len(fake.requests) == 1


def test_failed_call_replays_as_the_same_failure(tmp_path):
    with FakeOpenAI(always("nope")) as fake:
        live = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score)
    replayed = make_gateway(fake.base_url, tmp_path, mode="replay").complete(MESSAGES, Score)
    assert (live.ok, live.failure_kind, live.attempts) == (replayed.ok, replayed.failure_kind, replayed.attempts) \
        == (False, "invalid_json", 3)


def test_logprobs_are_requested_and_returned(tmp_path):
    content = [{"token": "4", "logprob": -0.1, "top_logprobs": [{"token": "4", "logprob": -0.1},
                                                                 {"token": "3", "logprob": -2.4}]}]
    with FakeOpenAI(always('{"score": 4}', logprobs=content)) as fake:
        result = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score, top_logprobs=2)
    assert fake.requests[0]["logprobs"] is True and fake.requests[0]["top_logprobs"] == 2
    assert result.logprobs == content


def test_server_errors_are_retried_then_reported(tmp_path, monkeypatch):
    monkeypatch.setattr("openai._base_client.time.sleep", lambda s: None)
    with FakeOpenAI(sequence(Reply(status=503, error_body="busy"), Reply('{"score": 1}'))) as fake:
        assert make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score).value.score == 1
    with (FakeOpenAI(always("", status=400, error_body="bad request: unknown field")) as fake,
          pytest.raises(RuntimeError, match="HTTP 400: bad request")):
        make_gateway(fake.base_url, tmp_path / "x").complete(MESSAGES, Score)
    assert len(fake.requests) == 1  # a 4xx is not retried


def test_endpoint_down_gives_one_actionable_line_quickly(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    gateway = make_gateway(url, tmp_path)
    start = time.monotonic()
    with pytest.raises(EndpointUnreachable) as info:
        gateway.complete(MESSAGES, Score)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert url in message and "OPENAI_BASE_URL" in message and "\n" not in message
    embedded = Gateway(Endpoint(url, "m", "m", embedded=True), cache_path=cache_of(tmp_path).path)
    assert "make serve" in str(embedded._unreachable())


def test_api_key_is_sent_but_never_stored_printed_or_raised(tmp_path):
    def responder(body, n):
        if n == 0:
            return Reply('{"score": 5}')
        # A misbehaving server that echoes the Authorization header in its error body.
        return Reply(status=401, error_body=f"invalid key {fake.headers[n]['authorization']}")

    with FakeOpenAI(responder) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, api_key=SECRET)
        gateway.complete(MESSAGES, Score)
        with pytest.raises(RuntimeError) as info:
            gateway.complete([{"role": "user", "content": "again"}], Score)
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(info.value) and "***" in str(info.value)
    texts = [repr(gateway), repr(gateway.endpoint), gateway.ledger.report(), str(gateway.ledger.as_dict())]
    texts += [p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file()]
    texts += [json.dumps(entry) for _, entry in cache_of(tmp_path).items()]  # the stored entries, uncompressed
    assert texts and not any(SECRET in t for t in texts)


def test_endpoint_from_env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    embedded = Endpoint.from_env()
    assert embedded.embedded and embedded.identity.endswith(
        "@sha256:cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    monkeypatch.delenv("LLM_MODEL", raising=False)
    with pytest.raises(ValueError, match="LLM_MODEL"):
        Endpoint.from_env()
    monkeypatch.setenv("LLM_MODEL", "qwen2.5-coder:1.5b")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    remote = Endpoint.from_env()
    assert (remote.base_url, remote.model, remote.embedded) == ("http://localhost:11434/v1", "qwen2.5-coder:1.5b",
                                                                False)
    assert SECRET not in repr(remote)


def test_the_cache_file_comes_from_llm_cache_and_the_old_folder_variable_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    shown = subprocess.run([sys.executable, "-c", "from lib import paths; print(paths.LLM_CACHE)"], check=True,
                           env={**os.environ, "LLM_CACHE": str(tmp_path / "mine.sqlite")}, capture_output=True,
                           text=True, cwd=paths.ROOT)
    assert shown.stdout.strip() == str(tmp_path / "mine.sqlite")  # read by paths, so the cache commands see it too
    monkeypatch.setattr(paths, "LLM_CACHE", tmp_path / "mine.sqlite")
    with Gateway.from_env("nb") as gateway:
        assert gateway.cache.path == tmp_path / "mine.sqlite"
    monkeypatch.setenv("LLM_CACHE_DIR", str(tmp_path / "folder"))
    with pytest.raises(ValueError, match=r"LLM_CACHE_DIR is no longer read.*set LLM_CACHE.*pack"):
        Gateway.from_env("nb")


def test_sender_threads_are_reused_and_a_hung_request_holds_up_no_other():
    pool = SenderPool()
    assert [pool.submit(functools.partial(int, f"{i}")).result(timeout=10) for i in range(20)] == list(range(20))
    assert pool.threads == 1, "one request after the other: one thread"
    release = threading.Event()
    hung = pool.submit(release.wait)
    assert pool.submit(lambda: "next").result(timeout=10) == "next" and not hung.done()
    assert pool.threads == 2, "the hung request keeps its thread; the next one got another"

    def fails() -> None:
        raise TransportFailure("connection", "refused")

    with pytest.raises(TransportFailure, match="refused"):
        pool.submit(fails).result(timeout=10)
    release.set()
    assert hung.result(timeout=10) is True and pool.threads == 2


def test_complete_many_keeps_order_and_bounds_concurrency(tmp_path):
    lock, active, peak = threading.Lock(), [0], [0]

    def responder(body, n):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return Reply(content=json.dumps({"score": int(body["messages"][0]["content"].split()[0])}))

    with FakeOpenAI(responder) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, concurrency=2)
        results = gateway.complete_many(  # ten distinct requests (one request twice would be answered once)
            [LLMCall([{"role": "user", "content": f"{i % 5 + 1} of call {i}"}], Score, call_label=f"c{i}")
             for i in range(10)])
    assert [r.value.score for r in results] == [i % 5 + 1 for i in range(10)]
    assert peak[0] == 2 and gateway.ledger.calls == 10
    assert len(fake.requests) == gateway.ledger.live_requests == 10 - gateway.ledger.cache_hits


WORKER = """
import sys
from pathlib import Path
from lib.llm.gateway import Endpoint, Gateway, LLMCall
from pydantic import BaseModel
class Score(BaseModel):
    score: int
url, cache = sys.argv[1], Path(sys.argv[2])
gateway = Gateway(Endpoint(url, "fake-model", "fake-model", False), cache_path=cache, notebook="kill", concurrency=2)
gateway.complete_many([LLMCall([{"role": "user", "content": f"item {i}"}], Score) for i in range(16)])
print("done")
"""


def test_killed_batch_resumes_without_repeating_finished_calls(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAI(always('{"score": 1}', delay_s=0.15)) as fake:
        proc = subprocess.Popen([sys.executable, "-c", WORKER, fake.base_url, str(cache)],
                                cwd=Path(__file__).resolve().parents[1])
        deadline = time.monotonic() + 20
        while len(ResponseCache(cache)) < 6 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished_before_kill = set(ResponseCache(cache).labels())
        requests_before_kill = len(fake.requests)
        assert 6 <= len(finished_before_kill) < 16, "the kill must land mid-batch"

        rerun = subprocess.run([sys.executable, "-c", WORKER, fake.base_url, str(cache)],
                               cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=60)
        assert rerun.returncode == 0, rerun.stderr
    keys = [request_key({**body, "model": "fake-model"}) for body in fake.requests]
    assert len(ResponseCache(cache)) == 16
    assert all(keys.count(k) == 1 for k in finished_before_kill), "a finished call was sent again"
    # Only the calls in flight at the kill (at most the concurrency) may be sent twice.
    assert len(fake.requests) - 16 <= 2 and requests_before_kill <= len(finished_before_kill) + 2


def _prompt(system: str, shared: str, item: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": shared + item}]


def test_the_shared_prefix_is_the_first_position_where_two_texts_differ():
    rng = random.Random(0)
    for _ in range(500):
        a = "".join(rng.choice("ab") for _ in range(rng.randrange(12)))
        b = "".join(rng.choice("ab") for _ in range(rng.randrange(12)))
        shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        assert _shared_prefix_chars(a, b) == shared, (a, b)


def test_prefix_groups_join_neighbours_that_share_more_than_the_system_prompt():
    system, pool_a, pool_b = "S" * 500, "A" * 300, "B" * 300
    prompts = [_prompt(system, pool_a, "1"), _prompt(system, pool_a, "2"), _prompt(system, pool_a, "3"),
               _prompt(system, pool_b, "1"), _prompt(system, "A" * 150, "x"), _prompt(system, "A" * 150, "y")]
    # The last two share 150 characters beyond the system prompt: under the 200 that make a group.
    assert prefix_groups(prompts, workers=2) == [[0, 1, 2], [3], [4], [5]]
    # A group longer than ceil(n / workers) is cut so both workers get work.
    assert prefix_groups([_prompt(system, pool_a, str(i)) for i in range(5)], workers=2) == [[0, 1, 2], [3, 4]]
    assert prefix_groups([], workers=2) == []


def test_complete_many_sends_a_groups_calls_one_after_the_other(tmp_path):
    lock, in_flight, overlaps = threading.Lock(), set(), []

    def responder(body, n):
        pool = body["messages"][1]["content"][0]
        with lock:
            overlaps.append(pool in in_flight)
            in_flight.add(pool)
        time.sleep(0.05)
        with lock:
            in_flight.discard(pool)
        return Reply('{"score": 1}')

    calls = [LLMCall(_prompt("S", pool * 300, str(i)), Score) for pool in "AB" for i in range(4)]
    with FakeOpenAI(responder) as fake:
        results = make_gateway(fake.base_url, tmp_path, concurrency=2).complete_many(calls)
    assert all(r.ok for r in results) and len(fake.requests) == 8
    assert not any(overlaps), "two calls of one prefix group were in flight at once"
    order = [r["messages"][1]["content"][0] + r["messages"][1]["content"][-1] for r in fake.requests]
    assert [o for o in order if o[0] == "A"] == ["A0", "A1", "A2", "A3"]


def test_complete_many_sends_calls_that_share_a_prefix_together_wherever_they_are_listed(tmp_path):
    calls = [LLMCall(_prompt("S", pool * 300, str(i)), Score) for i in range(3) for pool in "BA"]
    with FakeOpenAI(always('{"score": 1}')) as fake:
        results = make_gateway(fake.base_url, tmp_path, concurrency=1).complete_many(calls)
    sent = [r["messages"][1]["content"][0] + r["messages"][1]["content"][-1] for r in fake.requests]
    assert sent == ["A0", "A1", "A2", "B0", "B1", "B2"]
    assert [r.ok for r in results] == [True] * 6 and len(results) == len(calls)


@pytest.mark.parametrize("returned", ['{"score": 4}', '4}'])
def test_prefill_is_sent_as_the_answers_start_and_validated_with_the_continuation(tmp_path, returned):
    # llama.cpp returns the whole assistant message, other servers only the continuation: both validate.
    with FakeOpenAI(always(returned)) as fake:
        result = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score, prefill='{"score": ', max_tokens=3)
    assert result.ok and result.value == Score(score=4) and result.text == '{"score": 4}'
    sent = fake.requests[0]
    assert sent["messages"] == [*MESSAGES, {"role": "assistant", "content": '{"score": '}]
    assert "response_format" not in sent, "a grammar would restart at the turn's start"


def test_judge_endpoint_defaults_to_the_generators_and_can_be_its_own(monkeypatch):
    for name in ("OPENAI_BASE_URL", "JUDGE_BASE_URL", "JUDGE_MODEL", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert Endpoint.from_env("judge") == Endpoint.from_env("generator") and Endpoint.from_env("judge").embedded
    monkeypatch.setenv("JUDGE_BASE_URL", "http://localhost:8000/v1")
    with pytest.raises(ValueError, match="JUDGE_MODEL"):
        Endpoint.from_env("judge")
    monkeypatch.setenv("JUDGE_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("JUDGE_API_KEY", SECRET)
    judge = Endpoint.from_env("judge")
    assert (judge.base_url, judge.identity, judge.api_key) == ("http://localhost:8000/v1",
                                                               "Qwen/Qwen2.5-7B-Instruct", SECRET)
    assert Endpoint.from_env("generator").embedded


@pytest.mark.parametrize("call, key", [
    (LLMCall(MESSAGES, Score), "c8c705ca754dec4129b16379b9dbb19ff52a91beb9c1fb2f1d6b1f919c02e895"),
    (LLMCall(MESSAGES, Score, prefill='{"score": ', top_logprobs=5, temperature=1.0, seed=7, max_tokens=4),
     "c8089d1ed492aeaafdd28747efd0216b6842c80944a49a85c8ccd2ed84b8a90a"),
    (LLMCall(MESSAGES, None, seed=None, max_tokens=300),
     "d688932294d2ca776e9ae177d953e97733a45289ba4dcd2067eb1bea3ffac3f7"),
])
def test_a_calls_cache_key_is_the_one_the_committed_cache_was_written_under(call, key):
    # Keys of the same calls made before calls were LLMCall records: a changed body would orphan the cache.
    assert request_key(call.body("fake-model", attempt=1)) == key
    # The gateway's request: sent under the name the endpoint serves the model by, keyed under its identity.
    gateway = Gateway(Endpoint("http://localhost:1/v1", "served-alias", "fake-model", embedded=False),
                      cache_path=Path("unused.sqlite"))
    request = gateway.request(call, attempt=1)
    assert request.body == call.body("served-alias", attempt=1)
    assert request.cached.request == {**request.body, "model": "fake-model"} and request.cached.key == key
    gateway.close()


def test_a_replicate_is_sent_and_keyed_and_only_a_replicate_changes_the_key():
    call = LLMCall(MESSAGES, Score)
    endpoint = Endpoint("http://localhost:1/v1", "fake-model", "fake-model", embedded=False)
    with Gateway(endpoint, cache_path=Path("unused.sqlite"), replicate="rerun-1") as gateway:
        request = gateway.request(call, attempt=2)
    assert request.body == {**call.body("fake-model", attempt=2), "user": "rerun-1"}
    assert request.cached.key == request_key(request.body) != request_key(call.body("fake-model", attempt=2))


def test_an_api_key_echoed_in_a_valid_completion_is_never_stored(tmp_path):
    """A server that echoes the Authorization header inside a well-formed completion (its content and its id): the
    configured key is redacted from the stored entry, the answer returned, the ledger and the usage log."""
    def echo(body, n):
        return Reply(json.dumps({"score": 4, "note": f"you sent {fake.headers[n]['authorization']}"}))

    log = tmp_path / "usage.log"
    with FakeOpenAI(echo) as fake:
        gateway = make_gateway(fake.base_url, tmp_path / "cache", api_key=SECRET)
        gateway.cache.usage_log = log
        result = gateway.complete(MESSAGES, Score)
        gateway.save_ledger(tmp_path / "ledgers")
        gateway.close()
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert result.ok and result.value.score == 4 and "you sent Bearer ***" in result.text
    stored = [json.dumps(entry) for _, entry in cache_of(tmp_path / "cache").items()]
    assert len(stored) == 1 and "Bearer ***" in stored[0]
    texts = [*stored, gateway.ledger.report(), *(p.read_text(encoding="latin-1") for p in tmp_path.rglob("*")
                                                 if p.is_file() and p.suffix != ".sqlite")]
    assert not any(SECRET in text for text in texts)
    replayed = make_gateway(fake.base_url, tmp_path / "cache", mode="replay").complete(MESSAGES, Score)
    assert replayed.text == result.text  # the replay gives what the live run gave


def test_a_replay_of_a_missing_cache_creates_no_file_and_no_folder(tmp_path):
    missing = tmp_path / "not-yet" / "llm-cache.sqlite"
    endpoint = Endpoint("http://127.0.0.1:9/v1", "fake-model", "fake-model", embedded=False)
    with pytest.raises(CacheMissError, match=str(missing)):
        Gateway(endpoint, cache_path=missing, mode="replay").complete(MESSAGES, Score)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def committed_cache(tmp_path, monkeypatch) -> Path:
    """The study's committed cache, moved to a temporary folder for the test (outside any chapter run)."""
    path = tmp_path / "outputs" / "llm-cache.sqlite"
    monkeypatch.setattr(paths, "COMMITTED_LLM_CACHE", path, raising=False)
    monkeypatch.delenv("STUDY_CHAPTER_RUN", raising=False)
    return path


def test_a_write_into_the_committed_cache_outside_a_chapter_run_is_refused_before_the_request(
        committed_cache, tmp_path, monkeypatch):
    with FakeOpenAI(always('{"score": 3}')) as fake:
        endpoint = Endpoint(fake.base_url, "fake-model", "fake-model", embedded=False)
        with pytest.raises(RuntimeError) as info:
            Gateway(endpoint, cache_path=committed_cache, notebook="monitor").complete(MESSAGES, Score)
        message = str(info.value)
        assert "committed" in message and "LLM_CACHE=" in message and "\n" not in message
        assert fake.requests == [] and not committed_cache.parent.exists()
        # a chapter run writes it (the pipeline marks its kernels and measurements), and anyone replays it
        monkeypatch.setenv("STUDY_CHAPTER_RUN", "03_judge_labeling")
        assert Gateway(endpoint, cache_path=committed_cache).complete(MESSAGES, Score).value.score == 3
        monkeypatch.delenv("STUDY_CHAPTER_RUN")
        assert Gateway(endpoint, cache_path=committed_cache, mode="replay").complete(MESSAGES, Score).ok
        assert Gateway(endpoint, cache_path=committed_cache).complete(MESSAGES, Score).ok  # a hit writes nothing
        # another file is the user's own
        assert Gateway(endpoint, cache_path=tmp_path / "mine.sqlite").complete(MESSAGES, Score).ok
    assert len(fake.requests) == 2


MEASURED_IN: list[str | None] = []


def measured_in(parameters: dict) -> None:
    """A measurement for the test below: records the chapter run it was made in."""
    MEASURED_IN.append(os.environ.get("STUDY_CHAPTER_RUN"))


def test_a_chapter_run_marks_its_kernel_and_its_measurements_as_writers_of_the_committed_cache(tmp_path, monkeypatch):
    from lib.tools import pipeline
    from tests.test_pipeline import write_notebook

    monkeypatch.delenv("STUDY_CHAPTER_RUN", raising=False)
    seen = tmp_path / "seen.txt"
    write_notebook(tmp_path / "notebooks", "01_tiny", "Tiny",
                   f"import os\nopen({str(seen)!r}, 'w').write(os.environ.get('STUDY_CHAPTER_RUN', 'unset'))")
    params = tmp_path / "params.yaml"
    params.write_text("01_tiny:\n  n_points: 1\n")
    monkeypatch.setattr(pipeline, "MEASUREMENTS", {"01_tiny": (("judge_drift", "tests.test_gateway:measured_in"),)})
    monkeypatch.setattr("lib.tables.write_table", lambda frame, table: table)
    MEASURED_IN.clear()
    folders = pipeline.Folders(notebooks=tmp_path / "notebooks", params=params, executed=tmp_path / "executed",
                               html=tmp_path / "html")
    pipeline.chapter("01_tiny", folders)
    assert seen.read_text() == "01_tiny" and MEASURED_IN == ["01_tiny"]
    assert "STUDY_CHAPTER_RUN" not in os.environ  # only for the chapter's run
