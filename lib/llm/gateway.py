"""The one door to an LLM in this study: structured output, bounded retries, cache, replay, ledger.

``Gateway.complete(messages, schema=Model, …)`` sends an OpenAI-compatible chat completion through the
official ``openai`` client, asks for JSON matching ``Model``'s schema (``response_format: json_schema``) and
validates the answer with pydantic; ``Gateway.complete_many(calls)`` does the same for a list of
:class:`LLMCall` records, concurrently. What each layer does:

* **Transport** (the ``openai`` client's POST, sent by a pool of sender threads while the caller watches the
  endpoint's liveness): base URL, key, timeouts, and its retries with exponential backoff
  on dropped connections, timeouts, 408/409/429 and 5xx. A fault that outlives those retries becomes the
  item's recorded failure (``connection`` or ``http_error``); the other items of a batch go on. A 200 whose
  body is not a well-formed chat completion (not JSON, an error object, no choices) is sent again up to the
  same bound and otherwise recorded as ``bad_response``. It is never cached, so the next run asks again.
  Each request has a :class:`Deadline` scaled by its size (prompt length and ``max_tokens``, at speeds well
  below the slowest machine's); a request unanswered by then is sent again by the transport and otherwise
  recorded as ``timeout``. Only a configuration error (a 4xx such as 400 or 401), an unreachable endpoint
  (:class:`EndpointUnreachable`, in seconds) or an endpoint that accepts connections but stops answering
  (:class:`EndpointHung`: a liveness probe of ``/models`` goes unanswered twice, so within about a minute; or
  it answers the probe but ``hung_after`` items in a row end in ``timeout``) or one that answers but never with a
  chat completion (:class:`EndpointBroken`: ``hung_after`` items in a row end in ``bad_response`` and none ever
  got a well-formed answer — an HTML page or an empty body at a wrong URL) stops the run, since nothing else
  could succeed. Long generations stay possible: their deadline grows with the answer they may write.
* **Validation retries**: an answer that is not valid JSON for the schema (or was cut by ``max_tokens``) is
  asked again with the *original* messages and another seed, at most ``max_attempts`` times; the model
  never sees its broken answer, so a grade cannot depend on whether an earlier attempt failed (feeding the
  error back was measured to bend grades towards 0). Each attempt is recorded in ``LLMResult.attempt_log``.
  A call that is still invalid is an :class:`LLMResult` with ``ok=False`` and the reason — never a made-up
  value. Callers count and show failures.
* **Cache** (:mod:`lib.llm.cache`): every well-formed response is stored under the hash of its canonical
  request, so a rerun replays the same attempts exactly. ``mode="replay"`` serves only from the cache (a lookup,
  which writes nothing) and raises :class:`CacheMissError` naming the notebook and call on a miss; CI and nbval
  use it. A cache file that cannot serve (damaged, read-only when a call is missing, the study's committed cache
  outside a chapter run) is a :class:`~lib.llm.cache.CacheFileError` before any request is sent.
* **Ledger**: calls, attempts, failures by kind, tokens, recorded latency, and every HTTP request sent
  (transport retries included).

A gateway holds open HTTP connections: use it as a context manager (``with Gateway.from_env(...) as gateway:``) or
call :meth:`Gateway.close` when done.

Endpoint: the embedded xllamacpp server (started by its endpoint hook before the first live request) unless
``OPENAI_BASE_URL`` is set, in which case that endpoint, ``OPENAI_API_KEY`` and ``LLM_MODEL`` are used. The API
key lives only in the Authorization header: it is never cached, logged, printed or put into an exception (a server
that echoes it, in an error or inside a valid completion, has it masked as ``***`` before anything is stored).
"""
from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2
import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError
from tqdm import tqdm

from lib import paths
from lib.llm import server as embedded
from lib.llm.cache import ASKED_AGAIN, KeyedRequest, ResponseCache

Mode = Literal["live", "replay"]
FailureKind = Literal["invalid_json", "schema_violation", "truncated", "http_error", "connection", "timeout",
                      "bad_response"]
TRANSPORT_FAILURES: tuple[FailureKind, ...] = ("http_error", "connection", "timeout", "bad_response")
# Attempt k of a call uses seed + (k − 1) · RETRY_SEED_STRIDE: far from the consecutive seeds callers give to
# repeated samples, so a retry never lands on (and is served from the cache as) another sample's request.
RETRY_SEED_STRIDE = 1_000_000


class CacheMissError(RuntimeError):
    """Replay mode met a request that is not in the cache."""


class EndpointUnreachable(RuntimeError):
    """The configured endpoint does not accept connections."""


class RequestRefused(RuntimeError):
    """The endpoint refused a request with an HTTP 4xx other than 408/409/429 (``status``): a configuration error that
    stops the run, unless the caller can tell it is one request's own (a prompt past the context: 400)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class EndpointHung(RuntimeError):
    """The endpoint accepts connections but stops answering: the liveness probe goes unanswered, or requests in a
    row pass their deadline unanswered although the probe is answered."""


class EndpointBroken(RuntimeError):
    """The endpoint answers, but never with a chat completion: calls in a row got only 200s whose body is not one
    (empty, an HTML page, an error object) from an endpoint that has not answered one well."""


Role = Literal["generator", "judge"]
# Per role: the variables naming its endpoint's base URL, API key and model.
ROLE_VARIABLES: dict[str, tuple[str, str, str]] = {"generator": ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"),
                                                   "judge": ("JUDGE_BASE_URL", "JUDGE_API_KEY", "JUDGE_MODEL")}


class TransportFailure(Exception):
    """A request that outlived the transport retries; becomes the item's recorded failure, never cached."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. ``identity`` names the model in cache keys (a digest for the embedded model);
    ``prepare`` runs once before the first live request (the embedded endpoint starts its server there)."""

    base_url: str
    model: str
    identity: str
    embedded: bool
    api_key: str | None = field(default=None, repr=False)
    prepare: Callable[[], object] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_env(cls, role: Role = "generator") -> Endpoint:
        """The endpoint of ``role``. Generator: ``OPENAI_BASE_URL`` (+ ``OPENAI_API_KEY``, ``LLM_MODEL``) or the
        embedded server. Judge: ``JUDGE_BASE_URL`` (+ ``JUDGE_API_KEY``, ``JUDGE_MODEL``) when set, so that
        outputs need not be judged by the model that wrote them; otherwise the generator's endpoint."""
        names = ROLE_VARIABLES[role]
        base_url = os.environ.get(names[0], "").strip()
        if not base_url:
            return cls.embedded_default() if role == "generator" else cls.from_env("generator")
        model = os.environ.get(names[2], "").strip()
        if not model:
            raise ValueError(f"{names[0]} is set but {names[2]} is not: name the model to use (e.g. gpt-4o-mini)")
        return cls(base_url.rstrip("/"), model, model, False, os.environ.get(names[1]) or None)

    @classmethod
    def embedded_default(cls) -> Endpoint:
        """The embedded model, whose server is started on demand (and stopped at the end of ``make all``)."""
        return cls(embedded.embedded_base_url(), embedded.MODEL_NAME, embedded.MODEL_IDENTITY, True,
                   prepare=embedded.ensure_running)


@dataclass(frozen=True)
class Deadline:
    """How long one request may go unanswered: ``floor_s`` + the prompt's characters / ``prompt_chars_per_s`` +
    ``max_tokens`` / ``tokens_per_s``, at most ``ceiling_s``.

    A non-streamed request shows no progress until its answer is complete, so a server that answers the
    liveness probe but never finishes a request can only be told from a long generation by time. The bound
    grows with the work the request may take: the defaults assume 3 characters a token read at 8 tokens/s
    and 2 generated tokens/s, about 8 and 7 times below what the embedded model does on 2 cores, and a floor
    for queueing behind the other slot (``tests/test_gateway_faults.py`` checks every committed call against
    it). For a slower endpoint, pass a lower speed."""

    floor_s: float = 120.0
    prompt_chars_per_s: float = 24.0
    tokens_per_s: float = 2.0
    ceiling_s: float = 600.0

    def seconds(self, body: dict[str, Any]) -> float:
        """The deadline of the chat-completion request ``body``."""
        prompt_chars = sum(len(message["content"]) for message in body["messages"])
        return min(self.ceiling_s, self.floor_s + prompt_chars / self.prompt_chars_per_s
                   + body["max_tokens"] / self.tokens_per_s)


@dataclass(frozen=True)
class Attempt:
    """One validation attempt of a call: its seed and, when it failed, why."""

    seed: int | None
    failure_kind: FailureKind | None = None
    error: str | None = None


Message = dict[str, str]  # {"role": …, "content": …}


@dataclass(frozen=True)
class LLMCall:
    """One LLM call as a value: what to ask, how to sample, and how often to try.

    A typed record rather than a keyword dict, so that a misspelt field fails where the call is built, not as
    an unexpected keyword deep inside a worker thread. :meth:`body` is the request of an attempt, from which the
    gateway makes its :class:`Request` (and so the cache key): every field except ``call_label`` and
    ``max_attempts`` is part of it.

    ``top_logprobs`` asks for per-token log-probabilities (needed for probability-weighted scores); they come
    back in ``LLMResult.logprobs`` as the endpoint's ``choices[0].logprobs.content`` list.

    ``prefill`` writes the start of the answer for the model (an assistant message it continues, e.g.
    ``'{"grade": '``), so the token read for a score sits at a fixed position after a fixed prefix, whatever
    whitespace the model would have chosen. The schema is then not sent as ``response_format`` (a grammar
    restarts at the turn's start and would refuse the continuation); the prefill plus the continuation is
    validated against it instead, and is the result's ``text``.

    Attempt k is sent with seed ``seed + (k − 1) · RETRY_SEED_STRIDE`` (no seed at all when ``seed`` is None).

    ``cut_text_ok``: an answer cut by ``max_tokens`` inside the schema's last field, a free-text string, is closed
    there (the cut marked "…") and accepted, since every field before it is whole: for a reason written after a score
    that the model may run on with (a repetition loop is not a longer reason). It is not sent, so it is no part of the
    request's cache key.
    """

    messages: list[Message]
    schema: type[BaseModel] | None = None
    call_label: str = "call"
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = 0
    top_logprobs: int | None = None
    prefill: str | None = None
    max_attempts: int = 3
    cut_text_ok: bool = False

    def attempt_seed(self, attempt: int) -> int | None:
        """The seed sent with attempt ``attempt`` (1-based)."""
        return None if self.seed is None else self.seed + (attempt - 1) * RETRY_SEED_STRIDE

    def body(self, model: str, attempt: int) -> dict[str, Any]:
        """The chat-completion request of attempt ``attempt`` for the endpoint's ``model`` name."""
        body: dict[str, Any] = {"model": model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                                "messages": self.messages if self.prefill is None
                                else [*self.messages, {"role": "assistant", "content": self.prefill}]}
        seed = self.attempt_seed(attempt)
        if seed is not None:
            body["seed"] = seed
        if self.schema is not None and self.prefill is None:
            body["response_format"] = response_format_for(self.schema)
        if self.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        return body


@dataclass(frozen=True)
class Request:
    """One attempt of a call, canonicalised once by its gateway (:meth:`Gateway.request`): ``body`` as sent to the
    endpoint, and ``cached``, the same request naming the model's identity instead of the name the endpoint serves
    it under, keyed once: the cache looks it up, stores it and logs it under that key."""

    body: dict[str, Any]
    cached: KeyedRequest


@dataclass
class LLMResult:
    """Outcome of one call (all its attempts)."""

    ok: bool
    value: Any  # validated pydantic object (schema given), text (no schema), or None on failure
    text: str  # the last raw answer ("" when no answer came back)
    failure_kind: FailureKind | None = None
    error: str | None = None
    attempts: int = 1
    logprobs: list[dict[str, Any]] | None = None  # the last answer's per-token logprobs, when asked
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempt_log: list[Attempt] = field(default_factory=list)


@dataclass
class Ledger:
    """Counts of one gateway's work. ``recorded_latency_s`` sums the latencies stored with each response,
    so it is the same in a replay as in the live run; ``cache_hits``, ``live_requests``, ``http_requests``
    (every HTTP request sent, transport retries included) and ``live_wall_s`` (request latencies of live
    calls, summed over parallel requests) describe this run only."""

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    live_requests: int = 0
    http_requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    recorded_latency_s: float = 0.0
    live_wall_s: float = 0.0
    retries: int = 0
    failures: dict[FailureKind | None, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    VOLATILE = frozenset({"cache_hits", "live_requests", "http_requests", "live_wall_s"})

    def record_http_request(self) -> None:
        with self._lock:
            self.http_requests += 1

    def record_response(self, entry: dict[str, Any], cached: bool) -> None:
        usage = entry["response"].get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        with self._lock:
            self.requests += 1
            self.cache_hits += cached
            self.live_requests += not cached
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.cached_prompt_tokens += int(details.get("cached_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            self.recorded_latency_s += entry["latency_s"]
            self.live_wall_s += 0.0 if cached else entry["latency_s"]

    def record_call(self, result: LLMResult) -> None:
        with self._lock:
            self.calls += 1
            self.retries += result.attempts - 1
            if not result.ok:
                self.failures[result.failure_kind] = self.failures.get(result.failure_kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        """The run-independent counts (what a replay reproduces), for the committed ledger files."""
        record = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k not in self.VOLATILE}
        # Parallel requests finish in varying order, so the float sum varies in its last bits.
        record["recorded_latency_s"] = round(self.recorded_latency_s, 3)
        return record

    def report(self) -> str:
        """Plain-text summary; the last line (cache/live split, wall time) is the only run-dependent one."""
        failures = sum(self.failures.values())
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(self.failures.items())) or "none"
        return "\n".join([
            f"LLM calls: {self.calls} ({self.requests} requests, {self.retries} retries)",
            f"failed calls: {failures} ({kinds})",
            f"prompt tokens: {self.prompt_tokens:,} (of which served from the server's prefix cache: "
            f"{self.cached_prompt_tokens:,}) · completion tokens: {self.completion_tokens:,}",
            f"recorded generation time: {self.recorded_latency_s:,.1f} s",
            f"this run: {self.cache_hits} requests from the response cache, {self.live_requests} live "
            f"({self.http_requests} HTTP requests sent), live request time {self.live_wall_s:,.1f} s "
            f"(summed over parallel requests)",
        ])


CUT_MARK = "…"  # ends a free-text last field that max_tokens cut (LLMCall.cut_text_ok)


def _parse(text: str, finish_reason: str | None, schema: type[BaseModel] | None, cut_text_ok: bool = False
           ) -> tuple[Any, FailureKind | None, str | None]:
    """Validate one answer: (value, None, None) on success, else (None, kind, message).

    An answer stopped by ``max_tokens`` is still accepted when it is complete, valid JSON for the schema
    (the model had only trailing whitespace left to write), or, with ``cut_text_ok``, when closing the string it was
    cut in (after :data:`CUT_MARK`) and the object makes it valid, the cut string being the schema's last field;
    otherwise it is a ``truncated`` failure."""
    if cut_text_ok and schema is not None and finish_reason == "length":
        fields = list(schema.model_fields)
        closed = text.rstrip("\\") + CUT_MARK + '"}'
        try:
            value = schema.model_validate(json.loads(closed))
        except (json.JSONDecodeError, ValidationError):
            value = None
        if value is not None and fields and isinstance(getattr(value, fields[-1]), str) \
                and getattr(value, fields[-1]).endswith(CUT_MARK):
            return value, None, None
    if schema is None:
        if finish_reason == "length":
            return None, "truncated", "the answer was cut off by max_tokens"
        return text, None, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if finish_reason == "length":
            return None, "truncated", "the answer was cut off by max_tokens"
        return None, "invalid_json", f"invalid JSON ({exc.msg} at char {exc.pos})"
    try:
        return schema.model_validate(data), None, None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'root'}: {e['msg']}" for e in exc.errors()[:5])
        return None, "schema_violation", f"schema violation ({problems})"


def asked_again_live(result: LLMResult) -> bool:
    """Whether a live run that finds the answers of this call in the cache sends the call again: every attempt got
    an answer and none validated (a transport failure stored nothing, so it is asked again anyway). See
    :meth:`Gateway._complete`; ``python -m lib.llm.cache check`` lists the stored answers of such calls."""
    return not result.ok and result.failure_kind not in TRANSPORT_FAILURES


@functools.cache  # one JSON schema per model class: generating it took a third of a millisecond per request
def response_format_for(schema: type[BaseModel]) -> dict[str, Any]:
    """OpenAI ``response_format`` asking for JSON that matches the pydantic model's JSON schema (one shared value
    per model: not to be changed by its users)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": True},
    }


def prompt_text(messages: list[dict[str, str]]) -> str:
    """The messages as the server sees their order: roles and contents, concatenated."""
    return "".join(f"<{m['role']}>{m['content']}" for m in messages)


def _shared_prefix_chars(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share: a binary search over prefixes compared as strings (a
    character-by-character loop took 0.2 ms per call of a notebook, more than the rest of a replayed call)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def prefix_groups(prompts: list[list[dict[str, str]]], workers: int, min_shared_chars: int = 200) -> list[list[int]]:
    """Indices of consecutive calls that share a prompt prefix, as scheduling groups.

    Two neighbouring calls are in one group when their prompt texts (:func:`prompt_text`) agree beyond the
    first (system) message for at least ``min_shared_chars`` characters — e.g. the calls that judge the
    candidates of one pool, or the summaries of one source document. A group longer than
    ⌈n / workers⌉ is cut into pieces of that size so that every worker has work when there are few groups;
    each piece costs one more prefix computation, which is small beside the calls it spreads."""
    if not prompts:
        return []
    texts = [prompt_text(messages) for messages in prompts]
    groups = [[0]]
    for i in range(1, len(texts)):
        system = len(prompt_text(prompts[i][:1])) if prompts[i][0]["role"] == "system" else 0
        shared = _shared_prefix_chars(texts[i - 1], texts[i])
        if shared - system >= min_shared_chars:
            groups[-1].append(i)
        else:
            groups.append([i])
    cap = -(-len(texts) // workers)
    return [group[start:start + cap] for group in groups for start in range(0, len(group), cap)]


class SenderPool:
    """Daemon threads that send requests for the threads waiting on them, so that a waiting thread can probe the
    endpoint's liveness meanwhile (:meth:`Gateway._post`). Threads are kept between requests (starting one per
    request cost 2.5 ms a call) and started when none is idle, so a request never queues behind another, even
    behind a hung one; daemon threads, so a hung socket does not keep the interpreter from exiting."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, send: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """``send()`` run by a sender thread; its result or exception in the returned future."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                self.threads += 1
                threading.Thread(target=self._serve, daemon=True, name=f"llm-sender-{self.threads}").start()
        self._jobs.put((send, future))
        return future

    def _serve(self) -> None:
        while True:
            send, future = self._jobs.get()
            try:
                result, error = send(), None
            except BaseException as exc:  # handed to the waiting thread
                result, error = None, exc
            with self._lock:  # idle before the waiter wakes, so that its next request finds this thread
                self._idle += 1
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
            del send, future, result, error  # the finished request's objects are not kept while the thread waits


SENDERS = SenderPool()  # shared by every gateway of the process: threads = the most requests in flight at once


def well_formed_completion(body: str) -> dict[str, Any]:
    """The parsed body of a 200 answer if it is a chat completion with a message; else ``ValueError``.

    Checked with the ``openai`` package's own ``ChatCompletion`` type, so an error object, a non-JSON body or
    a completion without choices is refused before it can reach the cache."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the body is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict) or "error" in data:
        raise ValueError(f"the body is not a chat completion: {str(data)[:200]}")
    try:
        completion = ChatCompletion.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"the body is not a chat completion ({exc.error_count()} schema errors)") from None
    if not completion.choices:
        raise ValueError("the completion has no choices")
    return data


class Gateway:
    """LLM access for one notebook (or test): endpoint, cache, mode, concurrency and ledger."""

    def __init__(
        self,
        endpoint: Endpoint,
        cache_path: Path = paths.LLM_CACHE,
        mode: Mode = "live",
        notebook: str = "interactive",
        concurrency: int = embedded.N_PARALLEL,
        deadline: Deadline = Deadline(),
        transport_retries: int = 2,
        hung_after: int = 2,
        probe_interval_s: float = 15.0,
        probe_timeout_s: float = 10.0,
        replicate: str | None = None,
    ) -> None:
        if mode not in ("live", "replay"):
            raise ValueError(f"mode must be 'live' or 'replay', not {mode!r}")
        self.endpoint = endpoint
        self.cache = ResponseCache(cache_path, repair=mode == "live")
        self.mode = mode
        self.notebook = notebook
        self.concurrency = concurrency
        self.transport_retries = transport_retries
        self.deadline = deadline
        self.hung_after = hung_after
        # The hung-endpoint rule (_count_unanswered): items in a row without an answer, and whether any came.
        self._unanswered_in_a_row = 0
        self._answered_well = False
        self._unanswered_lock = threading.Lock()
        self.probe_interval_s = probe_interval_s
        self.probe_timeout_s = probe_timeout_s
        self.replicate = replicate
        self.ledger = Ledger()
        http_client = httpx2.Client(event_hooks={"request": [lambda request: self.ledger.record_http_request()]})
        # The embedded server needs no key; the client insists on one, and a placeholder reveals nothing.
        self._client = openai.OpenAI(
            base_url=endpoint.base_url, api_key=endpoint.api_key or "no-key", max_retries=transport_retries,
            timeout=httpx2.Timeout(deadline.ceiling_s, connect=3.0), http_client=http_client)
        self._prepare_lock = threading.Lock()
        self._prepared = False

    @classmethod
    def from_env(cls, notebook: str, role: Role = "generator", **overrides: Any) -> Gateway:
        """Gateway configured by the environment: ``LLM_MODE`` (live|replay), ``LLM_CACHE`` (the cache file),
        ``LLM_CONCURRENCY`` and the endpoint variables of ``role`` (:meth:`Endpoint.from_env`)."""
        if "LLM_CACHE_DIR" in os.environ:  # its folder would be ignored, and the study's cache written instead
            raise ValueError("LLM_CACHE_DIR is no longer read: the cache is one SQLite file; set LLM_CACHE to its "
                             "path (convert a folder cache with `python -m lib.llm.cache --cache FILE pack FOLDER`)")
        endpoint = Endpoint.from_env(role)
        settings: dict[str, Any] = {
            "endpoint": endpoint,
            "mode": os.environ.get("LLM_MODE", "live"),
            "cache_path": paths.LLM_CACHE,
            "concurrency": int(os.environ.get("LLM_CONCURRENCY", embedded.N_PARALLEL if endpoint.embedded else 4)),
            "notebook": notebook,
        }
        settings.update(overrides)
        return cls(**settings)

    def __repr__(self) -> str:
        # No mode: the executed report must not depend on whether it was built live or by replay.
        return f"Gateway(model={self.endpoint.identity!r}, url={self.endpoint.base_url!r})"

    def _redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "***") if key else text

    def _redacted(self, value: Any) -> Any:
        """``value`` (parsed JSON) with the API key masked in every string: a server may echo the Authorization
        header inside a valid completion, and what is stored must not hold it."""
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, list):
            return [self._redacted(item) for item in value]
        if isinstance(value, dict):
            return {self._redact(k): self._redacted(v) for k, v in value.items()}
        return value

    def _how_to_fix(self) -> str:
        how = ("start the embedded server with `make serve`" if self.endpoint.embedded
               else "check the server, or unset OPENAI_BASE_URL to use the embedded model")
        return (f"{how}, or set OPENAI_BASE_URL (with OPENAI_API_KEY and LLM_MODEL) to use another "
                "OpenAI-compatible endpoint")

    def _unreachable(self) -> EndpointUnreachable:
        return EndpointUnreachable(f"cannot reach the LLM endpoint at {self.endpoint.base_url}: {self._how_to_fix()}")

    def _prepare_endpoint(self) -> None:
        """Run the endpoint's hook once, before the first live request."""
        with self._prepare_lock:
            if not self._prepared and self.endpoint.prepare is not None:
                self.endpoint.prepare()
            self._prepared = True

    def _endpoint_answers(self) -> bool:
        """Liveness probe: does ``GET /models`` get any HTTP answer within the probe timeout?"""
        headers = {"Authorization": f"Bearer {self.endpoint.api_key}"} if self.endpoint.api_key else {}
        try:
            httpx2.get(f"{self.endpoint.base_url}/models", headers=headers, timeout=self.probe_timeout_s)
        except httpx2.HTTPError:
            return False
        return True

    def _post_once(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion through the ``openai`` client (with its transport retries); the parsed body of a
        well-formed answer, else :class:`TransportFailure` (or a run-stopping error, see the module docstring)."""
        deadline_s = self.deadline.seconds(body)
        try:
            # The client's own POST (its retries, timeouts, errors and auth) without ``chat.completions.create``'s
            # conversion of the body to its typed parameters, which changes nothing in a body of plain JSON
            # values and was a fifth of the gateway's own time per call against a fast endpoint.
            raw = self._client.post("/chat/completions", body=body, cast_to=httpx2.Response, options={
                "timeout": httpx2.Timeout(deadline_s, connect=3.0), "security": {"bearer_auth": True}})
        except openai.APITimeoutError:
            raise TransportFailure("timeout", f"no answer within the request's deadline of {deadline_s:.0f} s, "
                                              f"{self.transport_retries + 1} times") from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, httpx2.ConnectError):
                raise self._unreachable() from None
            raise TransportFailure("connection", f"connection failed after the transport retries "
                                                 f"({type(exc.__cause__).__name__})") from None
        except openai.APIStatusError as exc:
            message = self._redact(f"LLM endpoint {self.endpoint.base_url} answered HTTP {exc.status_code}: "
                                   f"{exc.response.text[:500]}")
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                raise TransportFailure("http_error", message) from None
            raise RequestRefused(exc.status_code, message) from None
        try:
            return well_formed_completion(raw.text)
        except ValueError as exc:
            raise TransportFailure("bad_response", self._redact(f"HTTP 200 but {exc}")) from None

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """:meth:`_post_once`, sent again on a malformed 200 up to the transport bound, and watched by the
        liveness probe so that an endpoint that stops answering fails in about a minute, not 3 × 600 s."""
        for attempt in range(self.transport_retries + 1):
            sent = SENDERS.submit(lambda: self._post_once(body))
            unanswered_probes = 0
            while True:
                try:
                    return sent.result(timeout=self.probe_interval_s)
                except concurrent.futures.TimeoutError:
                    if sent.done():  # it finished as the wait timed out: result() now gives its answer or error
                        continue
                    unanswered_probes = 0 if self._endpoint_answers() else unanswered_probes + 1
                    if unanswered_probes >= 2:
                        raise EndpointHung(f"the LLM endpoint at {self.endpoint.base_url} accepted the request but "
                                           f"answers neither it nor a liveness probe: {self._how_to_fix()}") from None
                except TransportFailure as failure:
                    if failure.kind != "bad_response" or attempt == self.transport_retries:
                        raise
                    break
        raise AssertionError("unreachable")

    def request(self, call: LLMCall, attempt: int) -> Request:
        """Attempt ``attempt`` of ``call`` as this gateway sends and caches it: :meth:`LLMCall.body` for the
        endpoint's model, and the cached form naming the model's identity, keyed once.

        A gateway made with ``replicate`` sends it as the request's OpenAI ``user`` field, which no server reads
        when generating: the same request becomes a separate, separately cached measurement (run-to-run drift,
        :mod:`lib.judges.drift`), while a gateway without it keeps every cache key as it was."""
        body = call.body(self.endpoint.model, attempt)
        if self.replicate is not None:
            body["user"] = self.replicate
        return Request(body, KeyedRequest({**body, "model": self.endpoint.identity}))

    def _answer(self, request: Request, call_label: str, refresh: bool = False) -> tuple[dict[str, Any], bool]:
        """One request through the cache: (the stored response, True), or (a live answer, False) that is then
        stored — also when ``refresh`` asks the server again over a stored answer. Raises
        :class:`TransportFailure` (nothing stored), :class:`CacheMissError` in replay mode, or
        :class:`~lib.llm.cache.CacheFileError` (before sending) when the cache cannot serve or store it."""
        if self.mode == "replay":  # a lookup only: no lock, no file, no folder
            entry, cached = self.cache.lookup(request.cached), True
            if entry is None:
                raise CacheMissError(
                    f"replay mode: no cached response for call '{call_label}' of notebook '{self.notebook}' "
                    f"(key {request.cached.key[:16]}…, model {self.endpoint.identity}) in {self.cache.path}. "
                    f"Run with LLM_MODE=live to compute it.")
        else:
            def compute() -> dict[str, Any]:
                self._prepare_endpoint()
                start = time.perf_counter()
                response = self._redacted(self._post(request.body))
                return {"response": response, "latency_s": round(time.perf_counter() - start, 3),
                        "notebook": self.notebook, "label": call_label}

            entry, cached = self.cache.get(request.cached, compute, refresh=refresh)
        if not cached:
            with self._unanswered_lock:
                self._unanswered_in_a_row = 0
                self._answered_well = True
        self.ledger.record_response(entry, cached)
        return entry["response"], cached

    def complete(
        self,
        messages: list[Message],
        schema: type[BaseModel] | None = None,
        *,
        call_label: str = "call",
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = 0,
        top_logprobs: int | None = None,
        max_attempts: int = 3,
        prefill: str | None = None,
    ) -> LLMResult:
        """One call, its :class:`LLMCall` fields given as arguments (the short form for a single call in a script
        or notebook): validated against ``schema`` with up to ``max_attempts`` attempts, each with the original
        ``messages``. Many calls go to :meth:`complete_many` as :class:`LLMCall` records."""
        return self._complete(LLMCall(messages, schema, call_label=call_label, temperature=temperature,
                                      max_tokens=max_tokens, seed=seed, top_logprobs=top_logprobs, prefill=prefill,
                                      max_attempts=max_attempts))

    def _complete(self, call: LLMCall) -> LLMResult:
        """Every attempt of ``call`` until one validates (see the module docstring), recorded in the ledger.

        A call whose every attempt ended invalid is a failure of that run, not of the item for ever: an answer
        cut in transit is cached like any complete one (a replay must reproduce the run), so in live mode a
        failure that came from stored answers is asked again, once, with the same attempts (at most
        ``max_attempts`` requests), and what the server says now replaces the stored answers."""
        requests: list[Request] = []  # each attempt's request, made at its first sending and reused from then on
        result, from_cache = self._attempts(call, requests)
        if from_cache and self.mode == "live" and asked_again_live(result):
            result, _ = self._attempts(call, requests, refresh=True)
        if asked_again_live(result):  # for `python -m lib.llm.cache check`: a committed failure is not stable
            self.cache.log_usage([request.cached.key for request in requests[:result.attempts]], ASKED_AGAIN)
        self.ledger.record_call(result)
        self._count_unanswered(result)
        return result

    def _count_unanswered(self, result: LLMResult) -> None:
        """Stop the run once ``hung_after`` items in a row got no answer, with no live answer between: past their
        deadline (``timeout``), or with a 200 that is no chat completion (``bad_response``) from an endpoint that
        has never answered one well (an endpoint that has may be going through a bad patch: its items are
        recorded failures, asked again by the next run)."""
        with self._unanswered_lock:
            if result.failure_kind != "timeout" and (result.failure_kind != "bad_response" or self._answered_well):
                return
            self._unanswered_in_a_row += 1
            in_a_row = self._unanswered_in_a_row
        if in_a_row < self.hung_after:
            return
        if result.failure_kind == "timeout":
            raise EndpointHung(f"the LLM endpoint at {self.endpoint.base_url} answers its liveness probe but left "
                               f"{in_a_row} requests in a row unanswered past their deadline: it is stuck or "
                               f"overloaded; {self._how_to_fix()}")
        raise EndpointBroken(f"the LLM endpoint at {self.endpoint.base_url} answered {in_a_row} calls in a row, and "
                             f"every one before, with no chat completion ({result.error}): it is not an "
                             f"OpenAI-compatible API as configured (does its base URL end in /v1?); "
                             f"{self._how_to_fix()}")

    def _attempts(self, call: LLMCall, requests: list[Request], refresh: bool = False) -> tuple[LLMResult, bool]:
        """(the result of the attempts of ``call`` until one validates, whether any answer came from the cache).
        ``requests`` holds the requests of the attempts made so far; one not yet made is added to it."""
        result = LLMResult(ok=False, value=None, text="", attempts=0)
        log: list[Attempt] = []
        from_cache = False
        for attempt in range(1, call.max_attempts + 1):
            attempt_seed = call.attempt_seed(attempt)
            if len(requests) < attempt:
                requests.append(self.request(call, attempt))
            try:
                response, cached = self._answer(requests[attempt - 1], call.call_label, refresh)
                from_cache = from_cache or cached
            except TransportFailure as failure:
                log.append(Attempt(attempt_seed, failure.kind, str(failure)))
                result = LLMResult(ok=False, value=None, text="", failure_kind=failure.kind, error=str(failure),
                                   attempts=attempt, prompt_tokens=result.prompt_tokens,
                                   completion_tokens=result.completion_tokens, attempt_log=log)
                break  # the transport already retried; a further attempt would only repeat the fault
            choice = response["choices"][0]
            text = choice["message"].get("content") or ""
            # llama.cpp returns the whole message, others the rest
            if call.prefill and not text.startswith(call.prefill):
                text = call.prefill + text
            usage = response.get("usage") or {}
            value, kind, error = _parse(text, choice.get("finish_reason"), call.schema, call.cut_text_ok)
            log.append(Attempt(attempt_seed, kind, error))
            result = LLMResult(
                ok=kind is None, value=value, text=text, failure_kind=kind, error=error, attempts=attempt,
                logprobs=(choice.get("logprobs") or {}).get("content"),
                prompt_tokens=result.prompt_tokens + int(usage.get("prompt_tokens") or 0),
                completion_tokens=result.completion_tokens + int(usage.get("completion_tokens") or 0),
                attempt_log=log,
            )
            if result.ok:
                break
        return result, from_cache

    def complete_many(self, calls: Sequence[LLMCall], desc: str = "LLM calls") -> list[LLMResult]:
        """Run each call with bounded concurrency and a progress bar; order kept.

        Calls are sent in the order of their prompt texts (:func:`prompt_text`), which puts the calls that share
        the longest prefixes next to each other wherever the caller listed them (the conversations of one user
        with two systems that answered alike for several turns, the summaries of one document), and scheduled in
        :func:`prefix_groups` of that order: a worker takes a whole group and sends its calls one after the
        other, so the server slot that holds the group's shared prompt prefix serves all of them (interleaving
        the calls of one group over both slots makes each slot process the prefix). The requests themselves do
        not change, so neither do cache keys, and results come back in the order of ``calls``.

        Every item ends as a result (a score or a recorded failure). A run-stopping error (replay miss,
        unreachable or hung endpoint, configuration error) stops the workers before their next call and is
        raised; the calls that finished are already in the cache, so a rerun does not repeat them."""
        workers = max(1, self.concurrency)
        texts = [prompt_text(call.messages) for call in calls]
        order = sorted(range(len(calls)), key=texts.__getitem__)
        pending = deque([order[k] for k in group]
                        for group in prefix_groups([calls[i].messages for i in order], workers))
        results: dict[int, LLMResult] = {}
        errors: list[BaseException] = []
        lock = threading.Lock()
        progress = tqdm(total=len(calls), desc=desc, unit="call", mininterval=5.0)

        def work() -> None:
            while True:
                with lock:
                    if errors or not pending:
                        return
                    group = pending.popleft()
                for index in group:
                    try:
                        results[index] = self._complete(calls[index])
                    except BaseException as exc:
                        with lock:
                            errors.append(exc)
                        return
                    with lock:
                        progress.update()
                        if errors:
                            return

        threads = [threading.Thread(target=work) for _ in range(min(workers, len(calls)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        progress.close()
        if errors:
            raise errors[0]
        return [results[i] for i in range(len(calls))]

    def save_ledger(self, folder: Path = paths.LEDGERS) -> Path:
        """Write the ledger to ``<folder>/<notebook>.json`` (read by the cost table of notebook 04)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.notebook}.json"
        record = {"notebook": self.notebook, "model": self.endpoint.identity, **self.ledger.as_dict()}
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return path

    def close(self) -> None:
        """Close the connections the ``openai`` client keeps open between requests (its HTTP client and pool; the
        liveness probe closes its own). A script that never closes its gateway ends with a ``ResourceWarning``
        per open socket; ``with Gateway.from_env(...) as gateway:`` closes it at the end of the block."""
        self._client.close()
        self.cache.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
