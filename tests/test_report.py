"""Generated interpretation text follows the numbers; the cost table reads every ledger."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from lib.costs import hosted_cost, read_ledgers
from lib.report import comparison_paragraph


def test_paragraph_names_significant_differences_and_power():
    table = pd.DataFrame([
        {"measure": "NDCG@3", "baseline": "random", "n": 20, "mean_diff": 0.12, "ci_low": 0.05, "ci_high": 0.2,
         "p_holm_permutation": 0.01, "entries_needed": 15.0},
        {"measure": "NDCG@3", "baseline": "embedding", "n": 20, "mean_diff": -0.02, "ci_low": -0.1, "ci_high": 0.05,
         "p_holm_permutation": 0.6, "entries_needed": 400.0},
        {"measure": "Hit@1 (g≥1)", "baseline": "category", "n": 18, "mean_diff": 0.0, "ci_low": 0.0, "ci_high": 0.0,
         "p_holm_permutation": float("nan"), "entries_needed": float("inf")},
    ])
    text = comparison_paragraph(table)
    assert "**1**" in text and "better than random by +0.120" in text and "Holm-adjusted p = 0.01" in text
    assert "1 show no difference on any entry (Hit@1 (g≥1))" in text
    assert "The other 1 are not significant" in text and "median of 400 entries" in text


def test_hosted_cost_formula():
    ledgers = pd.DataFrame({"prompt_tokens": [1_000_000], "completion_tokens": [500_000]}, index=["01"])
    cost = hosted_cost(ledgers, {"m": (2.0, 8.0)})
    assert cost.loc["01", "m"] == 2.0 + 4.0


def test_read_ledgers_picks_up_every_chapters_ledger(tmp_path):
    for name, calls in (("05_nuggets", 7), ("01_nudge_candidates", 20)):
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "notebook": name, "model": "m", "calls": calls, "requests": calls + 1,
            "failures": {"invalid_json": 1, "truncated": 2}, "prompt_tokens": 100, "completion_tokens": 10,
            "recorded_latency_s": 1.5}))
    table = read_ledgers(tmp_path)
    assert table.index.tolist() == ["01_nudge_candidates", "05_nuggets"]
    assert table.loc["05_nuggets"].to_dict() == {"model": "m", "calls": 7, "requests": 8, "failed_calls": 3,
                                                 "prompt_tokens": 100, "completion_tokens": 10,
                                                 "recorded_llm_time_s": 1.5}
    assert hosted_cost(table, {"m": (1.0, 10.0)}).loc["05_nuggets", "m"] == pytest.approx((100 + 100) / 1e6)
