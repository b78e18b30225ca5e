"""The response cache: canonical keys, atomic entries, several processes writing at once."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from lib.llm.cache import CorruptEntry, ResponseCache, canonical_json, request_key


def test_key_is_independent_of_dict_order_and_sensitive_to_content():
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    b = {"temperature": 0, "messages": [{"content": "hi", "role": "user"}], "model": "m"}
    assert canonical_json(a) == canonical_json(b) == (
        '{"messages":[{"content":"hi","role":"user"}],"model":"m","temperature":0}')
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key({**a, "temperature": 0.0001})


def test_put_get_roundtrip_and_corrupt_entry_names_the_file(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put("ab" + "0" * 62, {"response": {"x": "ünïcode"}, "latency_s": 1.5})
    entry = cache.read("ab" + "0" * 62)
    assert entry is not None and {k: entry[k] for k in ("response", "latency_s")} == {
        "response": {"x": "ünïcode"}, "latency_s": 1.5}
    assert cache.read("cd" + "0" * 62) is None and len(cache) == 1
    cache.path_for("ab" + "0" * 62).write_text('{"response": ')
    with pytest.raises(CorruptEntry, match=r"ab0+\.json: corrupt cache entry"):
        cache.read("ab" + "0" * 62)


def test_get_computes_once_and_stores_nothing_when_compute_raises(tmp_path):
    cache, calls = ResponseCache(tmp_path), []
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    def compute():
        calls.append(1)
        return {"response": {"n": len(calls)}}

    assert cache.get(request, compute) == ({"request": request, "response": {"n": 1}}, False)
    assert cache.get(request, compute) == ({"request": request, "response": {"n": 1}}, True)
    assert len(calls) == 1

    def broken():
        raise RuntimeError("endpoint fault")

    with pytest.raises(RuntimeError, match="endpoint fault"):
        cache.get({"other": 1}, broken)
    assert cache.read(request_key({"other": 1})) is None and len(cache) == 1
    assert not list((tmp_path / ".locks").iterdir()), "a released lock leaves no file"


def _slow_claimer(args: tuple[str, str]) -> bool:
    folder, log = args
    import time

    def compute():
        with open(log, "a") as handle:
            handle.write("computed\n")
        time.sleep(0.3)
        return {"response": {"ok": True}}

    return ResponseCache(Path(folder)).get({"shared": "request"}, compute)[1]


def test_two_processes_on_one_missing_key_compute_it_once(tmp_path):
    log = tmp_path / "log.txt"
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        cached = pool.map(_slow_claimer, [(str(tmp_path / "cache"), str(log))] * 3)
    assert log.read_text().count("computed") == 1
    assert sorted(cached) == [False, True, True]


def _writer(args: tuple[str, int]) -> None:
    folder, worker = args
    cache = ResponseCache(Path(folder))
    for i in range(60):
        # Half the keys are shared by all workers (same content, as identical requests would give).
        key = request_key({"i": i}) if i % 2 else request_key({"worker": worker, "i": i})
        cache.put(key, {"response": {"i": i, "payload": "x" * 5000}, "latency_s": 0.1})


def test_concurrent_writers_leave_only_complete_entries(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_writer, [(str(tmp_path), w) for w in range(4)])
    cache = ResponseCache(tmp_path)
    files = list(tmp_path.glob("??/*.json"))
    assert len(files) == 30 + 4 * 30
    for path in files:
        entry = cache.read(path.stem)
        assert entry is not None and len(entry["response"]["payload"]) == 5000
    assert not list(tmp_path.rglob("*.tmp"))


def test_usage_log_and_prune_keep_exactly_the_keys_asked_for(tmp_path):
    from lib.llm.cache import prune

    log = tmp_path / "usage.log"
    cache = ResponseCache(tmp_path / "cache", usage_log=log)
    for n in range(3):
        cache.get({"n": n}, lambda: {"response": "r"})
    replay = ResponseCache(tmp_path / "cache", usage_log=tmp_path / "replay.log")
    replay.get({"n": 0}, lambda: {"response": "r"})  # a hit is logged too
    used = set((tmp_path / "replay.log").read_text().split())
    assert used == {request_key({"n": 0})} and len(log.read_text().split()) == 3
    assert (prune(tmp_path / "cache", used, dry_run=True)[0] == 2
            and len(list((tmp_path / "cache").glob("??/*.json"))) == 3)
    removed, size = prune(tmp_path / "cache", used)
    assert removed == 2 and size > 0
    assert [p.stem for p in (tmp_path / "cache").glob("??/*.json")] == [request_key({"n": 0})]
    cache.get({"steps": 1}, lambda: {"response": "r", "label": "geval-steps:Coherence"})  # made outside a notebook
    assert prune(tmp_path / "cache", used, keep_labels=["geval-steps"]) == (0, 0)
    with pytest.raises(ValueError, match="refusing to delete every cache entry"):
        prune(tmp_path / "cache", set())


# --- issue 19.3: the cache checks its entries -----------------------------------------------------------------

def _stored(tmp_path: Path) -> tuple[ResponseCache, dict, Path]:
    cache = ResponseCache(tmp_path)
    request = {"messages": "rate it", "seed": 0}
    cache.get(request, lambda: {"response": {"grade": 2}})
    return cache, request, cache.path_for(request_key(request))


@pytest.mark.parametrize("damage", ["grade edited by hand", "0xff byte", "a list", "truncated"])
def test_a_damaged_entry_is_named_in_replay_and_asked_again_in_live_mode(tmp_path, damage, capsys):
    _, request, path = _stored(tmp_path)
    text = path.read_text(encoding="utf-8")
    if damage == "grade edited by hand":
        path.write_text(text.replace('"grade": 2', '"grade": 3'), encoding="utf-8")  # still valid JSON
    elif damage == "0xff byte":
        path.write_bytes(path.read_bytes()[:50] + b"\xff" + path.read_bytes()[51:])
    elif damage == "a list":
        path.write_text("[]", encoding="utf-8")
    else:
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    key = request_key(request)

    def replay() -> dict:
        raise AssertionError("replay must not compute")

    with pytest.raises(CorruptEntry, match=rf"{path.name}.*key {key[:16]}"):
        ResponseCache(tmp_path, repair=False).get(request, replay)
    entry, cached = ResponseCache(tmp_path, repair=True).get(request, lambda: {"response": {"grade": 2}})
    assert not cached and entry["response"] == {"grade": 2}  # asked again and rewritten
    assert f"damaged cache entry {path}" in capsys.readouterr().err
    assert ResponseCache(tmp_path, repair=False).get(request, replay)[0]["response"] == {"grade": 2}


def test_entries_written_before_checksums_get_one_and_then_pass_their_checks(tmp_path):
    import json

    from lib.llm.cache import add_checksums

    request = {"messages": "rate it", "seed": 0}
    old = ResponseCache(tmp_path).path_for(request_key(request))
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"request": request, "response": {"grade": 1}}), encoding="utf-8")
    with pytest.raises(CorruptEntry, match="no checksum"):
        ResponseCache(tmp_path).read(request_key(request))
    assert add_checksums(tmp_path) == 1 and add_checksums(tmp_path) == 0
    assert ResponseCache(tmp_path).read(request_key(request)) == {"request": request, "response": {"grade": 1}}
