"""``make bench``: what the gateway costs on top of the server, and what the cache saves.

1. The same nudge-generation prompts are sent straight to the embedded server over HTTP and through the
   gateway (with an empty temporary cache, so every call is live); completion tokens per second of each and
   their ratio. A warm-up pass first fills the server's prefix cache so both timed passes see the same state.
2. Notebook 01 executed by papermill cold (empty temporary LLM cache: every call live) and warm (the same
   cache, replay mode). Sizes: ``--entries`` (default: ``params.yaml``).
Prints a table; not a test.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from lib import design, nudges, paths
from lib.data import load_journal_entries
from lib.llm import server
from lib.llm.gateway import Endpoint, Gateway, response_format_for
from lib.tools import pipeline


def _calls(n_prompts: int) -> list[dict]:
    params = pipeline.parameters_for("01_nudge_candidates")
    sampled = nudges.sample_entries(load_journal_entries("test"), n_prompts, seed=params.get("seed", 0) + 1)
    n = params.get("n_candidates", 5)
    return [{"messages": nudges.build_messages(r.text, design.PERSONAS_BY_ID[r.persona_id], r.category, n),
             "schema": nudges.candidate_set_schema(n), "max_tokens": 110 * n} for r in sampled.itertuples()]


def throughput(n_prompts: int) -> dict[str, float]:
    """Completion tokens/s: direct HTTP vs the gateway, sequential, same prompts and parameters."""
    if not server.is_up():
        server.start_background(autostarted=True)
    calls = _calls(n_prompts)
    endpoint = Endpoint(server.embedded_base_url(), server.MODEL_NAME, server.MODEL_IDENTITY, embedded=True)

    def direct() -> tuple[int, float]:
        tokens, start = 0, time.perf_counter()
        with httpx.Client(timeout=600) as client:
            for call in calls:
                body = {"model": endpoint.model, "messages": call["messages"], "temperature": 0.0,
                        "max_tokens": call["max_tokens"], "seed": 0,
                        "response_format": response_format_for(call["schema"])}
                response = client.post(f"{endpoint.base_url}/chat/completions", json=body).json()
                tokens += response["usage"]["completion_tokens"]
        return tokens, time.perf_counter() - start

    def via_gateway() -> tuple[int, float]:
        with tempfile.TemporaryDirectory() as cache:
            gateway = Gateway(endpoint, cache_dir=Path(cache), notebook="bench", concurrency=1)
            start = time.perf_counter()
            for call in calls:
                gateway.complete(**call, max_attempts=1)
            return gateway.ledger.completion_tokens, time.perf_counter() - start

    direct()  # warm-up: fills the server's prefix cache for both timed passes
    d_tokens, d_time = direct()
    g_tokens, g_time = via_gateway()
    return {"prompts": len(calls), "direct tok/s": d_tokens / d_time, "gateway tok/s": g_tokens / g_time,
            "gateway / direct": (g_tokens / g_time) / (d_tokens / d_time)}


def notebook_cold_warm(entries: int | None) -> dict[str, float]:
    """Wall time of notebook 01 with an empty cache (live) and then replaying that cache."""
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        params = pipeline.parameters_for("01_nudge_candidates")
        if entries:
            params["n_entries"] = entries
        params_file = Path(tmp) / "params.yaml"
        params_file.write_text(yaml.safe_dump(params))
        for mode, label in (("live", "cold (live) s"), ("replay", "warm (replay) s")):
            env = {**os.environ, "STUDY_OUTPUT_DIR": tmp, "LLM_CACHE_DIR": str(Path(tmp) / "cache"), "LLM_MODE": mode}
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "papermill", str(paths.NOTEBOOKS / "01_nudge_candidates.ipynb"),
                            str(Path(tmp) / "01.ipynb"), "-f", str(params_file), "-k", "python3",
                            "--cwd", str(paths.NOTEBOOKS), "--no-progress-bar"],
                           check=True, env=env, capture_output=True)
            times[label] = time.perf_counter() - start
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4, help="prompts for the throughput comparison")
    parser.add_argument("--entries", type=int, default=None, help="n_entries for notebook 01 (default params.yaml)")
    args = parser.parse_args(argv)
    try:
        tput = throughput(args.prompts)
        print("\n".join(f"{k:>18}: {v:,.2f}" for k, v in tput.items()))
        nb = notebook_cold_warm(args.entries)
        print("\n".join(f"{k:>18}: {v:,.1f}" for k, v in nb.items()))
        print(f"{'warm / cold':>18}: {nb['warm (replay) s'] / nb['cold (live) s']:.3f}")
    finally:
        print(server.stop(autostarted_only=True))


if __name__ == "__main__":
    main()
