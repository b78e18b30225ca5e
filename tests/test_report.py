"""Generated interpretation text follows the numbers."""
from __future__ import annotations

import pandas as pd

from lib.costs import hosted_cost
from lib.report import comparison_paragraph


def test_paragraph_names_significant_differences_and_power():
    table = pd.DataFrame([
        {"metric": "NDCG@3", "baseline": "random", "n": 20, "mean diff": 0.12, "ci low": 0.05, "ci high": 0.2,
         "p holm": 0.01, "entries needed": 15.0},
        {"metric": "NDCG@3", "baseline": "embedding", "n": 20, "mean diff": -0.02, "ci low": -0.1, "ci high": 0.05,
         "p holm": 0.6, "entries needed": 400.0},
        {"metric": "Hit@1 (g≥1)", "baseline": "category", "n": 18, "mean diff": 0.0, "ci low": 0.0, "ci high": 0.0,
         "p holm": float("nan"), "entries needed": float("inf")},
    ])
    text = comparison_paragraph(table)
    assert "**1**" in text and "better than random by +0.120" in text and "Holm-adjusted p = 0.01" in text
    assert "1 show no difference on any entry (Hit@1 (g≥1))" in text
    assert "The other 1 are not significant" in text and "median of 400 entries" in text


def test_hosted_cost_formula():
    ledgers = pd.DataFrame({"prompt tokens": [1_000_000], "completion tokens": [500_000]}, index=["01"])
    cost = hosted_cost(ledgers, {"m": (2.0, 8.0)})
    assert cost.loc["01", "m"] == 2.0 + 4.0
