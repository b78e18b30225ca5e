"""The response cache: canonical keys, checked entries in one SQLite file, several threads and processes writing at
once, killed writers, pruning and the conversion of the folder layout."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from contextlib import closing
from pathlib import Path

import pytest

from lib.llm import cache as cache_module
from lib.llm.cache import (
    CorruptEntry,
    KeyedRequest,
    ResponseCache,
    canonical_json,
    checksum,
    main,
    pack,
    prune,
    read_usage_log,
    request_key,
)

ROOT = Path(__file__).resolve().parents[1]
KEY = "ab" + "0" * 62


def test_key_is_independent_of_dict_order_and_sensitive_to_content():
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    b = {"temperature": 0, "messages": [{"content": "hi", "role": "user"}], "model": "m"}
    assert canonical_json(a) == canonical_json(b) == (
        '{"messages":[{"content":"hi","role":"user"}],"model":"m","temperature":0}')
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key({**a, "temperature": 0.0001})
    assert KeyedRequest(b).key == request_key(a)  # computed once, when the request is made a KeyedRequest


def _rows(path: Path) -> dict[str, tuple[str, bytes]]:
    with closing(sqlite3.connect(path)) as db:
        return {key: (label, data) for key, label, data in db.execute("SELECT key, label, data FROM entries")}


def test_put_read_roundtrip_stores_compressed_canonical_json_with_its_checksum(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.read(KEY) is None and len(cache) == 0
    assert not (tmp_path / "c.sqlite").exists(), "a lookup creates no file"
    entry = {"response": {"x": "ünïcode"}, "latency_s": 1.5, "label": "rate:1"}
    cache.put(KEY, entry)
    assert cache.read(KEY) == entry and cache.read("cd" + "0" * 62) is None and len(cache) == 1
    label, data = _rows(tmp_path / "c.sqlite")[KEY]
    assert label == "rate:1"
    assert json.loads(zlib.decompress(data)) == {**entry, "checksum": checksum(entry)}
    assert zlib.decompress(data).decode() == canonical_json({**entry, "checksum": checksum(entry)})
    cache.put(KEY, {"response": 2})  # replaces
    assert cache.read(KEY) == {"response": 2} and len(cache) == 1 and cache.labels() == {KEY: ""}


def test_get_computes_once_and_stores_nothing_when_compute_raises(tmp_path):
    cache, calls = ResponseCache(tmp_path / "c.sqlite"), []
    request = KeyedRequest({"model": "m", "messages": [{"role": "user", "content": "hi"}]})

    def compute():
        calls.append(1)
        return {"response": {"n": len(calls)}}

    assert cache.get(request, compute) == ({"request": request.request, "response": {"n": 1}}, False)
    assert cache.get(request, compute) == ({"request": request.request, "response": {"n": 1}}, True)
    assert len(calls) == 1

    def broken():
        raise RuntimeError("endpoint fault")

    with pytest.raises(RuntimeError, match="endpoint fault"):
        cache.get(KeyedRequest({"other": 1}), broken)
    assert cache.read(request_key({"other": 1})) is None and len(cache) == 1
    assert not list((tmp_path / "c.sqlite.locks").iterdir()), "a released lock leaves no file"


def test_a_replay_miss_writes_nothing_and_a_replay_leaves_the_file_as_it_was(tmp_path):
    def replay() -> dict:
        raise AssertionError("a hit computes nothing")

    missing = ResponseCache(tmp_path / "none" / "none.sqlite")
    assert missing.lookup(KeyedRequest({"n": 0})) is None
    assert not (tmp_path / "none").exists(), "a replay miss creates no cache file, no lock and no folder"

    path = tmp_path / "c.sqlite"
    writer = ResponseCache(path)
    for n in range(3):
        writer.put(request_key({"n": n}), {"request": {"n": n}, "response": n})
    writer.close()
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    reader = ResponseCache(path)
    assert [reader.get(KeyedRequest({"n": n}), replay)[0]["response"] for n in range(3)] == [0, 1, 2]
    assert [reader.lookup(KeyedRequest({"n": n}))["response"] for n in range(3)] == [0, 1, 2]  # type: ignore[index]
    assert reader.lookup(KeyedRequest({"n": 3})) is None
    assert len(reader) == 3 and len(list(reader.items())) == 3
    reader.close()
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"], "no journal or lock is left behind"


def test_the_last_connection_to_close_leaves_the_written_file_complete_in_rollback_journal_mode(tmp_path):
    path = tmp_path / "c.sqlite"
    first, second = ResponseCache(path), ResponseCache(path)
    first.put(KEY, {"response": 1})
    second.put("cd" + "0" * 62, {"response": 2})
    assert (tmp_path / "c.sqlite-wal").exists(), "written in WAL mode"
    first.close()  # the other connection is open: the log stays for it
    assert (tmp_path / "c.sqlite-wal").exists() and second.read(KEY) == {"response": 1}
    second.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert len(_rows(path)) == 2


def _slow_claimer(args: tuple[str, str]) -> bool:
    path, log = args

    def compute():
        with open(log, "a") as handle:
            handle.write("computed\n")
        time.sleep(0.3)
        return {"response": {"ok": True}}

    return ResponseCache(Path(path)).get(KeyedRequest({"shared": "request"}), compute)[1]


def test_two_processes_on_one_missing_key_compute_it_once(tmp_path):
    log = tmp_path / "log.txt"
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        cached = pool.map(_slow_claimer, [(str(tmp_path / "c.sqlite"), str(log))] * 3)
    assert log.read_text().count("computed") == 1
    assert sorted(cached) == [False, True, True]


def test_threads_of_one_cache_on_one_missing_key_compute_it_once(tmp_path):
    cache, computed = ResponseCache(tmp_path / "c.sqlite"), []

    def compute():
        computed.append(1)
        time.sleep(0.2)
        return {"response": "r"}

    outcomes: list[bool] = []
    request = KeyedRequest({"q": 1})
    threads = [threading.Thread(target=lambda: outcomes.append(cache.get(request, compute)[1])) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(computed) == 1 and sorted(outcomes) == [False, True, True, True]


def _writer(args: tuple[str, int]) -> None:
    path, worker = args
    cache = ResponseCache(Path(path))
    for i in range(60):
        # Half the keys are shared by all workers (same content, as identical requests would give).
        key = request_key({"i": i}) if i % 2 else request_key({"worker": worker, "i": i})
        cache.put(key, {"response": {"i": i, "payload": os.urandom(2000).hex()}, "latency_s": 0.1})


def test_concurrent_writer_processes_leave_only_complete_entries(tmp_path):
    path = tmp_path / "c.sqlite"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_writer, [(str(path), w) for w in range(4)])
    reader = ResponseCache(path)
    entries = dict(reader.items())  # every entry passes its checks
    assert len(entries) == 30 + 4 * 30
    assert all(len(entry["response"]["payload"]) == 4000 for entry in entries.values())
    reader.close()  # the workers were terminated with the pool: the last connection closed copies their log in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"] and len(_rows(path)) == 150


def _queued_behind_the_commit_lock(cache: ResponseCache, keys: list[str]) -> tuple[list[threading.Thread], dict]:
    """Threads putting ``keys`` while the test holds the commit lock, started and queued; their outcomes."""
    outcomes: dict[str, str] = {}

    def put(key: str) -> None:
        try:
            cache.put(key, {"response": key})
            outcomes[key] = "stored"
        except OSError as exc:
            outcomes[key] = str(exc)

    threads = [threading.Thread(target=put, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    while cache._queued < len(keys):
        time.sleep(0.01)
    return threads, outcomes


def test_entries_put_at_once_are_written_by_one_transaction_and_all_land(tmp_path, monkeypatch):
    cache, batches = ResponseCache(tmp_path / "c.sqlite"), []
    write = cache._write

    def counted(rows):
        batches.append(len(rows))
        write(rows)

    monkeypatch.setattr(cache, "_write", counted)
    keys = [request_key({"n": n}) for n in range(5)]
    with cache._commit_lock:
        threads, outcomes = _queued_behind_the_commit_lock(cache, keys)
    for thread in threads:
        thread.join()
    assert batches == [5] and outcomes == dict.fromkeys(keys, "stored")
    assert {key: entry["response"] for key, entry in ResponseCache(tmp_path / "c.sqlite").items()} == {
        key: key for key in keys}


def test_a_failed_batch_is_the_committers_error_and_the_others_entries_land_with_the_next(tmp_path, monkeypatch):
    cache, batches = ResponseCache(tmp_path / "c.sqlite"), []
    write = cache._write

    def first_fails(rows):
        batches.append(sorted(row[0] for row in rows))
        if len(batches) == 1:
            raise OSError("disk full")
        write(rows)

    monkeypatch.setattr(cache, "_write", first_fails)
    keys = [request_key({"n": n}) for n in range(3)]
    with cache._commit_lock:
        threads, outcomes = _queued_behind_the_commit_lock(cache, keys)
    for thread in threads:
        thread.join()
    failed = [key for key, outcome in outcomes.items() if outcome == "disk full"]
    assert len(failed) == 1 and batches[0] == sorted(keys) and batches[1:] == [sorted(set(keys) - set(failed))]
    assert sorted(key for key, _ in cache.items()) == sorted(set(keys) - set(failed)), \
        "every put that returned is stored; the one that raised is not"


KILLED_WRITER = """
import sys, sqlite3, time
from pathlib import Path
from lib.llm.cache import ResponseCache, request_key
cache = ResponseCache(Path(sys.argv[1]))
for n in range(20):
    cache.put(request_key({"n": n}), {"response": {"n": n, "payload": "x" * 3000}})
    print(n, flush=True)  # reported done: its transaction has committed
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size=2")  # uncommitted pages spill into the log before the commit
db.execute("BEGIN IMMEDIATE")
db.executemany("INSERT INTO entries VALUES (?, 'half', randomblob(3000))", [(str(n),) for n in range(500)])
db.execute("DELETE FROM entries WHERE key = ?", (request_key({"n": 0}),))
print("in the transaction", flush=True)
time.sleep(60)
"""


def test_a_writer_killed_mid_transaction_leaves_every_committed_entry_and_nothing_else(tmp_path):
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    reported = [line.strip() for line in iter(proc.stdout.readline, "in the transaction\n")]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert reported == [str(n) for n in range(20)]
    assert (tmp_path / "c.sqlite-wal").stat().st_size > 500 * 3000, "uncommitted rows reached the log"
    reader = ResponseCache(path)
    entries = dict(reader.items())  # the committed part of the log is read, the cut transaction ignored
    assert sorted(entry["response"]["n"] for entry in entries.values()) == list(range(20))
    reader.close()  # copies the log into the file: complete on its own, nothing beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"]
    assert len(_rows(path)) == 20


def test_usage_log_and_prune_keep_exactly_the_keys_asked_for(tmp_path):
    log, path = tmp_path / "usage.log", tmp_path / "c.sqlite"
    cache = ResponseCache(path, usage_log=log)
    for n in range(3):
        # incompressible: pages to free
        cache.get(KeyedRequest({"n": n}), lambda: {"response": os.urandom(20_000).hex()})
    replay = ResponseCache(path, usage_log=tmp_path / "replay.log")
    replay.get(KeyedRequest({"n": 0}), lambda: {"response": "r"})  # a hit is logged too
    replay.log_usage([request_key({"n": 0})], "asked-again")
    used, asked_again = read_usage_log(tmp_path / "replay.log")
    assert used == asked_again == {request_key({"n": 0})} and len(log.read_text().split()) == 3
    assert read_usage_log(tmp_path / "absent.log") == (set(), set())
    cache.close()
    replay.close()  # prune replaces the file: no process may have it open
    assert prune(path, used, dry_run=True) == (2, 0) and len(ResponseCache(path)) == 3
    size = path.stat().st_size
    removed, freed = prune(path, used)
    assert removed == 2 and freed == size - path.stat().st_size > 0
    assert [key for key, _ in ResponseCache(path).items()] == [request_key({"n": 0})]
    # made outside a notebook:
    cache.get(KeyedRequest({"steps": 1}), lambda: {"response": "r", "label": "geval-steps:Coherence"})
    cache.get(KeyedRequest({"steps": 2}), lambda: {"response": "r", "label": "other"})
    assert prune(path, used, keep_labels=["geval-steps"])[0] == 1
    assert sorted(ResponseCache(path).labels().values()) == ["", "geval-steps:Coherence"]
    with pytest.raises(ValueError, match="refusing to delete every cache entry"):
        prune(path, set())


def test_compacting_gives_equal_files_for_equal_contents_whatever_their_history(tmp_path):
    entries = {request_key({"n": n}): {"response": {"n": n}, "label": f"l{n}"} for n in range(40)}
    first, second = ResponseCache(tmp_path / "a.sqlite"), ResponseCache(tmp_path / "b.sqlite")
    first.put_all(entries)
    for key in reversed(list(entries)):
        second.put(key, {"response": "an answer replaced later"})
        second.put(key, entries[key])
    second.put(request_key({"gone": 1}), {"response": "deleted"})
    second.delete([request_key({"gone": 1})])
    first.close()
    second.close()
    assert (tmp_path / "a.sqlite").read_bytes() != (tmp_path / "b.sqlite").read_bytes()
    first.compact()
    second.compact()
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert dict(first.items()) == entries


# --- damaged entries: named in replay, asked again in live mode ------------------------------------------------

def _stored(path: Path) -> tuple[KeyedRequest, str]:
    request = KeyedRequest({"messages": "rate it", "seed": 0})
    cache = ResponseCache(path)
    cache.get(request, lambda: {"response": {"grade": 2}})
    cache.close()
    return request, request.key


def _damage(path: Path, key: str, damage: str) -> None:
    with closing(sqlite3.connect(path)) as db:
        data = db.execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()[0]
    text = zlib.decompress(data)
    if damage == "a byte of the file flipped":
        raw = path.read_bytes()
        at = raw.index(data) + len(data) // 2
        path.write_bytes(raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1:])
        return
    stored = {"grade edited": text.replace(b'"grade":2', b'"grade":3'),  # still valid JSON, old checksum
              "not JSON": text[: len(text) // 2], "not UTF-8": b"\xff" + text, "a list": b"[]",
              "no checksum": canonical_json({"request": {"messages": "rate it", "seed": 0},
                                             "response": {"grade": 2}}).encode()}[damage]
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE entries SET data = ? WHERE key = ?", (zlib.compress(stored), key))


@pytest.mark.parametrize("damage, problem", [
    ("grade edited", "checksum mismatch"), ("a byte of the file flipped", "not zlib data"), ("not JSON", "not JSON"),
    ("not UTF-8", "not UTF-8"), ("a list", "not an entry"), ("no checksum", "no checksum")])
def test_a_damaged_entry_is_named_in_replay_and_asked_again_in_live_mode(tmp_path, damage, problem, capsys):
    path = tmp_path / "c.sqlite"
    request, key = _stored(path)
    _damage(path, key, damage)

    def replay() -> dict:
        raise AssertionError("replay must not compute")

    with pytest.raises(CorruptEntry, match=rf"{path}: corrupt cache entry, key {key} \({problem}"):
        ResponseCache(path, repair=False).get(request, replay)
    entry, cached = ResponseCache(path, repair=True).get(request, lambda: {"response": {"grade": 2}})
    assert not cached and entry["response"] == {"grade": 2}  # asked again and replaced
    assert f"damaged cache entry in {path} (key {key})" in capsys.readouterr().err
    assert ResponseCache(path, repair=False).get(request, replay)[0]["response"] == {"grade": 2}


# --- the conversion of the folder layout ------------------------------------------------------------------------

def _folder_entry(folder: Path, request: dict, entry: dict) -> Path:
    """An entry as the folder cache wrote it: ``<key[:2]>/<key>.json``, indented JSON with its checksum."""
    key = request_key(request)
    full = {"request": request, **entry}
    path = folder / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**full, "checksum": checksum(full)}, sort_keys=True, indent=1, ensure_ascii=False)
                    + "\n", encoding="utf-8")
    return path


def test_pack_converts_a_folder_cache_entry_for_entry(tmp_path, capsys):
    folder = tmp_path / "llm-cache"
    written: dict[str, dict] = {
        request_key({"n": n}): {"request": {"n": n}, "response": {"text": f"ünï {n}", "f": n / 3},
                                "latency_s": 0.25 * n, "label": f"call:{n}", "notebook": "nb"} for n in range(25)}
    for entry in written.values():
        _folder_entry(folder, entry["request"], {k: v for k, v in entry.items() if k != "request"})
    (folder / ".locks").mkdir()
    (folder / min(written)[:2] / ".abc-1.tmp").write_text("stray")  # ignored, as by the folder store
    assert main(["--cache", str(tmp_path / "c.sqlite"), "pack", str(folder)]) == 0
    assert capsys.readouterr().out.startswith(f"25 entries packed into {tmp_path / 'c.sqlite'}")
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert dict(cache.items()) == written
    assert cache.labels() == {key: entry["label"] for key, entry in written.items()}
    # equal contents, equal file: a second conversion gives the same bytes
    assert pack(folder, tmp_path / "again.sqlite") == 25
    assert (tmp_path / "again.sqlite").read_bytes() == (tmp_path / "c.sqlite").read_bytes()
    with pytest.raises(FileExistsError):
        pack(folder, tmp_path / "c.sqlite")


def test_pack_refuses_a_damaged_folder_entry_and_writes_nothing(tmp_path):
    folder = tmp_path / "llm-cache"
    _folder_entry(folder, {"n": 0}, {"response": 0})
    bad = _folder_entry(folder, {"n": 1}, {"response": 1})
    bad.write_text(bad.read_text().replace('"response": 1', '"response": 2'))
    with pytest.raises(CorruptEntry, match=rf"{bad}: corrupt cache entry.*checksum mismatch"):
        pack(folder, tmp_path / "c.sqlite")
    assert not (tmp_path / "c.sqlite").exists()
    with pytest.raises(ValueError, match="no cache entries"):
        pack(tmp_path / "empty", tmp_path / "c.sqlite")


# --- `python -m lib.llm.cache check`: every entry verified ---------------------------------------------------------

def test_check_verifies_every_entry_and_names_each_damaged_one(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    requests = [KeyedRequest({"messages": "rate it", "seed": n}) for n in range(5)]
    with ResponseCache(path) as cache:
        for request in requests:
            cache.get(request, lambda: {"response": {"grade": 2}, "label": "rate"})
    assert main(["--cache", str(path), "check"]) == 0
    assert capsys.readouterr().out.strip() == f"all 5 entries of {path} verify (checksum and key)"
    for request, damage in zip(requests[1:3], ["grade edited", "a byte of the file flipped"], strict=True):
        _damage(path, request.key, damage)
    assert main(["--cache", str(path), "check"]) == 1
    out = capsys.readouterr().out
    assert f"{path}: corrupt cache entry, key {requests[1].key} (checksum mismatch" in out
    assert f"{path}: corrupt cache entry, key {requests[2].key} (not zlib data" in out
    assert out.splitlines()[-1] == f"2 of the 5 entries of {path} are damaged"
    # the listing of a usage log still works, and counts damage too
    log = tmp_path / "usage.log"
    log.write_text("".join(f"{request.key}\n" for request in requests))
    assert main(["--cache", str(path), "check", "--used", str(log)]) == 1
    assert "0 of the 5 entries looked up would be asked again in live mode" in capsys.readouterr().out
    for empty in (tmp_path / "empty.sqlite", tmp_path / "absent.sqlite"):
        if empty.name == "empty.sqlite":
            empty.touch()
        with pytest.raises(SystemExit, match=rf"{empty}: no cache entries"):
            main(["--cache", str(empty), "check"])
    (tmp_path / "broken.sqlite").write_text("not SQLite")
    with pytest.raises(SystemExit, match=rf"^error: {tmp_path / 'broken.sqlite'}: .*restore"):
        main(["--cache", str(tmp_path / "broken.sqlite"), "check"])


class _LockedFor:
    """A connection stand-in whose WAL switch is refused as locked ``times`` times (or always), as SQLite refuses it
    when other processes switch a new file at the same moment."""

    def __init__(self, times: float) -> None:
        self.times, self.calls = times, 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.calls <= self.times:
            raise sqlite3.OperationalError("database is locked")


def test_the_wal_switch_is_tried_again_while_another_process_holds_the_file():
    held_twice = _LockedFor(2)
    cache_module._switch_to_wal(held_twice)  # type: ignore[arg-type]
    assert held_twice.calls == 3
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cache_module._switch_to_wal(_LockedFor(float("inf")), timeout_s=0.05)  # type: ignore[arg-type]
