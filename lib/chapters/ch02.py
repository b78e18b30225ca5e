"""Chapter 02 (baselines: rankers): its generated text and front-page headline, from its tables."""
from __future__ import annotations

from lib.chapters.headline import Tables, headline


@headline("02_baselines", "rankings")
def methods_ranked(tables: Tables) -> str:
    """Which ranking methods ranked how many pools (random with its number of seeds)."""
    rankings = tables["rankings"]
    runs = rankings.groupby("method", sort=False)["run"].nunique()
    methods = ", ".join(f"{method} ({n} seeds)" if n > 1 else method for method, n in runs.items())
    return (f"{len(runs)} ranking methods — {methods} — ranked the candidate pools of "
            f"{rankings['entry_id'].nunique()} journal entries.")
