"""Outcome scores computed from records of what a user did after a nudge (no LLM).

InterventionSuccess: 1 when the recorded action is ``saved``, 0 when ``spent``; a missing action is
"no data" (None) — never 0, since an unobserved outcome is not a failure.
StakeEffectiveness (per stake type): min(1, observed success rate / expected success rate of the stake
type), over the records that have data. The expected rates are a declared parameter table.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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
