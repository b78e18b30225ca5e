"""Chapter 05 (nugget evaluation, nuggetized RAG triad, nightly judge monitor): the loops that build its tables,
its generated "what the numbers say" and its front-page headline. The notebook calls these; each is tested on
small hand-made tables (``tests/test_ch05.py``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.analysis.stats import correlation_ci, interval_text
from lib.chapters.headline import Tables, headline


@headline("05_nugget_evaluation", "nugget_scores", "monitor_days")
def nugget_validity(tables: Tables) -> str:
    """How many ALCE answers have the declared vital score, the rank correlation of the all-nuggets score with
    human utility, and whether the monitor's overall mean separated the degraded day from the others."""
    scores, days = tables["nugget_scores"], tables["monitor_days"]
    alce = scores[scores["dataset"].isin(["asqa", "eli5"])]
    rated = alce.dropna(subset=["all", "utility"])
    rho = correlation_ci(rated["all"], rated["utility"], "spearman", seed=0)
    degraded, normal = days[days["degraded"]], days[~days["degraded"]]
    return (f"ALCE: {int(alce['vital'].notna().sum())} of {len(alce)} answers have a vital-nugget score (the judge "
            f"labels few nuggets vital); the all-nuggets score ranks {int(rho['n'])} answers against human utility "
            f"with Spearman ρ = {rho['r']:.2f} ({interval_text(rho['ci_low'], rho['ci_high'])}). Monitor: overall "
            f"judge score {degraded['overall'].mean():.2f} on the degraded day vs {normal['overall'].min():.2f}–"
            f"{normal['overall'].max():.2f} on the {len(normal)} normal days.")
