"""What the study's LLM work would cost on hosted models, from the ledgers' token counts.

PRICES_USD_PER_MTOK is a documented parameter table (USD per million tokens, input / output), taken from
the providers' public list prices as last checked by the authors for 2025; it is not scraped and will go
stale — edit it before relying on the numbers. Cached-input discounts are ignored (upper bound).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from lib import paths

PRICES_USD_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "claude-3.5-haiku": (0.80, 4.00),
    "claude-sonnet-4": (3.00, 15.00),
}


def read_ledgers(folder: Path = paths.LEDGERS, up_to: str | None = None) -> pd.DataFrame:
    """One row per ledger in ``folder`` (every chapter that called an LLM saves one), in notebook order: model,
    calls, requests, failed_calls, prompt_tokens, completion_tokens, recorded_llm_time_s. ``up_to`` (a chapter
    number such as ``"04"``) keeps the ledgers of that chapter and the ones before it, so a chapter's table does
    not change when a later chapter runs."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        if up_to is not None and path.stem[:len(up_to)] > up_to:
            continue
        ledger = json.loads(path.read_text(encoding="utf-8"))
        rows.append({"notebook": path.stem, "model": ledger["model"], "calls": ledger["calls"],
                     "requests": ledger["requests"], "failed_calls": sum(ledger["failures"].values()),
                     "prompt_tokens": ledger["prompt_tokens"], "completion_tokens": ledger["completion_tokens"],
                     "recorded_llm_time_s": ledger["recorded_latency_s"]})
    return pd.DataFrame(rows).set_index("notebook")


def hosted_cost(ledgers: pd.DataFrame, prices: dict[str, tuple[float, float]] = PRICES_USD_PER_MTOK) -> pd.DataFrame:
    """USD per notebook and model: prompt_tokens·p_in/1e6 + completion_tokens·p_out/1e6 (same token counts;
    another tokenizer would count somewhat differently)."""
    return pd.DataFrame({model: (ledgers["prompt_tokens"] * p_in + ledgers["completion_tokens"] * p_out) / 1e6
                         for model, (p_in, p_out) in prices.items()})


CHAPTER_BUDGET_MIN = 20  # the cold wall time one chapter (its make target) may take on the embedded model, 2 cores
STUDY_BUDGET_MIN = 90  # the cold wall time of the whole study (every chapter, make all) on the same machine


def _cold_record(name: str, folder: Path) -> dict | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def cold_run(name: str, folder: Path = paths.OUTPUTS / "bench") -> str:
    """One sentence on the latest cold run of notebook ``name`` recorded by ``make bench COLD=<name>`` in
    ``folder`` (:func:`lib.tools.bench.notebook_cold_warm`): the notebook's wall time and the requests it sent, its
    measurements' (run before it by the same ``make`` target; named when they sent requests), and their sum, as
    :func:`cold_runs` sums it, against :data:`CHAPTER_BUDGET_MIN`; the date and the CPUs. Says so when none is
    recorded."""
    record = _cold_record(name, folder)
    if record is None:
        return f"No cold run of {name} is recorded ({paths.shown(folder / f'{name}.json')}: make bench COLD={name})."
    total = (record["cold s"] + record["measurements s"]) / 60
    within = "within" if total <= CHAPTER_BUDGET_MIN else "over"
    measured = (f" and its measurements, run before it, {record['measurements s'] / 60:.1f} min for "
                f"{int(record['measurements requests sent'])} requests" if record["measurements requests sent"] else "")
    return (f"Cold run of {name} (its own calls live, earlier chapters' from the cache; make bench, {record['date']}, "
            f"{record['cpus']} CPUs, {record['model']}): {record['cold s'] / 60:.1f} min ({record['cold s']:,.1f} s) "
            f"for {int(record['cold requests sent'])} requests{measured}; {total:.1f} min with its measurements, "
            f"{within} the chapter budget of {CHAPTER_BUDGET_MIN} min; "
            f"{int(record['cold requests not in the committed cache'])} of its requests are not in the committed "
            f"cache.")


def cold_runs(names: Sequence[str], budget_min: float, folder: Path = paths.OUTPUTS / "bench") -> str:
    """One sentence on the recorded cold runs of several notebooks (as :func:`cold_run`, measurements included)
    against a budget for all of them together, and one naming each notebook over :data:`CHAPTER_BUDGET_MIN` (a
    total within its budget does not make every chapter so); names the notebooks with no record."""
    records = {name: _cold_record(name, folder) for name in names}
    missing = [name for name, record in records.items() if record is None]
    if missing:
        return (f"No cold run of {', '.join(missing)} is recorded ({paths.shown(folder)}: make bench COLD=<name>), "
                f"so the budget of {budget_min:g} min for {' + '.join(names)} is unchecked.")
    minutes = {name: (r["cold s"] + r["measurements s"]) / 60 for name, r in records.items() if r is not None}
    total = sum(minutes.values())
    requests = sum(int(r["cold requests sent"]) + int(r["measurements requests sent"]) for r in records.values()
                   if r is not None)
    dates = sorted({str(r["date"]) for r in records.values() if r is not None})
    within = "within" if total <= budget_min else "over"
    if len(names) == 1:
        return (f"Cold run of {names[0]} (make bench, {dates[0]}): {total:.1f} min for {requests} requests, {within} "
                f"its budget of {budget_min:g} min.")
    over = [f"{name} ({m:.1f} min)" for name, m in minutes.items() if m > CHAPTER_BUDGET_MIN]
    return (f"Cold runs of {' + '.join(names)} (make bench, {', '.join(dates)}): "
            + " + ".join(f"{m:.1f}" for m in minutes.values())
            + f" = {total:.1f} min for {requests} requests, {within} their budget of {budget_min:g} min."
            + (f" Over the chapter budget of {CHAPTER_BUDGET_MIN} min: {', '.join(over)}." if over else ""))


def warm_make_all(folder: Path = paths.OUTPUTS / "bench") -> str:
    """One sentence on the latest ``make all`` replaying the committed cache, as ``make bench WARM_ALL=1`` recorded
    it in ``folder`` (:func:`lib.tools.bench.warm_make_all`): its total and the steps that took longest; says so
    when none is recorded."""
    path = folder / "make_all_warm.json"
    if not path.exists():
        return f"No warm make all is recorded ({paths.shown(path)}: make bench WARM_ALL=1)."
    record = json.loads(path.read_text(encoding="utf-8"))
    steps = sorted(((k.removesuffix(" s"), v) for k, v in record.items() if k.endswith(" s") and k != "total s"),
                   key=lambda step: -step[1])
    return (f"A make all replaying the committed cache (make bench WARM_ALL=1, {record['date']}, {record['cpus']} "
            f"CPUs) took {record['total s']:.0f} s; the longest steps: "
            + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in steps[:3]) + ".")
