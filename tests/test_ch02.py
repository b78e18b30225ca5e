"""Chapter 02's findings record (self_confidence restates generator order) and formatters, on hand-made pools."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from lib.chapters import ch02

PARAMS = {"restatement_tau": 0.5, "seed": 0, "bootstrap_resamples": 300}


def pools(confidences: list[float], n_pools: int = 12) -> pd.DataFrame:
    """``n_pools`` pools whose candidates carry ``confidences`` in generator order."""
    return pd.DataFrame([{"entry_id": f"e{e:02d}", "candidate_id": f"e{e:02d}/c{p}", "position": p, "confidence": c}
                         for e in range(n_pools) for p, c in enumerate(confidences)])


def test_a_countdown_restates_the_order():
    f = ch02.findings({"pools": pools([0.9, 0.8, 0.7, 0.6])}, PARAMS)
    assert f.restates.key == "02.self_confidence_restates_order" and f.restates.verdict == "holds"
    assert f.restates.estimate == 1.0 and f.restates.units == 12 and not f.restates.confirmatory
    assert f.first_is_top == 1.0 and f.first_is_sole_top == 1.0


def test_a_rising_confidence_goes_the_wrong_way():
    f = ch02.findings({"pools": pools([0.6, 0.7, 0.8, 0.9])}, PARAMS)
    assert f.restates.verdict == "fails" and f.restates.estimate == -1.0


def test_too_few_pools_give_no_interval():
    f = ch02.findings({"pools": pools([0.9, 0.8], n_pools=5)}, PARAMS)
    assert f.restates.verdict == "undetermined" and f.restates.units == 5


def test_restatement_text_and_bookkeeping():
    f = ch02.findings({"pools": pools([0.9, 0.8, 0.7, 0.6])}, PARAMS)
    assert ch02.restatement_text(f).startswith("self_confidence largely restates generator order (**holds**)")
    assert "does not restate" in ch02.restatement_text(replace(f, restates=replace(f.restates, verdict="fails")))
    rankings = pd.DataFrame({"ranker": ["random", "random", "embedding"], "run": [0, 1, 0],
                             "entry_id": ["a", "a", "b"]})
    assert ch02.bookkeeping({"rankings": rankings}) == (
        "2 rankers — random (2 seeds), embedding — ranked the candidate pools of 2 journal entries.")


def test_restatement_summary_counts():
    summary = ch02.restatement(pools([0.9, 0.9, 0.7]))
    assert summary["pools (n)"] == 12 and summary["first has the sole highest (share of pools)"] == 0.0
