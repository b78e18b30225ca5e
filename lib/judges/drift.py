"""Run-to-run drift of a judge at temperature 0: the same requests sent again, on a freshly started server, at
each concurrency, compared with the answers the study used.

A T = 0 judge is deterministic only up to its server: llama.cpp batches the requests of its parallel slots and
reuses cached prompt prefixes, and both change the floating-point path, so a grade's probabilities (and sometimes
its argmax) move between runs. That noise, not sampling, is what a rerun of the study meets; it is measured here
rather than assumed away, and read beside the differences the chapters report.

Each rerun goes through a gateway made with ``replicate`` (:class:`lib.llm.gateway.Gateway`): the requests are
unchanged for the server but cached apart, so a replay reproduces the measurement.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from lib.analysis.stats import unit_bootstrap
from lib.judges.items import JudgeItem
from lib.judges.relevance import Judgment, RelevancePrompts, judge_pointwise
from lib.llm.gateway import Gateway

DRIFT_COLUMNS = ("rerun", "items", "grades_changed", "share_changed", "mean_abs_change", "ci_low", "ci_high",
                 "ci_over", "max_abs_change")


def rerun_label(concurrency: int) -> str:
    """The replicate label of a rerun at ``concurrency`` on a freshly started server."""
    return f"drift rerun: concurrency {concurrency}, fresh server"


def rerun(make_gateway: Callable[[int, str], Gateway], restart: Callable[[], object] | None,
          items: Sequence[JudgeItem], concurrencies: Sequence[int], prompts: RelevancePrompts,
          call_label: str = "drift", save_ledgers: bool = False) -> dict[str, list[Judgment]]:
    """The pointwise judgments of ``items`` again, once per concurrency: ``make_gateway(concurrency, label)`` judges
    every item (and, with ``save_ledgers``, saves its ledger). ``restart`` (when given: a live embedded endpoint)
    starts the server afresh before the rerun's first live request, as the endpoint's ``prepare`` hook, so a rerun
    served from the cache starts no server. Keyed by :func:`rerun_label`."""
    out = {}
    for concurrency in concurrencies:
        label = rerun_label(concurrency)
        with make_gateway(concurrency, label) as gateway:
            if restart is not None:
                gateway.endpoint = replace(gateway.endpoint, prepare=restart)
            out[label] = judge_pointwise(gateway, items, f"{call_label}-c{concurrency}", prompts=prompts)
            if save_ledgers:
                gateway.save_ledger()
    return out


def drift_table(original: Sequence[Judgment], reruns: Mapping[str, Sequence[Judgment]], queries: Sequence[str],
                seed: int, n_resamples: int = 2000) -> pd.DataFrame:
    """Per rerun, over the items judged in both runs: how many argmax grades changed, and the mean and largest
    absolute change of E[g], the mean with a bootstrap interval over the items' queries. Columns
    ``DRIFT_COLUMNS``."""
    rows = []
    for label, judgments in reruns.items():
        both = [k for k, (a, b) in enumerate(zip(original, judgments, strict=True))
                if a.ok and b.ok and a.expected_grade is not None and b.expected_grade is not None]
        changed = sum(original[k].grade != judgments[k].grade for k in both)
        deltas = np.array([abs(float(judgments[k].expected_grade or 0.0) - float(original[k].expected_grade or 0.0))
                           for k in both])  # both E[g] exist for every k kept
        interval = unit_bootstrap(np.mean, [deltas], [queries[k] for k in both], "queries", seed, n_resamples)
        rows.append({"rerun": label, "items": len(both), "grades_changed": changed,
                     "share_changed": changed / len(both) if both else np.nan, "mean_abs_change": interval.value,
                     "ci_low": interval.low, "ci_high": interval.high, "ci_over": interval.ci_over,
                     "max_abs_change": float(deltas.max()) if len(deltas) else np.nan})
    return pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))
