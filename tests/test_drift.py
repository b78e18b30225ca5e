"""Run-to-run drift: reruns are cached apart from the original requests, and the table counts what moved."""
from __future__ import annotations

import numpy as np
import pytest

from lib.judges import drift
from lib.judges.items import JudgeItem
from lib.judges.relevance import PASSAGE_4POINT_PROMPTS, Judgment, judge_pointwise
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply
from tests.test_judges import digit_logprobs


def test_a_replicate_gateway_sends_the_same_request_apart_in_the_cache(tmp_path):
    def answers(body, n):
        shifted = body.get("user") == drift.rerun_label(2)
        return Reply('{"grade": 2}', logprobs=digit_logprobs({2: 0.6, 3: 0.4} if shifted else {2: 0.8, 3: 0.2}))

    items = [JudgeItem("q1", "p1"), JudgeItem("q2", "p2")]
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAI(answers) as fake:
        def make(concurrency, label):
            return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=cache,
                           concurrency=concurrency, replicate=label)

        with Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=cache) as plain:
            original = judge_pointwise(plain, items, prompts=PASSAGE_4POINT_PROMPTS)
        restarts = []
        reruns = drift.rerun(make, lambda: restarts.append(1), items, [1, 2], PASSAGE_4POINT_PROMPTS)
        # cached: no new request, and no restart of a server it does not need
        again = drift.rerun(make, lambda: restarts.append(1), items, [1, 2], PASSAGE_4POINT_PROMPTS)
    assert len(fake.requests) == 6 and restarts == [1, 1]
    assert "user" not in fake.requests[0] and {r.get("user") for r in fake.requests[2:]} == {
        drift.rerun_label(1), drift.rerun_label(2)}
    assert [j.expected_grade for j in again[drift.rerun_label(2)]] == [j.expected_grade
                                                                      for j in reruns[drift.rerun_label(2)]]
    table = drift.drift_table(original, reruns, ["q1", "q2"], seed=0, n_resamples=100).set_index("rerun")
    assert table.loc[drift.rerun_label(1), "mean_abs_change"] == pytest.approx(0.0)
    assert table.loc[drift.rerun_label(2), "mean_abs_change"] == pytest.approx(0.2)  # E[g] 2.2 → 2.4
    assert table.loc[drift.rerun_label(2), "grades_changed"] == 0 and table.loc[drift.rerun_label(2), "items"] == 2
    assert np.isnan(table.loc[drift.rerun_label(2), "ci_low"])  # 2 queries: no interval


def test_the_drift_table_counts_changed_grades_and_leaves_failures_out():
    scale = (0, 1, 2, 3)
    original = [Judgment(ok=True, grade=2, expected_grade=2.1, scale=scale),
                Judgment(ok=True, grade=1, expected_grade=1.4, scale=scale), Judgment(ok=False, scale=scale)]
    rerun = [Judgment(ok=True, grade=2, expected_grade=2.0, scale=scale),
             Judgment(ok=True, grade=2, expected_grade=1.6, scale=scale),
             Judgment(ok=True, grade=3, expected_grade=3.0, scale=scale)]
    row = drift.drift_table(original, {"r": rerun}, ["a", "b", "c"], seed=0).iloc[0]
    assert (row["items"], row.grades_changed, row.share_changed) == (2, 1, 0.5)
    assert row.mean_abs_change == pytest.approx(0.15) and row.max_abs_change == pytest.approx(0.2)
    assert list(drift.drift_table(original, {}, ["a"] * 3, seed=0).columns) == list(drift.DRIFT_COLUMNS)
