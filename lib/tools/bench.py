"""``make bench``: the machine's physical LLM rates, the study's effective rates beside them, and what the
gateway and the cache cost or save. Prints tables; not a test (timings are never asserted).

1. **Raw rates** (no gateway): the embedded model is served by xllamacpp on a spare port with each
   :class:`~lib.llm.server.ServerSettings` of ``--grid``; prompt processing is measured on long prompts with
   the prefix cache off, generation on a short prompt, both from the server's own ``timings``; then two
   requests at once (total tokens per wall second), the case the study's two slots are in.
2. **Study rates** (no LLM call): from the committed cache, per notebook and call family, the prompt tokens
   served from the server's prefix cache, and the processing and generation rates the server recorded.
3. **Gateway overhead**: the same nudge prompts straight to the server and through the gateway (empty cache).
4. With ``--cold-notebook NAME``: that notebook executed cold (its own calls live, earlier chapters' from the
   cache, as in a cold ``make all``; into a temporary output folder) and warm (replaying that cache); the cold
   run's requests are checked against the committed cache, so a scheduling change that altered a request would
   show up as new keys. The figures are kept in ``outputs/bench/NAME.json``.
5. With ``--warm-all`` (alone, no model): ``make all`` replaying the committed cache, timed step by step, kept in
   ``outputs/bench/make_all_warm.json``.
6. **Gateway throughput** (no model; alone with ``--gateway-only``): calls/s through the gateway against a fake
   OpenAI-compatible endpoint that answers at once (the tests' :class:`~tests.fakes.FakeOpenAI`, in its own
   process so that it does not share the gateway's interpreter lock), at concurrency 1, 8 and 32, with an empty
   cache (every call live and written) and then replaying that cache. *Added ms per call* is what the gateway
   costs each call on top of the bare HTTP request: c · (gateway wall − bare wall) / n for n calls at
   concurrency c, the bare wall being the same n request bodies sent by c threads over one reused HTTP client
   (a replay sends none, so there it is all of c · wall / n).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.synchronize
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import httpx
import pandas as pd
from pydantic import BaseModel

from lib import design, nudges, paths
from lib.data import load_journal_entries, load_noveleval
from lib.embeddings import STORE_ENV
from lib.llm import server
from lib.llm.cache import Entry, ResponseCache
from lib.llm.gateway import Endpoint, Gateway, LLMCall
from lib.tools import pipeline

BENCH_PORT = 8799
GRID = {
    "default": server.SETTINGS,
    "ubatch 128": replace(server.SETTINGS, n_ubatch=128),
    "1 decode thread": replace(server.SETTINGS, threads=1),
}


def _serve(settings: server.ServerSettings, port: int = BENCH_PORT) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "lib.llm.server", "serve", "--port", str(port),
                             *server.settings_args(settings)], cwd=paths.ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not server.is_up(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"bench server on port {port} did not start")
        time.sleep(0.3)
    return proc


def _timed(port: int, content: str, max_tokens: int) -> dict:
    body = {"model": server.MODEL_NAME, "messages": [{"role": "user", "content": content}], "temperature": 0.0,
            "max_tokens": max_tokens, "cache_prompt": False}
    response = httpx.post(f"{server.embedded_base_url(port)}/chat/completions", json=body, timeout=900).json()
    return response["timings"]


def raw_rates(grid: dict[str, server.ServerSettings], n_prompts: int = 2) -> pd.DataFrame:
    """Prompt-processing and generation tokens/s of the bare server for each setting (see module docstring)."""
    passages = load_noveleval().passage.tolist()
    long_prompts = [" ".join(passages[i * 6:(i + 1) * 6]) + "\nSummarise the passages above."
                    for i in range(n_prompts + 2)]
    rows = []
    for name, settings in grid.items():
        proc = _serve(settings)
        try:
            _timed(BENCH_PORT, "Say hello.", 4)  # warm-up: weights paged in
            prompt = [_timed(BENCH_PORT, p, 1) for p in long_prompts[:n_prompts]]
            generation = [_timed(BENCH_PORT, f"[{i}] Count from 1 to 60, one number per line.", 96)
                          for i in range(n_prompts)]
            pair: list[dict] = [{}, {}]

            def timed_pair(k: int, pair: list[dict] = pair) -> None:
                pair[k] = _timed(BENCH_PORT, long_prompts[n_prompts + k], 48)

            start = time.perf_counter()
            threads = [threading.Thread(target=timed_pair, args=(k,)) for k in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait()
        rows.append({
            "setting": name, **vars(settings),
            "prompt_tok_s": sum(t["prompt_n"] for t in prompt) / sum(t["prompt_ms"] / 1000 for t in prompt),
            "prompt_tokens_each": prompt[0]["prompt_n"],
            "generation_tok_s": (sum(t["predicted_n"] for t in generation)
                                 / sum(t["predicted_ms"] / 1000 for t in generation)),
            "two_at_once_total_tok_s": sum(t["prompt_n"] + t["predicted_n"] for t in pair) / wall,
        })
    return pd.DataFrame(rows)


def _entry_timings(entries: Iterable[Entry]) -> pd.DataFrame:
    """One row per cache entry: notebook, call family (the call label before its first ':'), prompt tokens,
    those the server processed (the rest came from its prefix cache), generated tokens, and the server's times."""
    rows = []
    for entry in entries:
        timings, usage = entry["response"].get("timings") or {}, entry["response"].get("usage") or {}
        rows.append({"notebook": entry["notebook"], "calls": entry["label"].split(":")[0],
                     "prompt_tokens": usage.get("prompt_tokens", 0), "processed": timings.get("prompt_n", 0),
                     "prompt_s": timings.get("prompt_ms", 0) / 1000, "generated": timings.get("predicted_n", 0),
                     "generation_s": timings.get("predicted_ms", 0) / 1000})
    return pd.DataFrame(rows, columns=["notebook", "calls", "prompt_tokens", "processed", "prompt_s", "generated",
                                       "generation_s"])


def study_rates(cache_path: Path = paths.LLM_CACHE) -> pd.DataFrame:
    """Per notebook and call family: requests, prompt tokens, the share served from the server's prefix cache, and
    the server's recorded prompt and generation rates (:func:`_entry_timings`)."""
    frame = _entry_timings(_entries(cache_path).values())
    table = frame.groupby(["notebook", "calls"]).agg(
        requests=("processed", "size"), prompt_tokens=("prompt_tokens", "sum"), processed=("processed", "sum"),
        prompt_s=("prompt_s", "sum"), generated=("generated", "sum"), generation_s=("generation_s", "sum"))
    table["cached_share"] = 1 - table.processed / table.prompt_tokens
    table["prompt_tok_s"] = table.processed / table.prompt_s
    table["generation_tok_s"] = table.generated / table.generation_s
    return table.drop(columns=["prompt_s", "generation_s"]).reset_index()


def _nudge_calls(n_prompts: int) -> list[LLMCall]:
    params = pipeline.parameters_for("01_nudge_candidates")
    sampled = nudges.sample_entries(load_journal_entries("test"), n_prompts, seed=params.get("seed", 0) + 1)
    n = params.get("n_candidates", 5)
    return [LLMCall(nudges.build_messages(r.text, design.PERSONAS_BY_ID[r.persona_id], r.category, n),
                    nudges.candidate_set_schema(n), max_tokens=110 * n, max_attempts=1) for r in sampled.itertuples()]


def gateway_overhead(n_prompts: int) -> dict[str, float]:
    """Completion tokens/s: direct HTTP vs the gateway, sequential, same prompts and parameters."""
    server.ensure_running()
    calls = _nudge_calls(n_prompts)
    endpoint = Endpoint(server.embedded_base_url(), server.MODEL_NAME, server.MODEL_IDENTITY, embedded=True)

    def direct() -> tuple[int, float]:
        tokens, start = 0, time.perf_counter()
        with httpx.Client(timeout=600) as client:
            for call in calls:
                response = client.post(f"{endpoint.base_url}/chat/completions",
                                       json=call.body(endpoint.model, attempt=1)).json()
                tokens += response["usage"]["completion_tokens"]
        return tokens, time.perf_counter() - start

    def via_gateway() -> tuple[int, float]:
        with tempfile.TemporaryDirectory() as cache, \
                Gateway(endpoint, cache_path=Path(cache) / "cache.sqlite", notebook="bench", concurrency=1) as gateway:
            start = time.perf_counter()
            gateway.complete_many(calls, desc="bench")  # concurrency 1: one call after the other
            return gateway.ledger.completion_tokens, time.perf_counter() - start

    direct()  # warm-up: fills the server's prefix cache for both timed passes
    d_tokens, d_time = direct()
    g_tokens, g_time = via_gateway()
    return {"prompts": len(calls), "direct tok/s": d_tokens / d_time, "gateway tok/s": g_tokens / g_time,
            "gateway / direct": (g_tokens / g_time) / (d_tokens / d_time)}


class _Grade(BaseModel):
    grade: int


def _serve_fake(urls: multiprocessing.Queue, stop: multiprocessing.synchronize.Event) -> None:
    """Run the tests' fake endpoint (keep-alive, every answer ``{"grade": 3}`` at once) until ``stop`` is set."""
    from tests.fakes import FakeOpenAI, always

    with FakeOpenAI(always('{"grade": 3}'), keep_alive=True) as fake:
        urls.put(fake.base_url)
        stop.wait()


def _bare_wall(base_url: str, bodies: list[dict], concurrency: int) -> float:
    """Seconds to POST ``bodies`` with ``concurrency`` threads over one reused HTTP client, answers parsed."""
    pending = list(reversed(bodies))
    lock = threading.Lock()
    errors: list[BaseException] = []
    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=concurrency)) as client:
        def work() -> None:
            while True:
                with lock:
                    if not pending or errors:
                        return
                    body = pending.pop()
                try:
                    client.post(f"{base_url}/chat/completions", json=body).raise_for_status().json()
                except httpx.HTTPError as exc:  # a failed request would make the bare wall look short
                    with lock:
                        errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(concurrency)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    return wall


def gateway_throughput(n_calls: int = 1000, levels: Sequence[int] = (1, 8, 32)) -> pd.DataFrame:
    """Calls/s and added ms per call of the gateway against a fake endpoint that answers at once (see the module
    docstring), live into an empty cache and replaying it, at each concurrency of ``levels``."""
    context = multiprocessing.get_context("spawn")
    urls: multiprocessing.Queue = context.Queue()
    stop = context.Event()
    fake = context.Process(target=_serve_fake, args=(urls, stop), daemon=True)
    fake.start()
    rows = []
    try:
        endpoint = Endpoint(urls.get(timeout=60), "fake-model", "fake-model", embedded=False)
        for level in levels:
            calls = [LLMCall([{"role": "user", "content": f"Rate item {i}."}], _Grade, call_label=f"bench:{i}",
                             max_attempts=1) for i in range(n_calls)]
            bare = _bare_wall(endpoint.base_url, [call.body(endpoint.model, 1) for call in calls], level)
            with tempfile.TemporaryDirectory() as tmp:  # an empty cache for each level
                for mode in ("live", "replay"):
                    with Gateway(endpoint, cache_path=Path(tmp) / "cache.sqlite", mode=mode, notebook="bench",
                                 concurrency=level) as gateway:
                        start = time.perf_counter()
                        results = gateway.complete_many(calls, desc=f"{mode} ×{level}")
                        wall = time.perf_counter() - start
                    failed = [result.error for result in results if not result.ok]
                    if failed:
                        raise RuntimeError(f"{len(failed)} calls to the fake endpoint failed: {failed[0]}")
                    added = level * (wall - (bare if mode == "live" else 0.0)) / n_calls
                    rows.append({"cache": "empty (live)" if mode == "live" else "replay", "concurrency": level,
                                 "calls": n_calls, "calls/s": n_calls / wall, "added ms/call": 1000 * added,
                                 "bare HTTP calls/s": n_calls / bare if mode == "live" else float("nan")})
    finally:
        stop.set()
        fake.join(timeout=10)
    return pd.DataFrame(rows)


def _chapter(notebook: str) -> str:
    """The chapter number a notebook or ledger name starts with ("07_validity-drift-c1" → "07")."""
    return notebook.split("_", 1)[0]


def keys_of_earlier_chapters(name: str) -> set[str]:
    """The cache keys the notebooks before ``name`` and their measurements ask for today: each replayed in order
    (``LLM_MODE=replay`` from the committed cache, outputs in a scratch folder, ``LLM_CACHE_USAGE_LOG`` on). A
    call that moved from an earlier chapter to ``name`` keeps the notebook its entry was first written by, so the
    entries' ``notebook`` field cannot tell which calls earlier chapters still make."""
    earlier = [n for n in pipeline.notebook_names() if _chapter(n) < _chapter(name)]
    with tempfile.TemporaryDirectory() as tmp:
        _copy_outputs(Path(tmp))
        log = Path(tmp) / "usage.log"
        env = {**os.environ, "STUDY_OUTPUT_DIR": tmp, "LLM_CACHE": str(paths.LLM_CACHE), "LLM_MODE": "replay",
               "LLM_CACHE_USAGE_LOG": str(log)}
        for notebook in earlier:
            for command in ("measure", "run"):
                subprocess.run([sys.executable, "-m", "lib.tools.pipeline", command, notebook], cwd=paths.ROOT,
                               env=env, check=True, capture_output=True)
        return set(log.read_text(encoding="utf-8").split()) if log.exists() else set()


def _copy_outputs(out: Path) -> None:
    """Every committed output folder but the ledgers, the rendered report, the bench records and the cache's locks
    (the cache is a file)."""
    skip = {f"{paths.LLM_CACHE.name}.locks", paths.EXECUTED_NOTEBOOKS.name, paths.HTML.name, paths.LEDGERS.name,
            "bench"}
    for folder in paths.OUTPUTS.iterdir():
        if folder.is_dir() and folder.name not in skip:
            shutil.copytree(folder, out / folder.name)


def seed_cold_run(name: str, out: Path, earlier_keys: set[str]) -> int:
    """Fill ``out`` as ``make all`` from an empty cache would have it when it reaches notebook ``name``: every
    committed output folder but the cache, the ledgers and the rendered report (earlier chapters' tables, CRS logs,
    monitor database), the ledgers of earlier chapters (a chapter's cost table reads them), and the cache entries
    earlier chapters ask for (``earlier_keys``, :func:`keys_of_earlier_chapters`: their calls are cache hits for
    ``name``, as in a cold ``make all``). Returns the number of cache entries copied."""
    _copy_outputs(out)
    for ledger in (paths.OUTPUTS / paths.LEDGERS.name).glob("*.json"):
        if _chapter(ledger.stem) < _chapter(name):
            (out / paths.LEDGERS.name).mkdir(exist_ok=True)
            shutil.copy2(ledger, out / paths.LEDGERS.name / ledger.name)
    earlier = {key: entry for key, entry in _entries(paths.LLM_CACHE).items() if key in earlier_keys}
    with ResponseCache(out / paths.LLM_CACHE.name) as cache:
        cache.put_all(earlier)
    return len(earlier)


def _entries(cache_path: Path) -> dict[str, Entry]:
    """Every entry of the cache file ``cache_path`` by key (none when it does not exist)."""
    with ResponseCache(cache_path) as cache:
        return dict(cache.items())


def _prefix_share(entries: Sequence[Entry]) -> float:
    """The share of the prompt tokens of ``entries`` that the server served from its prefix cache, in %."""
    frame = _entry_timings(entries)
    prompt = frame.prompt_tokens.sum()
    return float(100 * (1 - frame.processed.sum() / prompt)) if prompt else float("nan")


def notebook_cold_warm(name: str, keep: bool = False) -> dict[str, float]:
    """Wall time of one notebook cold and then replaying it, in a temporary output folder set up as a cold ``make
    all`` reaches it (:func:`seed_cold_run`): first its measurements (``pipeline.MEASUREMENTS``, timed apart; the
    chapter's budget counts them, :func:`lib.costs.cold_run`), then the notebook with every call of its own live.
    Also: the requests each sent (new cache entries), how many are not in the committed cache (0 when scheduling
    changed no request), and the share of the notebook's prompt tokens the server served from its prefix cache. The
    result is also written to ``outputs/bench/<name>.json`` with the date and the machine, the record the chapter's
    cold budget is read from. With ``keep``, every cache entry the cold run wrote is copied into the committed cache
    (replacing an entry of the same request), so a chapter whose requests changed needs no second live run: a replay
    then writes its outputs."""
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / paths.LLM_CACHE.name
        times["cache entries of earlier chapters"] = seed_cold_run(name, Path(tmp), keys_of_earlier_chapters(name))
        # a fresh embedding store: the cold run computes every vector, as on a new machine; the warm run reads them
        env = {**os.environ, "STUDY_OUTPUT_DIR": tmp, "LLM_CACHE": str(cache), "LLM_MODE": "live",
               STORE_ENV: str(Path(tmp) / paths.EMBEDDING_STORE.name)}
        steps = [("measurements", "measure"), ("cold", "run"), ("warm", "run")]
        committed, seeded = _entries(paths.LLM_CACHE), set(_entries(cache))
        try:
            for step, command in steps:
                before = _entries(cache)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "lib.tools.pipeline", command, name], cwd=paths.ROOT,
                               env={**env, "LLM_MODE": "replay"} if step == "warm" else env, check=True,
                               capture_output=True)
                times[f"{step} s"] = time.perf_counter() - start
                new = [entry for key, entry in _entries(cache).items() if key not in before]
                if step != "warm":
                    times[f"{step} requests sent"] = len(new)
                if step == "cold":
                    times["cold prompt tokens served from the prefix cache, %"] = _prefix_share(new)
        finally:
            # Also after a failed step: the calls it made are not lost. An entry the committed cache already holds
            # is replaced: the server is not deterministic across runs at T = 0, and the cold run is the record.
            if keep:
                with ResponseCache(paths.LLM_CACHE) as committed_cache:
                    committed_cache.put_all({key: entry for key, entry in _entries(cache).items() if key not in seeded})
        times["cold requests not in the committed cache"] = len(set(_entries(cache)) - set(committed))
        print(f"Rates of the cold run of {name}, per call family:\n"
              f"{study_rates(cache).round(3).to_string(index=False)}")
    record = {"notebook": name, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
              "model": server.MODEL_NAME, **{k: round(v, 1) for k, v in times.items()}}
    (paths.OUTPUTS / "bench").mkdir(exist_ok=True)
    (paths.OUTPUTS / "bench" / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return times


def warm_make_all() -> dict[str, float]:
    """Wall time of ``make all`` replaying the committed cache, step by step as the Makefile runs it: the plan, each
    chapter (its measurements, then its notebook) and the book, each in its own process, into a temporary output
    folder seeded with the committed outputs (the cache is read where it is, as a replay only reads it; so is the
    machine's embedding store, :data:`lib.paths.EMBEDDING_STORE`, as a second ``make all`` finds it). The
    seconds per step and their total are also written to ``outputs/bench/make_all_warm.json`` with the date and
    the machine: what a reader who changes one parameter waits for when no LLM call is needed."""
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        _copy_outputs(Path(tmp))
        env = {**os.environ, "STUDY_OUTPUT_DIR": tmp, "LLM_CACHE": str(paths.LLM_CACHE), "LLM_MODE": "replay"}
        steps = [("plan", ["lib.tools.profiles"]),
                 *((name, ["lib.tools.pipeline", "chapter", name]) for name in pipeline.notebook_names()),
                 ("book", ["lib.tools.pipeline", "book"])]
        for step, command in steps:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", *command], cwd=paths.ROOT, env=env, check=True, capture_output=True)
            times[f"{step} s"] = time.perf_counter() - start
    times = {"total s": sum(times.values()), **times}
    record = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), **{k: round(v, 1) for k, v in times.items()}}
    (paths.OUTPUTS / "bench").mkdir(exist_ok=True)
    (paths.OUTPUTS / "bench" / "make_all_warm.json").write_text(json.dumps(record, indent=1) + "\n")
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--grid", nargs="*", default=list(GRID), choices=list(GRID),
                        help="server settings to measure (none: skip the raw rates)")
    parser.add_argument("--prompts", type=int, default=2,
                        help="prompts for the gateway overhead comparison (0: skip it)")
    parser.add_argument("--cold-notebook", default=None,
                        help="also time this notebook cold and warm (e.g. 07_validity)")
    parser.add_argument("--warm-all", action="store_true",
                        help="only time make all replaying the committed cache, step by step (no model needed)")
    parser.add_argument("--keep", action="store_true",
                        help="copy every cache entry the cold run wrote into the committed cache")
    parser.add_argument("--gateway-calls", type=int, default=1000,
                        help="calls per concurrency level for the gateway throughput (0: skip it)")
    parser.add_argument("--gateway-only", action="store_true",
                        help="only the gateway throughput against a fake endpoint (no model needed)")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    if args.warm_all:
        print("\n".join(f"make all, warm: {k} {v:,.1f}" for k, v in warm_make_all().items()))
        return
    if args.gateway_calls:
        print("Gateway throughput against a fake endpoint that answers at once:")
        print(gateway_throughput(args.gateway_calls).round(2).to_string(index=False))
    if args.gateway_only:
        return
    print("Study rates recorded by the server (committed cache):")
    print(study_rates().round(3).to_string(index=False))
    try:
        if args.grid:
            print("\nRaw rates of the bare server (xllamacpp, no gateway):")
            print(raw_rates({name: GRID[name] for name in args.grid}).round(2).to_string(index=False))
        if args.prompts:
            print("\nGateway overhead:")
            print("\n".join(f"{k:>18}: {v:,.2f}" for k, v in gateway_overhead(args.prompts).items()))
        if args.cold_notebook:
            print("\n".join(f"{args.cold_notebook} {k}: {v:,.1f}"
                            for k, v in notebook_cold_warm(args.cold_notebook, args.keep).items()))
    finally:
        print(server.stop(autostarted_only=True))


if __name__ == "__main__":
    main()
