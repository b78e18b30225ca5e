"""Outcome scores computed from records of what a user did after a nudge (no LLM).

InterventionSuccess: 1 when the recorded action is ``saved``, 0 when ``spent``; a missing action is
"no data" (None) — never 0, since an unobserved outcome is not a failure.
StakeEffectiveness (per stake type): min(1, observed success rate / expected success rate of the stake
type), over the records that have data. The expected rates are a declared parameter table.
Both are metrics of the study (kind ``outcome``, :mod:`lib.metrics`): ``INTERVENTION_SUCCESS.score(None, records)``
and ``STAKE_EFFECTIVENESS.score(None, groups)`` with one group of records per stake type; no data is a failure of
kind ``undefined``, never 0.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lib import metrics

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

# Declared expectations (illustrative design parameters, not data): larger stakes are kept less often.
EXPECTED_SUCCESS_RATE: dict[str, float] = {"small": 0.6, "medium": 0.4, "large": 0.2}


@dataclass(frozen=True)
class OutcomeRecord:
    record_id: str
    stake_type: str
    action: str | None  # "saved", "spent" or None (not recorded)


def intervention_success(record: OutcomeRecord) -> int | None:
    if record.action is None:
        return None
    if record.action not in ("saved", "spent"):
        raise ValueError(f"record {record.record_id}: action must be saved, spent or missing, not {record.action!r}")
    return int(record.action == "saved")


def stake_effectiveness(records: Iterable[OutcomeRecord], expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE
                        ) -> dict[str, dict[str, float | int | None]]:
    """Per stake type: records, records with data, observed rate, and min(1, observed / expected)."""
    by_stake: dict[str, list[int | None]] = {}
    for record in records:
        if record.stake_type not in expected:
            raise ValueError(f"record {record.record_id}: unknown stake type {record.stake_type!r}")
        by_stake.setdefault(record.stake_type, []).append(intervention_success(record))
    table = {}
    for stake, outcomes in by_stake.items():
        observed = [o for o in outcomes if o is not None]
        rate = sum(observed) / len(observed) if observed else None
        table[stake] = {"records": len(outcomes), "with_data": len(observed), "success_rate": rate,
                        "effectiveness": None if rate is None else min(1.0, rate / expected[stake])}
    return table


def _success_call(gateway: Gateway | None, items: Sequence[OutcomeRecord], **options: Any) -> list[metrics.Result]:
    return [metrics.Result.of(intervention_success(r), reason=f"action {r.action or 'not recorded'}") for r in items]


def _effectiveness_call(gateway: Gateway | None, items: Sequence[Sequence[OutcomeRecord]],
                        expected: Mapping[str, float] = EXPECTED_SUCCESS_RATE, **options: Any) -> list[metrics.Result]:
    results = []
    for group in items:
        stakes = {r.stake_type for r in group}
        if len(stakes) != 1:
            raise ValueError(f"a group holds the records of one stake type, not {sorted(stakes)}")
        row = stake_effectiveness(group, expected)[stakes.pop()]
        effectiveness = row["effectiveness"]
        results.append(metrics.Result.of(None if effectiveness is None else float(effectiveness),
                                         reason=f"{row['with_data']} of {row['records']} records with data, "
                                                f"success rate {row['success_rate']}"))
    return results


INTERVENTION_SUCCESS = metrics.register(metrics.FunctionMetric(
    name="InterventionSuccess", kind="outcome", construct="whether the user saved after the nudge",
    scale=metrics.Scale.of(0, 1), citation="this study", description="1 saved, 0 spent; no recorded action: no score",
    call=_success_call))
STAKE_EFFECTIVENESS = metrics.register(metrics.FunctionMetric(
    name="StakeEffectiveness", kind="outcome",
    construct="how often nudges of a stake type succeed against the declared expectation",
    scale=metrics.Scale(0, 1), citation="this study",
    description="min(1, observed success rate / EXPECTED_SUCCESS_RATE of the stake type), one group per stake type",
    call=_effectiveness_call))
