"""Applying the judges to one's own data and endpoint: each trap a user met is closed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes import FakeOpenAI, always

ROOT = Path(__file__).resolve().parents[1]


def run_script(code: str, url: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter on the fake endpoint (the generator's variables only: the judge falls back
    to them), with every ResourceWarning an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_", "LLM_"))}
    env |= {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-fake", "LLM_MODEL": "fake-model", "LLM_MODE": "live",
            "LLM_CACHE_DIR": str(cwd / "llm-cache"), "PYTHONPATH": str(ROOT)}
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


CLOSING_SCRIPT = """
from pydantic import BaseModel
from lib.llm.gateway import Gateway

class Score(BaseModel):
    score: int

with Gateway.from_env("closing") as gateway:
    assert gateway.complete([{"role": "user", "content": "Rate it."}], Score).ok
"""


def test_a_gateway_used_as_a_context_manager_leaves_no_socket_open(tmp_path):
    # A keep-alive endpoint leaves the connection in the client's pool: only closing the gateway closes it.
    with FakeOpenAI(always('{"score": 3}'), keep_alive=True) as fake:
        done = run_script(CLOSING_SCRIPT, fake.base_url, tmp_path)
        unclosed = run_script(CLOSING_SCRIPT.replace('with Gateway.from_env("closing") as gateway:',
                                                     'gateway = Gateway.from_env("closing")\nif True:'),
                              fake.base_url, tmp_path / "unclosed")
    assert done.returncode == 0 and "ResourceWarning" not in done.stderr, done.stderr
    assert "ResourceWarning" in unclosed.stderr, "the check would not see an unclosed socket"
