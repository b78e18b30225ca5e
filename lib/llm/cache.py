"""Persistent, process-safe cache of LLM responses: one JSON file per request.

Key: SHA-256 of the canonical JSON (sorted keys, no whitespace) of the request as sent — model identity,
messages, sampling parameters and response schema — in the spirit of HELM's request cache.

Why one file per key: writes go to a temporary file in the same folder and are published with
``os.replace``, which is atomic on POSIX. Concurrent writers therefore never interleave bytes, a process
killed mid-write leaves at most a stray ``*.tmp`` file (ignored and never read), and every finished call
survives. Files are small text, so the committed cache diffs and merges well in git.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


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

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None when absent. A corrupt entry counts as absent and is reported."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: corrupt cache entry ({exc}); delete the file to recompute it") from exc

    def put(self, key: str, entry: dict[str, Any]) -> None:
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
