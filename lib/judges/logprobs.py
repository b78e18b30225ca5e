"""Score distributions from token log-probabilities (G-Eval's probability-weighted score).

G-Eval (Liu et al., EMNLP 2023, §2.3): with allowed scores S = {s_1..s_n} and p(s_i) the model's
probability of the score token, the score is  score = Σ_i p(s_i) · s_i.  Here p is renormalised over the
allowed score tokens found among the ``top_logprobs`` at the position where the JSON field's value is
written:  p(s) = exp(ℓ_s) / Σ_{s'∈S∩top} exp(ℓ_s').  Scores absent from the top-k get probability 0.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

ScoredBy = Literal["logprobs", "argmax"]


def value_token_index(tokens: list[dict[str, Any]], field: str, prefill: str = "") -> int | None:
    """Index of the first non-blank token written after ``"<field>":`` in a JSON answer whose first
    ``prefill`` characters were written for the model (so the index may be 0), or None."""
    pattern = re.compile(rf'"{re.escape(field)}"\s*:\s*"?$')
    text = prefill
    for i, token in enumerate(tokens):
        if token["token"].strip() and pattern.search(text):
            return i
        text += token["token"]
    return None


def score_distribution(tokens: list[dict[str, Any]] | None, field: str, allowed: list[int], prefill: str = ""
                       ) -> dict[int, float] | None:
    """p(s) over ``allowed`` scores at the value position of ``field``; None when the answer has no
    logprobs, no such field, or none of the allowed scores among the top log-probabilities. ``prefill``: the
    answer's start written for the model (see ``Gateway.complete``)."""
    if not tokens:
        return None
    index = value_token_index(tokens, field, prefill)
    if index is None:
        return None
    logprob: dict[int, float] = {}
    for alternative in tokens[index].get("top_logprobs") or []:
        text = alternative["token"].strip()
        if text.lstrip("-").isdigit() and int(text) in allowed:
            score = int(text)
            # The same score may appear as several tokens ('3' and ' 3'): add their probabilities.
            logprob[score] = float(math.log(math.exp(logprob[score]) + math.exp(alternative["logprob"]))
                                   if score in logprob else alternative["logprob"])
    if not logprob:
        return None
    total = sum(math.exp(v) for v in logprob.values())
    return {s: (math.exp(logprob[s]) / total if s in logprob else 0.0) for s in allowed}


def expected_score(distribution: dict[int, float]) -> float:
    """Σ_s p(s)·s."""
    return float(sum(score * p for score, p in distribution.items()))


def weighted_fields(value: Any, tokens: list[dict[str, Any]] | None, fields: Sequence[str], allowed: list[int]
                    ) -> tuple[dict[str, float], ScoredBy]:
    """Scores of a JSON answer with several integer fields (``value``: the validated answer): Σ_s p(s)·s per
    field from the logprobs at its value token when every field has them (``"logprobs"``), else the written
    integers (``"argmax"``), so one answer is never read half one way and half the other."""
    distributions = {name: score_distribution(tokens, name, allowed) for name in fields}
    usable = {name: d for name, d in distributions.items() if d}
    if len(usable) == len(distributions):
        return {name: expected_score(d) for name, d in usable.items()}, "logprobs"
    return {name: float(getattr(value, name)) for name in fields}, "argmax"


def label_distributions(tokens: list[dict[str, Any]] | None, labels: Sequence[str], written: Sequence[str]
                        ) -> list[dict[str, float] | None]:
    """p(label) over ``labels`` at each of the ``written`` labels of a JSON answer (a list of strings, in order), read
    at the token where the written label starts: an alternative counts for a label when, after the part of that token
    that comes before the label (an opening quote, a space), it starts the label (or the label followed by more, such
    as its closing quote); the labels are renormalised over the alternatives found. None at a label whose position
    is not found or whose alternatives name no label (e.g. the answer has no logprobs)."""
    out: list[dict[str, float] | None] = [None] * len(written)
    if not tokens:
        return out
    starts, text = [], ""
    for token in tokens:
        starts.append(len(text))
        text += token["token"]
    cursor = 0
    for n, label in enumerate(written):
        found = text.find(f'"{label}"', cursor)
        if found < 0:
            break
        position = found + 1
        cursor = position + len(label)
        index = max(i for i, start in enumerate(starts) if start <= position)
        before = text[starts[index]:position]
        mass = dict.fromkeys(labels, 0.0)
        for alternative in tokens[index].get("top_logprobs") or []:
            piece = alternative["token"]
            if not piece.startswith(before) or len(piece) == len(before):
                continue
            rest = piece[len(before):]
            named = [lab for lab in labels if lab.startswith(rest) or rest.startswith(lab)]
            if len(named) == 1:
                mass[named[0]] += math.exp(alternative["logprob"])
        total = sum(mass.values())
        if total > 0:
            out[n] = {lab: p / total for lab, p in mass.items()}
    return out
