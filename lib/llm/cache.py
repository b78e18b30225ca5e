"""Persistent, process-safe cache of LLM responses: one JSON file per request.

Shaped like HELM's request cache: :meth:`ResponseCache.get` takes the request and a ``compute`` function and
returns ``(entry, cached)``; replay mode is simply a ``compute`` that raises. The key is the SHA-256 of the
canonical JSON (sorted keys, no whitespace) of the request as sent — model identity, messages, sampling
parameters and response schema.

Why one file per key: writes go to a temporary file in the same folder and are published with
``os.replace``, which is atomic on POSIX. Concurrent writers therefore never interleave bytes, a process
killed mid-write leaves at most a stray ``*.tmp`` file (ignored and never read), and every finished call
survives. Files are small text, so the committed cache diffs and merges well in git.

Why a per-key lock: two processes (or threads) asking for the same missing key would otherwise both compute
it and send the request twice. ``get`` holds an advisory ``flock`` on ``.locks/<key>.lock`` while it looks
up and computes, so the second caller waits and then reads the first one's entry. The lock is released when
its holder ends, even by ``kill -9``, so a crash never leaves a key blocked.

Every entry carries a checksum (SHA-256 of its canonical JSON without the checksum) and is verified on read,
with its key against its request: an entry edited by hand, cut short, not UTF-8 or not an entry at all is a
:class:`CorruptEntry` naming its file and key. A cache made with ``repair=True`` (the gateway's live mode) says
so on stderr and treats it as a miss — the request is sent again and the entry rewritten; otherwise (replay) it
is an error, since a replay must serve the record or nothing. ``python -m lib.llm.cache checksum`` adds the
checksum to entries written before it existed.

Only what ``compute`` returns is stored; when ``compute`` raises (an endpoint fault, a malformed answer,
replay mode), nothing is written and the next run asks again.

Pruning: with ``LLM_CACHE_USAGE_LOG`` set, every key looked up is appended to that file (one line per lookup;
appends of a line are atomic). ``make prune-cache`` replays every notebook with the log on, then
``python -m lib.llm.cache prune --used LOG`` deletes the entries no notebook asked for (e.g. requests of an
earlier version of a chapter), so the committed cache is exactly what the report replays.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Entry = dict[str, Any]


class CorruptEntry(ValueError):
    """A cache entry that fails its checks (see the module docstring); the message names its file and key."""


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text of ``obj``: sorted keys, compact separators, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of a request."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def checksum(entry: Entry) -> str:
    """SHA-256 hex digest of the canonical JSON of an entry without its ``checksum`` field."""
    return hashlib.sha256(canonical_json({k: v for k, v in entry.items() if k != "checksum"}).encode("utf-8")
                          ).hexdigest()


class ResponseCache:
    """Folder of ``<key[:2]>/<key>.json`` entries, each ``{"request": …, "response": …, "latency_s": …}``."""

    def __init__(self, folder: Path, usage_log: Path | None = None, repair: bool = False) -> None:
        self.folder = Path(folder)
        self.repair = repair
        log = usage_log or os.environ.get("LLM_CACHE_USAGE_LOG")
        self.usage_log = Path(log) if log else None

    def path_for(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def read(self, key: str) -> Entry | None:
        """The stored entry, or None when absent; :class:`CorruptEntry` when it fails its checks."""
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None

        def corrupt(problem: str) -> CorruptEntry:
            return CorruptEntry(f"{path}: corrupt cache entry, key {key} ({problem}); delete the file, or run in "
                                f"live mode, to recompute it")

        try:
            entry = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise corrupt(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
        except json.JSONDecodeError as exc:
            raise corrupt(f"not JSON: {exc.msg} at char {exc.pos}") from None
        if not isinstance(entry, dict) or "response" not in entry:
            raise corrupt(f"not an entry: {type(entry).__name__} without a response")
        if entry.get("checksum") != checksum(entry):
            raise corrupt("checksum mismatch: edited after it was written" if "checksum" in entry
                          else "no checksum")
        if "request" in entry and request_key(entry["request"]) != key:
            raise corrupt("its request does not hash to its key")
        return {k: v for k, v in entry.items() if k != "checksum"}  # the checksum belongs to the file

    def get(self, request: dict[str, Any], compute: Callable[[], Entry], refresh: bool = False
            ) -> tuple[Entry, bool]:
        """``(entry, True)`` from the cache, or ``(compute(), False)`` after storing what ``compute`` returned
        with ``request`` added. One caller per key computes at a time (see the module docstring). ``refresh``:
        compute even when an entry exists, and replace it (a stored answer that ended its item in failure)."""
        key = request_key(request)
        if self.usage_log is not None:
            with open(self.usage_log, "a", encoding="utf-8") as log:
                log.write(key + "\n")
        entry = None if refresh else self._checked(key)
        if entry is not None:
            return entry, True
        with self._locked(key):
            entry = None if refresh else self._checked(key)  # another process may have computed it while we waited
            if entry is not None:
                return entry, True
            entry = {"request": request, **compute()}
            self.put(key, entry)
            return entry, False

    def _checked(self, key: str) -> Entry | None:
        """:meth:`read`, with a damaged entry taken as a miss (said on stderr) when the cache repairs."""
        try:
            return self.read(key)
        except CorruptEntry as exc:
            if not self.repair:
                raise
            print(f"damaged cache entry {self.path_for(key)} (key {key}): asking again — {exc}", file=sys.stderr)
            return None

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        """Exclusive advisory lock on ``.locks/<key>.lock``; the file is removed by its holder on release.

        A waiter may end up holding a lock on a file its predecessor already unlinked, so after locking it
        checks that the path still names the inode it locked, and otherwise tries again."""
        lock_dir = self.folder / ".locks"
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
        """Publish an entry atomically (write a temp file, fsync, rename)."""
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({**entry, "checksum": checksum(entry)}, sort_keys=True, indent=1,
                                        ensure_ascii=False))
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("??/*.json"))


def prune(folder: Path, used: set[str], dry_run: bool = False, keep_labels: Sequence[str] = ()) -> tuple[int, int]:
    """Delete the entries of the cache in ``folder`` whose key is not in ``used`` and whose label starts with none
    of ``keep_labels`` (calls made outside the notebooks, e.g. G-Eval's step generation, which a replay of the
    report never asks for); returns (entries, bytes) removed (or that would be, with ``dry_run``). An empty
    ``used`` is refused: it would empty the cache."""
    if not used:
        raise ValueError("no used keys: refusing to delete every cache entry (was the usage log written?)")
    removed, size = 0, 0
    for path in sorted(Path(folder).glob("??/*.json")):
        if path.stem not in used and not json.loads(path.read_text(encoding="utf-8")).get("label", "").startswith(
                tuple(keep_labels) or ("\0",)):
            removed, size = removed + 1, size + path.stat().st_size
            if not dry_run:
                path.unlink()
    return removed, size


def add_checksums(folder: Path) -> int:
    """Give every entry of the cache in ``folder`` that has none its checksum (entries written before checksums
    existed); an entry whose request does not hash to its file name is refused. Returns the entries changed."""
    cache, changed = ResponseCache(folder), 0
    for path in sorted(Path(folder).glob("??/*.json")):
        entry = json.loads(path.read_text(encoding="utf-8"))
        if "checksum" in entry:
            continue
        if "request" in entry and request_key(entry["request"]) != path.stem:
            raise CorruptEntry(f"{path}: its request does not hash to its key; not given a checksum")
        cache.put(path.stem, entry)
        changed += 1
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    from lib import paths

    parser = argparse.ArgumentParser(prog="python -m lib.llm.cache", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pruning = commands.add_parser("prune", help="delete the entries a replay of the report did not ask for")
    pruning.add_argument("--used", type=Path, required=True, help="usage log written with LLM_CACHE_USAGE_LOG set")
    pruning.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    pruning.add_argument("--keep-label", action="append", default=[],
                         help="keep entries whose label starts with this (calls made outside the notebooks)")
    commands.add_parser("checksum", help="give the entries written before checksums existed their checksum")
    args = parser.parse_args(argv)
    if args.command == "checksum":
        print(f"{add_checksums(paths.LLM_CACHE)} entries given a checksum")
        return 0
    used = set(args.used.read_text(encoding="utf-8").split()) if args.used.exists() else set()
    removed, size = prune(paths.LLM_CACHE, used, args.dry_run, args.keep_label)
    print(f"{'would remove' if args.dry_run else 'removed'} {removed} unused entries ({size / 1e6:.1f} MB); "
          f"{len(used)} keys in use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
