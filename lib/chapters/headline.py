"""The registry of chapter headlines: one sentence per chapter for the report's front page.

The front page must carry no number typed by hand: each chapter module (``lib.chapters.chNN``) registers a
function with :func:`headline`, naming the tables it reads (``outputs/tables``, schemas in :mod:`lib.tables`),
so the sentence follows the results when they change. The front page shows none for a chapter without one or
whose tables are missing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

Tables = Mapping[str, pd.DataFrame]
Sentence = Callable[[Tables], str]


@dataclass(frozen=True)
class Headline:
    tables: tuple[str, ...]
    sentence: Sentence


HEADLINES: dict[str, Headline] = {}


def headline(chapter: str, *tables: str) -> Callable[[Sentence], Sentence]:
    """Register the decorated function as the headline of notebook ``chapter``, built from ``tables``."""
    def register(sentence: Sentence) -> Sentence:
        HEADLINES[chapter] = Headline(tables, sentence)
        return sentence
    return register
