"""The study-monitor command end to end on a temporary database, against the fake judge endpoint."""
from __future__ import annotations

import json
import sqlite3
from typing import Any

import pandas as pd
import pytest

from lib import monitor
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_dir=tmp_path / "cache")


def judge(body, n):
    """Scores 3 everywhere, except answers containing 'BAD' (all 0) and 'GARBLED' (not JSON)."""
    answer = body["messages"][-1]["content"]
    if "GARBLED" in answer:
        return Reply(content="the answer looks fine to me")
    value = 0 if "BAD" in answer else 3
    return Reply(content=json.dumps(dict.fromkeys(monitor.METRICS, value)))


def log_rows(day, answers):
    return [{"ts": f"{day}T{9 + i:02d}:00:00", "system": "rag-v1", "query": f"question {i}?",
             "contexts": [f"context {i}"], "answer": a} for i, a in enumerate(answers)]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-01", ["good"] * 10))
        monitor.add_queries(connection, log_rows("2026-11-02", ["BAD"] * 4))
    return path


def test_sampling_is_reproducible_and_sized_by_the_rate():
    ids = list(range(100, 140))
    a = monitor.sample_ids(ids, 0.1, seed=7, day="2026-11-01")
    assert a == monitor.sample_ids(list(reversed(ids)), 0.1, seed=7, day="2026-11-01")
    assert len(a) == 4 and set(a) <= set(ids)
    assert a != monitor.sample_ids(ids, 0.1, seed=8, day="2026-11-01")
    with pytest.raises(ValueError):
        monitor.sample_ids(ids, 0.0, seed=0, day="d")


def test_run_judges_stores_and_is_idempotent(db, tmp_path, capsys):
    with FakeOpenAI(judge) as fake:
        gw = gateway_for(fake, tmp_path)
        args = ["--db", str(db), "run", "--date", "2026-11-01", "--sample-rate", "0.5", "--seed", "1"]
        assert monitor.main(args, gateway=gw) == monitor.EXIT_OK
        first = capsys.readouterr().out
        assert monitor.main(args, gateway=gw) == monitor.EXIT_OK
        second = capsys.readouterr().out
        sent = len(fake.requests)
    with sqlite3.connect(db) as connection:
        stored = pd.read_sql_query("SELECT * FROM judgments", connection)
    assert len(stored) == 5 and sent == 5  # the rerun sent nothing and stored nothing twice
    assert (stored.groundedness == 1.0).all()
    assert "5 judged now, 0 already judged" in first and "0 judged now, 5 already judged" in second


def test_alert_exit_code_and_low_items(db, tmp_path, capsys):
    with FakeOpenAI(judge) as fake:
        status = monitor.main(["--db", str(db), "run", "--date", "2026-11-02", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
    out = capsys.readouterr().out
    assert status == monitor.EXIT_ALERT
    assert "ALERT 2026-11-02: overall mean 0.00 is below 0.7" in out
    assert out.count("  low: query") == 4


def test_judge_failure_is_stored_and_left_out_of_the_means(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-03", ["good", "GARBLED"]))
    with FakeOpenAI(judge) as fake:
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-03", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
    with sqlite3.connect(path) as connection:
        summary = monitor.daily_summary(connection)
        failure = connection.execute("SELECT failure_kind FROM judgments WHERE ok = 0").fetchone()
    assert status == monitor.EXIT_OK and failure == ("invalid_json",)
    assert summary.judged.tolist() == [1] and summary.failed.tolist() == [1]
    assert summary.overall.tolist() == [1.0]  # the failure is not a 0 in the mean


def test_malformed_row_is_named_and_the_rest_judged(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-04", ["good", "good"]))
        connection.execute("UPDATE queries SET contexts = 'not a list' WHERE id = 2")
    with FakeOpenAI(judge) as fake:
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-04", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
        sent = len(fake.requests)
    out = capsys.readouterr().out
    assert status == monitor.EXIT_MALFORMED and sent == 1
    assert "malformed: row 2: contexts is not JSON" in out


def test_report_prints_the_trend_with_target_marks(db, tmp_path, capsys):
    with FakeOpenAI(judge) as fake:
        gw = gateway_for(fake, tmp_path)
        for day in ("2026-11-01", "2026-11-02"):
            monitor.main(["--db", str(db), "run", "--date", day, "--sample-rate", "1"], gateway=gw)
    capsys.readouterr()
    assert monitor.main(["--db", str(db), "--target", "relevance=0.5", "report", "--days", "7"]) == monitor.EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[1:] == ["targets", ">", "0.90", ">", "0.50", ">", "0.70", ">", "0.95"][1:]
    day1 = next(line for line in lines if line.startswith("2026-11-01"))
    day2 = next(line for line in lines if line.startswith("2026-11-02"))
    assert "!" not in day1 and day2.count("!") == 4


def test_bad_target_and_bad_date_are_usage_errors(db):
    with pytest.raises(SystemExit):
        monitor.main(["--db", str(db), "--target", "speed=1", "report"])
    with pytest.raises(SystemExit):
        monitor.main(["--db", str(db), "run", "--date", "yesterday"])


def test_simulated_log_serves_the_no_context_answer_on_the_degraded_day():
    answers = pd.DataFrame({"qid": ["1", "1", "2", "2"], "variant": ["with_context", "no_context"] * 2,
                            "query": ["q1", "q1", "q2", "q2"], "notes": [["n1"], None, ["n2"], None],
                            "answer": ["A1", "B1", "A2", "B2"]})
    rows = monitor.simulated_log(answers, ["2026-11-01", "2026-11-02"], per_day=1, degraded_day="2026-11-02",
                                 recheck_day="2026-11-03")
    assert [r["answer"] for r in rows] == ["A1", "B2", "A2"]  # the degraded topic again, after the fix
    assert rows[1]["contexts"] == ["n2"] and rows[1]["system"].startswith("rag-v1.1")
    assert rows[2]["ts"].startswith("2026-11-03") and rows[2]["system"] == "rag-v1" and rows[2]["contexts"] == ["n2"]


def test_console_script_is_declared():
    import tomllib

    from lib import paths
    scripts = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["study-monitor"] == "lib.monitor:cli"


def test_installed_console_script_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    script = Path(sys.executable).parent / "study-monitor"
    assert script.exists(), f"{script} is not installed: run `make install` (pip install -e . declares it)"
    done = subprocess.run([str(script), "--db", str(tmp_path / "m.sqlite"), "report"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "no judged days yet"


def test_scores_are_probability_weighted_when_logprobs_come_back():
    import math
    scores = monitor.MonitorScores(groundedness=3, relevance=2, completeness=3, no_hallucination=3)
    tokens: list[dict[str, Any]] = []
    text = '{"groundedness": 3, "relevance": 2, "completeness": 3, "no_hallucination": 3}'
    # one token per character run, the value tokens with alternatives: p(3)=0.5, p(2)=0.5 for groundedness
    for piece in ['{"groundedness": ', "3", ', "relevance": ', "2", ', "completeness": ', "3",
                  ', "no_hallucination": ', "3", "}"]:
        top = []
        if piece == "3" and not tokens[1:]:
            top = [{"token": "3", "logprob": math.log(0.5)}, {"token": "2", "logprob": math.log(0.5)}]
        elif piece.isdigit():
            top = [{"token": piece, "logprob": 0.0}]
        tokens.append({"token": piece, "logprob": 0.0, "top_logprobs": top})
    assert "".join(t["token"] for t in tokens) == text
    read, how = monitor.read_scores(scores, tokens)
    assert (how == "logprobs" and read["groundedness"] == pytest.approx(2.5 / 3)
            and read["relevance"] == pytest.approx(2 / 3))
    read, how = monitor.read_scores(scores, None)
    assert how == "argmax" and read["groundedness"] == 1.0


def test_release_comparison_pairs_the_same_queries_across_releases():
    rows = [{"day": day, "query": q, "ok": ok, **dict.fromkeys(monitor.METRICS, value)}
            for day, q, ok, value in [("d3", "q1", 1, 0.5), ("d3", "q2", 1, 0.7), ("d5", "q1", 1, 0.9),
                                      ("d5", "q2", 0, 0.0),  # a failed judgment: q2 has no fixed score
                                      ("d1", "q1", 1, 0.1)]]  # another day: not part of the comparison
    table, difference = monitor.release_comparison(pd.DataFrame(rows), broken_day="d3", fixed_day="d5")
    assert table.index.tolist() == ["q1"]
    assert difference.index.tolist() == list(monitor.METRICS) and difference.to_numpy() == pytest.approx([0.4] * 4)
