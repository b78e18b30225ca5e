"""Applying the judges to one's own data and endpoint: each trap a user met is closed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib.judges import geval, relevance
from lib.judges.items import JudgeItem
from tests.fakes import FakeOpenAI, always
from tests.test_judges import digit_logprobs, gateway_for

ROOT = Path(__file__).resolve().parents[1]
STEPS = "1. Read the summary.\n2. Check the criterion.\n3. Assign a score."


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


@pytest.mark.parametrize("author, error", [("modle", ValueError), ("Model", ValueError), (object(), TypeError)])
def test_evaluation_steps_refuse_an_author_that_is_neither_model_nor_study(author, error):
    with pytest.raises(error, match="'model', 'study'"):
        geval.evaluation_steps(geval.COHERENCE, author)


def test_evaluation_steps_called_with_a_gateway_say_how_to_generate_steps(tmp_path):
    # The old positional call evaluation_steps(rubric, gateway) used to return the study's steps.
    with FakeOpenAI(always(STEPS)) as fake:
        with pytest.raises(TypeError, match="model_steps"):
            geval.evaluation_steps(geval.COHERENCE, gateway_for(fake, tmp_path))
    assert not fake.requests


def test_model_steps_generate_a_rubrics_steps_once_and_then_read_them(tmp_path):
    rubric = geval.Rubric("Clarity", (1, 5), geval.SUMMARY_TASK_INTRO, "how easy the summary is to follow.")
    with FakeOpenAI(always(STEPS)) as fake:
        first = geval.model_steps(rubric, gateway_for(fake, tmp_path), tmp_path / "steps")
        again = geval.model_steps(rubric, gateway_for(fake, tmp_path), tmp_path / "steps")
    assert first == again == STEPS and len(fake.requests) == 1
    assert (tmp_path / "steps" / "Clarity.txt").read_text() == STEPS + "\n"
    assert "Clarity (1-5) - how easy" in fake.requests[0]["messages"][0]["content"]


def four_point(tmp_path) -> list[relevance.Judgment]:
    probs = {0: 0.1, 1: 0.1, 2: 0.2, 3: 0.6}
    with FakeOpenAI(always('{"grade": 3}', logprobs=digit_logprobs(probs))) as fake:
        return relevance.judge_pointwise(gateway_for(fake, tmp_path), [JudgeItem("query", "passage")],
                                         prompts=relevance.PASSAGE_4POINT_PROMPTS)


def test_judgments_frame_takes_the_scale_from_4_point_judgments(tmp_path):
    frame = relevance.judgments_frame(four_point(tmp_path))
    assert [c for c in frame if c.startswith("p_grade_")] == ["p_grade_0", "p_grade_1", "p_grade_2", "p_grade_3"]
    assert frame.p_grade_3.iloc[0] == pytest.approx(0.6) and frame.expected_grade.iloc[0] == pytest.approx(2.3)
    assert relevance.judgments_frame(four_point(tmp_path), scale=(0, 1, 2, 3)).equals(frame)


def test_judgments_frame_refuses_a_scale_the_judgments_are_not_on(tmp_path):
    with pytest.raises(ValueError, match=r"\(0, 1, 2, 3\)"):
        relevance.judgments_frame(four_point(tmp_path), scale=(0, 1, 2))
    with pytest.raises(ValueError, match="more than one scale"):
        relevance.judgments_frame([*four_point(tmp_path), relevance.Judgment(ok=True, grade=1)])
    with pytest.raises(ValueError, match="4 probabilities"):
        relevance.Judgment(ok=True, grade=3, p_grade=(0.1, 0.1, 0.2, 0.6))  # scale left at the 3-point default
