"""Chapter 02 (baselines: rankers): its bookkeeping sentence, and its one stated conclusion as a findings record:
the self_confidence ranker largely restates the generator's order (section "Self-confidence is mostly generator
order"), so an advantage it shows in chapter 04 may be the judge rating highly what the same model wrote first.

The verdict ``02.self_confidence_restates_order``: the mean over pools (entries) of Kendall's τ-b between a pool's
self-reported confidences and its generator order (``lib.rankers.confidence_vs_generator_order``; 1: confidence
never rises along the answer), with a percentile bootstrap interval over entries, against ``restatement_tau``
(0.5: half way from an unrelated order to the same order). The threshold was declared in issue #33, after the data
were seen: the verdict is not confirmatory. The rankers' known-answer verdicts are chapter 04's.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lib import rankers, verdicts
from lib.analysis.stats import unit_bootstrap
from lib.verdicts import Claim, Verdict

# The report at commit cd3530b (outputs/notebooks/02_baselines.ipynb there) stated "Self-confidence is mostly
# generator order": mean τ-b 0.903 over the ranked pools, the first candidate carrying the highest confidence in all.
EARLIER: dict[str, str] = {"02.self_confidence_restates_order": "holds"}


def bookkeeping(tables: Mapping[str, pd.DataFrame]) -> str:
    """Which rankers ranked how many pools (random with its number of seeds), from the ``rankings`` table: the
    front page's line for a chapter without a primary verdict."""
    rankings = tables["rankings"]
    runs = rankings.groupby("ranker", sort=False)["run"].nunique()
    names = ", ".join(f"{ranker} ({n} seeds)" if n > 1 else ranker for ranker, n in runs.items())
    return (f"{len(runs)} rankers — {names} — ranked the candidate pools of "
            f"{rankings['entry_id'].nunique()} journal entries.")


def restatement(pool_candidates: pd.DataFrame) -> pd.Series:
    """How far confidence restates generator order in a set of pools (candidates with entry_id, position,
    confidence): the per-pool figures of ``lib.rankers.confidence_vs_generator_order``, summed up."""
    restated = rankers.confidence_vs_generator_order(pool_candidates)
    return pd.Series({
        "pools (n)": len(restated),
        "candidates (n)": len(pool_candidates),
        "distinct confidence values (n)": pool_candidates.confidence.nunique(),
        "τ-b(confidence, generator order), mean over pools": restated.tau_b.mean(),
        "pools with τ-b defined (n)": int(restated.tau_b.notna().sum()),
        "first has the highest confidence (share of pools)": restated.first_is_top.mean(),
        "first has the sole highest (share of pools)": restated.first_is_sole_top.mean(),
        "strict countdown (share of pools)": restated.countdown.mean(),
    })


@dataclass(frozen=True)
class Findings:
    """What chapter 02 concludes: ``restates`` (the verdict), and the evidence its prose quotes — the share of the
    ranked pools whose first candidate has the highest confidence (ties allowed) and the sole highest."""

    restates: Verdict
    first_is_top: float
    first_is_sole_top: float

    def verdicts(self) -> tuple[Verdict, ...]:
        """Every verdict the chapter states."""
        return (self.restates,)


def findings(tables: Mapping[str, pd.DataFrame], params: Mapping[str, Any]) -> Findings:
    """Chapter 02's findings from ``pools`` (the ranked candidates, after the near-duplicate rule) and its
    parameters ``restatement_tau``, ``seed``, ``bootstrap_resamples``."""
    restated = rankers.confidence_vs_generator_order(tables["pools"]).dropna(subset=["tau_b"])
    tau = unit_bootstrap(np.mean, [restated.tau_b.to_numpy()], restated.entry_id.tolist(), "entries",
                         int(params["seed"]), int(params["bootstrap_resamples"]))
    all_pools = rankers.confidence_vs_generator_order(tables["pools"])
    restates = verdicts.verdict(
        "02", "self_confidence_restates_order", "self_confidence ranker",
        "restates the generator's order: mean τ-b(confidence, generator order) over pools above the threshold",
        Claim("comparison", float(params["restatement_tau"]), "higher"), "mean τ-b over pools", tau.value, tau.low,
        tau.high, "entries", tau.units, "candidates (pools after the near-duplicate rule)")
    return Findings(restates=restates, first_is_top=float(all_pools.first_is_top.mean()),
                    first_is_sole_top=float(all_pools.first_is_sole_top.mean()))


_RESTATES = {"holds": "self_confidence largely restates generator order",
             "fails": "self_confidence does not restate generator order",
             "ruled out": "self_confidence is as far from generator order as the threshold says, no more",
             "undetermined": "the data cannot tell how far self_confidence restates generator order"}


def restatement_text(f: Findings) -> str:
    """The restatement section's conclusion, from the record."""
    return (f"{_RESTATES[f.restates.verdict]} (**{f.restates.verdict}**): {verdicts.evidence_text(f.restates, 3)}; "
            f"the first candidate has the highest confidence in {f.first_is_top:.0%} of the ranked pools and the "
            f"sole highest in {f.first_is_sole_top:.0%}. Where self_confidence and generator_order tie in chapter 04, "
            f"an advantage of self_confidence is the judge rating highly what the same model wrote first.")
