"""A fake OpenAI-compatible chat endpoint on 127.0.0.1 (real HTTP) that answers from a script and records
every request it receives, so tests can assert on what the gateway sent and how often. Besides answers and
HTTP errors it can misbehave the way a flaky endpoint or proxy does (:class:`Reply` ``fault``)."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

# drop: close the connection without answering · truncated_body: a 200 whose JSON body is cut in half ·
# error_body: a 200 whose body is an error object · not_json: a 200 with an HTML page · empty_body: a 200 with no
# body · hang: accept the
# request and never answer (the liveness probe GET /models then hangs too) · stall: accept the request and never
# answer it while the probe is still answered (a server whose workers are stuck behind a healthy front).
Fault = Literal["drop", "truncated_body", "error_body", "not_json", "empty_body", "hang", "stall"]


@dataclass
class Reply:
    """What the fake answers: a chat completion with ``content``, an HTTP error ``status``, or a ``fault``."""

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    error_body: str = ""
    logprobs: list[dict[str, Any]] | None = None
    delay_s: float = 0.0
    fault: Fault | None = None


@dataclass
class FakeOpenAI:
    """``responder(body, n)`` returns the :class:`Reply` for the n-th chat request (0-based). With ``keep_alive``
    it speaks HTTP/1.1 and keeps connections open between requests, as real endpoints do (so a client that is
    never closed leaves open sockets behind); otherwise HTTP/1.0, one connection per request."""

    responder: Callable[[dict[str, Any], int], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    keep_alive: bool = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.hanging = threading.Event()  # set once a reply hangs: the probe hangs too from then on
        self._release = threading.Event()  # set at shutdown so hanging handlers end
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
            # Headers and body are two writes: without TCP_NODELAY the body waits for the client's delayed ACK
            # (40 ms), which real servers avoid and which would hide the gateway's own cost in `make bench`.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # the gateway's liveness probe
                if fake.hanging.is_set():
                    fake._release.wait()
                    return
                self._send(200, b'{"object": "list", "data": [{"id": "fake-model"}]}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    n = len(fake.requests)
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = fake.responder(body, n)
                time.sleep(reply.delay_s)
                if reply.fault == "hang":
                    fake.hanging.set()
                if reply.fault in ("hang", "stall"):
                    fake._release.wait()
                    return
                if reply.fault == "drop":
                    self.close_connection = True
                    return
                if reply.status != 200:
                    self._send(reply.status, reply.error_body.encode())
                    return
                if reply.fault == "error_body":
                    self._send(200, b'{"error": {"message": "upstream model crashed", "code": 500}}')
                    return
                if reply.fault == "not_json":
                    self._send(200, b"<html><body>502 Bad Gateway</body></html>")
                    return
                if reply.fault == "empty_body":
                    self._send(200, b"")
                    return
                choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason,
                                          "message": {"role": "assistant", "content": reply.content}}
                if reply.logprobs is not None:
                    choice["logprobs"] = {"content": reply.logprobs}
                payload = json.dumps({
                    "id": f"fake-{n}", "object": "chat.completion", "created": 0, "model": "fake-model",
                    "choices": [choice],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()
                if reply.fault == "truncated_body":
                    payload = payload[: len(payload) // 2]
                self._send(200, payload)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a client opening 32 connections at once must not overflow the listen backlog


def always(content: str, **kwargs: Any) -> Callable[[dict[str, Any], int], Reply]:
    return lambda body, n: Reply(content=content, **kwargs)


def sequence(*replies: Reply) -> Callable[[dict[str, Any], int], Reply]:
    """The n-th request gets the n-th reply (the last one repeats)."""
    return lambda body, n: replies[min(n, len(replies) - 1)]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
