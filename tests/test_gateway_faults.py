"""The gateway under a flaky endpoint: each fault found when a proxy broke 30–60% of chat completions, kept as
a reproduction (issue "Gateway and loaders under faults"), plus one batch at 30% faults of every kind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel, Field

from lib.llm.cache import ResponseCache, read_usage_log, request_key
from lib.llm.cache import main as cache_main
from lib.llm.gateway import TRANSPORT_FAILURES, Deadline, EndpointHung, LLMCall
from tests.fakes import FakeOpenAI, Reply, always, sequence
from tests.test_gateway import MESSAGES, Score, cache_of, make_gateway

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """The openai client's backoff (0.5 s doubling) is its business; the tests only need its count."""
    monkeypatch.setattr(openai._base_client.SyncAPIClient, "_calculate_retry_timeout", lambda *a, **k: 0.01)


def item_messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"item {i}"}]


def clean_score(body: dict) -> int:
    """What a well-behaved model answers for an item: a function of the item's messages only."""
    return int(body["messages"][0]["content"].split()[1]) % 5 + 1


def test_dropped_connections_and_5xx_become_recorded_failures_and_the_batch_completes(tmp_path):
    def responder(body, n):
        i = int(body["messages"][0]["content"].split()[1])
        if i == 1:
            return Reply(fault="drop")
        if i == 2:
            return Reply(status=503, error_body="overloaded")
        return Reply(json.dumps({"score": clean_score(body)}))

    with FakeOpenAI(responder) as fake:
        gateway = make_gateway(fake.base_url, tmp_path)
        results = gateway.complete_many([LLMCall(item_messages(i), Score) for i in range(5)])
    assert [r.failure_kind for r in results] == [None, "connection", "http_error", None, None]
    assert [r.value.score for r in results if r.ok] == [1, 4, 5]
    assert results[2].error is not None and "503" in results[2].error
    assert results[1].value is None and results[2].value is None
    assert gateway.ledger.failures == {"connection": 1, "http_error": 1}
    # 1 + 3 + 3 + 1 + 1: the two faulty items were tried 1 + transport_retries times each.
    assert len(fake.requests) == gateway.ledger.http_requests == 9


@pytest.mark.parametrize("fault", ["error_body", "not_json", "truncated_body"])
def test_a_malformed_200_is_never_cached_and_is_asked_again(tmp_path, fault):
    with FakeOpenAI(always("", fault=fault)) as fake:
        first = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score)
        seen_first = len(fake.requests)
        assert len(cache_of(tmp_path)) == 0, "a malformed answer reached the cache"
        second = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score)
    assert (first.ok, first.failure_kind, second.failure_kind) == (False, "bad_response", "bad_response")
    assert seen_first == 3 and len(fake.requests) == 6, "the rerun must ask the server again"
    with FakeOpenAI(sequence(Reply(fault=fault), Reply('{"score": 2}'))) as fake:
        healed = make_gateway(fake.base_url, tmp_path).complete(MESSAGES, Score)
    assert healed.ok and healed.value.score == 2 and healed.attempts == 1


def test_a_grade_does_not_depend_on_an_earlier_broken_attempt(tmp_path):
    """A network-truncated first answer: the retry shows the model nothing of it and grades like a clean run."""
    def flaky(body, n):
        return Reply('{"sco') if n == 0 else Reply(json.dumps({"score": clean_score(body)}))

    def fair(body, n):
        return Reply(json.dumps({"score": clean_score(body)}))

    with FakeOpenAI(flaky) as fake:
        broken_first = make_gateway(fake.base_url, tmp_path / "a").complete(item_messages(3), Score)
    with FakeOpenAI(fair) as fake_clean:
        clean = make_gateway(fake_clean.base_url, tmp_path / "b").complete(item_messages(3), Score)
    assert broken_first.attempts == 2 and broken_first.attempt_log[0].failure_kind == "invalid_json"
    assert broken_first.value == clean.value == Score(score=4)
    assert fake.requests[1]["messages"] == fake_clean.requests[0]["messages"] == item_messages(3)


def test_the_ledger_counts_every_request_sent(tmp_path):
    with FakeOpenAI(sequence(Reply(status=500, error_body="x"), Reply(fault="drop"), Reply('{"score": 5}'))) as fake:
        gateway = make_gateway(fake.base_url, tmp_path)
        assert gateway.complete(MESSAGES, Score).value.score == 5
    assert len(fake.requests) == gateway.ledger.http_requests == 3
    assert gateway.ledger.live_requests == 1 and "3 HTTP requests sent" in gateway.ledger.report()


def test_a_hung_endpoint_fails_fast_with_one_clear_line(tmp_path):
    with FakeOpenAI(always("", fault="hang")) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, probe_interval_s=0.5, probe_timeout_s=0.5)
        start = time.monotonic()
        with pytest.raises(EndpointHung) as info:
            gateway.complete(MESSAGES, Score)
        elapsed = time.monotonic() - start
    assert elapsed < 10, f"detection took {elapsed:.1f} s"
    message = str(info.value)
    assert fake.base_url in message and "liveness probe" in message and "\n" not in message


def test_a_slow_answer_is_waited_for_while_the_endpoint_answers_the_probe(tmp_path):
    with FakeOpenAI(always('{"score": 3}', delay_s=2.0)) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, probe_interval_s=0.3, probe_timeout_s=0.3)
        assert gateway.complete(MESSAGES, Score).value.score == 3


CONCURRENT_WORKER = """
import sys
from pathlib import Path
from lib.llm.gateway import Endpoint, Gateway, LLMCall
from pydantic import BaseModel
class Score(BaseModel):
    score: int
url, cache = sys.argv[1], Path(sys.argv[2])
gateway = Gateway(Endpoint(url, "fake-model", "fake-model", False), cache_path=cache, notebook="two", concurrency=2)
results = gateway.complete_many([LLMCall([{"role": "user", "content": f"item {i}"}], Score) for i in range(12)])
assert all(r.ok for r in results)
"""


def test_two_processes_on_one_cache_send_each_request_once(tmp_path):
    with FakeOpenAI(always('{"score": 1}', delay_s=0.1)) as fake:
        procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WORKER, fake.base_url,
                                   str(cache_of(tmp_path).path)], cwd=ROOT) for _ in range(2)]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
    contents = [r["messages"][0]["content"] for r in fake.requests]
    assert sorted(contents) == sorted(f"item {i}" for i in range(12)), "a request was sent twice"


class Grade(BaseModel):
    grade: int = Field(ge=1, le=5)


FAULTS = ["truncated_content", "server_error", "drop", "error_body", "truncated_body"]


def test_a_batch_at_30_percent_faults_of_every_kind_ends_with_every_item_scored_or_failed(tmp_path):
    injected: dict[int, list[str]] = {}

    def flaky(body, n):
        item = int(body["messages"][0]["content"].split()[1])
        if n % 10 not in (1, 4, 7):  # 30% of the requests the server sees, whatever the thread timing
            injected.setdefault(item, []).append("none")
            return Reply(json.dumps({"grade": clean_score(body)}))
        fault = FAULTS[(n // 10 + n) % len(FAULTS)]
        injected.setdefault(item, []).append(fault)
        if fault == "truncated_content":
            return Reply('{"grade": ')
        if fault == "server_error":
            return Reply(status=500, error_body="internal error")
        return Reply(fault=fault)

    calls = [LLMCall(item_messages(i), Grade, call_label=f"item:{i}") for i in range(48)]
    with FakeOpenAI(flaky) as fake:
        gateway = make_gateway(fake.base_url, tmp_path / "faulty", concurrency=2)
        results = gateway.complete_many(calls)
    with FakeOpenAI(lambda body, n: Reply(json.dumps({"grade": clean_score(body)}))) as clean_fake:
        clean = make_gateway(clean_fake.base_url, tmp_path / "clean").complete_many(calls)

    assert len(results) == 48
    assert {kind for kinds in injected.values() for kind in kinds} == {"none", *FAULTS}, "every fault kind occurred"
    broke_first = [i for i, kinds in injected.items() if kinds[0] != "none"]
    assert len(broke_first) >= 8
    for i, (result, reference) in enumerate(zip(results, clean, strict=True)):
        if result.ok:
            assert result.value == reference.value, f"item {i}: a score differs from the clean run"
        else:
            assert result.value is None and result.failure_kind in {*TRANSPORT_FAILURES, "invalid_json"}
    assert sum(results[i].ok for i in broke_first) >= len(broke_first) // 2, "retries recover most broken items"
    assert gateway.ledger.calls == 48 and gateway.ledger.http_requests == len(fake.requests)
    # Only well-formed completions were cached: every stored entry parses and has a message.
    stored = list(cache_of(tmp_path / "faulty").items())
    assert stored and all(entry["response"]["choices"][0]["message"]["role"] == "assistant" for _, entry in stored)


def test_an_item_that_ended_in_failure_is_asked_again_by_a_live_rerun_and_a_success_replaces_it(tmp_path):
    """Issue 19.1: every attempt of an item came back cut in transit (a 200 whose content is not valid JSON). A
    rerun in live mode asks the server again (at most the configured attempts) and stores the success in place of
    the cut answer; replay mode still replays the recorded failure without a request."""
    def gateway(url: str, mode: str = "live"):
        return make_gateway(url, tmp_path, mode=mode)

    messages = MESSAGES
    with FakeOpenAI(always('{"score": ')) as cut:  # the network cut every answer
        first = gateway(cut.base_url).complete(messages, Score, max_attempts=2)
    assert not first.ok and first.failure_kind == "invalid_json" and len(cut.requests) == 2

    with FakeOpenAI(always('{"score": 4}')) as cut_again:
        replayed = gateway(cut_again.base_url, mode="replay").complete(messages, Score, max_attempts=2)
    assert not replayed.ok and len(cut_again.requests) == 0  # the record of the run is kept

    with FakeOpenAI(always('{"score": 4}')) as healed:
        second = gateway(healed.base_url).complete(messages, Score, max_attempts=2)
    assert second.ok and second.value == Score(score=4)
    assert 1 <= len(healed.requests) <= 2  # asked again, at most the configured attempts

    with FakeOpenAI(always('{"score": 1}')) as later:
        third = gateway(later.base_url).complete(messages, Score, max_attempts=2)
    assert third.ok and third.value == Score(score=4) and len(later.requests) == 0  # the success was stored


def test_each_attempt_is_canonicalised_once_through_sending_asking_again_and_the_usage_log(tmp_path, monkeypatch):
    """A stored failure asked again in live mode sends the same attempts again and logs their keys: all from the
    requests made at the attempts' first sending (the request used to be rebuilt for each of these)."""
    built: list[int] = []
    body = LLMCall.body

    def counted(call: LLMCall, model: str, attempt: int) -> dict:
        built.append(attempt)
        return body(call, model, attempt)

    monkeypatch.setattr(LLMCall, "body", counted)
    log = tmp_path / "usage.log"
    with FakeOpenAI(always('{"score": ')) as cut:
        with make_gateway(cut.base_url, tmp_path) as first:
            first.cache.usage_log = log
            assert first.complete(MESSAGES, Score, max_attempts=2).failure_kind == "invalid_json"
        assert built == [1, 2]
        with make_gateway(cut.base_url, tmp_path) as again:  # finds the stored failure: asks again, over it
            again.cache.usage_log = log
            assert again.complete(MESSAGES, Score, max_attempts=2).failure_kind == "invalid_json"
    assert built == [1, 2, 1, 2] and len(cut.requests) == 4
    keys = [request_key({**body(LLMCall(MESSAGES, Score), "fake-model", attempt), "model": "fake-model"})
            for attempt in (1, 2)]
    marked = [f"{key} asked-again" for key in keys]
    # first run: looked up, marked; second: looked up (stored failures), looked up again (refreshed), marked
    assert log.read_text().splitlines() == [*keys, *marked, *keys, *keys, *marked]


def test_the_check_lists_the_stored_answers_a_live_run_would_ask_again(tmp_path, capsys):
    """A committed failure is not stable: a live run asks it again and rewrites what it fed (the one cut user turn
    of chapter 06 did). A replay with the usage log marks the stored answers of every call whose attempts all failed
    (the gateway's own rule, `asked_again_live`), and `python -m lib.llm.cache check` lists them and fails."""
    cut = [{"role": "user", "content": "cut every time"}]
    recovered = [{"role": "user", "content": "cut once"}]

    def answers(body, n):
        if body["messages"] == cut or (body["messages"] == recovered and body["seed"] == 0):
            return Reply('{"score": 3', finish_reason="length")
        return Reply('{"score": 3}')

    with FakeOpenAI(answers) as fake:
        live = make_gateway(fake.base_url, tmp_path)
        assert [live.complete(m, Score, max_attempts=2, call_label=label).failure_kind
                for m, label in ((cut, "cut"), (recovered, "recovered"), (MESSAGES, "fine"))] == ["truncated", None,
                                                                                                   None]
        live.close()
    log = tmp_path / "usage.log"
    replay = make_gateway(fake.base_url, tmp_path, mode="replay")
    replay.cache.usage_log = log
    for messages in (cut, recovered, MESSAGES):
        replay.complete(messages, Score, max_attempts=2)
    replay.close()
    keys = [request_key({**LLMCall(cut, Score).body("fake-model", attempt), "model": "fake-model"})
            for attempt in (1, 2)]
    used, asked_again = read_usage_log(log)
    assert asked_again == set(keys) and len(used) == 5  # 2 + 2 + 1 attempts looked up
    cache = str(cache_of(tmp_path).path)
    assert cache_main(["--cache", cache, "check", "--used", str(log)]) == 1
    out = capsys.readouterr().out
    assert all(f"{key}  cut: a live run asks it again" in out for key in keys)
    assert "2 of the 5 entries looked up would be asked again in live mode" in out
    clean = tmp_path / "clean.log"
    clean.write_text("".join(f"{key}\n" for key in used))
    assert cache_main(["--cache", cache, "check", "--used", str(clean)]) == 0


def stall_item(index: int) -> Callable[[dict, int], Reply]:
    """Items answer their clean score, except item ``index`` (every item when negative), which stalls."""
    def responder(body: dict, n: int) -> Reply:
        i = int(body["messages"][0]["content"].split()[1])
        return Reply(fault="stall") if index < 0 or i == index else Reply(json.dumps({"score": clean_score(body)}))
    return responder


SHORT = Deadline(floor_s=0.4, prompt_chars_per_s=1e9, tokens_per_s=1e9)


def test_an_endpoint_that_answers_the_probe_but_finishes_no_request_stops_the_run_with_one_line(tmp_path):
    """Issue 19.2: a server whose probe is answered but whose requests never finish was waited on 3 × 600 s per
    item, each ending as a silent `connection` failure. Each request now has a deadline scaled by its size, and
    `hung_after` items in a row without an answer stop the run."""
    calls = [LLMCall(item_messages(i), Score) for i in range(6)]
    with FakeOpenAI(stall_item(-1)) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, deadline=SHORT, transport_retries=1, hung_after=2,
                               concurrency=1, probe_interval_s=0.2, probe_timeout_s=0.2)
        start = time.monotonic()
        with pytest.raises(EndpointHung) as info:
            gateway.complete_many(calls)
        elapsed = time.monotonic() - start
    assert elapsed < 6, f"detection took {elapsed:.1f} s"
    assert len(fake.requests) == 4  # two items, each sent once and retried once by the transport
    assert gateway.ledger.failures == {"timeout": 2}
    message = str(info.value)
    assert fake.base_url in message and "2 requests in a row" in message and "\n" not in message


def test_one_request_past_its_deadline_is_that_items_failure_and_the_batch_goes_on(tmp_path):
    calls = [LLMCall(item_messages(i), Score) for i in range(5)]
    with FakeOpenAI(stall_item(2)) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, deadline=SHORT, transport_retries=0, hung_after=2,
                               concurrency=1, probe_interval_s=0.2, probe_timeout_s=0.2)
        results = gateway.complete_many(calls)
    assert [r.failure_kind for r in results] == [None, None, "timeout", None, None]
    expected = [clean_score({"messages": item_messages(i)}) for i in (0, 1, 3, 4)]
    assert [r.value.score for r in results if r.ok] == expected
    assert "deadline" in (results[2].error or "")


def test_a_deadline_grows_with_the_prompt_and_the_answer_allowed_and_stops_at_its_ceiling():
    deadline = Deadline(floor_s=100.0, prompt_chars_per_s=20.0, tokens_per_s=2.0, ceiling_s=600.0)
    body = {"messages": [{"role": "system", "content": "x" * 400}, {"role": "user", "content": "y" * 600}],
            "max_tokens": 60}
    assert deadline.seconds(body) == pytest.approx(100 + 1000 / 20 + 60 / 2)
    assert deadline.seconds({**body, "max_tokens": 2000}) == 600.0


def test_no_committed_call_came_near_its_deadline():
    """The default deadline against every recorded call of the study on the embedded model (2 cores): a deadline
    that cut a real call would turn a slow answer into a failure."""
    entries = [entry for _, entry in ResponseCache(ROOT / "outputs" / "llm-cache.sqlite").items()]
    assert len(entries) > 1000, "the committed cache is missing"
    margins = [Deadline().seconds(entry["request"]) / entry["latency_s"] for entry in entries if entry["latency_s"] > 0]
    assert min(margins) > 2.0


# --- a damaged or read-only cache file: one line naming it, before any request -----------------------------------

def _written_cache(path: Path, entries: int = 40) -> list[LLMCall]:
    """A cache file of ``entries`` answers spread over many pages; returns their calls."""
    calls = [LLMCall(item_messages(i), None, max_tokens=2000 + i) for i in range(entries)]
    # incompressible answers: about half a page each
    with FakeOpenAI(lambda body, n: Reply(os.urandom(8000).hex())) as fake, \
            make_gateway(fake.base_url, path.parent) as gateway:
        assert all(result.ok for result in gateway.complete_many(calls))
    assert path.stat().st_size > entries * 16384 // 2
    return calls


def _damage_file(path: Path, damage: str) -> None:
    raw = path.read_bytes()
    if damage == "cut short":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage in ("page header flipped", "file header flipped"):
        at = 16384 if damage == "page header flipped" else 3  # the table's root page (page 2): its type byte
        path.write_bytes(raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1:])
    elif damage == "not SQLite":
        path.write_text("<html>not a database</html>\n" * 100)
    else:
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("mode", ["live", "replay"])
@pytest.mark.parametrize("damage", ["cut short", "page header flipped", "file header flipped", "not SQLite",
                                    "a directory"])
def test_a_damaged_cache_file_is_one_line_naming_it_and_the_remedy_before_any_request(tmp_path, damage, mode):
    path = cache_of(tmp_path).path
    calls = _written_cache(path)
    _damage_file(path, damage)
    with FakeOpenAI(always('{"score": 1}')) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, mode=mode)
        with pytest.raises(RuntimeError) as info:
            gateway.complete_many([*calls, LLMCall(MESSAGES, Score)])
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    assert ("LLM_CACHE" in message) and ("restore" in message or "directory" in message), message
    assert fake.requests == []


@pytest.fixture
def read_only(tmp_path):
    """Makes a file read-only for this process: its mode without write bits, and, as root (whom modes do not stop),
    the immutable attribute; undone at the end."""
    made: list[Path] = []

    def make(path: Path) -> None:
        path.chmod(0o444)
        if os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("running as root where chattr +i is not allowed: no file is read-only for this process")
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


def test_a_read_only_cache_serves_its_answers_and_refuses_a_miss_before_sending_it(tmp_path, read_only):
    path = cache_of(tmp_path).path
    calls = _written_cache(path, entries=3)
    read_only(path)
    before = path.read_bytes()
    with FakeOpenAI(always('{"score": 1}')) as fake:
        for mode in ("replay", "live"):  # every answer stored: nothing to write
            assert all(r.ok for r in make_gateway(fake.base_url, tmp_path, mode=mode).complete_many(calls))
        with pytest.raises(RuntimeError) as info:
            make_gateway(fake.base_url, tmp_path).complete_many([*calls, LLMCall(MESSAGES, Score)])
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "read-only" in message and "LLM_CACHE" in message
    assert "\n" not in message
    assert fake.requests == [], "the request went upstream and its answer would be lost"
    assert path.read_bytes() == before


# --- an endpoint that answers 200 but never a chat completion ------------------------------------------------------

@pytest.mark.parametrize("fault", ["not_json", "empty_body", "error_body"])
def test_an_endpoint_that_answers_every_request_200_without_a_completion_stops_the_run_with_one_line(tmp_path, fault):
    """48 items used to fail one by one as `bad_response` after 144 requests, with nothing on stderr: like the hung
    endpoint, `hung_after` items in a row without a well-formed answer from an endpoint that never gave one stop
    the run."""
    calls = [LLMCall(item_messages(i), Score) for i in range(48)]
    with FakeOpenAI(always("", fault=fault)) as fake:
        gateway = make_gateway(fake.base_url, tmp_path, concurrency=2, hung_after=2)
        with pytest.raises(RuntimeError) as info:
            gateway.complete_many(calls)
    assert len(fake.requests) <= 4 * 3, "more items were sent than the two in a row and the one in flight"
    message = str(info.value)
    assert fake.base_url in message and "2 calls in a row" in message and "\n" not in message, message
    assert len(cache_of(tmp_path)) == 0


def test_an_endpoint_that_answered_well_goes_on_through_a_run_of_malformed_answers(tmp_path):
    calls = [LLMCall(item_messages(i), Score) for i in range(6)]
    with FakeOpenAI(sequence(Reply('{"score": 2}'), Reply(fault="not_json"))) as fake:
        results = make_gateway(fake.base_url, tmp_path, concurrency=1, hung_after=2).complete_many(calls)
    assert [r.failure_kind for r in results] == [None, *["bad_response"] * 5]
    assert len(fake.requests) == 1 + 5 * 3
