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

Only what ``compute`` returns is stored; when ``compute`` raises (an endpoint fault, a malformed answer,
replay mode), nothing is written and the next run asks again.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Entry = dict[str, Any]


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text of ``obj``: sorted keys, compact separators, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of a request."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class ResponseCache:
    """Folder of ``<key[:2]>/<key>.json`` entries, each ``{"request": …, "response": …, "latency_s": …}``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path_for(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def read(self, key: str) -> Entry | None:
        """The stored entry, or None when absent. A corrupt entry raises, naming the file."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: corrupt cache entry ({exc}); delete the file to recompute it") from exc

    def get(self, request: dict[str, Any], compute: Callable[[], Entry]) -> tuple[Entry, bool]:
        """``(entry, True)`` from the cache, or ``(compute(), False)`` after storing what ``compute`` returned
        with ``request`` added. One caller per key computes at a time (see the module docstring)."""
        key = request_key(request)
        entry = self.read(key)
        if entry is not None:
            return entry, True
        with self._locked(key):
            entry = self.read(key)  # another process may have computed it while we waited
            if entry is not None:
                return entry, True
            entry = {"request": request, **compute()}
            self.put(key, entry)
            return entry, False

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
                handle.write(json.dumps(entry, sort_keys=True, indent=1, ensure_ascii=False))
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("??/*.json"))
