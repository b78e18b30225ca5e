"""The CRS systems under test, built so that their behaviour around a shift is known in advance — the metrics
must order them accordingly before their numbers on other systems can be trusted.

Every system answers a batch of conversations at once (``CRS.respond``: one history per session, the same
turn in each, so LLM calls of one turn go to the gateway together). A system sees only the speakers and texts
of its conversation, never the simulator's ``user_meta``.

| system | constraints | reply | expected behaviour |
|---|---|---|---|
| ``llm`` | tracked (:func:`track_constraints`, ``update``) | LLM picks from ``recommend`` candidates | \
adapts at a shift cue |
| ``retrieval_template`` | tracked (``update``) | template over ``recommend``, no LLM | adapts at a shift cue |
| ``memoryless_llm`` | last user turn only (``last_turn``) | as ``llm`` | adapts at once, loses earlier context |
| ``stale_template`` | every concept ever stated (``accumulate``) | as ``retrieval_template`` | does not adapt |
| ``echo`` | none | the user's last words | degenerate: the copy ratio I must catch it |

The LLM systems ask for ``{"titles": [...], "reason": "..."}`` (one or two titles, a reason of at most 12
words, capped at 100 characters by the schema: about 40 generated tokens) and keep a title only when it names an
item of the universe; titles outside the universe are dropped and counted (``off_universe``), titles of the
universe that were not among the candidates are kept and counted (``off_candidates``). A reason the cap cut is
trimmed to its last complete clause (:func:`complete_reason`), so that no reply ends mid-word. A failed call is a
reply with empty text and its ``failure_kind`` — the turn is not scored, and never filled with a made-up answer.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from lib import prompts
from lib.crs.concepts import concept_field, normalise, preference_concepts
from lib.crs.universe import ItemUniverse, Recommendation
from lib.llm.gateway import Gateway, LLMCall

TrackerPolicy = Literal["update", "last_turn", "accumulate"]
# Phrases with which a user drops what they asked for before (normalised token sequences).
SHIFT_CUES: tuple[str, ...] = ("changed my mind", "change my mind", "change of plan", "forget", "instead",
                               "scratch that", "never mind")
ASK_TEXT = "What kind of movie are you in the mood for?"
NOTHING_TEXT = "I found no movie for {wishes}. Could you tell me something else you like?"
History = Sequence[dict[str, str]]  # {"speaker": "USER" | "SYSTEM", "text": ...}, oldest first


@dataclass(frozen=True)
class SystemReply:
    """One system turn: the text, the constraints the system acted on, and (LLM systems) the titles proposed,
    of which ``off_universe`` were dropped and ``off_candidates`` were kept though not retrieved."""

    text: str
    constraints: tuple[str, ...]
    proposed: int = 0
    off_universe: int = 0
    off_candidates: int = 0
    failure_kind: str | None = None


@dataclass(frozen=True)
class CRS:
    """A system: ``respond(histories, seeds)`` gives one reply per history (each ends with a user turn);
    ``seeds[i]`` orders ties in retrieval for history i."""

    name: str
    respond: Callable[[Sequence[History], Sequence[int]], list[SystemReply]]
    uses_llm: bool = False


def has_shift_cue(text: str) -> bool:
    padded = f" {normalise(text)} "
    return any(f" {cue} " in padded for cue in SHIFT_CUES)


def track_constraints(user_texts: Sequence[str], universe: ItemUniverse, policy: TrackerPolicy) -> tuple[str, ...]:
    """The constraints after the user turns, by E(x) on each turn's text (preference fields only):

    * ``update``: a turn with a shift cue (:data:`SHIFT_CUES`) clears the constraints; a concept replaces
      the earlier ones on its field;
    * ``last_turn``: the concepts of the last turn only;
    * ``accumulate``: every concept ever stated."""
    state: set[str] = set()
    for text in user_texts:
        found = preference_concepts(universe.extract(text))
        if policy == "last_turn":
            state = set(found)
        elif policy == "accumulate":
            state |= found
        else:
            if has_shift_cue(text):
                state = set()
            fields = {concept_field(c) for c in found}
            state = {c for c in state if concept_field(c) not in fields} | found
    return tuple(sorted(state))


def user_texts(history: History) -> list[str]:
    return [turn["text"] for turn in history if turn["speaker"] == "USER"]


def wishes_text(constraints: Sequence[str], universe: ItemUniverse) -> str:
    """Constraints as "genre comedy, actor Tom Hanks": each value after its field's name, which E(x) reads as
    the field's cue."""
    return ", ".join(f"{concept_field(c)} {universe.display[c]}" for c in constraints)


def template_reply(constraints: Sequence[str], found: Recommendation, universe: ItemUniverse) -> str:
    """The retrieval template: ask when there is no constraint; else name the constraints and up to two items."""
    if not constraints:
        return ASK_TEXT
    wishes = wishes_text(constraints, universe)
    if not found.item_ids:
        return NOTHING_TEXT.format(wishes=wishes)
    titles = " or ".join(universe.names[i] for i in found.item_ids[:2])
    return f"Matching {wishes}: {titles}." if found.exact else f"Nothing matches all of {wishes}; closest: {titles}."


def retrieval_template_crs(universe: ItemUniverse, policy: TrackerPolicy = "update",
                           name: str = "retrieval_template") -> CRS:
    """No LLM: tracked constraints → ``recommend`` → :func:`template_reply`."""

    def respond(histories: Sequence[History], seeds: Sequence[int]) -> list[SystemReply]:
        replies = []
        for history, seed in zip(histories, seeds, strict=True):
            constraints = track_constraints(user_texts(history), universe, policy)
            found = universe.recommend(constraints, k=2, seed=seed)
            replies.append(SystemReply(template_reply(constraints, found, universe), constraints))
        return replies

    return CRS(name, respond)


def stale_template_crs(universe: ItemUniverse) -> CRS:
    """The retrieval template over every concept the user ever stated: known not to adapt to a shift."""
    return retrieval_template_crs(universe, policy="accumulate", name="stale_template")


def echo_crs() -> CRS:
    """Repeats the user's last turn (degenerate)."""

    def respond(histories: Sequence[History], seeds: Sequence[int]) -> list[SystemReply]:
        return [SystemReply(user_texts(history)[-1], ()) for history in histories]

    return CRS("echo", respond)


REASON_CAP = 100  # characters; the schema's cap keeps the generation short
SENTENCE_END = (".", "!", "?", "…")
CUT_MARGIN = 12  # characters short of the cap at which a reason that ends no sentence counts as cut
CLAUSE_MARKS = (". ", "; ", ", ", ": ", " - ")


TitleText = Annotated[str, StringConstraints(min_length=1, max_length=80)]


class LLMRecommendation(BaseModel):
    # Length caps are in the JSON schema, so constrained decoding keeps the reply short (~40 tokens).
    titles: list[TitleText] = Field(min_length=1, max_length=2)
    reason: str = Field(min_length=1, max_length=REASON_CAP)


def candidate_lines(item_ids: Sequence[str], universe: ItemUniverse) -> str:
    """One short line per candidate: "1. Heat (1995): action, crime; Al Pacino, Robert De Niro; dir. Michael Mann"."""
    lines = []
    for n, item in enumerate(item_ids, start=1):
        row = universe.items.loc[universe.position[item]]
        people = ", ".join(row["actor_raw"][:2])
        director = f"; dir. {row['director_raw'][0]}" if row["director_raw"] else ""
        lines.append(f"{n}. {row['name']}: {', '.join(row['genre'][:2])}; {people}{director}")
    return "\n".join(lines)


def recommend_messages(constraints: Sequence[str], item_ids: Sequence[str], last_user_text: str,
                       universe: ItemUniverse) -> list[dict[str, str]]:
    """System prompt (shared by every call, so the server caches it) first; then candidates, wishes, message."""
    system, user = prompts.parts("crs_recommend", 2)
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(candidates=candidate_lines(item_ids, universe),
                                                    wishes=wishes_text(constraints, universe),
                                                    message=last_user_text)}]


def complete_reason(reason: str, cap: int = REASON_CAP) -> str:
    """The reason as said, unless the length cap cut it (it comes within :data:`CUT_MARGIN` characters of the cap:
    the model stops early when the next word would not fit, and does not end a sentence): then up to its last
    clause mark (". ", "; ", ", ", ": ", " - ", or one at its very end) with a full stop, or, without a clause
    mark, as it is with "…" (no word is dropped: a complete one cannot be told from a cut one)."""
    reason = reason.strip()
    if len(reason) < cap - CUT_MARGIN or reason.endswith(SENTENCE_END):
        return reason
    padded = f"{reason} "
    cut = max(padded.rfind(mark) for mark in CLAUSE_MARKS)
    return f"{reason[:cut].rstrip(' ,;:-')}." if cut > 0 else f"{reason}…"


def filter_titles(proposed: Sequence[str], candidates: Sequence[str], universe: ItemUniverse
                  ) -> tuple[list[str], int, int]:
    """(kept item ids in order without repeats, titles outside the universe, kept titles not among the
    candidates)."""
    kept: list[str] = []
    off_universe = off_candidates = 0
    for title in proposed:
        item = universe.find_title(title, prefer=candidates)
        if item is None:
            off_universe += 1
        elif item not in kept:
            kept.append(item)
            off_candidates += item not in candidates
    return kept, off_universe, off_candidates


def llm_crs(gateway: Gateway, universe: ItemUniverse, policy: TrackerPolicy = "update", name: str = "llm",
            k: int = 3) -> CRS:
    """LLM CRS: tracked constraints → ``recommend`` (top ``k``) → the LLM picks from the candidates and gives a
    reason → titles outside the universe are dropped. Text: "<kept titles joined by 'or'>: <reason>". No
    constraint or no candidate: the template's question or "nothing found" text, without a call."""

    def respond(histories: Sequence[History], seeds: Sequence[int]) -> list[SystemReply]:
        replies: dict[int, SystemReply] = {}
        calls, pending = [], []
        for i, (history, seed) in enumerate(zip(histories, seeds, strict=True)):
            texts = user_texts(history)
            constraints = track_constraints(texts, universe, policy)
            found = universe.recommend(constraints, k=k, seed=seed)
            if not found.item_ids:
                replies[i] = SystemReply(template_reply(constraints, found, universe), constraints)
                continue
            pending.append((i, constraints, found.item_ids))
            calls.append(LLMCall(recommend_messages(constraints, found.item_ids, texts[-1], universe),
                                 LLMRecommendation, call_label=f"crs-{name}:{seed}", max_tokens=80))
        for (i, constraints, candidates), result in zip(pending, gateway.complete_many(calls, desc=f"CRS {name}"),
                                                        strict=True):
            if not result.ok:
                replies[i] = SystemReply("", constraints, failure_kind=result.failure_kind)
                continue
            kept, off_universe, off_candidates = filter_titles(result.value.titles, candidates, universe)
            reason = complete_reason(result.value.reason)
            text = f"{' or '.join(universe.names[item] for item in kept)}: {reason}" if kept else reason
            replies[i] = SystemReply(text, constraints, len(result.value.titles), off_universe, off_candidates)
        return [replies[i] for i in range(len(histories))]

    return CRS(name, respond, uses_llm=True)


def memoryless_llm_crs(gateway: Gateway, universe: ItemUniverse, k: int = 3) -> CRS:
    """The LLM CRS that sees only the last user turn (its constraints and its text)."""
    return llm_crs(gateway, universe, policy="last_turn", name="memoryless_llm", k=k)


def rule_systems(universe: ItemUniverse) -> list[CRS]:
    """The chapter's systems that call no LLM, in the order of :func:`default_systems`."""
    return [retrieval_template_crs(universe), stale_template_crs(universe), echo_crs()]


def default_systems(gateway: Gateway, universe: ItemUniverse) -> list[CRS]:
    """The five systems of the chapter, in the order of every table."""
    return [llm_crs(gateway, universe), retrieval_template_crs(universe), memoryless_llm_crs(gateway, universe),
            stale_template_crs(universe), echo_crs()]
