"""Tables passed between notebooks (``outputs/tables/*.parquet``), each with a documented column schema.

A notebook writes a table with :func:`write_table`, which refuses a frame whose columns differ from the
schema, and a later notebook reads it with :func:`read_table`. The schemas below are the documentation.
"""
from __future__ import annotations

import pandas as pd

from lib import paths

SCHEMAS: dict[str, dict[str, str]] = {
    "entries": {
        "entry_id": "ed-<split>-<row>: row of the EmpatheticDialogues situations file (0-based, after header)",
        "split": "test or dev",
        "emotion_label": "EmpatheticDialogues label, 1–32",
        "emotion": "inferred emotion name (data/journal_entries/SOURCE.md)",
        "text": "the situation text, used as the journal entry",
        "persona_id": "persona assigned by seeded draw (lib.nudges.PERSONAS)",
        "category": "nudge category from the emotion (lib.nudges.EMOTION_CATEGORY)",
        "generation_ok": "True when the candidate call returned a schema-valid answer",
        "failure_kind": "invalid_json | schema_violation | truncated when generation failed, else null",
        "failure_error": "the validation message of the last attempt, else null",
        "attempts": "requests made for the entry (1 + retries)",
        "model": "identity of the generating model (name@sha256 for the embedded model)",
    },
    "candidates": {
        "entry_id": "entry the candidate was written for",
        "candidate_id": "<entry_id>/c<position>",
        "position": "0-based order in the generator's answer",
        "persona_id": "persona of the entry",
        "category": "nudge category asked for",
        "nudge_text": "the nudge",
        "reasoning": "the generator's one-sentence justification",
        "confidence": "the generator's self-reported confidence, 0–1",
        "word_count": "whitespace-separated words in nudge_text",
        "length_ok": "word_count within the asked 5–12",
        "model": "identity of the generating model",
        "near_duplicate_of": "earliest candidate of the same pool with MiniLM cosine ≥ threshold, else null",
        "pool_diversity": "mean pairwise cosine distance of the pool's candidates",
        "near_duplicate": "near_duplicate_of is set",
    },
    "rankings": {
        "method": "ranker name (lib.rankers): random, embedding, category, self_confidence, value_aware",
        "run": "seed index for random (0..k-1); 0 for deterministic methods",
        "entry_id": "the pool's entry",
        "rank": "1 = shown first; ties keep the generator's order; failed candidates last",
        "candidate_id": "the ranked candidate",
        "score": "the ranker's score (higher is better; -inf for a failed candidate)",
    },
}


def write_table(frame: pd.DataFrame, name: str) -> str:
    """Write ``outputs/tables/<name>.parquet`` after checking its columns against ``SCHEMAS[name]``."""
    expected = list(SCHEMAS[name])
    if sorted(frame.columns) != sorted(expected):
        raise ValueError(f"table {name}: columns {sorted(frame.columns)} differ from schema {sorted(expected)}")
    paths.TABLES.mkdir(parents=True, exist_ok=True)
    path = paths.TABLES / f"{name}.parquet"
    frame[expected].to_parquet(path, index=False)
    return str(path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path)


def read_table(name: str) -> pd.DataFrame:
    return pd.read_parquet(paths.TABLES / f"{name}.parquet")
