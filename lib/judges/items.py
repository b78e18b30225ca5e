"""What a judge looks at: a typed item instead of a positional tuple."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeItem:
    """One output to judge. ``source``: what the output answers (journal entry, search query, news article);
    ``output``: the judged text (nudge, passage, summary); ``context``: what the judge should know about the
    person (persona description), empty where the prompt has no such slot."""

    source: str
    output: str
    context: str = ""

