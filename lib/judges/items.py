"""What a judge looks at: typed items and pools instead of positional tuples.

A pool is what one listwise call grades together; :func:`make_pools` builds pools from a flat item list and
keeps each item's row, so the listwise grades come back on the rows of that list (no bookkeeping in the
notebooks).
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JudgeItem:
    """One output to judge. ``source``: what the output answers (journal entry, search query, news article);
    ``output``: the judged text (nudge, passage, summary); ``context``: what the judge should know about the
    person (persona description), empty where the prompt has no such slot."""

    source: str
    output: str
    context: str = ""


@dataclass(frozen=True)
class JudgePool:
    """Outputs graded in one listwise call, in the order shown. They share ``source`` and ``context``;
    ``rows[k]`` is the position of ``outputs[k]`` in the item list the pool was made from."""

    source: str
    context: str
    outputs: tuple[str, ...]
    rows: tuple[int, ...]

    def reordered(self, order: Sequence[int]) -> JudgePool:
        """The same pool shown in ``order`` (a permutation of its positions); rows travel with their outputs."""
        return JudgePool(self.source, self.context, tuple(self.outputs[j] for j in order),
                         tuple(self.rows[j] for j in order))


def make_pools(items: Sequence[JudgeItem], keys: Sequence[Hashable], size: int | None = None) -> list[JudgePool]:
    """Pools of the items with equal key, in order of first appearance. With ``size``, a key's n items are split
    into max(1, ⌊n/size⌋) consecutive, nearly equal pools (numpy.array_split): 20 passages → 4 pools of 5.
    The items of a key must share source and context."""
    if len(items) != len(keys):
        raise ValueError(f"{len(items)} items but {len(keys)} keys")
    groups: dict[Hashable, list[int]] = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    pools = []
    for key, rows in groups.items():
        first = items[rows[0]]
        if any((items[r].source, items[r].context) != (first.source, first.context) for r in rows):
            raise ValueError(f"pool {key!r}: items differ in source or context")
        chunks = np.array_split(np.asarray(rows), max(1, len(rows) // size)) if size else [np.asarray(rows)]
        pools += [JudgePool(first.source, first.context, tuple(items[r].output for r in chunk),
                            tuple(int(r) for r in chunk)) for chunk in chunks]
    return pools
