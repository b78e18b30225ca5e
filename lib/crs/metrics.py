"""Turn- and session-level metrics of adaptation to preference shifts (METHODOLOGY.md gives the reasoning).

Notation at system turn t (the reply to user turn t), all sets of concepts (:mod:`lib.crs.concepts`):

* P(t) — the user's preference after user turn t (``user_meta.preference``); U(t) — the concepts user turn t
  states (``user_meta.stated``); D(t) — the concepts abandoned at the last shift (``user_meta.dropped``);
* E(s_t) — the concepts the system text names; T(t) — the items whose titles it names;
* S(t) — the system turn's preference concepts: E(s_t) without titles, plus the concepts of P(t) ∪ D(t)
  that an item of T(t) carries (a title stands for its metadata, counted only on the values the user talked
  about, so a multi-genre title is not penalised for genres nobody mentioned).

Per turn:

* CC(t) = |S ∩ P| / |S ∪ P| — concept consistency with the whole current preference (Jaccard 1901);
* CR(t) = Σ_{c∈S∩U} idf(c)² / (‖S‖·‖U‖), ‖A‖ = (Σ_{c∈A} idf(c)²)^½ — concept relevance to the last user
  turn: cosine of binary concept vectors weighted by the universe's smooth IDF (Salton & Buckley 1988);
  0 when S is empty;
* I(t) = max_{n∈N} Σ_g min(c_s(g), c_u(g)) / Σ_g c_s(g) — the copy ratio: the share of the system turn's
  n-grams found in user turn t, with clipped counts as in BLEU's modified precision (Papineni et al. 2002),
  maximised over the orders N (default 2, 3, 4), on tokens in which every concept mention is one placeholder
  (naming what the user asked for is not copying; repeating their sentence is). 0 for a turn shorter than
  every order;
* TAS(t) = clip(α·CC + β·CR − γ·I, −1, 1); the session's TAS is the mean of TAS(t) over scored turns, which
  equals α·mean CC + β·mean CR − γ·mean I when no turn is clipped;
* missing(t) = P \\ S; hallucinated(t) = E(s_t) on preference fields \\ (every concept the user stated up to t
  ∪ the concepts of T(t)); stale(t) = S ∩ D.

A system turn with empty text (a failed LLM call) is not scored.

Around each shift at user turn t_s (segment [t_s, b), b the next shift or the end): the recovery delay is the
least k ≥ 0 with TAS(t_s + k) ≥ θ and stale(t_s + k) = ∅ inside the segment (none if no such turn); the shift is
*recovered within W* when delay < W. TAS rather than CC alone, so that a reply that repeats the user's new wish
word for word (TAS ≤ α + β − γ·I) does not count as recovering; no stale concept, so that a reply still serving
an abandoned wish does not either (θ alone is reached at CC = CR = 0.5 with half the wishes stale).
Interference = the share of scored turns in
[t_s, min(t_s + W, b)) with stale(t) ≠ ∅.
Session: recovery rate = share of shifts recovered within W; recovery delay = mean delay of the recovered
shifts; interference = mean over shifts; CAS = Σ_k w_k·component_k (``CAS_WEIGHTS``) over tas, recovery
(rate) and stability (1 − interference), None without a shift.

Segmentation: the grounded segments start at the shift events; the legacy segments start where the
similarity of consecutive user turns falls below a threshold (MiniLM cosine, or Jaccard of content words).
Their agreement: boundary precision / recall / F1 (a legacy boundary matches an unmatched shift at most
``boundary_tolerance`` turns away) and Pk (Beeferman, Berger & Lafferty 1999: the probability that two turns k
apart are wrongly put in the same or in different segments, k = half the mean grounded segment length).

The session's CC, CR, copy ratio, TAS, recovery rate, recovery delay, interference and CAS are metrics of the study
(kind ``CRS``, :mod:`lib.metrics`): ``score(None, sessions, universe=..., config=...)`` on :class:`Session`
gives each session's value (:func:`session_summary`), or ``undefined`` where it has none (no shift, no scored
turn).
"""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from lib import metrics
from lib.crs.concepts import content_words, preference_concepts, tokens
from lib.crs.config import LegacyMethod, MetricConfig
from lib.crs.universe import ItemUniverse
from lib.embeddings import Embed, similarity

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

Turn = Mapping[str, Any]


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; NaN when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else float("nan")


def idf_cosine(a: frozenset[str] | set[str], b: frozenset[str] | set[str], idf: Callable[[str], float]) -> float:
    """Cosine of the binary concept vectors of ``a`` and ``b`` weighted by ``idf``; NaN when ``b`` is empty,
    0 when only ``a`` is."""
    if not b:
        return float("nan")
    if not a:
        return 0.0
    # Summed in sorted order: a set's iteration order follows the process's string hash seed, and a float sum
    # in another order can differ in the last bit, which would make reruns write different bytes.
    def squared_norm(concepts: frozenset[str] | set[str]) -> float:
        return sum(idf(c) ** 2 for c in sorted(concepts))

    return float(squared_norm(a & b) / (np.sqrt(squared_norm(a)) * np.sqrt(squared_norm(b))))


def ngrams(words: Sequence[str], n: int) -> Counter:
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


def copy_ratio(system_words: Sequence[str], user_words: Sequence[str], orders: Sequence[int]) -> float:
    """max over the orders n the system text is long enough for of Σ_g min(c_s(g), c_u(g)) / Σ_g c_s(g); 0 when
    it is shorter than every order."""
    ratios = []
    for n in orders:
        system = ngrams(system_words, n)
        if system:
            ratios.append(sum((system & ngrams(user_words, n)).values()) / sum(system.values()))
    return max(ratios, default=0.0)


def turn_adaptation(cc: float, cr: float, copy: float, weights: Mapping[str, float]) -> float:
    """TAS(t) = clip(α·CC + β·CR − γ·I, −1, 1)."""
    value = weights["alpha"] * cc + weights["beta"] * cr - weights["gamma"] * copy
    return float(np.clip(value, -1.0, 1.0))


def system_concepts(text: str, relevant: frozenset[str], universe: ItemUniverse
                    ) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(S, E(text), T): the system turn's preference concepts, every concept it names, and the items it names.
    ``relevant`` is P ∪ D, the concepts a named title may stand for."""
    mentioned = universe.extract(text)
    items = frozenset(i for c in mentioned if c.startswith("name=") for i in universe.items_named(c))
    grounded = frozenset(c for c in relevant if any(c in universe.concepts_of[i] for i in items))
    return preference_concepts(mentioned) | grounded, mentioned, items


def pairs(conversation: Sequence[Turn]) -> list[tuple[Turn, Turn]]:
    """(user turn, system turn) pairs of a conversation that alternates USER, SYSTEM from the start."""
    if len(conversation) % 2 or any(t["speaker"] != ("USER", "SYSTEM")[i % 2] for i, t in enumerate(conversation)):
        raise ValueError("a conversation alternates USER and SYSTEM turns, starting with USER")
    return list(zip(conversation[0::2], conversation[1::2], strict=True))


ConceptReader = Callable[[str, frozenset[str], ItemUniverse], tuple[frozenset[str], frozenset[str], frozenset[str]]]


def turn_table(conversation: Sequence[Turn], universe: ItemUniverse, config: MetricConfig,
               concepts: ConceptReader | None = None) -> pd.DataFrame:
    """One row per system turn: turn, shift, segment, scored, cc, cr, copy_ratio (I), tas, and the concept lists
    concepts (S), missing, hallucinated, stale, plus the titles named. ``concepts`` reads (S, E(text), T) from a
    reply (default :func:`system_concepts`, by E(x); :mod:`lib.crs.matcher` gives an independent one)."""
    read = concepts or system_concepts
    rows = []
    stated_so_far: set[str] = set()
    segment = 0
    for user, system in pairs(conversation):
        meta = user["user_meta"]
        preference, stated, dropped = (frozenset(meta[k]) for k in ("preference", "stated", "dropped"))
        stated_so_far |= stated
        segment += bool(meta["shift"])
        row: dict[str, Any] = {"turn": meta["turn"], "shift": bool(meta["shift"]), "segment": segment,
                               "scored": bool(system["text"])}
        if not row["scored"]:
            rows.append(row | {"cc": np.nan, "cr": np.nan, "copy_ratio": np.nan, "tas": np.nan, "concepts": (),
                               "missing": (), "hallucinated": (), "stale": (), "titles": ()})
            continue
        s, mentioned, items = read(system["text"], preference | dropped, universe)
        item_concepts = frozenset().union(*(universe.concepts_of[i] for i in items))
        cc, cr = jaccard(s, preference), idf_cosine(s, stated, universe.idf)
        masked = universe.gazetteer.masked_tokens
        copy = copy_ratio(masked(system["text"]), masked(user["text"]), config.ngram_orders)
        rows.append(row | {
            "cc": cc, "cr": cr, "copy_ratio": copy, "tas": turn_adaptation(cc, cr, copy, config.tas_weights),
            "concepts": tuple(sorted(s)), "missing": tuple(sorted(preference - s)),
            "hallucinated": tuple(sorted(preference_concepts(mentioned) - stated_so_far - item_concepts)),
            "stale": tuple(sorted(s & dropped)), "titles": tuple(sorted(universe.names[i] for i in items))})
    return pd.DataFrame(rows)


def shift_table(turns: pd.DataFrame, shift_events: Sequence[Mapping[str, Any]], config: MetricConfig) -> pd.DataFrame:
    """One row per shift: turn, from, to, delay (None: not recovered in its segment; a reply recovers with TAS ≥ θ
    and no stale concept), recovered (delay < W),
    censored (the segment ends before W turns), interference, and mean CC over the W turns before and after."""
    n_turns = len(turns)
    starts = [int(e["turn"]) for e in shift_events]
    by_turn = turns.set_index("turn")
    cc, tas, stale, scored = by_turn["cc"], by_turn["tas"], by_turn["stale"], by_turn["scored"]
    rows = []
    # the ends list carries n_turns even without a shift, so it is one longer when there is none
    for event, start, end in zip(shift_events, starts, [*starts[1:], n_turns], strict=False):
        segment = range(start, end)
        delay = next((t - start for t in segment if scored[t] and tas[t] >= config.recovery_threshold
                      and not stale[t]), None)
        window = [t for t in range(start, min(start + config.window, end)) if scored[t]]
        before = [t for t in range(max(0, start - config.window), start) if scored[t]]
        rows.append({"turn": start, "from": event["from"], "to": event["to"], "delay": delay,
                     "recovered": delay is not None and delay < config.window,
                     "censored": end - start < config.window,
                     "interference": float(np.mean([bool(stale[t]) for t in window])) if window else np.nan,
                     "cc_before": float(cc[before].mean()) if before else np.nan,
                     "cc_after": float(cc[window].mean()) if window else np.nan})
    return pd.DataFrame(rows, columns=["turn", "from", "to", "delay", "recovered", "censored", "interference",
                                       "cc_before", "cc_after"])


def legacy_similarities(user_texts: Sequence[str], method: LegacyMethod, embed: Embed | None = None) -> np.ndarray:
    """Similarity of each user turn to the one before (length n − 1): MiniLM cosine (``embed`` returns unit
    vectors; rounded by :func:`lib.embeddings.similarity`) or the Jaccard index of their content-word sets (tokens
    minus scikit-learn's English stop words)."""
    if len(user_texts) < 2:
        return np.zeros(0)
    if method == "embedding":
        if embed is None:
            from lib.embeddings import embed as minilm

            embed = minilm
        vectors = np.asarray(embed(list(user_texts)), dtype=float)
        return np.array([similarity(u, v) for u, v in itertools.pairwise(vectors)])
    words = [frozenset(content_words(tokens(text))) for text in user_texts]
    return np.array([jaccard(a, b) if a | b else 1.0 for a, b in itertools.pairwise(words)])


def legacy_boundaries(similarities: Sequence[float], threshold: float) -> tuple[int, ...]:
    """User turns t ≥ 1 whose similarity to turn t − 1 is below ``threshold``: where a legacy segment starts."""
    return tuple(t + 1 for t, s in enumerate(similarities) if s < threshold)


def _labels(boundaries: Sequence[int], n_turns: int) -> np.ndarray:
    return np.asarray(np.searchsorted(np.sort(np.asarray(boundaries, dtype=int)), np.arange(n_turns), side="right"))


def pk(reference: Sequence[int], hypothesis: Sequence[int], n_turns: int) -> float:
    """Pk (Beeferman, Berger & Lafferty 1999) of boundary lists over ``n_turns`` turns: share of the pairs
    (i, i + k) on which reference and hypothesis disagree about being in one segment, k = max(1, round(mean
    reference segment length / 2)); NaN when n_turns ≤ k."""
    k = max(1, round(n_turns / (len(reference) + 1) / 2))
    if n_turns <= k:
        return float("nan")
    ref, hyp = _labels(reference, n_turns), _labels(hypothesis, n_turns)
    return float(np.mean((ref[:-k] == ref[k:]) != (hyp[:-k] == hyp[k:])))


def boundary_agreement(reference: Sequence[int], hypothesis: Sequence[int], n_turns: int, tolerance: int = 0
                       ) -> dict[str, float]:
    """tp (reference boundaries matched by a hypothesis boundary at most ``tolerance`` turns away, each used
    once, nearest first), n_reference, n_hypothesis, precision = tp / n_hypothesis, recall = tp / n_reference,
    F1, and :func:`pk`. A ratio with a zero denominator is NaN."""
    unmatched = sorted(hypothesis)
    tp = 0
    for boundary in sorted(reference):
        near = [h for h in unmatched if abs(h - boundary) <= tolerance]
        if near:
            unmatched.remove(min(near, key=lambda h: (abs(h - boundary), h)))
            tp += 1
    precision = tp / len(hypothesis) if hypothesis else float("nan")
    recall = tp / len(reference) if reference else float("nan")
    if np.isnan(precision) or np.isnan(recall):
        f1 = float("nan")
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "n_reference": len(reference), "n_hypothesis": len(hypothesis), "precision": precision,
            "recall": recall, "f1": f1, "pk": pk(reference, hypothesis, n_turns)}


def _mean(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.mean()) if len(values) else None


def conversation_adaptation(tas: float | None, recovery_rate: float | None, interference: float | None,
                            weights: Mapping[str, float]) -> float | None:
    """CAS = Σ_k w_k·component_k over the components ``weights`` names: tas, recovery (rate) and stability
    (1 − interference); None when one of them is undefined."""
    components = {"tas": tas, "recovery": recovery_rate,
                  "stability": None if interference is None else 1 - interference}
    present = {k: v for k in weights if (v := components[k]) is not None}
    if len(present) < len(weights):
        return None
    return float(sum(w * present[k] for k, w in weights.items()))


def session_summary(turns: pd.DataFrame, shifts: pd.DataFrame, config: MetricConfig) -> dict[str, Any]:
    """The session's metrics: means of cc, cr, copy_ratio, tas over scored turns; recovery_rate, recovery_delay,
    interference, cas (None without a shift or without a recovered shift for the delay); totals of missing and
    hallucinated concepts; scored and failed turns."""
    scored = turns[turns["scored"]]
    summary: dict[str, Any] = {name: _mean(scored[name]) for name in ("cc", "cr", "copy_ratio", "tas")}
    has_shift = len(shifts) > 0
    summary["recovery_rate"] = float(shifts["recovered"].mean()) if has_shift else None
    summary["recovery_delay"] = _mean(shifts.loc[shifts["recovered"], "delay"].astype(float)) if has_shift else None
    summary["interference"] = _mean(shifts["interference"]) if has_shift else None
    summary["cas"] = conversation_adaptation(summary["tas"], summary["recovery_rate"], summary["interference"],
                                             config.cas_weights)
    summary["missing"] = int(scored["missing"].map(len).sum())
    summary["hallucinated"] = int(scored["hallucinated"].map(len).sum())
    summary["scored_turns"] = len(scored)
    summary["failed_turns"] = int((~turns["scored"]).sum())
    return summary


@dataclass(frozen=True)
class Session:
    """One conversation to score (alternating USER, SYSTEM turns with the user's metadata) and its shift events."""

    conversation: Sequence[Turn]
    shift_events: Sequence[Mapping[str, Any]]


def session_results(sessions: Sequence[Session], universe: ItemUniverse, config: MetricConfig | None = None
                    ) -> list[dict[str, metrics.Result]]:
    """Each session's :func:`session_summary` metrics as results (None: ``undefined``)."""
    config = config or MetricConfig()
    out = []
    for session in sessions:
        turns = turn_table(session.conversation, universe, config)
        summary = session_summary(turns, shift_table(turns, session.shift_events, config), config)
        out.append({column: metrics.Result.of(summary[column]) for column in SESSION_METRICS})
    return out


def _metric(column: str, name: str, construct: str, scale: metrics.Scale, formula: str, citation: str
            ) -> metrics.FunctionMetric:
    def call(gateway: Gateway | None, items: Sequence[Session], *, universe: ItemUniverse,
             config: MetricConfig | None = None) -> list[metrics.Result]:
        return [r[column] for r in session_results(items, universe, config)]

    return metrics.FunctionMetric(name=name, kind="CRS", construct=construct, scale=scale, description=formula,
                                  citation=citation, call=call, aliases=(column,) if column != name else ())


UNIT = metrics.Scale(0, 1)
SESSION_METRICS: dict[str, metrics.FunctionMetric] = {spec[0]: metrics.register(_metric(*spec)) for spec in (
    ("cc", "CC", "consistency of the reply's concepts with the user's whole current preference", UNIT,
     "mean over scored turns of |S ∩ P| / |S ∪ P|", "Jaccard 1901"),
    ("cr", "CR", "relevance of the reply's concepts to the last user turn", UNIT,
     "mean over scored turns of the IDF-weighted cosine of S and U", "Salton & Buckley 1988"),
    ("copy_ratio", "copy ratio", "how much of the reply copies the user's last turn", UNIT,
     "mean over scored turns of the clipped n-gram precision against the user turn, maximised over n",
     "Papineni et al. 2002 (BLEU's modified precision)"),
    ("tas", "TAS", "turn-level adaptation to the user's current preference", metrics.Scale(-1, 1),
     "mean over scored turns of clip(α·CC + β·CR − γ·I, −1, 1)", "this study (METHODOLOGY.md)"),
    ("recovery_rate", "recovery rate", "how often the system adapts within W turns of a preference shift", UNIT,
     "share of shifts with TAS ≥ θ and no stale concept within W turns", "this study (METHODOLOGY.md)"),
    ("recovery_delay", "recovery delay", "how many turns the system takes to adapt after a shift",
     metrics.Scale(0, float("inf")), "mean delay (turns) of the recovered shifts", "this study (METHODOLOGY.md)"),
    ("interference", "stale interference", "how long an abandoned wish keeps being served after a shift", UNIT,
     "mean over shifts of the share of the W turns after it that name a dropped concept",
     "this study (METHODOLOGY.md)"),
    ("cas", "CAS", "conversation-level adaptation to preference shifts", metrics.Scale(-1, 1),
     "Σ_k w_k·component_k over TAS, recovery rate and stability (1 − interference)",
     "this study (METHODOLOGY.md)"))}
