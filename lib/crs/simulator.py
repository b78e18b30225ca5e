"""The user simulator: an explicit state machine over a focus field, with controlled preference shifts and a
hidden target it never names.

State: a hidden *target* item, its *target values* (one concept per field the user may talk about, drawn
with the session's seed), the *focus* field, the *preference* P(t) (the concepts stated and not abandoned)
and the concepts abandoned at the last shift. Transitions at user turn t (:func:`simulate_script`):

* ``open`` (t = 0): focus = the first field of a seeded order of the target's fields; the user states it.
* ``refine``: focus moves to the next field of the order; the user states its value; P grows.
* ``restate``: every field is stated; the user repeats the focus value.
* ``shift`` (at the scheduled turns, or at seeded random turns): a new target is drawn among the items that
  do *not* carry the old focus value, with a value on the new focus field (≠ the old one) that the user has
  not stated; the drawn items that share a stated value come first (a *partial* shift). The user keeps the
  stated values the new target carries and abandons the others; P becomes the kept values and the new one,
  and a shift event (turn, from, to, values, kept, dropped) is recorded. A declared share of shifts
  (``quiet_shift_share``) is phrased without any of the trackers' cue words (:data:`QUIET_SHIFT_TEMPLATES`).

The user also reacts: before a refine or restate turn it says whether a title of the last reply met its
preference (:data:`FEEDBACK`), and in a declared share of sessions (``liked_share``) it names a movie it liked
in its first turn — one carrying its first wish, never a target.

The target title is never said: the utterances are made from concept values only (the LLM that phrases them
never sees a title), a target whose title would appear in one of its template utterances is replaced by the
next draw, and an LLM-phrased utterance is kept only if it names every stated concept, no title, and no
target's title — otherwise the template utterance is used (``phrasing = "template_fallback"``). This is the
guard against the leak of iEvaLM-style simulators, which are given the target title (Zhu et al., WWW 2024).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from itertools import combinations, pairwise
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from lib import prompts
from lib.crs.concepts import concept_field, content_words, normalise, preference_concepts, split_concept, tokens
from lib.crs.systems import has_shift_cue
from lib.crs.universe import ItemUniverse
from lib.llm.gateway import Gateway, LLMCall

REVEALABLE_FIELDS: tuple[str, ...] = ("genre", "actor", "director", "writer", "year", "plot", "language")
MIN_TARGET_FIELDS = 3
TurnKind = Literal["open", "refine", "restate", "shift"]
Phrasing = Literal["template", "llm", "template_fallback"]

# Template utterances; {desc} is :func:`describe` of the stated concepts. The variant is drawn with the seed, turn
# by turn, so that no two sessions read alike. A shift template carries a cue word of the trackers
# (lib.crs.systems.SHIFT_CUES); a quiet one carries none, so a tracker that waits for a cue misses it.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "open": ("Hi! I'm looking for {desc}.", "Hello, can you suggest {desc}?", "Hey, I want to watch {desc} tonight.",
             "Any ideas for {desc}?"),
    "refine": ("Could it also be {desc}?", "I'd also like it to be {desc}.", "Ideally it would be {desc} too.",
               "Even better if it's {desc}."),
    "restate": ("I still want {desc}.", "Remember, I'm after {desc}.", "Again: {desc}, please."),
    "shift": ("Actually, I've changed my mind. Forget what I said before: I want {desc}.",
              "Change of plan: I'd rather see {desc}.", "Scratch that, give me {desc}."),
}
QUIET_SHIFT_TEMPLATES: tuple[str, ...] = ("Now I'm in the mood for {desc}.", "Tonight feels more like {desc}.",
                                          "What I'd really enjoy now is {desc}.")
LIKED_TEMPLATE = "I loved {title}."
SENTENCE_ENDS = (".", "!", "?", '"', ")")
# Said before a refine or restate utterance, after the system's reply: whether one of the titles it named
# meets the whole preference the user had when it answered (accepting or rejecting the recommendation). The
# variant is drawn with the seed.
FEEDBACK: dict[bool, tuple[str, ...]] = {
    True: ("That sounds good.", "Yes, that one looks great.", "Nice, I'd watch that."),
    False: ("Not quite what I'm after.", "Hmm, that's not it.", "No, that doesn't fit."),
}
FIELD_PHRASES = {"actor": "with {}", "director": "directed by {}", "writer": "written by {}", "language": "in {}",
                 "year": "from {}", "plot": "about {}"}
PHRASE_ORDER = ("genre", "actor", "director", "writer", "language", "year", "plot")


@dataclass(frozen=True)
class SimulatorSettings:
    """Sizes of one simulated conversation. ``shift_turns``: the user turns at which a shift happens (None: draw
    ``n_random_shifts`` turns with the session's seed); every segment, first and last included, has at least
    ``min_segment_turns`` turns. ``quiet_shift_share``: the chance that a shift is phrased without a cue word;
    ``liked_share``: the chance that the user names a movie it liked in its first turn."""

    n_turns: int = 8
    shift_turns: tuple[int, ...] | None = (3, 6)
    n_random_shifts: int = 2
    min_segment_turns: int = 2
    quiet_shift_share: float = 0.0
    liked_share: float = 0.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SimulatorSettings:
        """The settings a notebook's parameters name (a YAML list of shift turns becomes a tuple)."""
        shift_turns = params.get("shift_turns")
        return cls(**{**params, "shift_turns": None if shift_turns is None else tuple(shift_turns)})

    def __post_init__(self) -> None:
        for name in ("quiet_shift_share", "liked_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")

    def schedule(self, rng: np.random.Generator) -> tuple[int, ...]:
        """The shift turns of one session (the fixed ones, or a seeded uniform draw among valid schedules)."""
        if self.shift_turns is not None:
            turns = tuple(sorted(self.shift_turns))
            if not self._valid(turns):
                raise ValueError(f"shift_turns {turns} leave a segment shorter than {self.min_segment_turns} turns "
                                 f"in {self.n_turns} turns")
            return turns
        options = [c for c in combinations(range(1, self.n_turns), self.n_random_shifts) if self._valid(c)]
        if not options:
            raise ValueError(f"no schedule of {self.n_random_shifts} shifts in {self.n_turns} turns with segments "
                             f"of at least {self.min_segment_turns} turns")
        return options[int(rng.integers(len(options)))]

    def _valid(self, turns: tuple[int, ...]) -> bool:
        bounds = (0, *turns, self.n_turns)
        return all(0 < t < self.n_turns for t in turns) and \
            all(b - a >= self.min_segment_turns for a, b in pairwise(bounds))


@dataclass(frozen=True)
class TurnPlan:
    """What the user does at turn ``turn``: the concepts stated, the preference P(t) after it, the concepts
    abandoned at the last shift, the hidden target, the template utterance, the variant of the feedback said
    before it, and the item the user says it liked (None: none)."""

    turn: int
    kind: TurnKind
    focus: str
    stated: tuple[str, ...]
    preference: tuple[str, ...]
    dropped: tuple[str, ...]
    target: str
    template_text: str
    feedback_variant: int = 0
    liked: str | None = None
    quiet: bool = False  # a shift said without a cue word

    @property
    def shift(self) -> bool:
        return self.kind == "shift"


@dataclass(frozen=True)
class ShiftEvent:
    """A controlled preference shift: at user turn ``turn`` the focus moves ``from_field`` → ``to_field``, the
    user states ``values`` (the new one and the ``kept`` ones) and abandons ``dropped``."""

    turn: int
    from_field: str
    to_field: str
    values: tuple[str, ...]
    kept: tuple[str, ...]
    dropped: tuple[str, ...]

    def as_record(self) -> dict:
        return {"turn": self.turn, "from": self.from_field, "to": self.to_field, "values": list(self.values),
                "kept": list(self.kept), "dropped": list(self.dropped)}


@dataclass(frozen=True)
class Script:
    """The system-independent plan of one session: every system meets the same user."""

    seed: int
    true_genre: str
    turns: tuple[TurnPlan, ...]
    shift_events: tuple[ShiftEvent, ...]
    targets: tuple[str, ...]  # every target of the session, in order (the guard checks all of them)


def describe(concepts: Sequence[str], universe: ItemUniverse) -> str:
    """Template description of concepts: "a comedy movie with Tom Hanks from 1995" (a genre leads; every other
    field after its cue phrase, which E(x) reads back to the same field)."""
    by_field = sorted(concepts, key=lambda c: PHRASE_ORDER.index(concept_field(c)))
    genres = [universe.display[c] for c in by_field if concept_field(c) == "genre"]
    head = f"{'an' if genres and genres[0][0] in 'aeiou' else 'a'} {' '.join(genres)} movie" if genres else "a movie"
    tail = [FIELD_PHRASES[concept_field(c)].format(universe.display[c])
            for c in by_field if concept_field(c) != "genre"]
    return " ".join([head, *tail])


def names_title(text: str, universe: ItemUniverse, item_id: str) -> bool:
    """Whether ``text`` contains the item's bare title as a whole token sequence (the leak guard)."""
    title = f" {normalise(universe.items.loc[universe.position[item_id], 'title'])} "
    return title.strip() != "" and title in f" {normalise(text)} "


@lru_cache(maxsize=4)
def eligible_targets(universe: ItemUniverse) -> tuple[str, ...]:
    """Items that may be drawn as a hidden target: a year, a genre, values on at least ``MIN_TARGET_FIELDS``
    revealable fields, and a title with a word that is not a stop word (a title such as "It" would be "said" by
    any sentence). A drawn item is used only if that many of its fields are stateable (:func:`stateable_values`)."""
    return tuple(row.item_id for row in universe.items.itertuples(index=False)
                 if row.year is not None and row.genre and content_words(tokens(row.title))
                 and len({concept_field(c) for c in universe.concepts_of[row.item_id]} & set(REVEALABLE_FIELDS))
                 >= MIN_TARGET_FIELDS)


@cache
def stateable_values(universe: ItemUniverse, item_id: str) -> dict[str, tuple[str, ...]]:
    """Per revealable field, the item's concepts the user can state: E(x) reads their template description back
    as exactly that concept, and it does not contain the item's title. Language only when not English (English
    is the language of nearly every item: stating it says nothing)."""
    values: dict[str, tuple[str, ...]] = {}
    for c in sorted(universe.concepts_of[item_id]):
        field_name = concept_field(c)
        if field_name not in REVEALABLE_FIELDS or c == "language=english":
            continue
        text = describe([c], universe)
        if universe.extract(text) == {c} and not names_title(text, universe, item_id):
            values[field_name] = (*values.get(field_name, ()), c)
    return values


def _target_values(universe: ItemUniverse, item_id: str, rng: np.random.Generator) -> dict[str, str]:
    """One seeded concept per stateable field of the item."""
    return {f: options[int(rng.integers(len(options)))] for f, options in stateable_values(universe, item_id).items()}


def _template(kind: TurnKind, stated: Sequence[str], universe: ItemUniverse, rng: np.random.Generator,
              quiet: bool = False) -> str:
    variants = QUIET_SHIFT_TEMPLATES if quiet else TEMPLATES[kind]
    return variants[int(rng.integers(len(variants)))].format(desc=describe(stated, universe))


def simulate_script(universe: ItemUniverse, settings: SimulatorSettings, seed: int) -> Script:
    """The user's plan for one session (see the module docstring); deterministic given ``seed``."""
    rng = np.random.default_rng(seed)
    pool = eligible_targets(universe)
    shifts = settings.schedule(rng)
    for _ in range(100):
        script = _draw_script(universe, settings, shifts, pool, rng, seed)
        if not any(names_title(plan.template_text, universe, target)
                   for plan in script.turns for target in script.targets):
            return _with_liked(script, universe, settings.liked_share, rng)
    raise RuntimeError(f"seed {seed}: no script in 100 draws whose utterances avoid its target titles")


def _with_liked(script: Script, universe: ItemUniverse, share: float, rng: np.random.Generator) -> Script:
    """With chance ``share``, the first turn names a liked movie: a seeded item carrying the first wish that is no
    target and whose sentence names no target's title."""
    if rng.random() >= share:
        return script
    first = script.turns[0]
    carrying = sorted(universe.postings[first.stated[0]])
    for item in (carrying[i] for i in rng.permutation(len(carrying))):
        text = liked_text(item, universe)
        if item not in script.targets and not any(names_title(text, universe, t) for t in script.targets):
            return replace(script, turns=(replace(first, liked=item), *script.turns[1:]))
    return script


def liked_text(item_id: str, universe: ItemUniverse) -> str:
    """The sentence naming a liked movie: "I loved Heat (1995)."."""
    return LIKED_TEMPLATE.format(title=universe.names[item_id])


def _draw_script(universe: ItemUniverse, settings: SimulatorSettings, shifts: tuple[int, ...],
                 pool: tuple[str, ...], rng: np.random.Generator, seed: int) -> Script:
    target = next(pool[i] for i in rng.permutation(len(pool))
                  if len(stateable_values(universe, pool[i])) >= MIN_TARGET_FIELDS)
    values = _target_values(universe, target, rng)
    order = [str(f) for f in rng.permutation(sorted(values))]
    # The genre the user would state; every eligible target has one (stateable unless it spells the title).
    true_genre = split_concept(values["genre"])[1] if "genre" in values \
        else universe.items.loc[universe.position[target], "genre"][0]
    targets = [target]
    turns: list[TurnPlan] = []
    events: list[ShiftEvent] = []
    preference: list[str] = []
    dropped: tuple[str, ...] = ()
    focus_index = 0
    for t in range(settings.n_turns):
        quiet = False
        if t in shifts:
            old_focus_concept = values[order[focus_index]]
            target, values, order, kept = _shift_target(universe, pool, order[focus_index], old_focus_concept,
                                                        preference, rng)
            targets.append(target)
            new = values[order[0]]
            dropped = tuple(sorted(set(preference) - set(kept) - {new}))
            stated = sorted({*kept, new})
            events.append(ShiftEvent(t, concept_field(old_focus_concept), order[0], tuple(stated), kept, dropped))
            kind: TurnKind = "shift"
            quiet = bool(rng.random() < settings.quiet_shift_share)
            focus_index = 0
            preference = list(stated)
        elif t == 0:
            kind, stated = "open", [values[order[0]]]
            preference = list(stated)
        elif focus_index + 1 < len(order):
            focus_index += 1
            kind, stated = "refine", [values[order[focus_index]]]
            preference.append(stated[0])
        else:
            kind, stated = "restate", [values[order[focus_index]]]
        # A value stated again after the shift is wanted again: it is no longer abandoned.
        turns.append(TurnPlan(t, kind, order[focus_index], tuple(stated), tuple(sorted(preference)),
                              tuple(c for c in dropped if c not in preference), target,
                              _template(kind, stated, universe, rng, quiet),
                              int(rng.integers(len(FEEDBACK[True]))), quiet=quiet))
    return Script(seed, true_genre, tuple(turns), tuple(events), tuple(targets))


def _shift_target(universe: ItemUniverse, pool: tuple[str, ...], old_field: str, old_focus_concept: str,
                  preference: Sequence[str], rng: np.random.Generator
                  ) -> tuple[str, dict[str, str], list[str], tuple[str, ...]]:
    """A new target without the old focus value, its values, its field order led by a new focus field whose
    value the user has not stated (the fields of kept values left out: they are said at the shift), and the
    stated values it shares (kept). Items sharing a stated value are preferred, in the seeded order."""
    order = [pool[i] for i in rng.permutation(len(pool))]
    sharing = [item for item in order if set(preference) & universe.concepts_of[item]]
    for item in [*sharing, *order]:
        if old_focus_concept in universe.concepts_of[item] or len(stateable_values(universe, item)) < MIN_TARGET_FIELDS:
            continue
        values = _target_values(universe, item, rng)
        kept = tuple(sorted(c for c in preference if c in universe.concepts_of[item]
                            and c in stateable_values(universe, item).get(concept_field(c), ())))
        values |= {concept_field(c): c for c in kept}
        kept_fields = {concept_field(c) for c in kept}
        fields = [f for f in sorted(values) if f != old_field and f not in kept_fields and values[f] not in preference]
        if not fields:
            continue
        to_field = fields[int(rng.integers(len(fields)))]
        rest = [f for f in sorted(values) if f != to_field and f not in kept_fields]
        return item, values, [to_field, *(rest[i] for i in rng.permutation(len(rest)))], kept
    raise RuntimeError("no item can be the target after a shift")


def feedback_prefix(previous_preference: Sequence[str], previous_system_text: str, universe: ItemUniverse,
                    variant: int = 0, liked: str | None = None) -> str:
    """:data:`FEEDBACK` on the system's last reply (its ``variant``): good when a title it named carries every
    concept of the preference the user had then and is not the movie the user said it ``liked`` (already seen)."""
    wanted = set(previous_preference)
    named = [c for c in universe.extract(previous_system_text) if concept_field(c) == "name"]
    met = any(wanted <= universe.concepts_of[item] for c in named for item in universe.items_named(c)
              if item != liked)
    return FEEDBACK[met][variant % len(FEEDBACK[met])]


def user_text(plan: TurnPlan, base_text: str, previous: TurnPlan | None, previous_system_text: str | None,
              universe: ItemUniverse, targets: Sequence[str], liked: str | None = None) -> str:
    """The utterance the system sees at ``plan``'s turn: the base text (template or LLM), followed by the liked
    movie when the plan names one, after the feedback on the last reply for a refine or restate turn (the
    session's ``liked`` movie recommended back is no good recommendation). A feedback that would join the base
    text into a target's title is left out."""
    if plan.liked is not None:
        base_text = f"{base_text} {liked_text(plan.liked, universe)}"
    if plan.kind in ("open", "shift") or previous is None or previous_system_text is None:
        return base_text
    feedback = feedback_prefix(previous.preference, previous_system_text, universe, plan.feedback_variant, liked)
    text = f"{feedback} {base_text}"
    return base_text if any(names_title(text, universe, t) for t in targets) else text


class UserUtterance(BaseModel):
    # Room for two sentences: a cap the decoder reaches would cut the turn mid-sentence (it is refused, below).
    text: str = Field(min_length=1, max_length=400)


USER_SITUATIONS: dict[str, str] = {
    "open": "This is the person's first message.",
    "refine": "The person adds this to what they asked for before.",
    "restate": "The person repeats this wish.",
    "shift": 'The person has changed their mind: they begin with "Actually, I\'ve changed my mind" and ask for this '
             "instead of what they asked before.",
    "quiet shift": "The person now asks for this, without saying that they changed their mind or want something else.",
}


def utterance_messages(plan: TurnPlan, universe: ItemUniverse) -> list[dict[str, str]]:
    """Prompt for an LLM-phrased utterance: the stated concepts as display text and field, the situation; no
    title anywhere (the model cannot leak what it is not shown)."""
    system, user = prompts.parts("crs_user_utterance", 2)
    wishes = "; ".join(f"{universe.display[c]} ({concept_field(c)})" for c in plan.stated)
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(
                wishes=wishes, situation=USER_SITUATIONS["quiet shift" if plan.quiet else plan.kind])}]


def acceptable_utterance(text: str, plan: TurnPlan, universe: ItemUniverse, targets: Sequence[str]) -> bool:
    """An LLM utterance is kept when E(x) finds exactly the stated concepts on the preference fields (no wish the
    plan does not hold), no title, no target's title, it ends a sentence (a cut turn is refused), and it carries a
    cue word of the trackers exactly when the plan is a shift said with one (not a quiet shift, not another turn)."""
    found = universe.extract(text)
    return preference_concepts(found) == set(plan.stated) and not any(concept_field(c) == "name" for c in found) \
        and not any(names_title(text, universe, t) for t in targets) and text.rstrip().endswith(SENTENCE_ENDS) \
        and has_shift_cue(text) == (plan.shift and not plan.quiet)


def phrase_scripts(scripts: Sequence[Script], universe: ItemUniverse, gateway: Gateway | None = None,
                   llm_sessions: int = 0) -> list[list[tuple[str, Phrasing]]]:
    """Base utterance and its phrasing for every turn of every script: the first ``llm_sessions`` scripts are
    phrased by the LLM (one call per turn, in one batch), the rest by the templates."""
    if llm_sessions and gateway is None:
        raise ValueError("llm_sessions > 0 needs a gateway")
    out: list[list[tuple[str, Phrasing]]] = [[(p.template_text, "template") for p in s.turns] for s in scripts]
    positions = [(i, t) for i in range(min(llm_sessions, len(scripts))) for t in range(len(scripts[i].turns))]
    if not positions or gateway is None:  # a gateway whenever there are positions: checked above
        return out
    calls = [LLMCall(utterance_messages(scripts[i].turns[t], universe), UserUtterance,
                     call_label=f"crs-user:{scripts[i].seed}:{t}", max_tokens=96) for i, t in positions]
    for (i, t), result in zip(positions, gateway.complete_many(calls, desc="user utterances"), strict=True):
        plan = scripts[i].turns[t]
        if result.ok and acceptable_utterance(result.value.text, plan, universe, scripts[i].targets):
            out[i][t] = (result.value.text.strip(), "llm")
        else:
            out[i][t] = (plan.template_text, "template_fallback")
    return out
