"""Prompt templates: UTF-8 text files in this folder, named after what they ask, each read once per process.

A template with several parts (system prompt, shared context, item) separates them by a line ``---``;
:func:`parts` returns them stripped. ``geval_steps/<rubric>.txt`` holds G-Eval's generated evaluation steps
(written by ``python -m lib.judges.geval steps``, committed, only read during a run);
``geval_steps_study/<rubric>.txt`` holds steps the study wrote to follow each rubric's criteria.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from lib import paths

SEPARATOR = "\n---\n"


@cache
def load(name: str, folder: Path = paths.PROMPTS) -> str:
    """The text of ``<folder>/<name>.txt`` (UTF-8); ``name`` may contain a subfolder (``geval_steps/Coherence``)."""
    return (folder / f"{name}.txt").read_text(encoding="utf-8")


def parts(name: str, count: int) -> tuple[str, ...]:
    """The ``count`` parts of template ``name``, split at ``---`` lines and stripped; another count is an error."""
    split = tuple(part.strip() for part in load(name).split(SEPARATOR))
    if len(split) != count:
        raise ValueError(f"prompt {name}: expected {count} parts separated by '---' lines, found {len(split)}")
    return split
