"""Interpretation text generated from result tables, so prose and numbers cannot drift apart."""
from __future__ import annotations

import math

import pandas as pd


def comparison_paragraph(comparisons: pd.DataFrame, alpha: float = 0.05) -> str:
    """Markdown summary of paired comparisons of the system with each baseline
    (``lib.analysis.comparisons.compare_to_baselines``; significance by the Holm-adjusted permutation test).

    Columns used: measure, baseline, n, mean_diff, ci_low, ci_high, p_holm_permutation, entries_needed.
    """
    p_holm = comparisons["p_holm_permutation"]
    significant = comparisons[p_holm < alpha]
    lines = [f"Of {len(comparisons)} comparisons of the value-aware ranker with a baseline (permutation test, "
             f"up to {int(comparisons['n'].max())} entries each), **{len(significant)}** are significant at "
             f"α = {alpha} after Holm correction."]
    for _, row in significant.iterrows():
        direction = "better" if row["mean_diff"] > 0 else "worse"
        lines.append(f"- {row['measure']}: value-aware is {direction} than {row['baseline']} by "
                     f"{row['mean_diff']:+.3f} (95% CI {row['ci_low']:+.3f} to {row['ci_high']:+.3f}; "
                     f"Holm-adjusted p = {row['p_holm_permutation']:.3g}).")
    rest = comparisons[~(p_holm < alpha)]
    tied = rest[rest["mean_diff"] == 0]
    if len(tied):
        lines.append(f"- {len(tied)} show no difference on any entry ({', '.join(sorted(set(tied['measure'])))}): "
                     f"every method scores the same there, typically because the measure is at its ceiling.")
        rest = rest[rest["mean_diff"] != 0]
    if len(rest):
        needed = [n for n in rest["entries_needed"] if math.isfinite(n)]
        detail = (f"detecting differences of the observed sizes with 80% power would take a median of "
                  f"{pd.Series(needed).median():,.0f} entries (normal approximation), so “not significant” "
                  f"here mostly means “too few entries to tell”, not “no difference”."
                  if needed else "their observed differences are exactly zero.")
        lines.append(f"- The other {len(rest)} are not significant; {detail}")
    return "\n".join(lines)
