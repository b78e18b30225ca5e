"""Chapter 01 (nudge candidate generation): its generated text and front-page headline, from its tables."""
from __future__ import annotations

from lib.chapters.headline import Tables, headline


@headline("01_nudge_candidates", "entries", "candidates")
def candidates_generated(tables: Tables) -> str:
    """How many candidates there are and how often generation gave a schema-valid answer."""
    entries, candidates = tables["entries"], tables["candidates"]
    valid = int(entries["generation_ok"].sum())
    return (f"{len(candidates)} candidate nudges for {len(entries)} journal entries: {valid} of {len(entries)} "
            f"generation calls ({valid / len(entries):.0%}) returned a schema-valid answer, and "
            f"{int(candidates['near_duplicate'].sum())} candidates are near-duplicates of an earlier one.")
