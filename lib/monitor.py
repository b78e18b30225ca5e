"""Nightly LLM-judge monitoring of a RAG assistant's query log: the ``study-monitor`` command.

The log is a SQLite database (path ``--db``; default ``outputs/monitor/monitor.sqlite``) with a ``queries`` table
(id, ts ISO timestamp, system, query, contexts as a JSON list of strings, answer). ``run`` samples a day's
queries (seeded: :func:`sample_ids`), has the judge score each sampled answer on four metrics in one
schema-constrained call (an integer 0–3 per metric; ``lib/prompts/monitor_judge.txt``), stores the judgments in
the same database and prints the day's report. Each metric's stored score is the probability-weighted score
Σ_s p(s)·s / 3 from the score token's ``top_logprobs`` (G-Eval's reading, :mod:`lib.judges.logprobs`; chapter 03
found the argmax grade of this model collapsing onto one value), or the written integer / 3 when the endpoint
returns no logprobs (``scored_by`` says which). ``report`` prints the trend over the last days.

* Idempotent: a query judged successfully is never judged again; a failed judgment is retried and replaced.
* A judge failure is stored as a failure (kind and message) and left out of the means — never a score of 0.
* A malformed log row (missing text, contexts not a JSON list of strings, bad timestamp) is named by its row
  id, stored as a ``malformed_row`` failure, and the other rows are judged.
* Exit status of ``run``: 0 all well; 1 alert (the day's overall mean, the mean of the four metric means, is
  below ``--alert-overall``, default 0.7); 3 no alert but malformed rows. The items with groundedness below
  ``--alert-groundedness`` (0.7) or relevance below ``--alert-relevance`` (0.6) are listed. Per-metric targets
  (defaults groundedness 0.9, relevance 0.8, completeness 0.7, no_hallucination 0.95; ``--target
  metric=value``) mark the report.

Run it from cron, e.g. every night at 02:15 for the day before (no broker, no daemon)::

    15 2 * * * cd /path/to/study && .venv/bin/study-monitor run --date "$(date -d yesterday +\\%F)" \
--sample-rate 0.1 --seed 0 >> outputs/monitor/cron.log 2>&1
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import date as Date
from datetime import datetime
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel

from lib import paths
from lib.judges.logprobs import weighted_fields
from lib.llm.gateway import Gateway, LLMCall
from lib.prompts import parts as prompt_parts

METRICS = ("groundedness", "relevance", "completeness", "no_hallucination")
DEFAULT_TARGETS: dict[str, float] = {"groundedness": 0.9, "relevance": 0.8, "completeness": 0.7,
                                     "no_hallucination": 0.95}
DEFAULT_DB = paths.OUTPUTS / "monitor" / "monitor.sqlite"
EXIT_OK, EXIT_ALERT, EXIT_MALFORMED = 0, 1, 3
SCALE = [0, 1, 2, 3]
TOP_LOGPROBS = 5

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY, ts TEXT NOT NULL, system TEXT NOT NULL,
    query TEXT NOT NULL, contexts TEXT NOT NULL, answer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judgments (
    query_id INTEGER PRIMARY KEY REFERENCES queries(id), day TEXT NOT NULL, ok INTEGER NOT NULL,
    groundedness REAL, relevance REAL, completeness REAL, no_hallucination REAL,
    scored_by TEXT, failure_kind TEXT, error TEXT, judge_model TEXT);
"""


class MonitorScores(BaseModel):
    groundedness: Literal[0, 1, 2, 3]
    relevance: Literal[0, 1, 2, 3]
    completeness: Literal[0, 1, 2, 3]
    no_hallucination: Literal[0, 1, 2, 3]


class MalformedRow(ValueError):
    """A log row that cannot be judged; the message starts with its row id."""


@dataclass(frozen=True)
class LogRow:
    id: int
    ts: str
    system: str
    query: str
    contexts: list[str]
    answer: str


def connect(db: Path) -> sqlite3.Connection:
    """Open (creating if needed) the monitoring database with its tables."""
    db.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(db)
    connection.executescript(SCHEMA_SQL)
    return connection


def add_queries(connection: sqlite3.Connection, rows: Sequence[Mapping]) -> None:
    """Append log rows (keys ts, system, query, contexts (list of str), answer; optional id)."""
    connection.executemany(
        "INSERT INTO queries (id, ts, system, query, contexts, answer) VALUES (?, ?, ?, ?, ?, ?)",
        [(r.get("id"), r["ts"], r["system"], r["query"], json.dumps(list(r["contexts"]), ensure_ascii=False),
          r["answer"]) for r in rows])
    connection.commit()


def simulated_log(answers: pd.DataFrame, days: Sequence[str], per_day: int, degraded_day: str,
                  recheck_day: str | None = None, system: str = "rag-v1",
                  degraded_system: str = "rag-v1.1-broken-context") -> list[dict]:
    """Log rows for a simulation: the topics of ``answers`` (columns qid, variant, query, notes, answer) in order,
    ``per_day`` per day over ``days``, one query per hour from 09:00. Normally the logged answer is the
    ``with_context`` one; on ``degraded_day`` a broken release serves the ``no_context`` answer while the log
    still shows the notes it retrieved (the generator never saw them). On ``recheck_day`` (after the fix) the
    degraded day's queries are asked again and served normally, so the same topics are judged under both
    releases (a paired control: the normal days have other topics)."""
    qids = list(dict.fromkeys(answers.qid))
    if len(qids) < per_day * len(days):
        raise ValueError(f"{len(qids)} topics cannot fill {len(days)} days x {per_day}")
    by_key = answers.set_index(["qid", "variant"])
    rows = []
    for d, day in enumerate(days):
        for k, qid in enumerate(qids[d * per_day:(d + 1) * per_day]):
            broken = day == degraded_day
            served = by_key.loc[(qid, "no_context" if broken else "with_context")]
            notes = by_key.loc[(qid, "with_context"), "notes"]
            rows.append({"ts": f"{day}T{9 + k:02d}:00:00", "system": degraded_system if broken else system,
                         "query": served.query, "contexts": list(notes), "answer": served.answer or ""})
    if recheck_day is not None:
        degraded = qids[days.index(degraded_day) * per_day:(days.index(degraded_day) + 1) * per_day]
        for k, qid in enumerate(degraded):
            served = by_key.loc[(qid, "with_context")]
            rows.append({"ts": f"{recheck_day}T{9 + k:02d}:00:00", "system": system, "query": served.query,
                         "contexts": list(served.notes), "answer": served.answer or ""})
    return rows


def parse_row(raw: tuple) -> LogRow:
    """Check one ``queries`` row; :class:`MalformedRow` names the row id and what is wrong."""
    row_id, ts, system, query, contexts, answer = raw
    try:
        datetime.fromisoformat(str(ts))
    except ValueError:
        raise MalformedRow(f"row {row_id}: timestamp {ts!r} is not ISO 8601") from None
    for name, value in (("system", system), ("query", query), ("answer", answer)):
        if not isinstance(value, str) or not value.strip():
            raise MalformedRow(f"row {row_id}: {name} is empty or not text")
    try:
        parsed = json.loads(contexts) if isinstance(contexts, str) else None
    except json.JSONDecodeError as exc:
        raise MalformedRow(f"row {row_id}: contexts is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(parsed, list) or not all(isinstance(c, str) and c.strip() for c in parsed):
        raise MalformedRow(f"row {row_id}: contexts must be a JSON list of non-empty strings")
    return LogRow(row_id, ts, system, query, parsed, answer)


def sample_ids(ids: Sequence[int], rate: float, seed: int, day: str) -> list[int]:
    """⌈rate·n⌉ of the day's ``n`` row ids, drawn without replacement by ``random.Random(f"{seed}:{day}")`` from
    the sorted ids (the same day, rate and seed always give the same sample), returned sorted."""
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate must be in (0, 1], got {rate}")
    pool = sorted(ids)
    k = math.ceil(rate * len(pool))
    return sorted(random.Random(f"{seed}:{day}").sample(pool, k))


def judge_messages(row: LogRow) -> list[dict[str, str]]:
    system, shared, tail = prompt_parts("monitor_judge", 3)
    contexts = "\n".join(f"[{i}] {c}" for i, c in enumerate(row.contexts, start=1)) or "(none)"
    return [{"role": "system", "content": system},
            {"role": "user", "content": shared.format(query=row.query, contexts=contexts) + "\n"
             + tail.format(answer=row.answer)}]


def read_scores(value: MonitorScores, logprobs: list | None) -> tuple[dict[str, float], str]:
    """Each metric on 0–1: the probability-weighted score (or, without logprobs, the written integer) / 3
    (:func:`lib.judges.logprobs.weighted_fields`)."""
    scores, scored_by = weighted_fields(value, logprobs, METRICS, SCALE)
    return {m: s / max(SCALE) for m, s in scores.items()}, scored_by


def _store(connection: sqlite3.Connection, query_id: int, day: str, ok: bool, scores: Mapping[str, float] | None,
           scored_by: str | None, failure_kind: str | None, error: str | None, model: str | None) -> None:
    values = [scores[m] if scores else None for m in METRICS]
    connection.execute(
        "INSERT OR REPLACE INTO judgments (query_id, day, ok, groundedness, relevance, completeness, "
        "no_hallucination, scored_by, failure_kind, error, judge_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (query_id, day, int(ok), *values, scored_by, failure_kind, error, model))


@dataclass
class DayRun:
    """What ``run`` did for one day: rows logged and sampled, newly judged, skipped (already judged), failed,
    and the malformed rows' messages."""

    day: str
    logged: int
    sampled: int
    judged: int
    skipped: int
    failed: int
    malformed: list[str]


def run_day(connection: sqlite3.Connection, gateway: Gateway, day: str, rate: float, seed: int) -> DayRun:
    """Sample ``day``'s log rows and judge the ones without a successful judgment (module docstring)."""
    raw = connection.execute("SELECT id, ts, system, query, contexts, answer FROM queries WHERE substr(ts, 1, 10) = ? "
                             "ORDER BY id", (day,)).fetchall()
    by_id = {r[0]: r for r in raw}
    chosen = sample_ids(list(by_id), rate, seed, day) if by_id else []
    done = {r[0] for r in connection.execute("SELECT query_id FROM judgments WHERE ok = 1")}
    todo, malformed = [], []
    for query_id in chosen:
        if query_id in done:
            continue
        try:
            todo.append(parse_row(by_id[query_id]))
        except MalformedRow as bad:
            malformed.append(str(bad))
            _store(connection, query_id, day, False, None, None, "malformed_row", str(bad), None)
    calls = [LLMCall(judge_messages(row), MonitorScores, call_label=f"monitor:{day}:{row.id}", max_tokens=60,
                     top_logprobs=TOP_LOGPROBS) for row in todo]
    failed = 0
    for row, result in zip(todo, gateway.complete_many(calls, desc=f"monitor {day}"), strict=True):
        if result.ok:
            scores, scored_by = read_scores(result.value, result.logprobs)
            _store(connection, row.id, day, True, scores, scored_by, None, None, gateway.endpoint.identity)
        else:
            failed += 1
            _store(connection, row.id, day, False, None, None, result.failure_kind, result.error,
                   gateway.endpoint.identity)
    connection.commit()
    return DayRun(day, len(raw), len(chosen), len(todo) - failed, len(chosen) - len(todo) - len(malformed), failed,
                  malformed)


def judgments(connection: sqlite3.Connection) -> pd.DataFrame:
    """Every stored judgment with its log row's system and query (one row per judged query)."""
    return pd.read_sql_query(
        "SELECT j.*, q.system, q.query FROM judgments j JOIN queries q ON q.id = j.query_id ORDER BY j.day, j.query_id",
        connection)


def daily_summary(connection: sqlite3.Connection) -> pd.DataFrame:
    """Per day: judged (ok) and failed counts, the mean of each metric over the successful judgments, and
    ``overall`` = the mean of the four metric means."""
    frame = judgments(connection)
    if frame.empty:
        return pd.DataFrame(columns=["day", "judged", "failed", *METRICS, "overall"])
    ok = frame[frame.ok == 1]
    out = frame.groupby("day").agg(judged=("ok", "sum"), failed=("ok", lambda s: int((s == 0).sum())))
    out = out.join(ok.groupby("day")[list(METRICS)].mean())
    out["overall"] = out[list(METRICS)].mean(axis=1, skipna=False)
    return out.reset_index()


def release_comparison(per_query: pd.DataFrame, broken_day: str, fixed_day: str) -> tuple[pd.DataFrame, pd.Series]:
    """The same queries judged on ``broken_day`` (served by a broken release) and on ``fixed_day`` (served again
    after the fix), from :func:`judgments`: a table of each metric per query and release (only queries judged on
    both days), and the mean over those queries of fixed − broken per metric. A judge that sees the fault gives
    a clearly positive difference."""
    days = per_query[per_query["day"].isin([broken_day, fixed_day]) & (per_query["ok"] == 1)]
    days = days.assign(release=days["day"].map({broken_day: "broken", fixed_day: "fixed"}))
    table = days.pivot_table(index="query", columns="release", values=list(METRICS)).dropna()
    difference = table.xs("fixed", axis=1, level="release") - table.xs("broken", axis=1, level="release")
    return table, difference.mean()[list(METRICS)]


def low_items(connection: sqlite3.Connection, day: str, groundedness_below: float, relevance_below: float
              ) -> pd.DataFrame:
    """The day's successfully judged items with groundedness or relevance below the alert thresholds."""
    frame = judgments(connection)
    frame = frame[(frame.day == day) & (frame.ok == 1)]
    return frame[(frame.groundedness < groundedness_below) | (frame.relevance < relevance_below)][
        ["query_id", "system", "groundedness", "relevance", "query"]]


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None or pd.isna(value) else f"{value:.2f}"


def trend_text(summary: pd.DataFrame, targets: Mapping[str, float]) -> str:
    """The trend table as text; a metric mean that does not exceed its target (the header's "> target") carries
    a ``!``."""
    header = (f"{'day':<10}  {'judged':>6}  {'failed':>6}  " + "  ".join(f"{m:>16}" for m in METRICS)
              + f"  {'overall':>7}")
    lines = [header, "targets" + " " * 21 + "  ".join(f"{'> ' + format(targets[m], '.2f'):>16}" for m in METRICS)]
    for r in summary.itertuples():
        cells = "  ".join(f"{_fmt(getattr(r, m)) + ('!' if getattr(r, m) <= targets[m] else ' '):>16}" for m in METRICS)
        lines.append(f"{r.day:<10}  {int(r.judged):>6}  {int(r.failed):>6}  {cells}  {_fmt(r.overall):>7}")
    return "\n".join(lines)


def _targets(pairs: Sequence[str]) -> dict[str, float]:
    targets = dict(DEFAULT_TARGETS)
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in METRICS or not value:
            raise argparse.ArgumentTypeError(f"--target expects metric=value with metric in {', '.join(METRICS)}; "
                                             f"got {pair!r}")
        targets[name] = float(value)
    return targets


def _day(text: str) -> str:
    try:
        return Date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="study-monitor", description="Nightly LLM-judge monitoring of a RAG query log.")
    p.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"SQLite log and judgments (default {DEFAULT_DB})")
    p.add_argument("--target", action="append", default=[], metavar="METRIC=VALUE",
                   help="per-metric target marked in reports (default "
                        + ", ".join(f"{k}={v}" for k, v in DEFAULT_TARGETS.items()) + ")")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="sample and judge one day's queries, store, print the day's report")
    run.add_argument("--date", type=_day, required=True, help="the day to judge (YYYY-MM-DD)")
    run.add_argument("--sample-rate", type=float, default=0.1, help="share of the day's queries judged (default 0.1)")
    run.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    run.add_argument("--alert-overall", type=float, default=0.7,
                     help="alert when the day's overall mean is below (0.7)")
    run.add_argument("--alert-groundedness", type=float, default=0.7, help="list items with groundedness below (0.7)")
    run.add_argument("--alert-relevance", type=float, default=0.6, help="list items with relevance below (0.6)")
    report = sub.add_parser("report", help="print the trend table of the last days")
    report.add_argument("--days", type=int, default=7, help="days shown, ending at --end (default 7)")
    report.add_argument("--end", type=_day, default=None, help="last day shown (default: the last judged day)")
    return p


def main(argv: Sequence[str] | None = None, gateway: Gateway | None = None) -> int:
    """Entry point of ``study-monitor``; returns the exit status (module docstring). ``gateway``: the judge to
    use (default: ``Gateway.from_env(notebook="monitor", role="judge")``)."""
    args = parser().parse_args(argv)
    try:
        targets = _targets(args.target)
    except argparse.ArgumentTypeError as exc:
        parser().error(str(exc))
    connection = connect(args.db)
    try:
        if args.command == "report":
            summary = daily_summary(connection)
            if args.end is not None:
                summary = summary[summary.day <= args.end]
            print(trend_text(summary.tail(args.days), targets) if not summary.empty else "no judged days yet")
            return EXIT_OK
        # A gateway made here is closed here (its open connections); a caller's stays the caller's to close.
        with nullcontext(gateway) if gateway else Gateway.from_env(notebook="monitor", role="judge") as judge:
            done = run_day(connection, judge, args.date, args.sample_rate, args.seed)
        print(f"{done.day}: {done.logged} queries logged, {done.sampled} sampled (rate {args.sample_rate}, "
              f"seed {args.seed}); {done.judged} judged now, {done.skipped} already judged, "
              f"{done.failed} judge failures, {len(done.malformed)} malformed rows")
        for message in done.malformed:
            print(f"  malformed: {message}")
        summary = daily_summary(connection)
        today = summary[summary.day == done.day]
        print(trend_text(today, targets))
        status = EXIT_MALFORMED if done.malformed else EXIT_OK
        overall = today.overall.iloc[0] if len(today) else float("nan")
        if pd.notna(overall) and overall < args.alert_overall:
            print(f"ALERT {done.day}: overall mean {overall:.2f} is below {args.alert_overall}")
            status = EXIT_ALERT
        low = low_items(connection, done.day, args.alert_groundedness, args.alert_relevance)
        for r in low.itertuples():
            print(f"  low: query {r.query_id} ({r.system}) groundedness {r.groundedness:.2f} "
                  f"relevance {r.relevance:.2f}: {r.query[:80]}")
        return status
    finally:
        connection.close()


def cli() -> None:
    sys.exit(main())
