"""Outcome scores computed from records of what a user did after a nudge (no LLM), as the G-Eval metrics
specification (``shared/specs/001_geval_metrics.md``) defines them, one result per record with the
specification's reason.

* InterventionSuccess: 1 when the recorded action is ``saved`` ("user chose to save instead of spend"), 0 when
  ``spent`` ("user proceeded with spending").
* StakeEffectiveness: for a record with a stake type and a goal outcome, min(1, success / expected success rate
  of its stake type), success = 1 if the goal was completed else 0, with the rates of
  :data:`EXPECTED_SUCCESS_RATE` (social 0.78, anti_charity 0.85, loss_pool 0.72, none 0.35). Reason: "goal
  achieved with <stake> stake (expected rate: <rate>%)" or "goal not achieved with <stake> stake".

What the formula does: every expected rate is below 1, so min(1, 1 / rate) = 1 and a completed goal scores 1
under every stake type, a missed one 0. The expected rate never changes a score; it shows only in the reason. So
StakeEffectiveness per record is goal completion, and "by stake type" is its mean over a stake type's records
(:func:`stake_effectiveness`), which can be read beside the expected rate.

Deviations from the specification, and why:

* A record without the field a metric needs (no recorded action; no stake type or no goal outcome) is a failure
  of kind ``undefined`` with the specification's reason ("no user action recorded", "missing stake or completion
  data"), not the specification's score 0: in the study's metric protocol (:mod:`lib.metrics`) a failure is never
  a score, and an unobserved outcome is not a failed intervention.
* The specification tests ``!goalCompleted`` for missing data, so a goal recorded as not completed (false) takes
  the missing-data branch there and its "goal not achieved" reason is unreachable; here false is an outcome
  (score 0, "goal not achieved") and only None is missing.
* An unknown stake type is an error, where the specification falls back to the rate of ``none`` (0.35): a
  misspelt stake type would otherwise be reported as no stake. (The fallback could change only the reason.)

The study's records: it has no logged user actions, goal outcomes or stakes, so :class:`OutcomeRecord` holds
constructed records (``lib.judges.examples``) that exercise each case; no verdict on what these scores measure
can be drawn from them. The specification's ``DatasetItem`` carries ``userAction`` at its top level and
``stakeType`` / ``goalCompleted`` in its context; the record keeps the three as fields.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lib import metrics

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

# The specification's expected goal-completion rate of each stake type (StakeEffectiveness).
EXPECTED_SUCCESS_RATE: dict[str, float] = {"social": 0.78, "anti_charity": 0.85, "loss_pool": 0.72, "none": 0.35}
ACTIONS = ("saved", "spent")


@dataclass(frozen=True)
class OutcomeRecord:
    """What a user did after a nudge: ``action`` ("saved", "spent" or None: not recorded), the commitment
    device's ``stake_type`` (a key of :data:`EXPECTED_SUCCESS_RATE`, or None) and whether the goal was completed
    (``goal_completed``; None: not recorded)."""

    record_id: str
    action: str | None
    stake_type: str | None = None
    goal_completed: bool | None = None

    def __post_init__(self) -> None:
        if self.action is not None and self.action not in ACTIONS:
            raise ValueError(f"record {self.record_id}: action must be saved, spent or missing, not {self.action!r}")


def intervention_success(record: OutcomeRecord) -> metrics.Result:
    """1 saved, 0 spent, with the specification's reason; no recorded action: a failure (``undefined``)."""
    if record.action is None:
        return metrics.Result.failure(metrics.UNDEFINED, "no user action recorded")
    if record.action == "saved":
        return metrics.Result(1.0, "user chose to save instead of spend")
    return metrics.Result(0.0, "user proceeded with spending")


def expected_rate(stake_type: str, expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE) -> float:
    """The expected success rate of ``stake_type``; an unknown stake type is an error (module docstring)."""
    if stake_type not in expected:
        raise ValueError(f"unknown stake type {stake_type!r}; one of {tuple(expected)}")
    return expected[stake_type]


def stake_score(record: OutcomeRecord, expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE) -> metrics.Result:
    """StakeEffectiveness of one record: min(1, success / expected rate of its stake type), success 1 when the goal
    was completed, else 0, with the specification's reason; no stake type or no goal outcome: a failure."""
    if record.stake_type is None or record.goal_completed is None:
        return metrics.Result.failure(metrics.UNDEFINED, "missing stake or completion data")
    rate = expected_rate(record.stake_type, expected)
    if record.goal_completed:
        return metrics.Result(min(1.0, 1.0 / rate),
                              f"goal achieved with {record.stake_type} stake (expected rate: {round(rate * 100)}%)")
    return metrics.Result(0.0, f"goal not achieved with {record.stake_type} stake")


def stake_effectiveness(records: Iterable[OutcomeRecord], expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE
                        ) -> dict[str, dict[str, float | int | None]]:
    """Per stake type (in the order of ``expected``, those with records): records, records with a goal outcome,
    the mean StakeEffectiveness over them (None without any) and the expected rate it can be read beside."""
    table: dict[str, dict[str, float | int | None]] = {}
    by_stake: dict[str, list[metrics.Result]] = {}
    for record in records:
        if record.stake_type is not None:
            expected_rate(record.stake_type, expected)  # an unknown stake type is an error even without an outcome
            by_stake.setdefault(record.stake_type, []).append(stake_score(record, expected))
    for stake in (s for s in expected if s in by_stake):
        scored = [r.score for r in by_stake[stake] if not r.failed]
        table[stake] = {"records": len(by_stake[stake]), "with_data": len(scored),
                        "StakeEffectiveness": sum(scored) / len(scored) if scored else None,
                        "expected_rate": expected[stake]}
    return table


def _success_call(gateway: Gateway | None, items: Sequence[OutcomeRecord], **options: Any) -> list[metrics.Result]:
    return [intervention_success(r) for r in items]


def _stake_call(gateway: Gateway | None, items: Sequence[OutcomeRecord],
                expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE, **options: Any) -> list[metrics.Result]:
    return [stake_score(r, expected) for r in items]


INTERVENTION_SUCCESS = metrics.register(metrics.FunctionMetric(
    name="InterventionSuccess", kind="outcome", construct="whether the user saved instead of spent after the nudge",
    scale=metrics.Scale.of(0, 1), citation="G-Eval metrics specification (shared/specs/001_geval_metrics.md)",
    description="1 saved, 0 spent; no recorded action: no score (undefined)", call=_success_call))
STAKE_EFFECTIVENESS = metrics.register(metrics.FunctionMetric(
    name="StakeEffectiveness", kind="outcome",
    construct="goal completion under a commitment device, weighted by the stake type's expected success rate",
    scale=metrics.Scale(0, 1), citation="G-Eval metrics specification (shared/specs/001_geval_metrics.md)",
    description="per record min(1, completed / EXPECTED_SUCCESS_RATE of its stake type) (social 0.78, "
                "anti_charity 0.85, loss_pool 0.72, none 0.35); no stake type or outcome: no score (undefined)",
    call=_stake_call))
