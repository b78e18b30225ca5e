"""Data contracts of chapter 06, as pydantic models, and their JSONL files — validated on write and on read.

* Conversation (in memory and in the log): USER turns ``{"speaker", "text", "user_meta"}``, SYSTEM turns
  ``{"speaker", "text", "constraints"}``, alternating from a USER turn. An empty SYSTEM text is a failed LLM
  call (not scored).
* Session log (``outputs/crs/sessions.jsonl``, one line per session and system): ``{"session_id",
  "system", "true_genre", "conversation", "shift_events"}``; a shift event is ``{"turn", "from", "to",
  "values", "kept", "dropped"}``.
* Results (``outputs/crs/results.jsonl``, one line per session and system): ``{"system", "session_id", …metrics…,
  "judge": {…}}`` (:class:`ResultRow`; the metrics are defined in :mod:`lib.crs.metrics`).

:func:`write_jsonl` refuses the whole file when one record does not validate (naming the record);
:func:`read_jsonl` raises :class:`lib.data.DataFormatError` naming ``file:line`` for a line that is not JSON or
does not match the schema. Undefined metrics are null, never NaN (the models refuse NaN).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from lib import paths
from lib.crs.concepts import CONCEPT_PATTERN, FieldName
from lib.data import DataFormatError

CRS_OUTPUTS: Path = paths.OUTPUTS / "crs"
LOG_FILE: Path = CRS_OUTPUTS / "sessions.jsonl"
RESULTS_FILE: Path = CRS_OUTPUTS / "results.jsonl"

Concept = Annotated[str, StringConstraints(pattern=CONCEPT_PATTERN)]
Score = Annotated[float, Field(ge=1, le=5)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class UserMeta(Strict):
    """The simulator's state at a user turn (what the metrics are grounded in; never shown to a system)."""

    turn: int = Field(ge=0)
    kind: Literal["open", "refine", "restate", "shift"]
    focus: FieldName
    stated: list[Concept] = Field(min_length=1)
    preference: list[Concept] = Field(min_length=1)
    dropped: list[Concept]
    shift: bool
    phrasing: Literal["template", "llm", "template_fallback"]
    target: str = Field(min_length=1)
    liked: str | None  # an item the user said it liked at this turn
    quiet: bool  # a shift planned without a cue word


class UserTurn(Strict):
    speaker: Literal["USER"]
    text: str = Field(min_length=1)
    user_meta: UserMeta


class SystemTurn(Strict):
    speaker: Literal["SYSTEM"]
    text: str
    constraints: list[Concept]


class ShiftEventRecord(Strict):
    turn: int = Field(ge=0)
    from_field: FieldName = Field(alias="from")
    to_field: FieldName = Field(alias="to")
    values: list[Concept] = Field(min_length=1)
    kept: list[Concept]
    dropped: list[Concept]


class SessionLog(Strict):
    session_id: str = Field(min_length=1)
    system: str = Field(min_length=1)
    true_genre: str = Field(min_length=1)
    conversation: list[Annotated[UserTurn | SystemTurn, Field(discriminator="speaker")]]
    shift_events: list[ShiftEventRecord]

    @model_validator(mode="after")
    def _consistent(self) -> SessionLog:
        turns = self.conversation
        if not turns or len(turns) % 2 or any(t.speaker != ("USER", "SYSTEM")[i % 2] for i, t in enumerate(turns)):
            raise ValueError("conversation must alternate USER and SYSTEM turns, starting with USER and ending "
                             "with SYSTEM")
        users = self.user_turns()
        if [u.user_meta.turn for u in users] != list(range(len(users))):
            raise ValueError("user_meta.turn must count the user turns 0, 1, 2, …")
        shifts = [u.user_meta.turn for u in users if u.user_meta.shift]
        if shifts != [e.turn for e in self.shift_events]:
            raise ValueError(f"shift_events turns {[e.turn for e in self.shift_events]} differ from the user turns "
                             f"marked shift {shifts}")
        return self

    def user_turns(self) -> list[UserTurn]:
        """The user turns, in order (every other turn, from the first)."""
        return [t for t in self.conversation if isinstance(t, UserTurn)]

    def record(self) -> dict[str, Any]:
        """The JSON-ready dict (shift events with their "from" / "to" keys)."""
        return self.model_dump(mode="json", by_alias=True)


class JudgeRecord(Strict):
    """The conversation rubric (:mod:`lib.crs.judge`): three 1–5 scores when ``ok`` (probability-weighted, or
    the written integers: ``scored_by``), else none and why."""

    ok: bool
    coherence: Score | None = None
    personalisation: Score | None = None
    proactiveness: Score | None = None
    scored_by: Literal["logprobs", "argmax"] | None = None
    failure_kind: str | None = None
    model: str | None = None

    @model_validator(mode="after")
    def _scores_iff_ok(self) -> JudgeRecord:
        scores = [self.coherence, self.personalisation, self.proactiveness]
        if self.ok and (None in scores or self.failure_kind is not None):
            raise ValueError("an ok judgment has all three scores and no failure_kind")
        if not self.ok and (any(s is not None for s in scores) or not self.failure_kind):
            raise ValueError("a failed judgment has no score and names its failure_kind")
        return self


class ResultRow(Strict):
    """One session of one system: identity, metrics (null where undefined), diagnostics, judge."""

    system: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    seed: int
    n_turns: int = Field(ge=1)
    n_shifts: int = Field(ge=0)
    cc: float | None
    cr: float | None
    copy_ratio: float | None
    tas: float | None
    recovery_rate: float | None
    recovery_delay: float | None
    interference: float | None
    cas: float | None
    missing: int = Field(ge=0)
    hallucinated: int = Field(ge=0)
    scored_turns: int = Field(ge=0)
    failed_turns: int = Field(ge=0)
    legacy_boundaries: list[int]
    legacy_tp: int = Field(ge=0)
    legacy_pk: float | None
    titles_proposed: int = Field(ge=0)
    titles_off_universe: int = Field(ge=0)
    titles_off_candidates: int = Field(ge=0)
    llm_user_turns: int = Field(ge=0)
    template_fallback_turns: int = Field(ge=0)
    judge: JudgeRecord

    def record(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


Record = TypeVar("Record", bound=Strict)


def _problems(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'root'}: {e['msg']}" for e in error.errors()[:5])


def write_jsonl(path: Path, records: Sequence[BaseModel | Mapping[str, Any]], model: type[Record]) -> Path:
    """Validate every record against ``model``, then write one JSON object per line (keys by alias, UTF-8,
    nothing run-dependent). A record that does not validate is a ``ValueError`` naming its index; nothing is
    written then."""
    lines = []
    for index, record in enumerate(records):
        data = record.model_dump(mode="json", by_alias=True) if isinstance(record, BaseModel) else record
        try:
            validated = model.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"{path}: record {index} is not a valid {model.__name__}: {_problems(exc)}") from None
        lines.append(json.dumps(validated.model_dump(mode="json", by_alias=True), ensure_ascii=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path, model: type[Record]) -> list[Record]:
    """The records of a JSONL file, each validated against ``model``; a blank, non-JSON or invalid line is a
    :class:`lib.data.DataFormatError` naming ``file:line``."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            raise DataFormatError(f"{path}:{number}: blank line (one JSON object per line expected)")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        try:
            records.append(model.model_validate(data))
        except ValidationError as exc:
            raise DataFormatError(f"{path}:{number}: not a valid {model.__name__}: {_problems(exc)}") from None
    return records
