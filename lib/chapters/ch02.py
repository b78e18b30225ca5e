"""Chapter 02 (baselines: rankers): its generated text and front-page headline, from its tables."""
from __future__ import annotations

from lib.chapters.headline import Tables, headline


@headline("02_baselines", "rankings")
def rankers_ranked(tables: Tables) -> str:
    """Which rankers ranked how many pools (random with its number of seeds)."""
    rankings = tables["rankings"]
    runs = rankings.groupby("ranker", sort=False)["run"].nunique()
    rankers = ", ".join(f"{ranker} ({n} seeds)" if n > 1 else ranker for ranker, n in runs.items())
    return (f"{len(runs)} rankers — {rankers} — ranked the candidate pools of "
            f"{rankings['entry_id'].nunique()} journal entries.")
