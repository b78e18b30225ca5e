"""Applying the judges to one's own data and endpoint (docs/USING_THE_JUDGES.md): the guide's Python runs against
the fake OpenAI server, and each trap a user met is closed."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from lib.analysis import calibration
from lib.judges import geval, methods, relevance
from lib.judges.items import JudgeItem
from tests.fakes import FakeOpenAI, Reply, always
from tests.test_judges import digit_logprobs, gateway_for

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "USING_THE_JUDGES.md"
STEPS = "1. Read the summary.\n2. Check the criterion.\n3. Assign a score."


def run_script(code: str, url: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter on the fake endpoint (the generator's variables only: the judge falls back
    to them), with every ResourceWarning an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_", "LLM_"))}
    env |= {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-fake", "LLM_MODEL": "fake-model", "LLM_MODE": "live",
            "LLM_CACHE": str(cwd / "llm-cache.sqlite"), "PYTHONPATH": str(ROOT)}
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
    with FakeOpenAI(always(STEPS)) as fake, pytest.raises(TypeError, match="model_steps"):
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


def test_a_rubric_of_ones_own_scores_in_one_call_with_its_steps_written_once(tmp_path):
    rubric = geval.Rubric("Clarity", (1, 5), geval.SUMMARY_TASK_INTRO, "how easy the summary is to follow.",
                          steps_folder=tmp_path / "steps", reasons=True)

    def is_form(body):
        return any("Evaluation Form" in m["content"] for m in body["messages"])

    def responder(body, n):
        return (Reply('{"score": 4, "reason": "clear and short"}', logprobs=digit_logprobs({4: 0.5, 5: 0.5}))
                if is_form(body) else Reply(STEPS))

    with FakeOpenAI(responder) as fake:
        results = rubric.score(gateway_for(fake, tmp_path), [JudgeItem("src", "out one"), JudgeItem("src", "two")])
        rubric.score(gateway_for(fake, tmp_path), [JudgeItem("src", "three")])
    assert (tmp_path / "steps" / "Clarity.txt").read_text() == STEPS + "\n"
    assert sum(not is_form(r) for r in fake.requests) == 1  # the later call read the steps the first one wrote
    assert [(r.score, r.reason) for r in results] == [(4.5, "clear and short")] * 2


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


def some_judge(body: dict, n: int) -> Reply:
    """A judge whose answers depend on what it is shown only: a grade (its p(g) from the passage's length),
    a G-Eval score, or evaluation steps when nothing is pre-filled."""
    messages = body["messages"]
    prefill = messages[-1]["content"] if messages[-1]["role"] == "assistant" else None
    shown = len(messages[1]["content"]) if len(messages) > 1 else 0
    if prefill == relevance.GRADE_PREFILL:
        top = shown % 4
        probs = {g: (0.7 if g == top else 0.1) for g in range(4)}
        return Reply(json.dumps({"grade": top}), logprobs=digit_logprobs(probs))
    if prefill == geval.SCORE_PREFILL:
        top = shown % 5 + 1
        probs = {s: (0.6 if s == top else 0.1) for s in range(1, 6)}
        return Reply(json.dumps({"score": top}), logprobs=digit_logprobs(probs))
    return Reply(STEPS)


def dl_rows() -> pd.DataFrame:
    """Eight passages of two queries with human grades 0–3 (passages of different lengths, which the fake judge
    grades by)."""
    return pd.DataFrame({"qid": ["1"] * 4 + ["2"] * 4, "docid": [f"d{i}" for i in range(8)],
                         "query": ["what is a nudge"] * 4 + ["how do judges grade"] * 4,
                         "passage": ["x" * (20 + 7 * i) for i in range(8)], "human_grade": [0, 1, 2, 3, 3, 2, 1, 0]})


def thresholds_choice(judged: pd.DataFrame, model: str) -> methods.FrozenChoice:
    method = next(m for m in methods.lifting_methods(0) if m.column == "pointwise_expected")
    frozen = calibration.freeze(method, judged, "human_grade", relevance.PASSAGE_4POINT_PROMPTS.scale)
    return methods.FrozenChoice.of(frozen, model, relevance.PASSAGE_4POINT_PROMPTS.scale)


def test_a_frozen_choice_survives_save_and_load_and_grades_new_items_as_before(tmp_path):
    rows = dl_rows()
    with FakeOpenAI(some_judge) as fake:
        gateway = gateway_for(fake, tmp_path)
        judged = rows.join(methods.judge_passages(gateway, rows, ["pointwise"]))
        choice = thresholds_choice(judged, gateway.endpoint.identity)
        loaded = methods.FrozenChoice.load(choice.save(tmp_path / "choice.json"))
        applied = loaded.apply(gateway, [JudgeItem(r.query, r.passage) for r in rows.itertuples()])
    assert loaded == choice and loaded.cuts is not None and len(loaded.cuts) == 3
    expected = calibration.Frozen(choice.method, choice.cuts).grades(judged, choice.scale)
    assert applied["grade"].tolist() == loaded.grades(judged).tolist() == expected.tolist()
    assert json.loads((tmp_path / "choice.json").read_text())["model"] == "fake"


def test_a_frozen_choice_refuses_another_judge_model_and_a_baseline(tmp_path):
    rows = dl_rows()
    with FakeOpenAI(some_judge) as fake:
        judged = rows.join(methods.judge_passages(gateway_for(fake, tmp_path), rows, ["pointwise"]))
        choice = thresholds_choice(judged, "another-model")
        with pytest.raises(ValueError, match="another-model"):
            choice.apply(gateway_for(fake, tmp_path), [JudgeItem("q", "p")])
    bm25 = calibration.Frozen(calibration.Method("BM25", "bm25", fit=True, calls=0), (0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="no LLM call kind"):
        methods.FrozenChoice.of(bm25, "m", (0, 1, 2, 3))


def test_a_few_shot_choice_keeps_its_examples(tmp_path):
    examples = methods.fewshot_examples(dl_rows(), (0, 1, 2, 3), seed=0)
    frozen = calibration.Frozen(next(m for m in methods.lifting_methods(0) if m.column == "fewshot_grade"), None)
    choice = methods.FrozenChoice.of(frozen, "fake", (0, 1, 2, 3), examples=examples, criteria=("Topicality",))
    assert choice.criteria == () and [e.grade for e in choice.examples] == [0, 1, 2, 3]
    loaded = methods.FrozenChoice.load(choice.save(tmp_path / "fewshot.json"))
    with FakeOpenAI(some_judge) as fake:
        loaded.apply(gateway_for(fake, tmp_path), [JudgeItem("what is a nudge", "a passage")])
    block = methods.examples_block(examples, loaded.example_chars)
    assert fake.requests[0]["messages"][1]["content"].startswith(block)


def guide_code() -> str:
    """The guide's ```python blocks, in order, as one script."""
    return "\n".join(re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.DOTALL))


def test_the_guides_python_runs_on_an_openai_compatible_endpoint(tmp_path):
    code = guide_code()
    assert "with Gateway.from_env(" in code and "FrozenChoice.load(" in code and "steps_folder=" in code
    with FakeOpenAI(some_judge, keep_alive=True) as fake:
        done = run_script(code, fake.base_url, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ResourceWarning" not in done.stderr, done.stderr[-3000:]
    assert fake.requests, "the guide made no LLM call"
    assert fake.headers[0]["authorization"] == "Bearer sk-fake"
    # the report card the guide shows is the one its call prints (on the fake endpoint's grades)
    shown = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    assert shown and all(line in done.stdout.splitlines() for line in shown)
