"""What a run of the study at a profile's sizes will ask of the LLM endpoint, printed before the run starts.

A profile is a sizes overlay on ``params.yaml`` (``params.full.yaml`` for ``make all PROFILE=full``; see
:func:`lib.tools.pipeline.parameters_for`). Its call counts are measured, not modelled: for the default sizes
they are the committed ledgers' calls; for a profile, the record its dry run against a fake endpoint wrote
(``make dry-run PROFILE=full`` → ``outputs/profiles/full.json``). The time and peak memory per chapter without LLM
latency that a dry run records (``outputs/profiles/default.json`` for the default sizes) are printed beside them.
A record made with other parameters than today's is said to be stale.

The projected time is calls ÷ throughput at two throughputs: the embedded model's, measured by ``make bench``'s
cold runs on this machine (requests sent ÷ wall seconds, over every recorded chapter), and one the user states
(``CALLS_PER_S``, e.g. what their vLLM cluster or hosted API sustains at the study's concurrency).

Tokens in and out per chapter are the committed ledgers' for the default sizes; for a profile, the committed run's
tokens per call times the profile's calls (a fake endpoint's tokens say nothing). Their cost is read at the
documented list prices of :data:`lib.costs.PRICES_USD_PER_MTOK` (:func:`cost_text`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from lib import costs, paths
from lib.llm.gateway import Endpoint
from lib.paths import shown
from lib.tools import pipeline

PROFILES = paths.OUTPUTS / "profiles"
DEFAULT = "default"  # the dry-run record of params.yaml's own sizes
BENCH = paths.OUTPUTS / "bench"


def parameters_digest(chapters: list[str], params_file: Path, profile: str | None) -> str:
    """SHA-256 of every chapter's parameters at ``profile``: a dry-run record is current while this is unchanged."""
    merged = {chapter: pipeline.parameters_for(chapter, params_file, profile) for chapter in chapters}
    return hashlib.sha256(yaml.safe_dump(merged, sort_keys=True).encode()).hexdigest()


def ledger_totals(chapter: str, ledgers: Path = paths.LEDGERS) -> dict[str, int]:
    """Calls, requests, failures (all kinds) and prompt and completion tokens of ``chapter``'s ledger and side
    ledgers in ``ledgers``."""
    found = [ledgers / f"{chapter}.json", *sorted(ledgers.glob(f"{chapter}-*.json"))]
    records = [json.loads(path.read_text()) for path in found if path.exists()]
    return {"calls": sum(int(r["calls"]) for r in records), "requests": sum(int(r["requests"]) for r in records),
            "failures": sum(int(n) for r in records for n in r["failures"].values()),
            **{tokens: sum(int(r.get(tokens, 0)) for r in records) for tokens in TOKENS}}


TOKENS = ("prompt_tokens", "completion_tokens")


def embedded_rate(bench: Path = BENCH) -> float | None:
    """Requests per wall second of the embedded model in ``make bench``'s cold runs (chapters and their
    measurements, summed), None when no cold run is recorded."""
    records = [json.loads(path.read_text()) for path in sorted(bench.glob("*.json"))]
    requests = sum(r.get("cold requests sent", 0) + r.get("measurements requests sent", 0) for r in records)
    seconds = sum(r.get("cold s", 0.0) + r.get("measurements s", 0.0) for r in records)
    return requests / seconds if seconds else None


def read_record(profile: str, profiles: Path = PROFILES) -> dict[str, Any] | None:
    """The dry-run record of ``profile``, None when there is none."""
    path = profiles / f"{profile}.json"
    return json.loads(path.read_text()) if path.exists() else None


def plan(chapters: list[str], profile: str | None, calls_per_s: float, params_file: Path = pipeline.PARAMS_FILE,
         ledgers: Path = paths.LEDGERS, profiles: Path = PROFILES, bench: Path = BENCH) -> tuple[pd.DataFrame, str]:
    """Per chapter, its LLM calls and their projected time at the embedded model's measured rate and at
    ``calls_per_s``; and a sentence saying where the counts come from (and whether they are current)."""
    rate = embedded_rate(bench)
    record = read_record(profile or DEFAULT, profiles)
    dry_run = (f"the dry run of {'profile ' + profile if profile else 'the default sizes'} "
               f"({record['date']}, {record['cpus']} CPUs)" if record else "")
    if record is not None and record["parameters_sha256"] != parameters_digest(chapters, params_file, profile):
        rerun = f"make dry-run PROFILE={profile}" if profile else "make dry-run"
        dry_run += f"; STALE: the parameters changed since, rerun `{rerun}`"
    rows = None if record is None else [record["chapters"].get(chapter, {}) for chapter in chapters]
    committed = {chapter: ledger_totals(chapter, ledgers) for chapter in chapters}
    if profile is None:
        calls = {chapter: committed[chapter]["calls"] for chapter in chapters}
        source = "calls and tokens: the committed run's ledgers"
        if rows is not None:
            source += f"; time and memory without the LLM: {dry_run}"
    elif rows is None:
        return pd.DataFrame(), (f"profile {profile}: no dry-run record ({shown(profiles / f'{profile}.json')}); "
                                f"`make dry-run PROFILE={profile}` counts its calls against a fake endpoint")
    else:
        calls = {chapter: int(row.get("calls", 0)) for chapter, row in zip(chapters, rows, strict=True)}
        source = f"calls: {dry_run}; tokens: the committed run's tokens per call times these calls"
    frame = pd.DataFrame({"chapter": chapters, "LLM calls": [calls[c] for c in chapters]})
    for tokens in TOKENS:
        frame[tokens.replace("_", " ")] = pd.Series(
            [_projected_tokens(committed[c], tokens, calls[c]) for c in chapters]).round().astype("Int64")
    total = {"chapter": "total", **frame.drop(columns="chapter").sum(min_count=len(frame)).to_dict()}
    frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    frame["minutes at the embedded model's rate"] = (frame["LLM calls"] / rate / 60).round(1) if rate else None
    frame[f"minutes at {calls_per_s:g} calls/s"] = (frame["LLM calls"] / calls_per_s / 60).round(1)
    if rows is not None:  # what the dry run measured beside the calls: the time and memory the LLM does not take
        wall = [row.get("wall_s", 0.0) / 60 for row in rows]
        peak = [row.get("peak_rss_mib", 0.0) for row in rows]
        frame["minutes without the LLM"] = [*wall, sum(wall)]
        frame["peak MiB"] = [*peak, max(peak)]
        frame = frame.round({"minutes without the LLM": 1, "peak MiB": 0})
    measured = (f"the embedded model's rate {rate:.2f} requests/s is from the cold runs make bench recorded in "
                f"{shown(bench)} (on the machine that recorded them, not necessarily this one)"
                if rate else "no make bench cold run recorded for the embedded model's rate")
    return frame, f"{source}; {measured}; {calls_per_s:g} calls/s is the stated throughput (CALLS_PER_S)."


def _projected_tokens(committed: dict[str, int], tokens: str, calls: int) -> float:
    """A chapter's ``tokens`` at ``calls``: the committed run's tokens per call times ``calls`` (the committed
    tokens themselves at the committed calls); NaN when calls are asked of a chapter the committed run made none."""
    if calls == committed["calls"]:
        return float(committed[tokens])
    return float("nan") if committed["calls"] == 0 else committed[tokens] / committed["calls"] * calls


def cost_text(frame: pd.DataFrame, prices: dict[str, tuple[float, float]] = costs.PRICES_USD_PER_MTOK) -> str:
    """The plan's total tokens at each hosted model's list price (:func:`lib.costs.hosted_cost`: cached input not
    discounted, so an upper bound; another tokenizer counts somewhat differently)."""
    total = frame[frame.chapter == "total"].rename(columns=lambda c: c.replace(" ", "_"))
    if total[list(TOKENS)].isna().to_numpy().any():
        return "cost: unknown (a chapter asks for calls the committed run never made, so its tokens are unknown)"
    usd = costs.hosted_cost(total.set_index("chapter"), prices).iloc[0]
    return ("cost of these tokens at list prices (lib.costs.PRICES_USD_PER_MTOK, USD, cached input not discounted): "
            + ", ".join(f"{model} {value:,.2f}" for model, value in usd.items()) + ".")


def endpoint_text(endpoint: Endpoint) -> str:
    """Which endpoint a role's calls would go to: the embedded model, or the model at a base URL."""
    return (f"the embedded model {endpoint.identity}" if endpoint.embedded
            else f"{endpoint.model} at {endpoint.base_url}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.profiles", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default=None, help="sizes overlay params.PROFILE.yaml (default: params.yaml)")
    parser.add_argument("--calls-per-s", type=float, default=10.0, help="the stated endpoint throughput")
    args = parser.parse_args(argv)
    frame, source = plan(pipeline.notebook_names(), args.profile, args.calls_per_s)
    print(f"Plan for {'profile ' + args.profile if args.profile else 'the default sizes'}:")
    for role in ("generator", "judge"):
        print(f"  {role}: {endpoint_text(Endpoint.from_env(role))}")
    if not frame.empty:
        print(frame.to_string(index=False))
        print(cost_text(frame))
    print(source)


if __name__ == "__main__":
    main()
