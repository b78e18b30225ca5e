"""Chapter 06 (CRS simulation): its generated "what the numbers say" and its front-page headline, from the
chapter's tables. Tested on small hand-made tables (``tests/test_ch06.py``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.chapters.headline import Tables, headline


@headline("06_crs_simulation", "crs_checks", "crs_sessions")
def crs_known_behaviour(tables: Tables) -> str:
    """How many differences between systems of known behaviour the adaptation metrics reproduce, and the LLM
    recommender's recovery rate beside the adapting template's."""
    checks, sessions = tables["crs_checks"], tables["crs_sessions"]
    failing = checks.loc[~checks["holds"], "expectation"]
    recovery = sessions.groupby("model")["recovery_rate"].mean()
    llm = (f" The LLM recommender recovers from {recovery['llm']:.0%} of shifts within the window, the adapting "
           f"template from {recovery['retrieval_template']:.0%}." if {"llm", "retrieval_template"} <= set(recovery.index)
           else "")
    return (f"Over {sessions['session_id'].nunique()} simulated users, the adaptation metrics reproduce "
            f"{int(checks['holds'].sum())} of {len(checks)} expected differences between systems of known behaviour"
            + (f" (not: {'; '.join(failing)})" if len(failing) else "") + f".{llm}")
