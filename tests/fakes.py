"""A fake OpenAI-compatible chat endpoint on 127.0.0.1 (real HTTP) that answers from a script and records
every request it receives, so tests can assert on what the gateway sent and how often."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    """What the fake answers: a chat completion with ``content``, or an HTTP error ``status``."""

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    error_body: str = ""
    logprobs: list[dict[str, Any]] | None = None
    delay_s: float = 0.0


@dataclass
class FakeOpenAI:
    """``responder(body, n)`` returns the :class:`Reply` for the n-th request (0-based)."""

    responder: Callable[[dict[str, Any], int], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    n = len(fake.requests)
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                reply = fake.responder(body, n)
                time.sleep(reply.delay_s)
                if reply.status != 200:
                    payload = reply.error_body.encode()
                    self.send_response(reply.status)
                else:
                    choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason,
                                              "message": {"role": "assistant", "content": reply.content}}
                    if reply.logprobs is not None:
                        choice["logprobs"] = {"content": reply.logprobs}
                    payload = json.dumps({
                        "id": f"fake-{n}", "object": "chat.completion", "choices": [choice],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


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
