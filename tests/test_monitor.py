"""The study-monitor command end to end on a temporary database, against the fake judge endpoint."""
from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from lib import monitor
from lib.analysis.text import count_text
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, Reply, free_port


def gateway_for(fake, tmp_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=tmp_path / "cache.sqlite")


def judge(body, n):
    """Scores 3 everywhere, except answers containing 'BAD' (all 0) and 'GARBLED' (not JSON)."""
    answer = body["messages"][-1]["content"]
    if "GARBLED" in answer:
        return Reply(content="the answer looks fine to me")
    value = 0 if "BAD" in answer else 3
    return Reply(content=json.dumps(dict.fromkeys(monitor.METRICS, value)))


def log_rows(day, answers):
    """One row a minute from 09:00."""
    return [{"ts": f"{day}T{9 + i // 60:02d}:{i % 60:02d}:00", "system": "rag-v1", "query": f"question {i}?",
             "contexts": [f"context {i}"], "answer": a} for i, a in enumerate(answers)]


def error_lines(err: str) -> list[str]:
    """The command's own lines on stderr (the progress bars of the judge calls are there too)."""
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("study-monitor")]


def stored_judgments(path) -> int:
    with closing(sqlite3.connect(path)) as connection:
        return connection.execute("SELECT count(*) FROM judgments WHERE ok = 1").fetchone()[0]


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
    assert "ALERT 2026-11-02: overall mean 0.00 is below the target 0.7" in out
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
    assert monitor.main(["--db", str(db), "--target", "answer_relevance=0.5", "report", "--days", "4",
                         "--end", "2026-11-04"]) == monitor.EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["targets", ">", "0.90", ">", "0.80", ">", "0.50", ">", "0.70", ">", "0.95"]
    day1 = next(line for line in lines if line.startswith("2026-11-01"))
    day2 = next(line for line in lines if line.startswith("2026-11-02"))
    assert "!" not in day1 and day2.count("!") == 5
    # the calendar days 11-01..11-04: the two nights without a run are shown as gaps, not skipped
    assert [line.split()[0] for line in lines[2:6]] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    assert lines[4] == "2026-11-03  not judged" and "not judged: 2026-11-03, 2026-11-04" in lines[6]


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
    db = str(tmp_path / "m.sqlite")
    made = subprocess.run([str(script), "init", "--db", db], capture_output=True, text=True)
    assert made.returncode == 0 and made.stdout.strip() == f"{db}: ready, 0 queries logged"
    done = subprocess.run([str(script), "--db", db, "report"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "no judged days yet"


def test_scores_are_probability_weighted_when_logprobs_come_back():
    import math
    scores = monitor.MonitorScores(groundedness=3, context_relevance=3, answer_relevance=2, completeness=3,
                                   no_hallucination=3)
    tokens: list[dict[str, Any]] = []
    text = ('{"groundedness": 3, "context_relevance": 3, "answer_relevance": 2, "completeness": 3, '
            '"no_hallucination": 3}')
    # one token per character run, the value tokens with alternatives: p(3)=0.5, p(2)=0.5 for groundedness
    for piece in ['{"groundedness": ', "3", ', "context_relevance": ', "3", ', "answer_relevance": ', "2",
                  ', "completeness": ', "3", ', "no_hallucination": ', "3", "}"]:
        top = []
        if piece == "3" and not tokens[1:]:
            top = [{"token": "3", "logprob": math.log(0.5)}, {"token": "2", "logprob": math.log(0.5)}]
        elif piece.isdigit():
            top = [{"token": piece, "logprob": 0.0}]
        tokens.append({"token": piece, "logprob": 0.0, "top_logprobs": top})
    assert "".join(t["token"] for t in tokens) == text
    read, how = monitor.read_scores(scores, tokens)
    assert (how == "logprobs" and read["groundedness"] == pytest.approx(2.5 / 3)
            and read["answer_relevance"] == pytest.approx(2 / 3) and read["context_relevance"] == 1.0)
    read, how = monitor.read_scores(scores, None)
    assert how == "argmax" and read["groundedness"] == 1.0


def test_release_comparison_pairs_the_same_queries_across_releases():
    rows = [{"day": day, "query": q, "ok": ok, **dict.fromkeys(monitor.METRICS, value)}
            for day, q, ok, value in [("d3", "q1", 1, 0.5), ("d3", "q2", 1, 0.7), ("d5", "q1", 1, 0.9),
                                      ("d5", "q2", 0, 0.0),  # a failed judgment: q2 has no fixed score
                                      ("d1", "q1", 1, 0.1)]]  # another day: not part of the comparison
    table, difference = monitor.release_comparison(pd.DataFrame(rows), broken_day="d3", fixed_day="d5")
    assert table.index.tolist() == ["q1"]
    assert difference.index.tolist() == list(monitor.METRICS) and difference.to_numpy() == pytest.approx([0.4] * 5)


# Exit codes: one per kind of trouble, one line on stderr, no traceback (issue 4).

@pytest.mark.parametrize("args", [
    ["--target", "groundedness=abc", "report"],
    ["--target", "groundedness=1.5", "report"],
    ["run", "--date", "2026-11-01", "--sample-rate", "0"],
    ["run", "--date", "2026-11-01", "--sample-rate", "1.5"],
    ["run", "--date", "2026-11-01", "--sample-rate", "nan"],
    ["run", "--date", "2026-11-01", "--alert-overall", "nan"],
    ["run", "--date", "2026-11-01", "--alert-answer-relevance", "-0.1"],
    ["sample-size", "--drop", "0"],
    ["run", "--date", "2026-11-01", "--limit-sds", "-1"],
    ["report", "--days", "0"],
])
def test_option_errors_are_usage_errors_before_any_database_or_judge_work(args, tmp_path, capsys):
    missing = tmp_path / "never-created.sqlite"
    with FakeOpenAI(judge) as fake, pytest.raises(SystemExit) as exit_info:
        monitor.main(["--db", str(missing), *args], gateway=gateway_for(fake, tmp_path))
    lines = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2
    assert len(lines) == 1 and lines[0].startswith("study-monitor") and ": error: " in lines[0]
    assert not missing.exists() and not fake.requests


@pytest.mark.parametrize("trouble", ["http_401", "replay_miss", "unreachable"])
def test_a_judge_that_stops_the_run_is_exit_4_in_one_line_and_what_was_judged_is_kept(trouble, tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-01", ["good"] * 10))
    refused = Reply(status=401, error_body="invalid API key\nsee the documentation")
    with FakeOpenAI(lambda body, n: judge(body, n) if n < 8 else refused) as fake:
        url = f"http://127.0.0.1:{free_port()}/v1" if trouble == "unreachable" else fake.base_url
        gateway = Gateway(Endpoint(url, "fake", "fake", embedded=False), cache_path=tmp_path / "cache.sqlite",
                          mode="replay" if trouble == "replay_miss" else "live")
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-01", "--sample-rate", "1"],
                              gateway=gateway)
    lines = error_lines(capsys.readouterr().err)
    says, kept = {"http_401": ("HTTP 401: invalid API key see the documentation", 8),
                  "replay_miss": ("replay mode", 0), "unreachable": ("cannot reach", 0)}[trouble]
    assert status == 4  # EXIT_JUDGE
    assert len(lines) == 1 and says in lines[0]
    # the answers received before the failure are stored: one chunk of 8
    assert stored_judgments(path) == kept and monitor.CHUNK_SIZE == 8


def test_a_day_where_every_judge_call_failed_is_exit_4_not_ok(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-03", ["GARBLED", "GARBLED"]))
    with FakeOpenAI(judge) as fake:
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-03", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
    out, err = capsys.readouterr()
    assert status == 4  # EXIT_JUDGE
    assert "2 judge failures" in out
    lines = error_lines(err)  # on stderr, where a cron job's errors go
    assert len(lines) == 1 and "NOT CHECKED 2026-11-03: every judge call failed (2)" in lines[0]


@pytest.mark.parametrize("trouble", ["not_a_database", "read_only", "locked"])
def test_database_errors_are_exit_5_in_one_line_naming_the_database(trouble, db, tmp_path, capsys, monkeypatch):
    blocker, options = None, []
    if trouble == "not_a_database":
        db.write_bytes(b"a text file, not SQLite " * 10)
    elif trouble == "read_only":
        # as for a user without write permission (the tests may run as root, who can write any file)
        open_database = sqlite3.connect
        monkeypatch.setattr(sqlite3, "connect",
                            lambda path, **kw: open_database(f"file:{path}?mode=ro", uri=True, **kw))
    else:
        blocker = sqlite3.connect(db)
        blocker.execute("BEGIN EXCLUSIVE")  # held past the run's busy timeout
        options = ["--busy-timeout", "0.2"]
    try:
        with FakeOpenAI(judge) as fake:
            status = monitor.main(["--db", str(db), *options, "run", "--date", "2026-11-01", "--sample-rate", "1"],
                                  gateway=gateway_for(fake, tmp_path))
            sent = len(fake.requests)
    finally:
        if blocker is not None:
            blocker.rollback()
            blocker.close()
    lines = error_lines(capsys.readouterr().err)
    assert status == 5  # EXIT_DATABASE
    assert len(lines) == 1 and str(db) in lines[0]
    assert sent == 0  # found before the first judge call (a read-only database was found after the last)


def test_a_lock_held_by_the_logging_application_is_waited_for_and_nothing_is_lost(db, tmp_path, capsys):
    locked = threading.Event()

    def log_for_a_while() -> None:  # the logging application holding the write lock
        with closing(sqlite3.connect(db)) as application:
            application.execute("BEGIN IMMEDIATE")
            locked.set()
            time.sleep(1.5)
            application.commit()

    writer = threading.Thread(target=log_for_a_while)

    def judge_while_locked(body, n):
        if n == 0:
            writer.start()
            locked.wait()
        return judge(body, n)

    with FakeOpenAI(judge_while_locked) as fake:
        status = monitor.main(["--db", str(db), "--busy-timeout", "10", "run", "--date", "2026-11-01",
                               "--sample-rate", "1"], gateway=gateway_for(fake, tmp_path))
    writer.join()
    assert status == monitor.EXIT_OK and stored_judgments(db) == 10


def test_help_lists_the_exit_codes(capsys):
    for args in (["--help"], ["run", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            monitor.main(args)
        out = capsys.readouterr().out
        assert exit_info.value.code == 0
        for code, name in [(0, "ok"), (1, "alert"), (2, "usage"), (3, "malformed"), (4, "judge"), (5, "database")]:
            assert re.search(rf"^\s+{code}\s+{name}", out, re.MULTILINE), (code, out)

# No row lost unseen, one sample per day, one run per day (issue 5).

def test_a_missing_database_is_refused_not_created_and_init_makes_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LLM_MODE", "replay")
    typo = tmp_path / "monitr.sqlite"
    for command in (["run", "--date", "2026-11-01"], ["report"]):
        assert monitor.main(["--db", str(typo), *command]) == 5
        lines = error_lines(capsys.readouterr().err)
        assert len(lines) == 1 and str(typo) in lines[0] and "study-monitor init" in lines[0]
    assert not typo.exists()
    other = tmp_path / "other.sqlite"  # an SQLite file of something else
    with closing(sqlite3.connect(other)) as connection:
        connection.execute("CREATE TABLE t (x)")
    assert monitor.main(["--db", str(other), "report"]) == monitor.EXIT_DATABASE
    assert "study-monitor init" in error_lines(capsys.readouterr().err)[0]
    assert monitor.main(["init", "--db", str(typo)]) == monitor.EXIT_OK
    assert monitor.main(["--db", str(typo), "report"]) == monitor.EXIT_OK
    assert capsys.readouterr().out.splitlines()[-1] == "no judged days yet"


def test_add_queries_stores_one_timestamp_form_and_refuses_what_it_cannot_read(tmp_path):
    path = tmp_path / "log.sqlite"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        rows = log_rows("2026-11-03", ["a", "b", "c", "d"])
        for row, ts in zip(rows, ["2026-11-03 10:00", "2026-11-03T10:00:00.250", "20261103T100500", "2026-11-03"],
                           strict=True):
            row["ts"] = ts
        monitor.add_queries(connection, rows)
        assert [ts for (ts,) in connection.execute("SELECT ts FROM queries ORDER BY id")] == [
            "2026-11-03T10:00:00", "2026-11-03T10:00:00", "2026-11-03T10:05:00", "2026-11-03T00:00:00"]
        for unreadable in (["11/03/2026 10:00", "03.11.2026 09:00"], ["2026-11-03T10:00:00+01:00"]):
            batch = log_rows("2026-11-04", ["e"] * (len(unreadable) + 1))
            for row, ts in zip(batch[1:], unreadable, strict=True):
                row["ts"] = ts
            with pytest.raises(ValueError, match=".*".join(map(re.escape, unreadable))):
                monitor.add_queries(connection, batch)
        assert connection.execute("SELECT count(*) FROM queries").fetchone() == (4,)  # no row of those batches


def test_rows_whose_timestamp_cannot_be_read_are_reported_as_malformed_on_every_run(db, tmp_path, capsys):
    unreadable = {31: "11/03/2026 10:00", 32: "03.11.2026 09:00", 33: "2026-02-30T10:00:00",
                  34: "2026-11-01 10:00:00.123456"}
    with closing(sqlite3.connect(db)) as connection:  # written by another application, not through add_queries
        connection.executemany("INSERT INTO queries (id, ts, system, query, contexts, answer) "
                               "VALUES (?, ?, 'rag-v1', 'q?', '[\"c\"]', 'good')", unreadable.items())
        connection.commit()
    with FakeOpenAI(judge) as fake:
        gw = gateway_for(fake, tmp_path)
        args = ["--db", str(db), "run", "--date", "2026-11-01", "--sample-rate", "1"]
        outputs = []
        for _ in range(2):
            assert monitor.main(args, gateway=gw) == monitor.EXIT_MALFORMED
            outputs.append(capsys.readouterr().out)
        sent = len(fake.requests)
    assert sent == 10  # the day's ten readable rows, once
    for out in outputs:
        assert "10 queries logged" in out
        for row_id, ts in unreadable.items():
            assert f"malformed: row {row_id}: timestamp {ts!r}" in out


def test_the_sample_is_fixed_by_the_first_run_of_the_day(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(monitor.SCHEMA_SQL)
        monitor.add_queries(connection, log_rows("2026-11-03", ["good"] * 28))
    run = ["--db", str(path), "run", "--date", "2026-11-03"]
    with FakeOpenAI(judge) as fake:
        gw = gateway_for(fake, tmp_path)
        assert monitor.main([*run, "--sample-rate", "0.25", "--seed", "0"], gateway=gw) == monitor.EXIT_OK
        with closing(sqlite3.connect(path)) as connection:  # rows logged after the night's run
            monitor.add_queries(connection, log_rows("2026-11-03", ["good"] * 4))
        assert monitor.main([*run, "--sample-rate", "0.25", "--seed", "0"], gateway=gw) == monitor.EXIT_OK
        assert monitor.main([*run, "--sample-rate", "0.5", "--seed", "1"], gateway=gw) == monitor.EXIT_OK
        sent = len(fake.requests)
    reruns = capsys.readouterr().out.split("2026-11-03: ")[2:]  # the second and third runs
    assert sent == stored_judgments(path) == 7  # ⌈0.25 · 28⌉, never the ⌈0.25 · 32⌉ = 8 of a resample
    for out in reruns:
        assert out.startswith("32 queries logged, 7 sampled (rate 0.25, seed 0); 0 judged now, 7 already judged")
        assert "sample fixed on the day's first run" in out and "4 rows logged since are not sampled" in out
    assert "--sample-rate 0.5 --seed 1 not used" in reruns[1]


def test_a_day_claimed_by_a_live_run_is_refused_and_a_lapsed_claim_taken_over(db, tmp_path, capsys):
    with closing(sqlite3.connect(db)) as connection:
        monitor.claim_day(connection, "2026-11-01")  # another run, still judging
    args = ["--db", str(db), "run", "--date", "2026-11-01", "--sample-rate", "1"]
    with FakeOpenAI(judge) as fake:
        gw = gateway_for(fake, tmp_path)
        assert monitor.main(args, gateway=gw) == monitor.EXIT_DATABASE
        lines = error_lines(capsys.readouterr().err)
        assert len(lines) == 1 and "being judged by another run" in lines[0] and not fake.requests
        with closing(sqlite3.connect(db)) as connection:  # that run was killed: its claim is no longer renewed
            connection.execute("UPDATE claims SET renewed_at = '2026-01-01T00:00:00+00:00'")
            connection.commit()
        assert monitor.main(args, gateway=gw) == monitor.EXIT_OK
        sent = len(fake.requests)
    with closing(sqlite3.connect(db)) as connection:
        assert connection.execute("SELECT count(*) FROM claims").fetchone() == (0,)  # released at the end
    assert sent == 10


def test_two_simultaneous_runs_with_separate_caches_judge_each_row_once(db, tmp_path, capsys):
    def slow_judge(body, n):
        time.sleep(0.05)
        return judge(body, n)

    statuses: list[int] = []
    with FakeOpenAI(slow_judge) as fake:
        def run(cache: str) -> None:
            gateway = Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False),
                              cache_path=tmp_path / f"{cache}.sqlite")
            statuses.append(monitor.main(["--db", str(db), "run", "--date", "2026-11-01", "--sample-rate", "1"],
                                         gateway=gateway))

        runs = [threading.Thread(target=run, args=(f"cache-{k}",)) for k in range(2)]
        for thread in runs:
            thread.start()
        for thread in runs:
            thread.join()
        sent = len(fake.requests)
    assert sent == stored_judgments(db) == 10
    assert sorted(statuses) in ([0, 0], [0, 5])  # the second waits for nothing or is refused


# The relative alert rule, its power and the sample size (issue 22).

def graded(body, n):
    """Scores written in the answer: 'scores 3 3 2 3 3' gives the five metrics in METRICS order."""
    values = body["messages"][-1]["content"].rsplit("scores", 1)[1].split()[:5]
    return Reply(content=json.dumps(dict(zip(monitor.METRICS, map(int, values), strict=True))))


def graded_log(tmp_path, days):
    path = tmp_path / "graded.sqlite"
    monitor.init_database(path)
    with closing(monitor.connect(path)) as connection:
        for day, answers in days.items():
            monitor.add_queries(connection, log_rows(day, answers))
    return path


def test_control_limit_catches_a_drop_the_absolute_target_misses(tmp_path, capsys):
    # baseline: 6 items over 3 days, overall 1 or 14/15, 3 each: mean 29/30, SD (1/30)·sqrt(6/5) = 0.036515;
    # day 4: 2 items at 12/15 = 0.8 > 0.7 (no target alert) but < 29/30 - 3 * 0.036515 / sqrt(2) = 0.8892
    days = {"2026-11-01": ["scores 3 3 3 3 3", "scores 3 3 3 3 2"],
            "2026-11-02": ["scores 3 3 3 3 3", "scores 3 3 3 3 2"],
            "2026-11-03": ["scores 3 3 3 3 3", "scores 3 3 3 3 2"],
            "2026-11-04": ["scores 3 3 2 2 2", "scores 3 3 2 2 2"]}
    db = graded_log(tmp_path, days)
    with FakeOpenAI(graded) as fake:
        gw = gateway_for(fake, tmp_path)
        statuses = [monitor.main(["--db", str(db), "run", "--date", day, "--sample-rate", "1"], gateway=gw)
                    for day in days]
    out = capsys.readouterr().out
    assert statuses == [monitor.EXIT_OK] * 3 + [monitor.EXIT_ALERT]
    assert out.count("no control limit yet") == 2  # day 1 has no baseline, day 2 has 2 items (fewer than 3)
    assert "ALERT 2026-11-04: overall mean 0.800 is below the control limit 0.889" in out
    assert "below the target" not in out
    with closing(monitor.connect(db)) as connection:
        stored = monitor.judgments(connection)
    assert stored.overall.tolist()[:2] == pytest.approx([1.0, 14 / 15])
    assert stored.evaluated_at.str.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00").all()
    limit = monitor.control_limit(stored, "2026-11-04", items=2)
    assert limit is not None and limit.baseline_items == 6 and limit.days == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert limit.mean == pytest.approx(29 / 30) and limit.sd == pytest.approx(0.0365148, abs=1e-6)
    assert monitor.control_limit(stored, "2026-11-02", items=2) is None  # 2 baseline items


def test_report_prints_the_alert_power_at_the_rate_run_with_the_sd_of_the_days_before(tmp_path, capsys):
    normal = ["scores 3 3 3 3 3", "scores 3 3 3 3 2"] * 5  # 10 logged a day
    days = {"2026-11-01": normal, "2026-11-02": normal, "2026-11-03": ["scores 0 0 0 0 0"] * 10}  # the broken day
    db = graded_log(tmp_path, days)
    with FakeOpenAI(graded) as fake:
        gw = gateway_for(fake, tmp_path)
        for day in days:
            monitor.main(["--db", str(db), "run", "--date", day, "--sample-rate", "0.5"], gateway=gw)
    capsys.readouterr()
    with closing(monitor.connect(db)) as connection:
        stored = monitor.judgments(connection)
    before = stored[stored.day < "2026-11-03"].overall  # the day under test is not its own baseline
    sd = float(before.std(ddof=1))
    assert len(before) == 10 and 0 < sd < 0.05
    assert monitor.main(["--db", str(db), "report", "--drop", "0.1"]) == monitor.EXIT_OK
    power_line = capsys.readouterr().out.splitlines()[-1]
    expected = monitor.power.control_limit_power(0.1, sd, 5)
    assert power_line.startswith("alert power at sample rate 0.5: 5 items a day")  # the rate run, not the default
    assert f"per-item SD {sd:.3f} over 10 judged items of 2026-11-01..2026-11-02" in power_line
    assert f"probability {expected:.2f}" in power_line
    assert monitor.main(["--db", str(db), "sample-size", "--drop", "0.1"]) == monitor.EXIT_OK
    needed = -(-((3 + 0.8416212) * sd / 0.1) ** 2 // 1)  # ceil by hand
    assert f"{count_text(int(needed), 'judged item')} a day" in capsys.readouterr().out
    assert monitor.main(["sample-size", "--drop", "0.05", "--sd", "0.05"]) == monitor.EXIT_OK  # no database needed
    assert "15 judged items a day" in capsys.readouterr().out  # ((3 + 0.8416) * 1)^2 = 14.8 -> 15


def test_init_adds_the_new_judgment_columns_to_an_older_database(tmp_path):
    path = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(monitor.SCHEMA_SQL.replace(
            "context_relevance REAL, answer_relevance REAL, ", "relevance REAL, ").replace(
            "overall REAL, ", "").replace(", evaluated_at TEXT", ""))
    with pytest.raises(monitor.MissingDatabase, match="no judgment column context_relevance"):
        monitor.connect(path)
    monitor.init_database(path)
    with closing(monitor.connect(path)) as connection:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(judgments)")}
    assert {"relevance", "overall", "evaluated_at", "answer_relevance"} <= columns


# The user's own data, a night that one row cannot stop (issue 34).

def _repository_state() -> tuple[str, dict[str, int]]:
    """`git status` of the checkout and every file under its outputs/ with its modification time."""
    import subprocess

    from lib import paths
    status = subprocess.run(["git", "status", "--porcelain"], cwd=paths.ROOT, capture_output=True, text=True,
                            check=True).stdout
    outputs = paths.ROOT / "outputs"
    return status, {str(f): f.stat().st_mtime_ns for f in outputs.rglob("*")}


def test_a_run_as_the_readme_shows_writes_nothing_into_the_study(tmp_path, monkeypatch, capsys):
    from lib import paths
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "LLM_CACHE", "LLM_MODE", "STUDY_OUTPUT_DIR", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    committed = paths.ROOT / "outputs" / "llm-cache.sqlite"
    monkeypatch.setattr(paths, "LLM_CACHE", committed)  # as when LLM_CACHE is not set
    cache_bytes, before = committed.read_bytes(), _repository_state()
    with FakeOpenAI(judge) as fake:
        monkeypatch.setenv("JUDGE_BASE_URL", fake.base_url)
        monkeypatch.setenv("JUDGE_MODEL", "fake")
        assert monitor.main(["init"]) == monitor.EXIT_OK
        db = Path(capsys.readouterr().out.split(": ready")[0])
        with closing(monitor.connect(db)) as connection:
            monitor.add_queries(connection, log_rows("2026-11-03", ["my own answer"] * 3))
        assert monitor.main(["run", "--date", "2026-11-03", "--sample-rate", "1"]) == monitor.EXIT_OK
        assert monitor.main(["report"]) == monitor.EXIT_OK
        sent = len(fake.requests)
    expected = home / ".local" / "share" / "llm-judge-study"
    assert sent == 3 and db == expected / "monitor.sqlite" and stored_judgments(db) == 3
    assert (expected / "monitor.llm-cache.sqlite").is_file()  # the judge's answers, next to the database
    assert committed.read_bytes() == cache_bytes and _repository_state() == before
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    capsys.readouterr()
    assert monitor.main(["init"]) == monitor.EXIT_OK
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'data' / 'llm-judge-study' / 'monitor.sqlite'}: ready")


def test_add_loads_a_csv_or_jsonl_log_and_names_bad_rows_by_line(tmp_path, capsys):
    import csv
    db = tmp_path / "log.sqlite"
    monitor.init_database(db)
    rows = log_rows("2026-11-03", ["first answer", "second, with a comma\nand a line break"])
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")  # a blank line at the end is no row
    assert monitor.main(["--db", str(db), "add", "--jsonl", str(jsonl)]) == monitor.EXIT_OK
    assert capsys.readouterr().out.strip() == f"{jsonl}: 2 queries added to {db} (2 logged)"
    table = tmp_path / "log.csv"
    with table.open("w", newline="") as out:
        writer = csv.DictWriter(out, ["id", "ts", "system", "query", "contexts", "answer"])
        writer.writeheader()
        writer.writerows({**r, "id": 10 + k, "ts": r["ts"].replace("T", " "), "contexts": json.dumps(r["contexts"])}
                         for k, r in enumerate(rows))
    assert monitor.main(["add", "--db", str(db), "--csv", str(table)]) == monitor.EXIT_OK
    with closing(monitor.connect(db)) as connection:
        stored = connection.execute("SELECT id, ts, contexts, answer FROM queries ORDER BY id").fetchall()
    assert stored[2:] == [(10, "2026-11-03T09:00:00", '["context 0"]', "first answer"),
                          (11, "2026-11-03T09:01:00", '["context 1"]', "second, with a comma\nand a line break")]
    capsys.readouterr()
    assert monitor.main(["add", "--db", str(db), "--csv", str(table)]) == monitor.EXIT_MALFORMED  # loaded twice
    assert "line 2: id 10 is taken; line 3: id 11 is taken" in error_lines(capsys.readouterr().err)[0]
    # line 2 fine; 3 an unreadable date; 4 (a record over two lines) contexts not a list; 6 no answer
    table.write_text('ts,system,query,contexts,answer\n2026-11-04 10:00,rag,q?,"[""c""]",a\n'
                     '11/04/2026 10:00,rag,q?,"[""c""]",a\n2026-11-04 10:00,rag,"q\n?",c,a\n'
                     '2026-11-04 11:00,rag,q?,"[""c""]",\n')
    assert monitor.main(["--db", str(db), "add", "--csv", str(table)]) == monitor.EXIT_MALFORMED
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert len(lines) == 1 and str(table) in lines[0] and "3 of 4 rows" in lines[0] and "none was added" in lines[0]
    assert re.search(r"line 3: timestamp '11/04/2026 10:00'.*line 4: contexts is not JSON.*line 6: no answer", lines[0])
    jsonl.write_bytes(b'{"ts": "2026-11-04 10:00", "system": "rag", "query": "q\xff?", "contexts": [], '
                      b'"answer": "a"}\n')
    assert monitor.main(["--db", str(db), "add", "--jsonl", str(jsonl)]) == monitor.EXIT_MALFORMED
    assert "line 1: not UTF-8 text" in error_lines(capsys.readouterr().err)[0]
    with closing(monitor.connect(db)) as connection:
        assert connection.execute("SELECT count(*) FROM queries").fetchone() == (4,)  # nothing of the bad files
    assert monitor.main(["--db", str(db), "add", "--csv", str(tmp_path / "missing.csv")]) == monitor.EXIT_USAGE
    assert "missing.csv" in error_lines(capsys.readouterr().err)[0]


@pytest.mark.parametrize(("args", "status", "says"), [
    (["run", "--date", "2026-11-01"], 5, "study-monitor init"),
    (["run", "--date", "yesterday"], 2, "not a date"),
])
def test_python_dash_m_lib_monitor_is_the_command(args, status, says, tmp_path):
    import os
    import subprocess
    import sys

    from lib import paths
    done = subprocess.run([sys.executable, "-m", "lib.monitor", "--db", str(tmp_path / "missing.sqlite"), *args],
                          capture_output=True, text=True, cwd=paths.ROOT,
                          env={**os.environ, "PYTHONPATH": str(paths.ROOT)})
    assert done.returncode == status
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr and "Traceback" not in done.stderr


def too_long(body, n):
    """Refuses with HTTP 400 the answers containing 'TOO LONG', as a server refuses a prompt past its context."""
    if "TOO LONG" in body["messages"][-1]["content"]:
        return Reply(status=400, error_body='{"error": {"message": "context length exceeded"}}')
    return judge(body, n)


def test_a_request_refused_with_http_400_is_that_items_failure_and_the_rest_is_judged(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    monitor.init_database(path)
    with closing(monitor.connect(path)) as connection:
        monitor.add_queries(connection, log_rows("2026-11-01", ["good"] * 2 + ["TOO LONG"] + ["good"] * 17))
    args = ["--db", str(path), "run", "--date", "2026-11-01", "--sample-rate", "1"]
    with FakeOpenAI(too_long) as fake:
        gw = gateway_for(fake, tmp_path)
        assert monitor.main(args, gateway=gw) == monitor.EXIT_OK
        assert "19 judged now, 0 already judged, 1 judge failures" in capsys.readouterr().out
        assert monitor.main(args, gateway=gw) == monitor.EXIT_OK  # the rerun asks again for that row alone
        assert "0 judged now, 19 already judged, 1 judge failures" in capsys.readouterr().out
    with closing(monitor.connect(path)) as connection:
        failure = connection.execute("SELECT query_id, failure_kind, error FROM judgments WHERE ok = 0").fetchall()
    assert stored_judgments(path) == 19
    assert len(failure) == 1 and failure[0][:2] == (3, "refused") and "HTTP 400" in failure[0][2]


def test_http_400_for_every_request_still_stops_the_run(tmp_path, capsys):
    path = tmp_path / "log.sqlite"
    monitor.init_database(path)
    with closing(monitor.connect(path)) as connection:
        monitor.add_queries(connection, log_rows("2026-11-01", ["TOO LONG"] * 20))
    with FakeOpenAI(too_long) as fake:
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-01", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
        sent = len(fake.requests)
    lines = error_lines(capsys.readouterr().err)
    assert status == monitor.EXIT_JUDGE and len(lines) == 1 and "HTTP 400" in lines[0]
    assert sent <= 2 * monitor.CHUNK_SIZE  # the first chunk, not the night's 20 rows
    with closing(monitor.connect(path)) as connection:
        assert connection.execute("SELECT count(*) FROM judgments").fetchone() == (0,)


def test_a_value_that_is_not_utf8_is_named_as_malformed_and_the_rest_judged(db, tmp_path, capsys):
    with closing(sqlite3.connect(db)) as connection:  # written by another application, bytes not UTF-8
        connection.execute("INSERT INTO queries (id, ts, system, query, contexts, answer) VALUES "
                           "(31, CAST(x'323032362d31312d30315431303a3030ff' AS TEXT), 'rag-v1', 'q?', '[\"c\"]', "
                           "'good'), "
                           "(32, '2026-11-01T10:00:00', 'rag-v1', CAST(x'71ff3f' AS TEXT), '[\"c\"]', 'good')")
        connection.commit()
    with FakeOpenAI(judge) as fake:
        status = monitor.main(["--db", str(db), "run", "--date", "2026-11-01", "--sample-rate", "1"],
                              gateway=gateway_for(fake, tmp_path))
        sent = len(fake.requests)
    out = capsys.readouterr().out
    assert status == monitor.EXIT_MALFORMED and sent == 10 and stored_judgments(db) == 10
    assert "malformed: row 32: query is not UTF-8 text" in out
    assert "malformed: row 31: timestamp '2026-11-01T10:00\\udcff' is not" in out
    assert monitor.main(["--db", str(db), "report"]) == monitor.EXIT_OK


def test_a_run_reads_the_days_rows_by_date_not_every_row(db, tmp_path):
    statements: list[str] = []
    with FakeOpenAI(judge) as fake, closing(monitor.connect(db)) as connection:
        connection.set_trace_callback(statements.append)
        monitor.run_day(connection, gateway_for(fake, tmp_path), "2026-11-01", 1.0, 0)
        connection.set_trace_callback(None)
        plans = {sql: [step[3] for step in connection.execute(f"EXPLAIN QUERY PLAN {sql}")]
                 for sql in statements if sql.lstrip().upper().startswith("SELECT")}
    assert plans
    for sql, plan in plans.items():
        assert not any(step in ("SCAN queries", "SCAN judgments") for step in plan), (sql, plan)


# The RAG triads as the monitor's judge (issue 35).

def triad_aware_judge(body, n):
    """Answers every judge of `run --judge`, told apart by their system prompt: the monitor call as :func:`judge`;
    the traditional triad groundedness 3, relevance 2 (0 and 0 for 'BAD'); the nuggetized triad one nugget (the
    answer's first sentence), vital, supported by the context and partly relevant. 'GARBLED' gets no JSON."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "GARBLED" in user:
        return Reply(content="the answer looks fine to me")
    if system.startswith("You monitor"):
        return judge(body, n)
    if system.startswith("You grade an answer"):
        grades = (0, 0) if "BAD" in user else (3, 2)
        return Reply(content=json.dumps(dict(zip(("groundedness", "relevance"), grades, strict=True))))
    if system.startswith("You write the list of atomic nuggets"):
        first = re.search(r"^\[1\] (.*?)\.?$", user, re.M)
        return Reply(content=json.dumps({"nuggets": [first.group(1)] if first else []}))
    n_items = len(re.findall(r"^\[\d+\] ", user, re.M))
    label = ("vital" if system.startswith("You label nuggets") else "partly_relevant"
             if "help answer" in system else "support")
    return Reply(content=json.dumps({"labels": [label] * n_items}))


# groundedness, answer relevance and overall of an item each triad of triad_aware_judge gives
TRIAD_SCORES = {"traditional-triad": (1.0, 2 / 3, (1 + 2 / 3) / 2), "nuggetized-triad": (1.0, 0.5, 0.75)}


def word_embed(texts):
    from tests.test_nuggets import word_embed as bag_of_words
    return bag_of_words(texts)


def triad_log(tmp_path, day="2026-11-03", answers=("Paris is the capital of France.", "Bern is in Switzerland.",
                                                  "GARBLED")):
    path = tmp_path / "triad.sqlite"
    if not path.exists():
        monitor.init_database(path)
    with closing(monitor.connect(path)) as connection:
        monitor.add_queries(connection, log_rows(day, list(answers)))
    return path


def test_overall_is_the_mean_of_the_metrics_the_judge_measures():
    scores = dict(zip(monitor.METRICS, [1.0, 0.0, 0.5, 0.0, 0.0], strict=True))
    assert monitor.overall_score(scores, "monitor") == pytest.approx(1.5 / 5)
    # a triad measures groundedness and answer relevance: the other three are not 0s (nor 1s) in its mean
    assert monitor.overall_score(scores, "traditional-triad") == pytest.approx(0.75)
    assert monitor.overall_score({"groundedness": 0.2, "answer_relevance": 0.4}, "nuggetized-triad") == \
        pytest.approx(0.3)
    with pytest.raises(KeyError):  # a triad's judgment without one of its metrics has no overall
        monitor.overall_score({"groundedness": 0.2}, "traditional-triad")


@pytest.mark.parametrize("judge_name", list(monitor.JUDGES))
def test_a_run_with_each_judge_stores_what_it_measures_and_leaves_the_rest_missing(judge_name, tmp_path, capsys):
    db = triad_log(tmp_path)
    with FakeOpenAI(triad_aware_judge) as fake:
        status = monitor.main(["--db", str(db), "run", "--date", "2026-11-03", "--sample-rate", "1",
                               "--judge", judge_name], gateway=gateway_for(fake, tmp_path), embed=word_embed)
    out = capsys.readouterr().out
    assert status == monitor.EXIT_OK and "2 judged now, 0 already judged, 1 judge failures" in out
    with closing(monitor.connect(db)) as connection:
        stored = monitor.judgments(connection)
        summary = monitor.daily_summary(connection)
    assert (stored.judge == judge_name).all()
    judged, failed = stored[stored.ok == 1], stored[stored.ok == 0]
    assert len(judged) == 2 and failed[[*monitor.METRICS, "overall"]].isna().all().all()  # a failure, no 0
    if judge_name == "monitor":
        assert (judged[list(monitor.METRICS)] == 1.0).all().all() and (judged.overall == 1.0).all()
    else:
        groundedness, answer_relevance, overall = TRIAD_SCORES[judge_name]
        assert judged.groundedness.tolist() == pytest.approx([groundedness] * 2)
        assert judged.answer_relevance.tolist() == pytest.approx([answer_relevance] * 2)
        assert judged[["context_relevance", "completeness", "no_hallucination"]].isna().all().all()  # NULL
        assert judged.overall.tolist() == pytest.approx([overall] * 2)  # the mean of the two it measures
        assert summary.overall.tolist() == pytest.approx([overall]) and summary.judge.tolist() == [judge_name]
        assert summary[["context_relevance", "completeness", "no_hallucination"]].isna().all().all()
        with sqlite3.connect(db) as connection:  # stored as NULL, not as a default
            assert connection.execute("SELECT count(*) FROM judgments WHERE completeness IS NULL").fetchone() == (3,)
    assert monitor.main(["--db", str(db), "report"]) == monitor.EXIT_OK
    report = capsys.readouterr().out.splitlines()
    row = next(line for line in report if line.startswith("2026-11-03"))
    assert row.endswith(f"  {judge_name}") and report[0].endswith("judge")
    assert row.count("n/a") == (0 if judge_name == "monitor" else 3)
    # answer relevance 0.67 and 0.50 are not above the target 0.8; an unmeasured metric is never marked
    assert row.count("!") == (0 if judge_name == "monitor" else 1)
    assert "(judge " + judge_name + ")" in report[-1]


def test_the_default_judges_request_is_unchanged(tmp_path):
    """`run` without --judge and with `--judge monitor` send the same requests, each the monitor call on its row."""
    bodies = {}
    for flag in ([], ["--judge", "monitor"]):
        db = triad_log(tmp_path / ("flag" if flag else "default"), answers=("good", "also good"))
        with FakeOpenAI(judge) as fake:
            assert monitor.main(["--db", str(db), "run", "--date", "2026-11-03", "--sample-rate", "1", *flag],
                                gateway=gateway_for(fake, tmp_path / str(len(flag)))) == monitor.EXIT_OK
        # the calls of a chunk go concurrently: compare them in the order of their rows
        bodies[bool(flag)] = sorted(fake.requests, key=lambda body: body["messages"][-1]["content"])
    assert bodies[True] == bodies[False] and len(bodies[False]) == 2
    with closing(monitor.connect(tmp_path / "default" / "triad.sqlite")) as connection:
        rows = [monitor.parse_row(r) for r in connection.execute(
            "SELECT id, ts, system, query, contexts, answer FROM queries ORDER BY id")]
    sent = bodies[False]
    expected = sorted((monitor.judge_call(row, "any").messages for row in rows), key=lambda m: m[-1]["content"])
    assert [body["messages"] for body in sent] == expected
    assert {body["max_tokens"] for body in sent} == {60} and {body["top_logprobs"] for body in sent} == {5}


def test_an_unknown_judge_is_a_one_line_usage_error(tmp_path, capsys):
    db = triad_log(tmp_path)
    with FakeOpenAI(triad_aware_judge) as fake:
        with pytest.raises(SystemExit) as stopped:
            monitor.main(["--db", str(db), "run", "--date", "2026-11-03", "--judge", "ragas"],
                         gateway=gateway_for(fake, tmp_path))
        sent = len(fake.requests)
    err = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == monitor.EXIT_USAGE == 2 and sent == 0
    assert len(err) == 1 and "argument --judge: invalid choice: 'ragas'" in err[0]
    assert stored_judgments(db) == 0


def test_a_database_without_the_judge_column_opens_and_each_judge_has_its_own_baseline(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(path)) as connection:  # made before the judge column
        connection.executescript(monitor.SCHEMA_SQL.replace(",\n    judge TEXT NOT NULL DEFAULT 'monitor'", ""))
    with closing(monitor.connect(path)) as connection:  # opens as it is
        assert "judge" not in {row[1] for row in connection.execute("PRAGMA table_info(judgments)")}
        for day, answers in (("2026-11-01", ["good", "fine"]), ("2026-11-02", ["good", "fine"]),
                             ("2026-11-03", ["good", "fine", "BAD"])):
            monitor.add_queries(connection, log_rows(day, answers))
        monitor.add_queries(connection, log_rows("2026-11-04", ["Paris is the capital of France.", "BAD answer."]))
    with FakeOpenAI(triad_aware_judge) as fake:
        gw = gateway_for(fake, tmp_path)
        with closing(monitor.connect(path)) as connection:  # judged by an older version: no judge column yet
            connection.execute("INSERT INTO judgments (query_id, day, ok, groundedness, context_relevance, "
                               "answer_relevance, completeness, no_hallucination, overall) "
                               "VALUES (1, '2026-11-01', 1, 1, 1, 1, 1, 1, 1)")
            connection.commit()
            assert monitor.judgments(connection).judge.tolist() == ["monitor"]
        for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
            monitor.main(["--db", str(path), "run", "--date", day, "--sample-rate", "1"], gateway=gw)
        status = monitor.main(["--db", str(path), "run", "--date", "2026-11-04", "--sample-rate", "1",
                               "--judge", "traditional-triad"], gateway=gw)
    out = capsys.readouterr().out
    # the monitor's three days are no baseline of the triad: its scale is its own
    assert "no control limit yet: fewer than 3 judged items in the 7 days before 2026-11-04 (judge traditional-triad)" \
        in out
    assert status == monitor.EXIT_ALERT and "overall mean 0.42 is below the target 0.7 (judge traditional-triad)" in out
    with closing(monitor.connect(path)) as connection:
        stored = monitor.judgments(connection)
    assert stored.judge.tolist() == ["monitor"] * 7 + ["traditional-triad"] * 2  # the first row kept its default
    assert monitor.main(["--db", str(path), "report", "--days", "4"]) == monitor.EXIT_OK
    report = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in report[2:6]] == ["monitor"] * 3 + ["traditional-triad"]
    power = [line for line in report if line.startswith("alert power")]
    assert len(power) == 2 and power[0].endswith("(judge monitor)") and power[1].endswith("(judge traditional-triad)")
    assert power[1].startswith("alert power on 2026-11-04: not yet computable (0 judged items")
    assert monitor.main(["--db", str(path), "sample-size"]) == monitor.EXIT_OK
    plans = capsys.readouterr().out.splitlines()  # the triad has no items before its day: no plan of its own
    assert len(plans) == 1 and "from 7 judged items of 2026-11-01..2026-11-03, judge monitor" in plans[0]


def test_a_triad_run_keeps_the_users_data_beside_the_database(tmp_path, monkeypatch, capsys):
    from lib import paths
    for name in ("XDG_DATA_HOME", "LLM_CACHE", "LLM_MODE", "STUDY_OUTPUT_DIR", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    committed = paths.ROOT / "outputs" / "llm-cache.sqlite"
    monkeypatch.setattr(paths, "LLM_CACHE", committed)
    cache_bytes, before = committed.read_bytes(), _repository_state()
    db = triad_log(tmp_path / "mine", answers=("Paris is the capital of France.",))
    with FakeOpenAI(triad_aware_judge) as fake:
        monkeypatch.setenv("JUDGE_BASE_URL", fake.base_url)
        monkeypatch.setenv("JUDGE_MODEL", "fake")
        assert monitor.main(["--db", str(db), "run", "--date", "2026-11-03", "--sample-rate", "1", "--judge",
                             "nuggetized-triad"], embed=word_embed) == monitor.EXIT_OK
        sent = len(fake.requests)
    assert sent == 4 and stored_judgments(db) == 1  # create, importance, support, relevance
    assert monitor.judge_cache(db).is_file()
    assert committed.read_bytes() == cache_bytes and _repository_state() == before
