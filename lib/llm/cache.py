"""Persistent, process-safe cache of LLM responses: one SQLite file of compressed entries.

Shaped like HELM's request cache (which keeps its entries in SQLite too): :meth:`ResponseCache.get` takes the
request and a ``compute`` function and returns ``(entry, cached)``; replay mode is simply a ``compute`` that
raises. The key is the SHA-256 of the canonical JSON (sorted keys, no whitespace) of the request as sent — model
identity, messages, sampling parameters and response schema — computed once, when the request is made a
:class:`KeyedRequest` (HELM's ``request_to_key``), and used for everything about that request from then on.

Store: one table ``entries(key, label, data)``; ``data`` is the zlib-compressed canonical JSON of the entry with
its checksum, ``label`` the entry's call label (read by :func:`prune` without opening the entries). One file
rather than one file per request (the layout before, which :func:`pack` converts): a full-size run of 100k calls
commits one file, not 100k, at a third of the size (3.1 MB for the study's 1,454 entries against 9.3 MB).

Writes and durability: a cache file at rest is in SQLite's rollback-journal mode, in which a reader creates no
file and writes nothing: a replay leaves the committed cache byte for byte as it was (and a replay of a missing
file creates none). The first write of a connection switches the file to write-ahead-log mode (``-wal`` and
``-shm`` beside it while it is open), in which a commit appends to the log and flushes it (``synchronous=FULL``,
one ``fsync``: 3 ms on the study's machine, against 18 ms for a rollback journal's commit), and readers in
other processes go on reading.
:meth:`ResponseCache.get` returns a computed entry only after the transaction holding it has committed and been
flushed, so a call reported done survives a killed process (``kill -9``) and a power loss; a transaction cut
short by either is not in the log's committed part and is ignored. Entries computed by several threads at once
are written by one transaction (group commit: each thread waits for the commit that holds its entry), so
concurrent calls share the flush instead of queueing for one each. :meth:`ResponseCache.close` (also at exit)
returns the file to rollback-journal mode, which copies the log into it and removes ``-wal`` and ``-shm``: after
a run the file is complete on its own. A killed run leaves its ``-wal`` (git-ignored) holding committed entries;
the next process that opens the cache reads them and copies them in when it closes (any lookup does, e.g.
``python -m lib.llm.cache check``), so do that before committing the file.

:func:`pack` and :func:`prune` rewrite the file (rows inserted in key order into a new file:
:meth:`ResponseCache.compact`), so equal contents give an equal file; they replace it, so run them while no other
process uses the cache.

Why a per-key lock: two processes (or threads) asking for the same missing key would otherwise both compute it
and send the request twice. ``get`` holds an advisory ``flock`` on ``<file>.locks/<key>.lock`` while it looks up
and computes, so the second caller waits and then reads the first one's entry. The lock is released when its
holder ends, even by ``kill -9``, so a crash never leaves a key blocked. A replay looks up only
(:meth:`ResponseCache.lookup`): no lock, so a replay of a missing cache creates no file and no folder.

Every entry carries a checksum (SHA-256 of its canonical JSON without the checksum) and is verified on read,
with its key against its request: an entry edited in the database, not zlib data, not UTF-8 or not an entry at
all is a :class:`CorruptEntry` naming the file and the key. A cache made with ``repair=True`` (the gateway's live
mode) says so on stderr and treats it as a miss — the request is sent again and the entry replaced; otherwise
(replay) it is an error, since a replay must serve the record or nothing.

The file itself is checked when it is opened (at the first lookup, so before any request is sent): an intact SQLite
file (``PRAGMA quick_check``) holding no table or the cache's own. A file cut short, with a damaged page, not
SQLite, another program's database or a directory is a :class:`CacheFileError`, one line naming the file and the
remedy, in replay and live mode alike. Before a missing call is computed, :meth:`ResponseCache.check_writable`
checks that its answer can be stored (the file and its folder writable), since an answer that cannot be is lost.

The study's committed cache (``lib.paths.COMMITTED_LLM_CACHE``, ``outputs/llm-cache.sqlite``) is added to only by
a chapter run: :mod:`lib.tools.pipeline` runs a chapter's notebook and measurements inside :func:`chapter_run`,
which sets ``STUDY_CHAPTER_RUN`` for them and their kernel. A call missing from it anywhere else (a notebook opened
in JupyterLab, a script, the monitor) is refused before it is sent, with the line saying to set ``LLM_CACHE``: a
user's own queries and answers never land in the study's files. Replays read it from anywhere; the tools that
curate it (``prune``, ``pack``, ``python -m lib.tools.bench --keep``) write it directly (:meth:`ResponseCache.put_all`,
:meth:`ResponseCache.delete`), as asked.

Only what ``compute`` returns is stored; when ``compute`` raises (an endpoint fault, a malformed answer, replay
mode), nothing is written and the next run asks again.

Usage log: with ``LLM_CACHE_USAGE_LOG`` set, every key looked up is appended to that file (one line per lookup;
appends of a line are atomic), and the gateway adds ``<key> asked-again`` for each stored answer of a call
whose every attempt failed, which a live run would send again (:func:`lib.llm.gateway.asked_again_live`).
``make prune-cache`` replays every notebook with the log on, then ``python -m lib.llm.cache prune --used LOG``
deletes the entries no notebook asked for (e.g. requests of an earlier version of a chapter), so the committed
cache is exactly what the report replays. ``python -m lib.llm.cache check`` verifies every entry (its checksum, its
key against its request) and fails naming each damaged one, or when the file has none; with ``--used LOG`` it also
lists the entries a live run would ask again (a committed failure makes a live ``make all`` rewrite outputs) and
fails when there is one.
"""
from __future__ import annotations

import argparse
import atexit
import fcntl
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lib import paths

Entry = dict[str, Any]
CHAPTER_RUN = "STUDY_CHAPTER_RUN"  # set to the notebook's name while a chapter runs (:func:`chapter_run`)
ASKED_AGAIN = "asked-again"  # the usage log's mark of a stored answer that a live run would send again
BUSY_TIMEOUT_S = 60.0  # how long a write waits for another process's transaction to end
SCHEMA_SQL = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, label TEXT NOT NULL, data BLOB NOT NULL)"
# Entries are 0.5–8 kB compressed: with 16 kB pages most fit a page, and the file is 3.1 MB for the study's 1,454
# entries against 3.8 MB with 4 kB pages (a table WITHOUT ROWID, which moves rows over 1 kB to overflow pages,
# took 6.8 MB).
PAGE_SIZE = 16384


class CorruptEntry(ValueError):
    """A cache entry that fails its checks (see the module docstring); the message names its file and key."""


class CacheFileError(RuntimeError):
    """The cache file cannot serve as asked: damaged, not SQLite, not a cache, a directory, read-only when a call
    missing from it is to be stored, or the study's committed cache outside a chapter run. One line naming the
    file and the remedy, raised before any request is sent."""


@contextmanager
def chapter_run(name: str) -> Iterator[None]:
    """Within the block (and in the notebook kernels it starts, which inherit the environment), the calls made are
    those of chapter ``name``, which belong in the study's committed cache (:meth:`ResponseCache.check_writable`).
    Used by :mod:`lib.tools.pipeline` for a chapter's notebook and measurements."""
    before = os.environ.get(CHAPTER_RUN)
    os.environ[CHAPTER_RUN] = name
    try:
        yield
    finally:
        if before is None:
            del os.environ[CHAPTER_RUN]
        else:
            os.environ[CHAPTER_RUN] = before


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text of ``obj``: sorted keys, compact separators, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of a request."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class KeyedRequest:
    """A request as the cache stores it, with its key, computed once when the record is made (as HELM's
    ``request_to_key``): the lookup, the stored entry, the usage log and any message about the request all use this
    one key. The request is not to be changed afterwards."""

    request: dict[str, Any]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", request_key(self.request))


def checksum(entry: Entry) -> str:
    """SHA-256 hex digest of the canonical JSON of an entry without its ``checksum`` field."""
    return hashlib.sha256(canonical_json({k: v for k, v in entry.items() if k != "checksum"}).encode("utf-8")
                          ).hexdigest()


def verified(data: bytes, key: str, where: str) -> Entry:
    """The entry stored as the JSON text ``data`` under ``key`` (without its checksum), after its checks: JSON
    of an object with a response, a matching checksum, a request that hashes to ``key``. Else
    :class:`CorruptEntry` naming ``where`` and ``key``."""
    def corrupt(problem: str) -> CorruptEntry:
        return CorruptEntry(f"{where}: corrupt cache entry, key {key} ({problem}); run in live mode to recompute "
                            f"it")

    try:
        entry = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise corrupt(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise corrupt(f"not JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(entry, dict) or "response" not in entry:
        raise corrupt(f"not an entry: {type(entry).__name__} without a response")
    if entry.get("checksum") != checksum(entry):
        raise corrupt("checksum mismatch: edited after it was written" if "checksum" in entry else "no checksum")
    if "request" in entry and request_key(entry["request"]) != key:
        raise corrupt("its request does not hash to its key")
    return {k: v for k, v in entry.items() if k != "checksum"}  # the checksum belongs to the stored form


def _row(key: str, entry: Entry) -> tuple[str, str, bytes]:
    """The ``(key, label, data)`` row that stores ``entry``."""
    text = canonical_json({**entry, "checksum": checksum(entry)})
    return key, entry.get("label", ""), zlib.compress(text.encode("utf-8"), 9)


def _switch_to_wal(db: sqlite3.Connection, timeout_s: float = BUSY_TIMEOUT_S) -> None:
    """Put the file in WAL mode. Switching needs the file to itself, and when several processes open a new file and
    switch it at once SQLite answers "database is locked" at once instead of waiting on its busy timeout, so the
    switch is tried again until ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class ResponseCache:
    """The SQLite file ``path`` of entries, each ``{"request": …, "response": …, "latency_s": …, …}``.

    One connection per cache, shared by its threads (a lock serialises its use) and opened at the first
    lookup; the file and its table are created by the first write. :meth:`close` (or the end of a ``with`` block)
    closes the connection."""

    def __init__(self, path: Path, usage_log: Path | None = None, repair: bool = False) -> None:
        self.path = Path(path)
        self.repair = repair
        log = usage_log or os.environ.get("LLM_CACHE_USAGE_LOG")
        self.usage_log = Path(log) if log else None
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()
        # Group commit (see the module docstring): rows wait in _queue; a writer whose ticket is not yet
        # committed takes the commit lock and writes everything queued in one transaction.
        self._queue: list[tuple[str, str, bytes]] = []
        self._queue_lock = threading.Lock()
        self._commit_lock = threading.Lock()
        self._queued = self._committed = 0
        self._writing = False  # whether this connection has switched the file to WAL mode
        _open_caches.add(self)

    def _connection(self, create: bool) -> sqlite3.Connection | None:
        """The open connection; None when the file does not exist and ``create`` is false. An existing file is
        checked when it is opened (:meth:`_check_file`). Call with the ``_db_lock`` held."""
        if self._db is None:
            if self.path.is_dir():
                raise self._directory()
            new = not self.path.exists()
            if new and not create:
                return None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = _connect(self.path)
            try:
                if new:
                    db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect with the first table
                else:
                    self._check_file(db)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def _check_file(self, db: sqlite3.Connection) -> None:
        """:class:`CacheFileError` unless the opened file is an intact SQLite file (``PRAGMA quick_check``: every
        page and row readable; 6 ms for the study's 3 MB) holding no table or the cache's own: a damaged file is
        found before any request is sent, not part-way through a run, after requests whose answers it loses."""
        try:
            problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            columns = [row[1] for row in db.execute("PRAGMA table_info(entries)")]
        except sqlite3.DatabaseError as exc:
            raise self._damaged(str(exc)) from None
        if problems != ["ok"]:
            raise self._damaged(f"damaged: {problems[0]}")
        if tables and columns != ["key", "label", "data"]:
            raise self._damaged(f"another SQLite file, with the tables {', '.join(tables)}")

    def _damaged(self, problem: str) -> CacheFileError:
        study = self.path.resolve() == paths.COMMITTED_LLM_CACHE.resolve()
        how = (f"restore it with `git checkout -- {paths.shown(paths.COMMITTED_LLM_CACHE)}`" if study
               else "restore it from a copy, or move it away to start an empty one")
        return CacheFileError(f"{self.path}: not a usable LLM cache ({problem}): {how}, or set LLM_CACHE to "
                              f"another file")

    def _directory(self) -> CacheFileError:
        return CacheFileError(f"{self.path}: a directory, not an LLM cache file: set LLM_CACHE to a file, e.g. "
                              f"LLM_CACHE={self.path / 'llm-cache.sqlite'}")

    def _file_error(self, exc: sqlite3.DatabaseError) -> BaseException:
        """What a failed statement raises: :class:`CacheFileError` for a file that went read-only or damaged while
        open; the SQLite error itself for the rest (a lock held past the busy timeout)."""
        message = str(exc)
        if "readonly" in message:
            return self._read_only()
        if "locked" in message or "busy" in message:
            return exc
        return self._damaged(message)

    def _read_only(self) -> CacheFileError:
        return CacheFileError(f"{self.path}: read-only, and a call missing from it would be sent and its answer "
                              f"lost: make the file and its folder writable, or set LLM_CACHE to a writable copy")

    def check_writable(self) -> None:
        """:class:`CacheFileError` unless an entry can be written now, checked before a missing call is sent (an
        answer that cannot be stored is lost): not the study's committed cache outside a chapter run
        (:func:`chapter_run`), not a directory, the file (when it exists) and its folder writable."""
        if self.path.resolve() == paths.COMMITTED_LLM_CACHE.resolve() and not os.environ.get(CHAPTER_RUN):
            raise CacheFileError(
                f"{self.path}: the study's committed LLM cache, which only a chapter run (make NN) adds to: set "
                f"LLM_CACHE to a file of your own (e.g. LLM_CACHE=$HOME/.cache/llm-cache.sqlite) for these calls")
        if self.path.is_dir():
            raise self._directory()
        folder = self.path.parent
        while not folder.exists():  # made by the first write
            folder = folder.parent
        if (self.path.exists() and not os.access(self.path, os.W_OK)) or not os.access(folder, os.W_OK | os.X_OK):
            raise self._read_only()

    def _select(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of a query; none when the file or its table does not exist yet."""
        with self._db_lock:
            try:
                db = self._connection(create=False)
                if db is None:
                    return []
                return db.execute(sql, parameters).fetchall()
            except sqlite3.DatabaseError as exc:
                if "no such table" in str(exc):  # created by a writer whose first transaction is still open
                    return []
                raise self._file_error(exc) from None

    def read(self, key: str) -> Entry | None:
        """The stored entry, or None when absent; :class:`CorruptEntry` when it fails its checks."""
        rows = self._select("SELECT data FROM entries WHERE key = ?", (key,))
        return self._decoded(key, rows[0][0]) if rows else None

    def _decoded(self, key: str, data: bytes) -> Entry:
        try:
            text = zlib.decompress(data)
        except zlib.error as exc:
            raise CorruptEntry(f"{self.path}: corrupt cache entry, key {key} (not zlib data: {exc}); run in live "
                               f"mode to recompute it") from None
        return verified(text, key, str(self.path))

    def items(self) -> Iterator[tuple[str, Entry]]:
        """Every ``(key, entry)``, in key order, each checked as by :meth:`read`."""
        for key, data in self._select("SELECT key, data FROM entries ORDER BY key"):
            yield key, self._decoded(key, data)

    def verify(self) -> tuple[int, list[str]]:
        """(the number of entries, the :class:`CorruptEntry` message of each that fails its checks)."""
        rows = self._select("SELECT key, data FROM entries ORDER BY key")
        damaged = []
        for key, data in rows:
            try:
                self._decoded(key, data)
            except CorruptEntry as exc:
                damaged.append(str(exc))
        return len(rows), damaged

    def labels(self) -> dict[str, str]:
        """Every key with its entry's label (without reading the entries)."""
        return dict(self._select("SELECT key, label FROM entries ORDER BY key"))

    def lookup(self, request: KeyedRequest) -> Entry | None:
        """The stored entry of ``request`` (None when absent), logged in the usage log: a replay's lookup, which
        writes nothing, takes no lock and creates no file or folder."""
        self.log_usage([request.key])
        return self._checked(request.key)

    def get(self, request: KeyedRequest, compute: Callable[[], Entry], refresh: bool = False
            ) -> tuple[Entry, bool]:
        """``(entry, True)`` from the cache, or ``(compute(), False)`` after storing what ``compute`` returned
        with the request added; before computing, :meth:`check_writable`. One caller per key computes at a time
        (see the module docstring). ``refresh``: compute even when an entry exists, and replace it (a stored
        answer that ended its item in failure)."""
        key = request.key
        if refresh:
            self.log_usage([key])
        else:
            entry = self.lookup(request)
            if entry is not None:
                return entry, True
        self.check_writable()
        with self._locked(key):
            entry = None if refresh else self._checked(key)  # another process may have computed it while we waited
            if entry is not None:
                return entry, True
            entry = {"request": request.request, **compute()}
            self.put(key, entry)
            return entry, False

    def log_usage(self, keys: Iterable[str], mark: str | None = None) -> None:
        """Append ``keys`` (each with ``mark`` when given) to the usage log, when there is one."""
        if self.usage_log is not None:
            with open(self.usage_log, "a", encoding="utf-8") as log:
                log.write("".join(f"{key} {mark}\n" if mark else f"{key}\n" for key in keys))

    def _checked(self, key: str) -> Entry | None:
        """:meth:`read`, with a damaged entry taken as a miss (said on stderr) when the cache repairs."""
        try:
            return self.read(key)
        except CorruptEntry as exc:
            if not self.repair:
                raise
            print(f"damaged cache entry in {self.path} (key {key}): asking again — {exc}", file=sys.stderr)
            return None

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        """Exclusive advisory lock on ``<file>.locks/<key>.lock``; the file is removed by its holder on release.

        A waiter may end up holding a lock on a file its predecessor already unlinked, so after locking it
        checks that the path still names the inode it locked, and otherwise tries again."""
        lock_dir = self.path.with_name(self.path.name + ".locks")
        lock_dir.mkdir(parents=True, exist_ok=True)
        path = lock_dir / f"{key}.lock"
        while True:
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            os.close(fd)

    def put(self, key: str, entry: Entry) -> None:
        """Store ``entry`` under ``key`` (replacing one there); returns once the transaction holding it has
        committed. Entries put by several threads at once share one transaction (group commit)."""
        row = _row(key, entry)
        with self._queue_lock:
            self._queue.append(row)
            self._queued += 1
            ticket = self._queued
        with self._commit_lock:
            if self._committed >= ticket:  # an earlier committer took our row along
                return
            with self._queue_lock:
                rows, self._queue, last = self._queue, [], self._queued
            try:
                self._write(rows)
            except BaseException:
                with self._queue_lock:  # the other threads' rows go to the next committer; ours is reported failed
                    self._queue[:0] = [queued for queued in rows if queued is not row]
                raise
            self._committed = last

    def put_all(self, entries: Mapping[str, Entry]) -> None:
        """Store every entry of ``entries`` (key → entry) in one transaction, in key order (none: no file made)."""
        if entries:
            self._write([_row(key, entries[key]) for key in sorted(entries)])

    def _write(self, rows: list[tuple[str, str, bytes]]) -> None:
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO entries (key, label, data) VALUES (?, ?, ?)", rows)

    def delete(self, keys: Iterable[str]) -> None:
        """Remove the entries of ``keys`` in one transaction."""
        with self._transaction() as db:
            db.executemany("DELETE FROM entries WHERE key = ?", [(key,) for key in keys])

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction in WAL mode (the file is switched to it by its first writer), committed at the end
        of the block, rolled back on an error."""
        with self._db_lock:
            try:
                db = self._connection(create=True)
                assert db is not None
                if not self._writing:
                    _switch_to_wal(db)
                    self._writing = True
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.execute(SCHEMA_SQL)
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:  # a failed COMMIT may have rolled back already
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.DatabaseError as exc:
                raise self._file_error(exc) from None

    def compact(self) -> None:
        """Rewrite the file with its rows inserted in key order into a new file, which then replaces it, so that
        equal contents give an equal file whatever order the entries came in. Only while no other process uses
        the cache (one that has it open would go on writing the replaced file)."""
        tmp = self.path.with_name(self.path.name + ".compact")
        tmp.unlink(missing_ok=True)
        with self._db_lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            fresh = _connect(tmp)
            try:
                fresh.execute(f"PRAGMA page_size={PAGE_SIZE}")
                fresh.execute(SCHEMA_SQL)
                fresh.execute("ATTACH DATABASE ? AS old", (str(self.path),))
                fresh.execute("BEGIN IMMEDIATE")
                fresh.execute("INSERT INTO entries (key, label, data) SELECT key, label, data FROM old.entries "
                              "ORDER BY key")
                fresh.execute("COMMIT")
                fresh.execute("DETACH DATABASE old")
            finally:
                fresh.close()
            os.replace(tmp, self.path)

    def close(self) -> None:
        """Close the connection (a later lookup opens it again). A file in WAL mode (written to, or left so by a
        killed writer) is first returned to rollback-journal mode, which copies the log into it and removes
        ``-wal`` and ``-shm``; while another connection has it open that waits for the last one to close."""
        with self._db_lock:
            if self._db is None:
                return
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                    self._db.execute("PRAGMA busy_timeout=0")  # another connection open: leave it to that one
                    self._db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.OperationalError:  # "database is locked"
                pass
            self._db.close()
            self._db = None
            self._writing = False

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __len__(self) -> int:
        rows = self._select("SELECT count(*) FROM entries")
        return int(rows[0][0]) if rows else 0


_open_caches: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


@atexit.register
def _close_open_caches() -> None:
    """Close every cache still open when the interpreter exits (a notebook's gateway is seldom closed), so that a
    live run's last writer returns the file to rollback-journal mode, complete and without ``-wal`` beside it."""
    for cache in list(_open_caches):
        cache.close()


def _connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (writes open their transaction with ``BEGIN IMMEDIATE``), usable from any
    thread (the cache serialises its use), flushing every commit to disk, waiting for other writers."""
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous=FULL")
    return db


def read_usage_log(path: Path) -> tuple[set[str], set[str]]:
    """(the keys looked up, the keys marked as asked again) of a usage log; both empty when it does not exist."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    words = [line.split() for line in lines if line.strip()]
    return {w[0] for w in words}, {w[0] for w in words if w[1:] == [ASKED_AGAIN]}


def check(path: Path, usage_log: Path | None = None) -> int:
    """``python -m lib.llm.cache check``: print each damaged entry of the cache file ``path`` and, with a replay's
    ``usage_log``, each stored answer a live run would send again; 1 when there is any, or no entry at all."""
    with ResponseCache(path) as cache:
        entries, damaged = cache.verify()
        labels = cache.labels() if usage_log else {}
    if not entries:
        raise SystemExit(f"error: {path}: no cache entries ({'an empty file' if path.exists() else 'no such file'})")
    print("\n".join([*damaged, f"{len(damaged)} of the {entries} entries of {paths.shown(path)} are damaged"])
          if damaged else f"all {entries} entries of {paths.shown(path)} verify (checksum and key)")
    if usage_log is None:
        return 1 if damaged else 0
    used, asked_again = read_usage_log(usage_log)
    if not used:
        raise SystemExit(f"{usage_log}: no keys looked up (was the usage log written?)")
    for key in sorted(asked_again):
        print(f"{key}  {labels.get(key, '(not in the cache)')}: a live run asks it again")
    print(f"{len(asked_again)} of the {len(used)} entries looked up would be asked again in live mode")
    return 1 if damaged or asked_again else 0


def prune(path: Path, used: set[str], dry_run: bool = False, keep_labels: Sequence[str] = ()) -> tuple[int, int]:
    """Delete the entries of the cache file ``path`` whose key is not in ``used`` and whose label starts with none
    of ``keep_labels`` (calls made outside the notebooks, e.g. G-Eval's step generation, which a replay of the
    report never asks for), then compact the file; returns (entries, file bytes) removed (or the entries that
    would be, and 0 bytes, with ``dry_run``). An empty ``used`` is refused: it would empty the cache."""
    if not used:
        raise ValueError("no used keys: refusing to delete every cache entry (was the usage log written?)")
    with ResponseCache(path) as cache:
        unused = [key for key, label in cache.labels().items()
                  if key not in used and not label.startswith(tuple(keep_labels) or ("\0",))]
        if dry_run:
            return len(unused), 0
        size = path.stat().st_size
        cache.delete(unused)
        cache.compact()
    return len(unused), size - path.stat().st_size


def pack(folder: Path, path: Path) -> int:
    """Convert the folder cache ``folder`` (the layout before: ``<key[:2]>/<key>.json``, one entry per file) into
    the new cache file ``path``: every entry checked (:func:`verified`; a damaged one stops the conversion,
    naming its file) and written in key order in one transaction, then compacted. Returns the entries packed."""
    if path.exists():
        raise FileExistsError(f"{path} exists: pack into a new file")
    entries = {file.stem: verified(file.read_bytes(), file.stem, str(file))
               for file in sorted(folder.glob("??/*.json"))}
    if not entries:
        raise ValueError(f"{folder}: no cache entries (<key[:2]>/<key>.json) to pack")
    with ResponseCache(path) as cache:
        cache.put_all(entries)
        cache.compact()
    return len(entries)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.llm.cache", description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=paths.LLM_CACHE,
                        help=f"the cache file (default: {paths.shown(paths.LLM_CACHE)})")
    commands = parser.add_subparsers(dest="command", required=True)
    pruning = commands.add_parser("prune", help="delete the entries a replay of the report did not ask for")
    pruning.add_argument("--used", type=Path, required=True, help="usage log written with LLM_CACHE_USAGE_LOG set")
    pruning.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    pruning.add_argument("--keep-label", action="append", default=[],
                         help="keep entries whose label starts with this (calls made outside the notebooks)")
    checking = commands.add_parser("check", help="verify every entry's checksum and key (exit 1 naming each "
                                                 "damaged one, or when there is none); with --used, also list the "
                                                 "stored answers a live run would send again (exit 1 if any)")
    checking.add_argument("--used", type=Path, help="usage log written with LLM_CACHE_USAGE_LOG set by a replay")
    packing = commands.add_parser("pack", help="convert a folder cache (one JSON file per entry) into the cache file")
    packing.add_argument("folder", type=Path, help="the folder cache, e.g. outputs/llm-cache")
    args = parser.parse_args(argv)
    try:
        return _command(args)
    except CacheFileError as exc:
        raise SystemExit(f"error: {exc}") from None


def _command(args: argparse.Namespace) -> int:
    if args.command == "pack":
        print(f"{pack(args.folder, args.cache)} entries packed into {paths.shown(args.cache)} "
              f"({args.cache.stat().st_size / 1e6:.1f} MB)")
        return 0
    if args.command == "check":
        return check(args.cache, args.used)
    used, _ = read_usage_log(args.used)
    removed, size = prune(args.cache, used, args.dry_run, args.keep_label)
    print(f"{'would remove' if args.dry_run else 'removed'} {removed} unused entries ({size / 1e6:.1f} MB); "
          f"{len(used)} keys in use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
