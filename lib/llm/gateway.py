"""The one door to an LLM in this study: structured output, bounded retries, cache, replay, ledger.

``Gateway.complete(messages, schema=Model, …)`` sends an OpenAI-compatible chat completion, asks for JSON
matching ``Model``'s schema (``response_format: json_schema``), validates the answer with pydantic and, when
it is invalid (bad JSON, schema violation, cut by ``max_tokens``), asks again with the error shown to the
model, at most ``max_attempts`` times. An answer that is still invalid comes back as an :class:`LLMResult`
with ``ok=False`` and the reason — never a made-up value. Callers count and show failures.

Every request actually sent is cached under the hash of its canonical JSON (:mod:`lib.llm.cache`), retries
included, so a rerun replays the same conversation exactly. ``mode="replay"`` serves only from the cache and
raises :class:`CacheMissError` naming the notebook and call on a miss; CI and nbval use it.

Endpoint: the embedded xllamacpp server (started lazily on the first cache miss) unless ``OPENAI_BASE_URL``
is set, in which case that endpoint, ``OPENAI_API_KEY`` and ``LLM_MODEL`` are used. The API key lives only
in the Authorization header: it is never cached, logged, printed or put into an exception message.
"""
from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ValidationError
from tqdm import tqdm

from lib import paths
from lib.llm import server as embedded
from lib.llm.cache import ResponseCache, request_key

Mode = Literal["live", "replay"]
FailureKind = Literal["invalid_json", "schema_violation", "truncated", "http_error"]

RETRY_FEEDBACK = (
    "That answer was not usable: {error}. Answer again with only a JSON object that matches the schema"
    " and is short enough to finish."
)


class CacheMissError(RuntimeError):
    """Replay mode met a request that is not in the cache."""


class EndpointUnreachable(RuntimeError):
    """The configured endpoint does not accept connections."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. ``identity`` names the model in cache keys (a digest for the embedded model)."""

    base_url: str
    model: str
    identity: str
    embedded: bool
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls) -> "Endpoint":
        """``OPENAI_BASE_URL`` (+ ``OPENAI_API_KEY``, ``LLM_MODEL``) or the embedded server."""
        base_url = os.environ.get("OPENAI_BASE_URL", "").strip()
        if not base_url:
            return cls(embedded.embedded_base_url(), embedded.MODEL_NAME, embedded.MODEL_IDENTITY, True)
        model = os.environ.get("LLM_MODEL", "").strip()
        if not model:
            raise ValueError("OPENAI_BASE_URL is set but LLM_MODEL is not: name the model to use (e.g. gpt-4o-mini)")
        return cls(base_url.rstrip("/"), model, model, False, os.environ.get("OPENAI_API_KEY") or None)


@dataclass
class LLMResult:
    """Outcome of one ``complete`` call (all its attempts)."""

    ok: bool
    value: Any  # validated pydantic object (schema given), text (no schema), or None on failure
    text: str  # the last raw answer
    failure_kind: FailureKind | None = None
    error: str | None = None
    attempts: int = 1
    logprobs: list[dict[str, Any]] | None = None  # the last answer's per-token logprobs, when asked
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Ledger:
    """Counts of one gateway's work. ``recorded_latency_s`` sums the latencies stored with each response,
    so it is the same in a replay as in the live run; ``cache_hits``, ``live_requests`` and ``live_wall_s``
    (request latencies of live calls, summed over parallel requests) describe this run only."""

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    live_requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    recorded_latency_s: float = 0.0
    live_wall_s: float = 0.0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record_request(self, usage: dict[str, Any], latency_s: float, cached: bool, wall_s: float) -> None:
        details = usage.get("prompt_tokens_details") or {}
        with self._lock:
            self.requests += 1
            self.cache_hits += cached
            self.live_requests += not cached
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.cached_prompt_tokens += int(details.get("cached_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            self.recorded_latency_s += latency_s
            self.live_wall_s += 0.0 if cached else wall_s

    def record_call(self, result: LLMResult) -> None:
        with self._lock:
            self.calls += 1
            self.retries += result.attempts - 1
            if not result.ok:
                self.failures[result.failure_kind] = self.failures.get(result.failure_kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        """The run-independent counts (what a replay reproduces), for the committed ledger files."""
        volatile = {"cache_hits", "live_requests", "live_wall_s"}
        record = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k not in volatile}
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
            f"this run: {self.cache_hits} requests from the response cache, {self.live_requests} live, "
            f"live request time {self.live_wall_s:,.1f} s (summed over parallel requests)",
        ])


def _parse(text: str, finish_reason: str | None, schema: type[BaseModel] | None) -> tuple[Any, FailureKind | None, str | None]:
    """Validate one answer: (value, None, None) on success, else (None, kind, message).

    An answer stopped by ``max_tokens`` is still accepted when it is complete, valid JSON for the schema
    (the model had only trailing whitespace left to write); otherwise it is a ``truncated`` failure."""
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


def response_format_for(schema: type[BaseModel]) -> dict[str, Any]:
    """OpenAI ``response_format`` asking for JSON that matches the pydantic model's JSON schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": True},
    }


class Gateway:
    """LLM access for one notebook (or test): endpoint, cache, mode, concurrency and ledger."""

    def __init__(
        self,
        endpoint: Endpoint,
        cache_dir: Path = paths.LLM_CACHE,
        mode: Mode = "live",
        notebook: str = "interactive",
        concurrency: int = embedded.N_PARALLEL,
        timeout_s: float = 600.0,
        transport_retries: int = 3,
    ) -> None:
        if mode not in ("live", "replay"):
            raise ValueError(f"mode must be 'live' or 'replay', not {mode!r}")
        self.endpoint = endpoint
        self.cache = ResponseCache(cache_dir)
        self.mode = mode
        self.notebook = notebook
        self.concurrency = concurrency
        self.transport_retries = transport_retries
        self.ledger = Ledger()
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s, connect=3.0))
        self._server_lock = threading.Lock()
        self._server_checked = False

    @classmethod
    def from_env(cls, notebook: str, **overrides: Any) -> "Gateway":
        """Gateway configured by the environment: ``LLM_MODE`` (live|replay), ``LLM_CACHE_DIR``,
        ``LLM_CONCURRENCY`` and the endpoint variables of :meth:`Endpoint.from_env`."""
        endpoint = Endpoint.from_env()
        settings: dict[str, Any] = {
            "endpoint": endpoint,
            "mode": os.environ.get("LLM_MODE", "live"),
            "cache_dir": Path(os.environ.get("LLM_CACHE_DIR", paths.LLM_CACHE)),
            "concurrency": int(os.environ.get("LLM_CONCURRENCY", embedded.N_PARALLEL if endpoint.embedded else 4)),
            "notebook": notebook,
        }
        settings.update(overrides)
        return cls(**settings)

    def __repr__(self) -> str:
        return f"Gateway(model={self.endpoint.identity!r}, url={self.endpoint.base_url!r}, mode={self.mode!r})"

    def _redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "***") if key else text

    def _unreachable(self) -> EndpointUnreachable:
        how = ("start the embedded server with `make serve`" if self.endpoint.embedded
               else "check the server, or unset OPENAI_BASE_URL to use the embedded model")
        return EndpointUnreachable(
            f"cannot reach the LLM endpoint at {self.endpoint.base_url}: {how}, or set OPENAI_BASE_URL "
            f"(with OPENAI_API_KEY and LLM_MODEL) to use another OpenAI-compatible endpoint"
        )

    def _ensure_embedded_server(self) -> None:
        """Start the embedded server on the first cache miss if nothing answers on its port."""
        with self._server_lock:
            if self._server_checked:
                return
            if not embedded.is_up():
                embedded.start_background(autostarted=True)
            self._server_checked = True

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST a chat completion with bounded retries on 5xx/429; raise on anything else."""
        url = f"{self.endpoint.base_url}/chat/completions"
        for attempt in range(1, self.transport_retries + 1):
            try:
                response = self._client.post(url, json=body)
            except httpx.ConnectError:
                raise self._unreachable() from None
            except httpx.TimeoutException as exc:
                if attempt == self.transport_retries:
                    raise RuntimeError(self._redact(f"LLM request to {url} timed out: {exc}")) from None
                continue
            if response.status_code == 200:
                return response.json()
            if response.status_code not in (429, 500, 502, 503, 504) or attempt == self.transport_retries:
                raise RuntimeError(self._redact(f"LLM endpoint {url} answered HTTP {response.status_code}: "
                                                f"{response.text[:500]}"))
            time.sleep(min(2.0 ** attempt, 10.0))
        raise AssertionError("unreachable")

    def _request(self, body: dict[str, Any], label: str) -> dict[str, Any]:
        """One request through the cache: the stored response, or a live one that is then stored."""
        keyed = {**body, "model": self.endpoint.identity}
        key = request_key(keyed)
        entry = self.cache.get(key)
        if entry is not None:
            self.ledger.record_request(entry["response"].get("usage") or {}, entry["latency_s"], True, 0.0)
            return entry["response"]
        if self.mode == "replay":
            raise CacheMissError(
                f"replay mode: no cached response for call '{label}' of notebook '{self.notebook}' "
                f"(key {key[:16]}…, model {self.endpoint.identity}) in {self.cache.folder}. "
                f"Run with LLM_MODE=live to compute it."
            )
        if self.endpoint.embedded:
            self._ensure_embedded_server()
        start = time.perf_counter()
        response = self._post(body)
        latency = time.perf_counter() - start
        self.cache.put(key, {"request": keyed, "response": response, "latency_s": round(latency, 3),
                             "notebook": self.notebook, "label": label})
        self.ledger.record_request(response.get("usage") or {}, latency, False, latency)
        return response

    def complete(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel] | None = None,
        *,
        label: str = "call",
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = 0,
        top_logprobs: int | None = None,
        max_attempts: int = 3,
    ) -> LLMResult:
        """One chat completion, validated against ``schema`` with up to ``max_attempts`` attempts.

        ``top_logprobs`` asks for per-token log-probabilities (needed for probability-weighted scores);
        they come back in ``LLMResult.logprobs`` as the endpoint's ``choices[0].logprobs.content`` list.
        """
        conversation = list(messages)
        result = LLMResult(ok=False, value=None, text="")
        for attempt in range(1, max_attempts + 1):
            body: dict[str, Any] = {"model": self.endpoint.model, "messages": conversation,
                                    "temperature": temperature, "max_tokens": max_tokens}
            if seed is not None:
                body["seed"] = seed
            if schema is not None:
                body["response_format"] = response_format_for(schema)
            if top_logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = top_logprobs
            response = self._request(body, label)
            choice = response["choices"][0]
            text = choice["message"].get("content") or ""
            usage = response.get("usage") or {}
            value, kind, error = _parse(text, choice.get("finish_reason"), schema)
            result = LLMResult(
                ok=kind is None, value=value, text=text, failure_kind=kind, error=error, attempts=attempt,
                logprobs=(choice.get("logprobs") or {}).get("content"),
                prompt_tokens=result.prompt_tokens + int(usage.get("prompt_tokens") or 0),
                completion_tokens=result.completion_tokens + int(usage.get("completion_tokens") or 0),
            )
            if result.ok:
                break
            conversation = conversation + [{"role": "assistant", "content": text},
                                           {"role": "user", "content": RETRY_FEEDBACK.format(error=error)}]
        self.ledger.record_call(result)
        return result

    def complete_many(self, calls: list[dict[str, Any]], desc: str = "LLM calls") -> list[LLMResult]:
        """Run ``complete(**call)`` for each call with bounded concurrency and a progress bar; order kept."""
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            futures = [pool.submit(self.complete, **call) for call in calls]
            return [f.result() for f in tqdm(futures, desc=desc, unit="call", mininterval=5.0)]

    def save_ledger(self, folder: Path = paths.LEDGERS) -> Path:
        """Write the ledger to ``<folder>/<notebook>.json`` (read by the cost table of notebook 04)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.notebook}.json"
        record = {"notebook": self.notebook, "model": self.endpoint.identity, **self.ledger.as_dict()}
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return path

    def close(self) -> None:
        self._client.close()
