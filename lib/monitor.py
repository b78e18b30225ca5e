"""Nightly LLM-judge monitoring of a RAG assistant's query log: the ``study-monitor`` command.

The log is a SQLite database (path ``--db``; default ``monitor.sqlite`` in :func:`data_home`, a per-user folder
outside the checkout) made by ``init`` (:func:`init_database`), with a ``queries`` table (id, ts, system, query,
contexts as a JSON list of strings, answer) that the logging application fills, or ``add`` loads from a CSV or JSONL
file (:func:`read_log`, :func:`add_queries`). The judge's requests and answers (the user's own queries) are cached
next to the database (:func:`judge_cache`), never in the study's committed cache; ``LLM_CACHE`` is not read.
``add``, ``run`` and ``report`` refuse a ``--db`` that does not exist or lacks the monitor's tables (exit 5), so
that a mistyped path is not a new empty log. ``run`` samples a day's
queries (seeded: :func:`sample_ids`), has the judge score each sampled answer on five metrics in one
schema-constrained call (an integer 0–3 per metric; ``lib/prompts/monitor_judge.txt``): groundedness, context
relevance (the retrieved documents against the query: the seed requirement), answer relevance (the answer against the
query), completeness and no-hallucination. Each metric's stored score is the probability-weighted score
Σ_s p(s)·s / 3 from the score token's ``top_logprobs`` (G-Eval's reading, :mod:`lib.judges.logprobs`; chapter 03
found the argmax grade of this model collapsing onto one value), or the written integer / 3 when the endpoint
returns no logprobs (``scored_by`` says which); an item's ``overall`` is the mean of its five (of the metrics its
judge measures: below), stored with the time it was judged (``evaluated_at``, UTC). ``run`` stores the judgments
in the same database and prints the day's report. ``report`` prints the trend over the last calendar days (a
night without a run is shown as a gap) and the relative alert rule's power on the last day shown, at the sample
rate that was run (:func:`alert_power_text`); ``sample-size`` prints the items a day that rule needs to catch a
given drop. The five are metrics of the study (kind ``monitor``, :mod:`lib.metrics`): ``score(gateway, rows)``
on :class:`LogRow` makes the nightly run's call for each row (:func:`judge_rows`).

* **Two alert rules.** Absolute: the day's overall mean below ``--alert-overall`` (0.7). Relative, a Shewhart
  control limit on the day's mean (:func:`control_limit`): below mean − ``--limit-sds`` (3) × SD / √m of the
  baseline, the judged items of the ``--baseline-days`` (7) calendar days before the day (at least 3 items), with m
  the day's judged items. A judge that scores every answer near the top never crosses an absolute target; the
  relative rule asks only that a bad day fall below the judge's own recent days. Its power for a drop δ is
  Φ(δ√m/SD − 3) (:func:`lib.analysis.power.control_limit_power`).
* **Three judges** (``run --judge``, :data:`JUDGES`; the judge of each judgment is stored in its ``judge``
  column). ``monitor`` (the default): the one call above, five metrics. ``traditional-triad`` and
  ``nuggetized-triad``: the RAG triads of :mod:`lib.triads` on the row's query, its retrieved documents as the
  context and its answer (:func:`triad_judgments`); a triad measures groundedness and answer relevance (0–1), and
  the monitor's other three metrics are stored as missing (NULL), never as a default. **An item's overall is the
  mean of the metrics its judge measures** (:func:`overall_score`): the five for ``monitor``, the two for a triad.
  Every day's summary, trend row, alert and control limit is per judge (:func:`daily_summary`), a day's mean of a
  metric its judge does not measure is missing (shown ``n/a``, never marked against its target), and a judge's
  baseline holds only its own judgments (the judges' scales differ).
* Idempotent: a query judged successfully (by any judge: one judgment per query) is never judged again; a failed
  judgment is retried, by the run's judge, and replaced.
* The sample of a day is fixed by its first run that finds rows on the day (⌈rate·n⌉ of the n rows logged then,
  stored with its rate and seed in the ``samples`` table): a later run judges the same rows, whatever its
  ``--sample-rate`` and ``--seed``, and says how many rows were logged since; those are never sampled.
* One run per day at a time: a run claims its day in the ``claims`` table before its first judge call (a
  read-only database is found there too) and releases it at the end; another run of that day meanwhile is
  refused (exit 5). A run renews its claim with every chunk it stores; a claim not renewed for an hour
  (:data:`CLAIM_LAPSE_S`), a killed run's, is taken over.
* A judge failure is stored as a failure (kind and message) and left out of the means — never a score of 0. A
  request the judge refuses for what it holds (HTTP 400, 413 or 422, e.g. a prompt past its context) is its row's
  ``refused`` failure once the judge model has judged some row (in this run or an earlier one); a chunk whose every
  request is refused by a judge that has judged nothing yet (a wrong model name) stops the run.
* A malformed log row (missing text, text that is not UTF-8, contexts not a JSON list of strings) is named by its
  row id, stored as a ``malformed_row`` failure, and the other rows are judged.
* Timestamps: a row's day is the date of its ``ts``, which is stored as ``YYYY-MM-DDTHH:MM:SS`` (the log's local
  time). :func:`add_queries` turns any ISO 8601 date and time without a UTC offset into that form
  (``2026-11-03 10:00`` → ``2026-11-03T10:00:00``) and refuses a batch with a timestamp it cannot read, naming the
  rows: ``11/03/2026 10:00`` or ``03.11.2026 09:00`` could put the day or the month first and are not guessed. A
  row written in another form by other means (SQL) belongs to no day: every ``run`` names it as malformed
  (exit 3) until it is corrected. A run reads the day's rows by their timestamp and the undated rows through an
  index of their own (:data:`SCHEMA_SQL`), not every row of the log.
* Judgments are stored as they come back: the calls go to the judge in chunks of :data:`CHUNK_SIZE`, each
  chunk's results committed in one short transaction, so a run stopped by the judge keeps what it received.
  A database locked by another writer (the logging application) is waited for up to ``--busy-timeout``
  seconds (default 60); no transaction is held open while the judge works.
* The day's report: the items with groundedness below ``--alert-groundedness`` (0.7) or answer relevance below
  ``--alert-answer-relevance`` (0.6) are listed; per-metric targets (defaults groundedness 0.9, context and answer
  relevance 0.8, completeness 0.7, no_hallucination 0.95; ``--target metric=value``) mark it.

Exit status (:data:`EXIT_HELP`, also in ``--help``): 0 ok; 1 alert, the day's overall mean (the mean of its items'
overall scores) below ``--alert-overall`` (default 0.7) or below the control limit; 2 usage error, found before the
database or the judge is touched; 3 malformed rows and no alert (for ``add``: rows of the file that cannot be
loaded, and none is); 4 the judge stopped the run (unreachable or hung endpoint, an HTTP 4xx such as 401, every
request refused by a judge model that has judged nothing yet, a replay miss, an unconfigured endpoint; the judgments
received before are kept) or every judge call of the day failed, so the alert could not be checked (a ``NOT
CHECKED`` line on stderr); 5 database error (locked past the busy
timeout, read-only, not a database, missing or without the monitor's tables, or the day is being judged by another
run). Single failed judgments do not change the status when other items of the day have scores: they are counted in
the report and retried by the next run. Errors are one line on stderr, ``study-monitor: ...``, never a traceback.

Run it from cron, e.g. every night at 02:15 for the day before (no broker, no daemon)::

    15 2 * * * cd /path/to/study && .venv/bin/study-monitor run --date "$(date -d yesterday +\\%F)" \
--sample-rate 0.1 --seed 0 >> "$HOME/.local/share/llm-judge-study/cron.log" 2>&1
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import random
import socket
import sqlite3
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from datetime import date as Date
from pathlib import Path
from typing import Any, Literal, NoReturn

import pandas as pd
from pydantic import BaseModel

from lib import embeddings, metrics, triads
from lib.analysis import power
from lib.analysis.text import count_text
from lib.embeddings import Embed
from lib.judges.logprobs import weighted_fields
from lib.llm.cache import CorruptEntry
from lib.llm.gateway import Gateway, LLMCall, LLMResult, RequestRefused
from lib.prompts import parts as prompt_parts

METRICS = ("groundedness", "context_relevance", "answer_relevance", "completeness", "no_hallucination")
# The judges `run --judge` chooses from, each with the metrics it measures (the others it leaves missing)
JUDGES: dict[str, tuple[str, ...]] = {"monitor": METRICS, "traditional-triad": ("groundedness", "answer_relevance"),
                                      "nuggetized-triad": ("groundedness", "answer_relevance")}
DEFAULT_JUDGE = "monitor"
TRIAD_METRICS = {"groundedness": "groundedness", "relevance": "answer_relevance"}  # lib.triads' component -> metric
DEFAULT_TARGETS: dict[str, float] = {"groundedness": 0.9, "context_relevance": 0.8, "answer_relevance": 0.8,
                                     "completeness": 0.7, "no_hallucination": 0.95}
EXIT_OK, EXIT_ALERT, EXIT_USAGE, EXIT_MALFORMED, EXIT_JUDGE, EXIT_DATABASE = 0, 1, 2, 3, 4, 5
EXIT_HELP = """exit status:
  0  ok: the day judged, no alert
  1  alert: the day's overall mean is below --alert-overall or below the control limit (wins over 3 and 4)
  2  usage: a bad option or value, found before the database or the judge is touched
  3  malformed rows, no alert: sampled rows that cannot be judged, and log rows whose
     timestamp is not YYYY-MM-DDTHH:MM:SS (they belong to no day), each named by row id;
     for add: rows of the file that cannot be loaded, named by line (none is added)
  4  judge: the endpoint is unreachable or hung, refuses the request (an HTTP 4xx such as 401; a 400
     for every request of a judge model that has judged nothing yet), is not configured, or a replay
     misses its cache; the judgments received before are kept. Also when every judge call of the day
     failed, so that the alert could not be checked (single failed judgments, a request refused for
     its content among them, are counted in the report and retried by the next run; they do not
     change the status)
  5  database: --db missing or without the monitor's tables (make it with `study-monitor init`),
     locked past --busy-timeout, read-only, or not a database; or the day is being judged by
     another run (its claim lapses an hour after its last renewal)
errors are one line on stderr: "study-monitor: ..."."""
SCALE = [0, 1, 2, 3]
DEFAULT_SAMPLE_RATE = 0.1
ALERT_OVERALL = 0.7   # the absolute target on the day's overall mean
DEFAULT_DROP = 0.05   # fall of the day's mean overall (0–1) that report's power and sample-size plan for
LIMIT_SDS = 3.0       # the control limit: standard errors of the day's mean below the baseline mean
BASELINE_DAYS = 7
TOP_LOGPROBS = 5
CHUNK_SIZE = 8  # judgments committed together: a run stopped midway has stored all its chunks but the last
BUSY_TIMEOUT_S = 60.0  # how long a write waits for another writer's lock (the logging application's)
CLAIM_LAPSE_S = 3600.0  # a claim not renewed for this long is a dead run's (a live one renews it with every chunk)
# HTTP statuses of a request refused for what it holds (400 a prompt past the context, 413 too large, 422
# unprocessable): its row's failure, unless the judge model has judged nothing (then it is the model name, say)
ROW_REFUSALS = (400, 413, 422)

TS_FORMAT = "YYYY-MM-DDTHH:MM:SS"
# Whether a stored ts is in that form and a real date and time: SQLite reads it and writes it back unchanged
# (julianday normalises 2026-02-30 to 03-02 and 24:00 to the next day, so those come back different). The partial
# index queries_undated holds the rows where it is false, so that a run finds them without reading the log.
CANONICAL_TS = "(ts IS strftime('%Y-%m-%dT%H:%M:%S', julianday(ts)))"

SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY, ts TEXT NOT NULL, system TEXT NOT NULL,
    query TEXT NOT NULL, contexts TEXT NOT NULL, answer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judgments (
    query_id INTEGER PRIMARY KEY REFERENCES queries(id), day TEXT NOT NULL, ok INTEGER NOT NULL,
    groundedness REAL, context_relevance REAL, answer_relevance REAL, completeness REAL, no_hallucination REAL,
    overall REAL, scored_by TEXT, failure_kind TEXT, error TEXT, judge_model TEXT, evaluated_at TEXT,
    judge TEXT NOT NULL DEFAULT 'monitor');
CREATE TABLE IF NOT EXISTS samples (
    day TEXT PRIMARY KEY, rate REAL NOT NULL, seed INTEGER NOT NULL, logged INTEGER NOT NULL,
    ids TEXT NOT NULL, fixed_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    day TEXT PRIMARY KEY, token TEXT NOT NULL, holder TEXT NOT NULL, claimed_at TEXT NOT NULL,
    renewed_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS queries_ts ON queries(ts);
CREATE INDEX IF NOT EXISTS queries_undated ON queries(id) WHERE NOT {CANONICAL_TS};
"""
TABLES = ("queries", "judgments", "samples", "claims")
# Judgment columns added since the first version: `init` adds them to an older database (its rows keep NULL there)
ADDED_JUDGMENT_COLUMNS = {"context_relevance": "REAL", "answer_relevance": "REAL", "overall": "REAL",
                          "evaluated_at": "TEXT"}
# Added by `init` too, but a database without them still opens: its judgments were all the monitor call's (the only
# judge then), so they read as such, and the first `run` adds the column (:func:`add_optional_columns`)
OPTIONAL_JUDGMENT_COLUMNS = {"judge": f"TEXT NOT NULL DEFAULT '{DEFAULT_JUDGE}'"}


class MonitorScores(BaseModel):
    groundedness: Literal[0, 1, 2, 3]
    context_relevance: Literal[0, 1, 2, 3]
    answer_relevance: Literal[0, 1, 2, 3]
    completeness: Literal[0, 1, 2, 3]
    no_hallucination: Literal[0, 1, 2, 3]


class MalformedRow(ValueError):
    """A log row that cannot be judged or stored; the message names the row."""


class MissingDatabase(Exception):
    """``--db`` names no file, or a database without the monitor's tables: ``study-monitor init`` makes them."""


class DayClaimed(Exception):
    """Another run is judging the day (its claim is live), or took the day over from this run."""


class JudgeUnavailable(Exception):
    """The judge stopped the run (see :data:`EXIT_HELP`, code 4); the message says what was stored before."""


@dataclass(frozen=True)
class LogRow:
    id: int
    ts: str
    system: str
    query: str
    contexts: list[str]
    answer: str


def data_home() -> Path:
    """The per-user folder of the monitor's default database and judge cache: ``$XDG_DATA_HOME/llm-judge-study``, else
    ``~/.local/share/llm-judge-study``. Outside the checkout, so that a user's queries never land in the study's
    files (the XDG base directory rule: a relative ``XDG_DATA_HOME`` is ignored)."""
    base = os.environ.get("XDG_DATA_HOME", "")
    return (Path(base) if Path(base).is_absolute() else Path.home() / ".local" / "share") / "llm-judge-study"


def judge_cache(db: Path) -> Path:
    """The judge's response cache of the database ``db``: beside it, ``<name>.llm-cache.sqlite``. It holds the user's
    queries, contexts and answers as sent, so it goes where they already are, never into the study's cache."""
    return db.with_name(f"{db.stem}.llm-cache.sqlite")


def init_database(db: Path, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
    """Create the monitoring database ``db`` with its tables (``study-monitor init``); to an existing database (the
    logging application's, or one made by an older version) add the tables it lacks, keeping its data."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(db, timeout=busy_timeout_s)) as connection:
        connection.executescript(SCHEMA_SQL)
        for name in _missing_judgment_columns(connection):
            connection.execute(f"ALTER TABLE judgments ADD COLUMN {name} {ADDED_JUDGMENT_COLUMNS[name]}")
        add_optional_columns(connection)
        connection.commit()


def _missing_judgment_columns(connection: sqlite3.Connection, columns: Mapping[str, str] = ADDED_JUDGMENT_COLUMNS
                              ) -> list[str]:
    present = {row[1] for row in connection.execute("PRAGMA table_info(judgments)")}
    return [name for name in columns if name not in present]


def add_optional_columns(connection: sqlite3.Connection) -> None:
    """Add the :data:`OPTIONAL_JUDGMENT_COLUMNS` the judgments table lacks (not committed: the caller's
    transaction); the rows already stored take the column's default."""
    for name in _missing_judgment_columns(connection, OPTIONAL_JUDGMENT_COLUMNS):
        connection.execute(f"ALTER TABLE judgments ADD COLUMN {name} {OPTIONAL_JUDGMENT_COLUMNS[name]}")


def connect(db: Path, busy_timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open the existing monitoring database ``db`` (:func:`init_database`); a statement waits up to
    ``busy_timeout_s`` for a lock held by another connection. :class:`MissingDatabase` when there is no file at
    ``db`` or it lacks the monitor's tables (nothing is created); :class:`sqlite3.Error` when it is not a database
    or stays locked."""
    if not db.is_file():
        raise MissingDatabase(f"no such file; create the database with `study-monitor init --db {db}`")
    connection = sqlite3.connect(db, timeout=busy_timeout_s)
    connection.text_factory = _text
    try:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [table for table in TABLES if table not in tables]
        missing_columns = [] if "judgments" in missing else _missing_judgment_columns(connection)
        if missing or missing_columns:
            what = (f"table {', '.join(missing)}" if missing else f"judgment column {', '.join(missing_columns)}")
            raise MissingDatabase(f"not a study-monitor database, or one made by an older version (no {what}): "
                                  f"`study-monitor init --db {db}` adds what is missing and keeps the data")
    except BaseException:
        connection.close()
        raise
    return connection


def _text(data: bytes) -> str:
    """A stored text value, with bytes that are not UTF-8 kept as lone surrogates: reading a row written by another
    application never fails on them (sqlite3's default stops the whole query), and :func:`parse_row` names the row."""
    return data.decode("utf-8", "surrogateescape")


def _is_utf8(text: str) -> bool:
    """Whether ``text`` holds no undecodable byte (:func:`_text`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@contextmanager
def _write(connection: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, committed at the end. It takes the write lock at its start (BEGIN IMMEDIATE), where
    a busy database is waited for up to the busy timeout: a transaction that reads first and writes later may
    instead fail at its first write without waiting."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.rollback()
        raise
    connection.commit()


def canonical_timestamp(value: object) -> str:
    """``value`` (an ISO 8601 date and time without a UTC offset, as text or a datetime) as YYYY-MM-DDTHH:MM:SS,
    a fraction of a second dropped. ValueError for anything else: a form such as 11/03/2026 could put the day or
    the month first, and an offset would leave open which day the row belongs to."""
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"timestamp {value!r} is not ISO 8601 (YYYY-MM-DD HH:MM:SS); day-first and month-first "
                         "forms are not guessed") from None
    if moment.tzinfo is not None:
        raise ValueError(f"timestamp {value!r} has a UTC offset: log the local time, without one")
    return moment.replace(microsecond=0).isoformat()


LOG_COLUMNS = ("ts", "system", "query", "contexts", "answer")  # of a row to add; id is optional
NAMED_AT_MOST = 10  # bad rows named in a refusal (the rest counted), so that it stays one readable line


def log_values(row: Mapping) -> tuple[int | None, str, str, str, str, str]:
    """The ``queries`` values of one row to add (id, ts as YYYY-MM-DDTHH:MM:SS, system, query, contexts as JSON,
    answer); ValueError saying what is wrong. ``contexts`` is a list of strings, or the JSON text of one (a CSV
    cell); ``id`` a whole number, or absent. Empty text is let through: ``run`` names such a row as malformed."""
    missing = [name for name in LOG_COLUMNS if row.get(name) is None]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    ts = canonical_timestamp(row["ts"])
    for name in ("system", "query", "answer"):
        if not isinstance(row[name], str):
            raise ValueError(f"{name} is not text")
    contexts = row["contexts"]
    if isinstance(contexts, str):
        try:
            contexts = json.loads(contexts)
        except json.JSONDecodeError as exc:
            raise ValueError(f"contexts is not JSON ({exc.msg} at char {exc.pos}); write a list of strings such as "
                             '["first document", "second document"]') from None
    if not isinstance(contexts, list | tuple) or not all(isinstance(c, str) for c in contexts):
        raise ValueError("contexts is not a list of strings")
    row_id = row.get("id")
    if isinstance(row_id, str) and row_id.strip().isdigit():
        row_id = int(row_id)
    if row_id is not None and (isinstance(row_id, bool) or not isinstance(row_id, int)):
        raise ValueError(f"id {row_id!r} is not a whole number")
    return row_id, ts, row["system"], row["query"], json.dumps(list(contexts), ensure_ascii=False), row["answer"]


def add_queries(connection: sqlite3.Connection, rows: Sequence[Mapping], names: Sequence[str] | None = None) -> None:
    """Append log rows (keys ts, system, query, contexts (list of str), answer; optional id), each ts stored as
    YYYY-MM-DDTHH:MM:SS (:func:`canonical_timestamp`). Every row is checked first (:func:`log_values`; an id must be
    new): a batch with a row that fails is refused whole, with a :class:`MalformedRow` naming each such row by
    ``names`` (e.g. "line 12"; default its position in the batch), so that no row is stored where no day finds it
    and the corrected batch can be added as it is."""
    names = names or [f"row {k} of the batch" for k in range(len(rows))]
    values, problems = {}, []
    for position, (row, name) in enumerate(zip(rows, names, strict=True)):
        try:
            values[position] = log_values(row)
        except ValueError as exc:
            problems.append((position, f"{name}: {exc}"))
    ids = [value[0] for value in values.values() if value[0] is not None]
    taken = {row_id for (row_id,) in connection.execute(
        "SELECT id FROM queries WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}
    for position, (row_id, *_) in values.items():
        if row_id in taken:  # logged before, or given to an earlier row of the batch
            problems.append((position, f"{names[position]}: id {row_id} is taken"))
        if row_id is not None:
            taken.add(row_id)
    if problems:
        named = [problem for _, problem in sorted(problems)[:NAMED_AT_MOST]]
        more = f"; and {len(problems) - len(named)} more" if len(problems) > len(named) else ""
        raise MalformedRow(f"{len(problems)} of {len(rows)} rows cannot be added, so none was added: "
                           + "; ".join(named) + more)
    connection.executemany(
        "INSERT INTO queries (id, ts, system, query, contexts, answer) VALUES (?, ?, ?, ?, ?, ?)", values.values())
    connection.commit()


def read_log(path: Path, form: Literal["csv", "jsonl"]) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of a log file and their names ("line N", where the row starts) for :func:`add_queries`. ``csv``: a
    header naming the columns ts, system, query, contexts (the JSON list of strings as text), answer and optionally
    id, an empty cell a missing value; ``jsonl``: one JSON object a line with those keys (contexts a list). Blank
    lines are no rows. :class:`MalformedRow` naming the line when the file is not UTF-8 or a line is not a row;
    OSError when it cannot be read."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a BOM, as spreadsheet programs write it, is no part of the first column
    except UnicodeDecodeError as exc:
        bad_line = data[:exc.start].count(b"\n") + 1
        raise MalformedRow(f"line {bad_line}: not UTF-8 text; save the file as UTF-8") from None
    rows, names = [], []
    if form == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MalformedRow(f"line {number}: not JSON ({exc.msg} at char {exc.pos})") from None
            if not isinstance(row, dict):
                raise MalformedRow(f"line {number}: not a JSON object with the keys {', '.join(LOG_COLUMNS)}")
            rows.append(row)
            names.append(f"line {number}")
        return rows, names
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in LOG_COLUMNS if name not in header]
    if missing:
        raise MalformedRow(f"line 1: the header has no column {', '.join(missing)} (it needs {', '.join(LOG_COLUMNS)}; "
                           "id is optional)")
    start = reader.line_num + 1
    try:
        for record in reader:
            number, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                raise MalformedRow(f"line {number}: {len(record)} fields where the header has {len(header)}")
            # an empty cell is a missing value (CSV has no other way to write one)
            rows.append({name: cell for name, cell in zip(header, record, strict=True) if cell.strip()})
            names.append(f"line {number}")
    except csv.Error as exc:
        raise MalformedRow(f"line {start}: {exc}") from None
    return rows, names


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
    """Check one ``queries`` row of a day (its timestamp was checked by the day's query, :data:`CANONICAL_TS`);
    :class:`MalformedRow` names the row id and what is wrong."""
    row_id, ts, system, query, contexts, answer = raw
    for name, value in (("system", system), ("query", query), ("contexts", contexts), ("answer", answer)):
        if isinstance(value, str) and not _is_utf8(value):
            raise MalformedRow(f"row {row_id}: {name} is not UTF-8 text")
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


def undated_rows(connection: sqlite3.Connection) -> list[str]:
    """A message for each log row whose timestamp is not YYYY-MM-DDTHH:MM:SS (written around
    :func:`add_queries`): it belongs to no day, so no run samples it, and every run reports it. Read through the
    index of those rows (:data:`SCHEMA_SQL`), not by reading every row of the log."""
    return [f"row {row_id}: timestamp {ts!r} is not {TS_FORMAT}, so the row belongs to no day and is never sampled"
            for row_id, ts in connection.execute(f"SELECT id, ts FROM queries WHERE NOT {CANONICAL_TS} ORDER BY id")]


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


def judge_call(row: LogRow, call_label: str) -> LLMCall:
    """The judge's one call on a log row, scoring the five metrics."""
    return LLMCall(judge_messages(row), MonitorScores, call_label=call_label, max_tokens=60, top_logprobs=TOP_LOGPROBS)


def judge_rows(gateway: Gateway, rows: Sequence[LogRow], call_label: str = "monitor"
               ) -> list[dict[str, metrics.Result]]:
    """Each row's five metrics (:func:`read_scores`) as results, or the call's failure for all five."""
    results = gateway.complete_many([judge_call(row, f"{call_label}:{row.id}") for row in rows], desc=call_label)
    return [{m: metrics.Result(score) for m, score in read_scores(r.value, r.logprobs)[0].items()} if r.ok
            else dict.fromkeys(METRICS, metrics.Result.failure(r.failure_kind or "unknown")) for r in results]


def _metric(name: str, construct: str) -> metrics.FunctionMetric:
    def call(gateway: Gateway | None, items: Sequence[LogRow], **options: Any) -> list[metrics.Result]:
        return [scores[name] for scores in judge_rows(metrics.judge_gateway(gateway, name), items, **options)]

    return metrics.FunctionMetric(
        name=name, kind="monitor", construct=construct, scale=metrics.Scale(0, 1), call=call,
        description="Σ_s p(s)·s / 3 of the judge's 0–3 grade for it, in one call scoring all five (monitor_judge.txt)",
        citation="after the RAG triad (TruLens) and RAGAS (Es et al. 2024); weighting of Liu et al. 2023 (G-Eval)",
        aliases=(f"monitor.{name}",))


MONITOR_METRICS = tuple(metrics.register(_metric(name, construct)) for name, construct in (
    ("groundedness", "whether the retrieved context supports the answer's claims"),
    ("context_relevance", "whether the retrieved context is about the query"),
    ("answer_relevance", "whether the answer addresses the query"),
    ("completeness", "whether the answer covers every part of the query"),
    ("no_hallucination", "absence of names, numbers, dates or facts the context does not give")))


@dataclass(frozen=True)
class Judgment:
    """One log row's judgment: ``scores`` on 0–1 of the metrics its judge measures (:data:`JUDGES`), None when it
    failed (then ``failure_kind`` and ``error`` say why); ``scored_by``: how the scores were read."""

    scores: Mapping[str, float] | None
    scored_by: str | None = None
    failure_kind: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None


# A judge on a chunk of log rows: (rows, progress label) -> a judgment per row, in order
JudgeRows = Callable[[Sequence[LogRow], str], list[Judgment]]


def overall_score(scores: Mapping[str, float], judge: str) -> float:
    """An item's overall score: the mean of the metrics its ``judge`` measures (:data:`JUDGES`), Σ_m s_m / |M_judge|
    — the five for ``monitor``, groundedness and answer relevance for a triad. A metric the judge does not measure
    is missing, not a 0 (nor a 1) in the mean."""
    measured = [scores[m] for m in JUDGES[judge]]
    return sum(measured) / len(measured)


def monitor_judgment(result: LLMResult) -> Judgment:
    """The monitor call's result as a judgment (:func:`read_scores`)."""
    if not result.ok:
        return Judgment(None, None, result.failure_kind, result.error)
    scores, scored_by = read_scores(result.value, result.logprobs)
    return Judgment(scores, scored_by)


def triad_inputs(rows: Sequence[LogRow]) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Log rows in :mod:`lib.triads`' shape: the answers (qid = the row id as text, query, variant ``clean``, answer,
    no injected sentence) and the context of each qid (the row's retrieved documents, as a topic's notes)."""
    answers = pd.DataFrame([{"qid": str(r.id), "query": r.query, "variant": "clean", "answer": r.answer,
                             "injected": []} for r in rows], columns=["qid", "query", "variant", "answer", "injected"])
    return answers, {str(r.id): list(r.contexts) for r in rows}


def triad_judgments(gateway: Gateway, judge: str, rows: Sequence[LogRow], embed: Embed | None = None
                    ) -> list[Judgment]:
    """Each row's groundedness and answer relevance by the RAG triad ``judge`` (``traditional-triad``:
    :func:`lib.triads.traditional`; ``nuggetized-triad``: :func:`lib.triads.nugget_labels` and
    :func:`lib.triads.nuggetized`, nuggets created from the answer with ``embed``, default MiniLM). A row whose
    triad gives no score for one of the two (a failed call; no nugget with every label) is a failure."""
    answers, context = triad_inputs(rows)
    if judge == "traditional-triad":
        scores = triads.traditional(gateway, answers, context)
    elif judge == "nuggetized-triad":
        scores = triads.nuggetized(triads.nugget_labels(gateway, answers, context, embed or embeddings.embed))
    else:
        raise ValueError(f"not a triad judge: {judge!r}")
    scores = scores.reindex(columns=["qid", "variant", "component", "score", "scored_by", "failure_kind"])
    scores = scores[scores.variant == "clean"]
    judged = []
    for row in rows:
        own = scores[scores.qid == str(row.id)]
        values = {TRIAD_METRICS[c]: float(s) for c, s in zip(own.component, own.score, strict=True) if pd.notna(s)}
        missing = [m for m in JUDGES[judge] if m not in values]
        if not missing:
            judged.append(Judgment(values, own.scored_by.iloc[0]))
            continue
        kinds = [k for k in own.failure_kind if isinstance(k, str)]
        judged.append(Judgment(None, None, kinds[0] if kinds else "no_labelled_nugget",
                               f"the {judge} gave no {' and no '.join(missing)}"))
    return judged


def judge_rows_of(gateway: Gateway, judge: str, day: str, embed: Embed | None = None) -> JudgeRows:
    """The nightly run's ``judge`` on chunks of ``day``'s rows. ``monitor``: one :func:`judge_call` per row, labelled
    ``monitor:<day>:<row id>``."""
    if judge == DEFAULT_JUDGE:
        return lambda rows, desc: [monitor_judgment(r) for r in gateway.complete_many(
            [judge_call(row, f"monitor:{day}:{row.id}") for row in rows], desc=desc)]
    if judge not in JUDGES:
        raise ValueError(f"unknown judge {judge!r}: one of {', '.join(JUDGES)}")
    return lambda rows, desc: triad_judgments(gateway, judge, rows, embed)


def _store(connection: sqlite3.Connection, query_id: int, day: str, judgment: Judgment, model: str | None,
           judge: str) -> None:
    scores = judgment.scores
    values = [scores.get(m) if scores else None for m in METRICS]  # a metric the judge does not measure: NULL
    overall = overall_score(scores, judge) if scores else None
    columns = ["query_id", "day", "ok", *METRICS, "overall", "scored_by", "failure_kind", "error", "judge_model",
               "evaluated_at", "judge"]
    connection.execute(
        f"INSERT OR REPLACE INTO judgments ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        (query_id, day, int(judgment.ok), *values, overall, judgment.scored_by, judgment.failure_kind, judgment.error,
         model, _now(), judge))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class DaySample:
    """A day's sample as its first run fixed it: rate, seed, the number of rows logged on the day then, the sampled
    row ids, and when (UTC)."""

    rate: float
    seed: int
    logged: int
    ids: list[int]
    fixed_at: str


def fixed_sample(connection: sqlite3.Connection, day: str, ids: Sequence[int], rate: float, seed: int
                 ) -> tuple[DaySample | None, bool]:
    """The sample of ``day`` and whether an earlier run fixed it; else ⌈rate·n⌉ of the day's ``ids``
    (:func:`sample_ids`), stored now as the day's sample. None while the day has no row: a run before the log
    is filled fixes nothing. Call it inside a write transaction, so that two runs cannot fix two samples."""
    stored = connection.execute("SELECT rate, seed, logged, ids, fixed_at FROM samples WHERE day = ?",
                                (day,)).fetchone()
    if stored is not None:
        rate, seed, logged, sampled, fixed_at = stored
        return DaySample(rate, seed, logged, json.loads(sampled), fixed_at), True
    if not ids:
        return None, False
    sample = DaySample(rate, seed, len(ids), sample_ids(ids, rate, seed, day), _now())
    connection.execute("INSERT INTO samples (day, rate, seed, logged, ids, fixed_at) VALUES (?, ?, ?, ?, ?, ?)",
                       (day, sample.rate, sample.seed, sample.logged, json.dumps(sample.ids), sample.fixed_at))
    return sample, False


@dataclass
class DayRun:
    """What ``run`` did for one day: rows logged now, the day's sample (None while no row is logged) and whether
    an earlier run fixed it, newly judged, skipped (already judged), failed, and the malformed rows' messages
    (the day's sampled rows that cannot be judged, then the log's :func:`undated_rows`)."""

    day: str
    logged: int
    sample: DaySample | None
    fixed_earlier: bool
    judged: int
    skipped: int
    failed: int
    malformed: list[str]

    @property
    def sampled(self) -> int:
        return len(self.sample.ids) if self.sample else 0


def claim_day(connection: sqlite3.Connection, day: str, lapse_s: float = CLAIM_LAPSE_S) -> str:
    """Claim ``day`` for this run: the claim's token, with which :func:`run_day` renews it and releases it.
    :class:`DayClaimed` while another run's claim is live (renewed less than ``lapse_s`` seconds ago); an older
    claim, left by a run that was killed, is taken over."""
    token = uuid.uuid4().hex
    with _write(connection):  # the check and the claim in one transaction: two runs cannot both find the day free
        held = connection.execute("SELECT holder, claimed_at, renewed_at FROM claims WHERE day = ?", (day,)).fetchone()
        if held is not None:
            holder, claimed_at, renewed_at = held
            if datetime.now(UTC) - datetime.fromisoformat(renewed_at) < timedelta(seconds=lapse_s):
                raise DayClaimed(f"{day} is being judged by another run ({holder}, claimed {claimed_at}, last renewed "
                                 f"{renewed_at}); its claim lapses {lapse_s / 60:g} min after its last renewal")
        now = _now()
        connection.execute("INSERT OR REPLACE INTO claims (day, token, holder, claimed_at, renewed_at) "
                           "VALUES (?, ?, ?, ?, ?)", (day, token, f"pid {os.getpid()} on {socket.gethostname()}",
                                                      now, now))
    return token


def _renew_claim(connection: sqlite3.Connection, day: str, token: str) -> None:
    """Renew this run's claim on ``day`` (inside a write transaction); :class:`DayClaimed` if it was taken over."""
    if not connection.execute("UPDATE claims SET renewed_at = ? WHERE day = ? AND token = ?",
                              (_now(), day, token)).rowcount:
        raise DayClaimed(f"this run's claim on {day} lapsed and another run took the day over; this run stops "
                         "(what it stored before is kept)")


def release_day(connection: sqlite3.Connection, day: str, token: str) -> None:
    """Release this run's claim on ``day`` (a claim taken over by another run stays that run's)."""
    with _write(connection):
        connection.execute("DELETE FROM claims WHERE day = ? AND token = ?", (day, token))


def run_day(connection: sqlite3.Connection, gateway: Gateway, day: str, rate: float, seed: int,
            chunk_size: int = CHUNK_SIZE, claim_lapse_s: float = CLAIM_LAPSE_S, judge: str = DEFAULT_JUDGE,
            embed: Embed | None = None) -> DayRun:
    """Claim ``day`` (:func:`claim_day`) and have ``judge`` (:data:`JUDGES`; ``embed``: the nuggetized triad's
    sentence encoder, default MiniLM) judge the rows of its sample (:func:`fixed_sample`; ``rate`` and ``seed`` fix
    it on the day's first run) that have no successful judgment (module docstring), storing the results of every
    ``chunk_size`` rows as they come back; the claim is released at the end. :class:`DayClaimed` when another run
    holds the day, :class:`JudgeUnavailable` when the judge stops the run, :class:`sqlite3.Error` on a database
    error."""
    judge_chunk = judge_rows_of(gateway, judge, day, embed)
    token = claim_day(connection, day, claim_lapse_s)
    try:
        return _judge_claimed_day(connection, gateway, judge, judge_chunk, day, rate, seed, chunk_size, token)
    finally:
        release_day(connection, day, token)


def _judge_claimed_day(connection: sqlite3.Connection, gateway: Gateway, judge: str, judge_chunk: JudgeRows,
                       day: str, rate: float, seed: int, chunk_size: int, token: str) -> DayRun:
    with _write(connection):
        add_optional_columns(connection)  # a database made before the judge column (it opens without it)
        # the day's rows by a range of the index on ts, not a function of every row's ts
        raw = connection.execute("SELECT id, ts, system, query, contexts, answer FROM queries "
                                 f"WHERE ts BETWEEN ? AND ? AND {CANONICAL_TS} ORDER BY id",
                                 (f"{day}T00:00:00", f"{day}T23:59:59")).fetchall()
        by_id = {r[0]: r for r in raw}
        sample, fixed_earlier = fixed_sample(connection, day, list(by_id), rate, seed)
        chosen = sample.ids if sample else []
        done = {r[0] for r in connection.execute("SELECT query_id FROM judgments WHERE ok = 1 AND query_id IN "
                                                 "(SELECT value FROM json_each(?))", (json.dumps(chosen),))}
        todo, malformed = [], []
        for query_id in chosen:
            if query_id in done:
                continue
            if query_id not in by_id:  # deleted, or its timestamp changed, since the sample was fixed
                malformed.append(f"row {query_id}: in the day's fixed sample but no longer logged on {day}")
                continue
            try:
                todo.append(parse_row(by_id[query_id]))
            except MalformedRow as bad:
                malformed.append(str(bad))
                _store(connection, query_id, day, Judgment(None, None, "malformed_row", str(bad)), None, judge)
        undated = undated_rows(connection)
    chunks = [todo[start:start + chunk_size] for start in range(0, len(todo), chunk_size)]
    stored = failed = 0
    judge_model, judged_now = gateway.endpoint.identity, False
    for number, chunk in enumerate(chunks, start=1):
        try:
            results = _judge_chunk(
                judge_chunk, chunk, f"monitor {day}" if len(chunks) == 1 else f"monitor {day} ({number}/{len(chunks)})")
            refusals = [r for r in results if isinstance(r, RequestRefused)]
            # every request refused by a judge model that has judged nothing: its name, not the rows (module docstring)
            if len(refusals) == len(results) and not judged_now and not _has_judged(connection, judge_model):
                raise RequestRefused(refusals[-1].status, f"{refusals[-1]}; every request of the {len(chunk)} rows "
                                     f"was refused and the judge model {judge_model} has judged no row yet: check "
                                     "JUDGE_MODEL")
        # The gateway's run-stopping errors (a replay miss, an unreachable or hung endpoint, a 4xx answer) are
        # RuntimeErrors; a damaged cache entry in replay mode is a CorruptEntry. The next call would fail too.
        except (RuntimeError, CorruptEntry) as exc:
            raise JudgeUnavailable(f"{exc} ({stored} of the {len(todo)} judgments of {day} due were stored "
                                   "before; a rerun judges the rest)") from exc
        judged_now = judged_now or any(isinstance(r, Judgment) and r.ok for r in results)
        with _write(connection):
            _renew_claim(connection, day, token)
            for row, result in zip(chunk, results, strict=True):
                judgment = (Judgment(None, None, "refused", str(result)) if isinstance(result, RequestRefused)
                            else result)
                failed += not judgment.ok
                _store(connection, row.id, day, judgment, judge_model, judge)
        stored += len(chunk)
    return DayRun(day, len(raw), sample, fixed_earlier, len(todo) - failed, len(chosen) - len(todo) - len(malformed),
                  failed, malformed + undated)


def _judge_chunk(judge_chunk: JudgeRows, rows: Sequence[LogRow], desc: str) -> list[Judgment | RequestRefused]:
    """Each row's judgment, or its refusal when the judge refused a request of it for what it holds
    (:data:`ROW_REFUSALS`): that row's failure, so that one prompt past the context does not stop the night. Which
    request was refused the gateway does not say, so the chunk is then judged row by row (what was answered comes
    from the cache)."""
    try:
        return list(judge_chunk(rows, desc))
    except RequestRefused as refused:
        if refused.status not in ROW_REFUSALS:
            raise
    results: list[Judgment | RequestRefused] = []
    for row in rows:
        try:
            results.extend(judge_chunk([row], f"{desc}, one by one"))
        except RequestRefused as refused:
            if refused.status not in ROW_REFUSALS:
                raise
            results.append(refused)
    return results


def _has_judged(connection: sqlite3.Connection, model: str) -> bool:
    """Whether the judge model ``model`` has judged a row of the database."""
    return connection.execute("SELECT EXISTS (SELECT 1 FROM judgments WHERE ok = 1 AND judge_model = ?)",
                              (model,)).fetchone()[0] == 1


def judgments(connection: sqlite3.Connection) -> pd.DataFrame:
    """Every stored judgment with its log row's system and query (one row per judged query). The log's text is read
    as bytes and decoded here, so that a malformed row's bytes that are not UTF-8 show as U+FFFD where pandas would
    refuse the whole table. A database without the ``judge`` column (:data:`OPTIONAL_JUDGMENT_COLUMNS`) reads as
    judged by the monitor call, the only judge before it."""
    frame = pd.read_sql_query("SELECT j.*, CAST(q.system AS BLOB) AS system, CAST(q.query AS BLOB) AS query "
                              "FROM judgments j JOIN queries q ON q.id = j.query_id ORDER BY j.day, j.query_id",
                              connection)
    if "judge" not in frame:
        frame["judge"] = DEFAULT_JUDGE
    for column in ("system", "query"):
        frame[column] = frame[column].map(lambda value: value.decode("utf-8", "replace")
                                          if isinstance(value, bytes) else value)
    return frame


def daily_summary(connection: sqlite3.Connection) -> pd.DataFrame:
    """Per judged day and judge (one row a day when one judge judged it): judged (ok) and failed counts, the mean
    of each metric over the successful judgments (missing for a metric the judge does not measure), and
    ``overall`` = the mean over the day's items of their overall score (:func:`overall_score`: the mean of the
    metrics their judge measures)."""
    frame = judgments(connection)
    if frame.empty:
        return pd.DataFrame(columns=["day", "judge", "judged", "failed", *METRICS, "overall"])
    ok = frame[frame.ok == 1]
    out = frame.groupby(["day", "judge"]).agg(judged=("ok", "sum"), failed=("ok", lambda s: int((s == 0).sum())))
    out = out.join(ok.groupby(["day", "judge"])[[*METRICS, "overall"]].mean())
    return out.reset_index()


def judges_in(frame: pd.DataFrame) -> list[str]:
    """The judges of a :func:`judgments` or :func:`daily_summary` frame, in :data:`JUDGES`' order."""
    present = set(frame.judge.dropna())
    return [judge for judge in JUDGES if judge in present]


def calendar(summary: pd.DataFrame, end: str, days: int) -> pd.DataFrame:
    """The ``days`` calendar days ending at ``end``, from the first judged day on, with their :func:`daily_summary`
    rows (one per judge); a day without judgments (a missed night) keeps a row, with no counts, so that a report
    shows the gap."""
    dates = [(Date.fromisoformat(end) - timedelta(days=k)).isoformat() for k in range(days - 1, -1, -1)]
    dates = [d for d in dates if d >= summary.day.min()]
    return pd.DataFrame({"day": dates}).merge(summary, on="day", how="left")


@dataclass(frozen=True)
class ControlLimit:
    """The relative alert rule's baseline for one day: the successfully judged items of the judged days among the
    ``baseline_days`` calendar days before it (their overall scores' mean and SD), and the limit for a day of
    ``items`` items, mean − ``limit_sds``·SD/√items (a Shewhart chart on the day's mean; :func:`control_limit`)."""

    days: list[str]
    baseline_items: int
    mean: float
    sd: float
    items: int
    limit_sds: float
    judge: str | None = None  # whose judgments the baseline holds (None: every judgment given)

    @property
    def limit(self) -> float:
        return self.mean - self.limit_sds * self.sd / math.sqrt(self.items)

    def text(self) -> str:
        return (f"control limit {self.limit:.3f}: baseline {self.mean:.3f} (SD {self.sd:.3f} over "
                f"{self.baseline_items} items of {len(self.days)} judged days, {self.days[0]}..{self.days[-1]}) "
                f"- {self.limit_sds:g} x SD / sqrt({self.items} items)"
                + (f" (judge {self.judge})" if self.judge else ""))


MIN_BASELINE_ITEMS = 3  # fewer give no SD worth a limit


def baseline(per_item: pd.DataFrame, day: str, baseline_days: int = BASELINE_DAYS, judge: str | None = None
             ) -> pd.DataFrame:
    """The items ``day`` is compared with: the successfully judged items (:func:`judgments`) of the ``baseline_days``
    calendar days before it, never of ``day`` itself (a broken day would widen its own limit); with ``judge``, only
    that judge's (another judge's overall is on another scale)."""
    first = (Date.fromisoformat(day) - timedelta(days=baseline_days)).isoformat()
    chosen = (per_item.ok == 1) & (per_item.day >= first) & (per_item.day < day)
    return per_item[chosen & (per_item.judge == judge)] if judge is not None else per_item[chosen]


def control_limit(per_item: pd.DataFrame, day: str, items: int, baseline_days: int = BASELINE_DAYS,
                  limit_sds: float = LIMIT_SDS, judge: str | None = None) -> ControlLimit | None:
    """The control limit of ``day`` (:class:`ControlLimit`) from :func:`judgments` and its :func:`baseline` (of
    ``judge``'s judgments; None: of all given), or None while the baseline has fewer than :data:`MIN_BASELINE_ITEMS`
    judged items. A day that alerted stays in later baselines: the rule has no memory of alerts, so a long outage
    widens the limit (read the trend)."""
    baseline_items = baseline(per_item, day, baseline_days, judge)
    if len(baseline_items) < MIN_BASELINE_ITEMS or items < 1:
        return None
    return ControlLimit(sorted(baseline_items.day.unique()), len(baseline_items), float(baseline_items.overall.mean()),
                        float(baseline_items.overall.std(ddof=1)), items, limit_sds, judge)


def alert_power_text(per_item: pd.DataFrame, samples: pd.DataFrame, drop: float, day: str,
                     baseline_days: int = BASELINE_DAYS, limit_sds: float = LIMIT_SDS, judge: str | None = None
                     ) -> str:
    """What the relative rule can catch on ``day``: at the sample rate and size that were run (the sample of ``day``,
    else of the last day sampled before it: :func:`samples_table`), with the per-item SD of ``day``'s
    :func:`baseline` (the days before it, not ``day``, which may be the broken day; of ``judge``'s judgments when
    given), the probability that a drop of ``drop`` in the day's mean overall falls below the limit
    (:func:`lib.analysis.power.control_limit_power`), beside the items a day needed for power 0.8
    (:func:`lib.analysis.power.items_for_control_limit`)."""
    items_before = baseline(per_item, day, baseline_days, judge)
    scores = items_before.overall
    run = samples[samples.day <= day]
    if len(scores) < MIN_BASELINE_ITEMS or run.empty:
        return (f"alert power on {day}: not yet computable ({len(scores)} judged items in the {baseline_days} days "
                f"before it, {len(run)} sampled days)")
    sample = run.iloc[-1]
    items = int(sample.sampled)
    sd = float(scores.std(ddof=1))
    over = f"{len(scores)} judged items of {items_before.day.min()}..{items_before.day.max()}"
    if sd == 0:
        return f"alert power on {day}: the {over} all have the overall score {scores.iloc[0]:.3f}: no SD to plan with"
    caught = power.control_limit_power(drop, sd, items, limit_sds)
    needed = power.items_for_control_limit(drop, sd, limit_sds, 0.8)
    return (f"alert power at sample rate {sample.rate:g}: {count_text(items, 'item')} a day ({sample.day}: "
            f"{sample.logged:g} queries logged); per-item SD {sd:.3f} over {over}; a drop of {drop:g} in the day's "
            f"mean overall goes below the {limit_sds:g}-SD control limit with probability {caught:.2f} (the baseline "
            f"taken as known); power 0.8 needs {count_text(needed, 'item')} a day")


def samples_table(connection: sqlite3.Connection) -> pd.DataFrame:
    """The days' fixed samples (day, rate, seed, rows logged when fixed, rows sampled)."""
    return pd.read_sql_query("SELECT day, rate, seed, logged, json_array_length(ids) AS sampled FROM samples "
                             "ORDER BY day", connection)


def release_comparison(per_query: pd.DataFrame, broken_day: str, fixed_day: str) -> tuple[pd.DataFrame, pd.Series]:
    """The same queries judged on ``broken_day`` (served by a broken release) and on ``fixed_day`` (served again
    after the fix), from :func:`judgments`: a table of each metric per query and release (only queries judged on
    both days; a metric the judge does not measure stays missing), and the mean over those queries of fixed − broken
    per metric. A judge that sees the fault gives a clearly positive difference."""
    days = per_query[per_query["day"].isin([broken_day, fixed_day]) & (per_query["ok"] == 1)]
    days = days.assign(release=days["day"].map({broken_day: "broken", fixed_day: "fixed"}))
    measured = [m for m in METRICS if days[m].notna().any()] or list(METRICS)
    table = days.pivot_table(index="query", columns="release", values=measured).dropna()
    # every metric kept, in pivot_table's (sorted) order, so that a judge's table has the columns of another's
    table = table.reindex(columns=pd.MultiIndex.from_product([sorted(METRICS), ["broken", "fixed"]],
                                                             names=table.columns.names))
    difference = table.xs("fixed", axis=1, level="release") - table.xs("broken", axis=1, level="release")
    return table, difference.mean()[list(METRICS)]


def low_items(connection: sqlite3.Connection, day: str, groundedness_below: float, relevance_below: float
              ) -> pd.DataFrame:
    """The day's successfully judged items with groundedness or answer relevance below the alert thresholds."""
    frame = judgments(connection)
    frame = frame[(frame.day == day) & (frame.ok == 1)]
    return frame[(frame.groundedness < groundedness_below) | (frame.answer_relevance < relevance_below)][
        ["query_id", "system", "groundedness", "answer_relevance", "query"]]


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None or pd.isna(value) else f"{value:.2f}"


def trend_text(summary: pd.DataFrame, targets: Mapping[str, float]) -> str:
    """The trend table as text, a row per day and judge (named last); a metric mean that does not exceed its target
    (the header's "> target") carries a ``!``, one its judge does not measure reads ``n/a`` unmarked; a day without
    judgments (:func:`calendar`) reads "not judged"."""
    header = (f"{'day':<10}  {'judged':>6}  {'failed':>6}  " + "  ".join(f"{m:>17}" for m in METRICS)
              + f"  {'overall':>7}  judge")
    lines = [header, "targets" + " " * 21 + "  ".join(f"{'> ' + format(targets[m], '.2f'):>17}" for m in METRICS)]
    for r in summary.itertuples():
        if pd.isna(r.judged):
            lines.append(f"{r.day:<10}  not judged")
            continue
        cells = "  ".join(f"{_fmt(getattr(r, m)) + ('!' if getattr(r, m) <= targets[m] else ' '):>17}" for m in METRICS)
        lines.append(f"{r.day:<10}  {int(r.judged):>6}  {int(r.failed):>6}  {cells}  {_fmt(r.overall):>7}  {r.judge}")
    return "\n".join(lines)


def _target(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    if name not in METRICS:
        raise argparse.ArgumentTypeError(f"expects metric=value with metric in {', '.join(METRICS)}; got {text!r}")
    return name, _share(value)


def _number(text: str, what: str = "a number") -> float:
    """``text`` as a float, or the usage error naming it."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def _share(text: str) -> float:
    """A threshold on the 0–1 scores."""
    value = _number(text)
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def _positive_share(text: str) -> float:
    value = _share(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


def _positive_number(text: str) -> float:
    value = _number(text)
    if not 0 < value < math.inf:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _rate(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text!r}")
    return value


def _seconds(text: str) -> float:
    value = _number(text, "a number of seconds")
    if not 0 <= value < math.inf:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _day(text: str) -> str:
    try:
        return Date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


class _Parser(argparse.ArgumentParser):
    """A usage error is one line on stderr (argparse's default puts the usage text before it) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="study-monitor", description="Nightly LLM-judge monitoring of a RAG query log.",
                epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_db = data_home() / "monitor.sqlite"
    p.add_argument("--db", type=Path, default=default_db,
                   help=f"SQLite log and judgments (default {default_db}); the judge's cache is kept beside it")
    p.add_argument("--busy-timeout", type=_seconds, default=BUSY_TIMEOUT_S, metavar="SECONDS",
                   help=f"wait this long for a database locked by another writer (default {BUSY_TIMEOUT_S:g})")
    p.add_argument("--target", action="append", type=_target, default=[], metavar="METRIC=VALUE",
                   help="per-metric target marked in reports (default "
                        + ", ".join(f"{k}={v}" for k, v in DEFAULT_TARGETS.items()) + ")")
    sub = p.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="create the database with its tables (or add those an existing one lacks)")
    add = sub.add_parser("add", help="add the queries of a CSV or JSONL log file to the database",
                         description="Columns (CSV header) or keys (JSONL): ts (ISO 8601 local time), system, query, "
                                     "contexts (a JSON list of strings), answer; id optional. A file with a row that "
                                     "cannot be added is refused whole (exit 3), naming each such row by line.")
    log_file = add.add_mutually_exclusive_group(required=True)
    log_file.add_argument("--csv", type=Path, metavar="FILE", help="a CSV file with a header line")
    log_file.add_argument("--jsonl", type=Path, metavar="FILE", help="one JSON object a line")
    run = sub.add_parser("run", help="sample and judge one day's queries, store, print the day's report",
                         epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--date", type=_day, required=True, help="the day to judge (YYYY-MM-DD)")
    run.add_argument("--sample-rate", type=_rate, default=DEFAULT_SAMPLE_RATE,
                     help=f"share of the day's queries judged, in (0, 1] (default {DEFAULT_SAMPLE_RATE})")
    run.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    run.add_argument("--judge", choices=list(JUDGES), default=DEFAULT_JUDGE,
                     help=f"who scores each sampled row (default {DEFAULT_JUDGE}: one call, five metrics); a RAG triad "
                          "of lib.triads measures groundedness and answer relevance only, the other metrics are "
                          "stored as missing; an item's overall is the mean of the metrics its judge measures")
    run.add_argument("--alert-overall", type=_share, default=ALERT_OVERALL,
                     help=f"alert when the day's overall mean is below ({ALERT_OVERALL})")
    run.add_argument("--alert-groundedness", type=_share, default=0.7, help="list items with groundedness below (0.7)")
    run.add_argument("--alert-answer-relevance", type=_share, default=0.6,
                     help="list items with answer relevance below (0.6)")
    report = sub.add_parser("report", help="print the trend table of the last days and the alert rule's power")
    report.add_argument("--days", type=_positive, default=7, help="days shown, ending at --end (default 7)")
    report.add_argument("--end", type=_day, default=None, help="last day shown (default: the last judged day)")
    size = sub.add_parser("sample-size", help="print the items a day the control limit needs to catch a drop")
    size.add_argument("--power", type=_share, default=0.8, help="chance of catching the drop (default 0.8)")
    size.add_argument("--sd", type=_positive_share, default=None,
                      help="per-item SD of the overall score (default: from the judged items of --db)")
    for command in (report, size):
        command.add_argument("--drop", type=_positive_share, default=DEFAULT_DROP,
                             help=f"fall of the day's mean overall score to catch (default {DEFAULT_DROP})")
    for command in (run, report, size):
        command.add_argument("--limit-sds", type=_positive_number, default=LIMIT_SDS,
                             help=f"control limit: standard errors below the baseline mean (default {LIMIT_SDS:g})")
    for command in (run, report, size):
        command.add_argument("--baseline-days", type=_positive, default=BASELINE_DAYS,
                             help="calendar days before the day under test (run: --date; report: --end; "
                                  "sample-size: the last judged day) whose judged items form the baseline "
                                  f"(default {BASELINE_DAYS})")
    for command in (init, add, run, report, size):  # `study-monitor init --db PATH` as well as `--db PATH init`
        command.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="the database (as --db before it)")
    return p


def _fail(status: int, message: str) -> int:
    """Print ``message`` as one line on stderr and return ``status``."""
    print("study-monitor: " + " ".join(message.split()), file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None, gateway: Gateway | None = None, embed: Embed | None = None) -> int:
    """Entry point of ``study-monitor``; returns the exit status (:data:`EXIT_HELP`), except for a usage error,
    which argparse raises as ``SystemExit(2)`` before any work. ``gateway``: the judge to use (default:
    ``Gateway.from_env(notebook="monitor", role="judge")``); ``embed``: the nuggetized triad's sentence encoder
    (default MiniLM, :func:`lib.embeddings.embed`)."""
    args = parser().parse_args(argv)
    if args.command == "sample-size" and args.sd is not None:
        print(sample_size_text(args.drop, args.sd, args.limit_sds, args.power, None))
        return EXIT_OK
    if args.command == "add":  # the file is read before the database is touched
        log_file = args.csv or args.jsonl
        try:
            rows, names = read_log(log_file, "csv" if args.csv else "jsonl")
        except OSError as exc:
            return _fail(EXIT_USAGE, f"{log_file}: cannot read it ({exc.strerror or exc})")
        except MalformedRow as exc:
            return _fail(EXIT_MALFORMED, f"{log_file}: {exc}; nothing was added")
    try:
        if args.command == "init":
            init_database(args.db, args.busy_timeout)
        with closing(connect(args.db, args.busy_timeout)) as connection:
            if args.command == "add":
                return _add(connection, log_file, rows, names, args.db)
            if args.command == "init":
                logged = connection.execute("SELECT count(*) FROM queries").fetchone()[0]
                print(f"{args.db}: ready, {logged} queries logged")
                return EXIT_OK
            if args.command == "report":
                return _report(connection, args)
            if args.command == "sample-size":
                return _sample_size(connection, args)
            return _run(connection, args, gateway, embed)
    except (sqlite3.Error, MissingDatabase, DayClaimed) as exc:
        return _fail(EXIT_DATABASE, f"database {args.db}: {exc}")
    except JudgeUnavailable as exc:
        return _fail(EXIT_JUDGE, f"judge: {exc}")


def _add(connection: sqlite3.Connection, log_file: Path, rows: list[dict[str, Any]], names: list[str], db: Path) -> int:
    try:
        add_queries(connection, rows, names)
    except MalformedRow as exc:
        return _fail(EXIT_MALFORMED, f"{log_file}: {exc}")
    logged = connection.execute("SELECT count(*) FROM queries").fetchone()[0]
    print(f"{log_file}: {count_text(len(rows), 'query')} added to {db} ({logged} logged)")
    return EXIT_OK


def _report(connection: sqlite3.Connection, args: argparse.Namespace) -> int:
    summary = daily_summary(connection)
    if summary.empty:
        print("no judged days yet")
        return EXIT_OK
    end = args.end or summary.day.max()
    shown = calendar(summary, end, args.days)
    print(trend_text(shown, {**DEFAULT_TARGETS, **dict(args.target)}))
    missed = shown.day[shown.judged.isna()].tolist()
    if missed:
        print(f"not judged: {', '.join(missed)} (a missed run leaves a gap; `run --date` judges it later)")
    per_item = judgments(connection)
    for judge in judges_in(shown.dropna(subset=["judge"])) or judges_in(per_item):
        print(alert_power_text(per_item, samples_table(connection), args.drop, end, args.baseline_days,
                               args.limit_sds, judge) + f" (judge {judge})")
    return EXIT_OK


def sample_size_text(drop: float, sd: float, limit_sds: float, target_power: float, samples: pd.DataFrame | None,
                     sd_from: str = "given") -> str:
    """The items a day the control limit needs (:func:`lib.analysis.power.items_for_control_limit`) and, with the
    days' samples, the sample rate that is on the median day's volume."""
    items = power.items_for_control_limit(drop, sd, limit_sds, target_power)
    text = (f"to catch a drop of {drop:g} in the day's mean overall with probability {target_power:g} at the "
            f"{limit_sds:g}-SD control limit (per-item SD {sd:.3f}, {sd_from}): "
            f"{count_text(items, 'judged item')} a day")
    if samples is not None and not samples.empty:
        logged = float(samples.logged.median())
        text += (f"; on the median day's {logged:g} logged queries that is sample rate {min(1.0, items / logged):.2f}"
                 + (" (every query, and still short)" if items > logged else ""))
    return text


def _sample_size(connection: sqlite3.Connection, args: argparse.Namespace) -> int:
    """Planned with the per-item SD that ``report`` states: of the baseline of the last judged day, per judge."""
    per_item = judgments(connection)
    items_before = baseline(per_item, per_item.day.max(), args.baseline_days) if len(per_item) else per_item
    plans = []
    for judge in judges_in(items_before):
        own = items_before[items_before.judge == judge]
        if len(own) >= MIN_BASELINE_ITEMS and own.overall.std(ddof=1) > 0:
            plans.append(sample_size_text(
                args.drop, float(own.overall.std(ddof=1)), args.limit_sds, args.power, samples_table(connection),
                f"from {len(own)} judged items of {own.day.min()}..{own.day.max()}, judge {judge}"))
    if not plans:
        return _fail(EXIT_USAGE, f"{len(items_before)} judged items before the last judged day give no per-item SD "
                                 "to plan with; pass --sd")
    print("\n".join(plans))
    return EXIT_OK


def _judge_gateway(gateway: Gateway | None, db: Path) -> AbstractContextManager[Gateway]:
    """The caller's gateway, left open for the caller; else one made from the environment with the cache of ``db``
    (:func:`judge_cache`), closed after the run."""
    if gateway is not None:
        return nullcontext(gateway)
    try:
        return Gateway.from_env(notebook="monitor", role="judge", cache_path=judge_cache(db))
    except ValueError as exc:  # an endpoint variable missing or not valid
        raise JudgeUnavailable(f"the judge endpoint is not configured: {exc}") from exc


def _run(connection: sqlite3.Connection, args: argparse.Namespace, gateway: Gateway | None, embed: Embed | None
         ) -> int:
    with _judge_gateway(gateway, args.db) as judge:
        done = run_day(connection, judge, args.date, args.sample_rate, args.seed, judge=args.judge, embed=embed)
    rate, seed = (done.sample.rate, done.sample.seed) if done.sample else (args.sample_rate, args.seed)
    print(f"{done.day}: {done.logged} queries logged, {done.sampled} sampled (rate {rate}, seed {seed}); "
          f"{done.judged} judged now, {done.skipped} already judged, {done.failed} judge failures, "
          f"{len(done.malformed)} malformed rows")
    if done.sample and done.fixed_earlier:
        ignored = ("" if (rate, seed) == (args.sample_rate, args.seed)
                   else f" (--sample-rate {args.sample_rate} --seed {args.seed} not used)")
        print(f"  sample fixed on the day's first run ({done.sample.fixed_at}): {done.sampled} of the "
              f"{done.sample.logged} rows logged then; {max(done.logged - done.sample.logged, 0)} rows logged since "
              f"are not sampled{ignored}")
    for message in done.malformed:
        print(f"  malformed: {message}")
    summary = daily_summary(connection)
    today = summary[summary.day == done.day]
    print(trend_text(today, {**DEFAULT_TARGETS, **dict(args.target)}))
    status = EXIT_MALFORMED if done.malformed else EXIT_OK
    per_item = judgments(connection)
    # each judge of the day against its own target and its own baseline (the run's judge, and another's whose
    # judgments of the day an earlier run stored)
    for r in today.itertuples() if len(today) else [None]:
        judged_today, judge = (int(r.judged), r.judge) if r else (0, args.judge)
        limit = control_limit(per_item, done.day, judged_today, args.baseline_days, args.limit_sds, judge)
        print(limit.text() if limit else f"no control limit yet: fewer than {MIN_BASELINE_ITEMS} judged items in the "
              f"{args.baseline_days} days before {done.day} (judge {judge})")
        if r is None or pd.isna(r.overall):
            continue
        if r.overall < args.alert_overall:
            print(f"ALERT {done.day}: overall mean {r.overall:.2f} is below the target {args.alert_overall} "
                  f"(judge {judge})")
            status = EXIT_ALERT
        if limit is not None and r.overall < limit.limit:
            print(f"ALERT {done.day}: overall mean {r.overall:.3f} is below the control limit {limit.limit:.3f} "
                  f"(judge {judge})")
            status = EXIT_ALERT
    overall = today.overall.mean() if len(today) else float("nan")
    if status != EXIT_ALERT and pd.isna(overall) and done.failed:
        status = _fail(EXIT_JUDGE, f"NOT CHECKED {done.day}: every judge call failed ({done.failed}), so the alert "
                                   "could not be checked; a rerun retries them")
    low = low_items(connection, done.day, args.alert_groundedness, args.alert_answer_relevance)
    for r in low.itertuples():
        print(f"  low: query {r.query_id} ({r.system}) groundedness {r.groundedness:.2f} "
              f"answer relevance {r.answer_relevance:.2f}: {r.query[:80]}")
    return status


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":  # `python -m lib.monitor ...` is `study-monitor ...`, exit status included
    cli()
