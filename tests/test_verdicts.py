"""The decision rule of every verdict (lib.verdicts.decide), the records' table round trip and the formatters."""
import math

import pandas as pd
import pytest

from lib import tables, verdicts
from lib.verdicts import Claim, decide, verdict

NAN = math.nan


@pytest.mark.parametrize("low, high, expected", [
    (0.60, 0.80, "sees"),          # wholly above chance
    (0.20, 0.45, "fails"),         # wholly below: prefers the worse answer
    (0.45, 0.58, "blind"),         # within 0.5 ± 0.1
    (0.42, 0.67, "undetermined"),  # straddles chance and reaches past the margin
    (NAN, NAN, "undetermined"),    # no interval
])
def test_known_answer_interval_rule(low, high, expected):
    assert decide(Claim("known answer", 0.5, margin=0.1), low, high) == expected


def test_a_significant_result_the_wrong_way_is_evidence_against_not_support():
    claim = Claim("known behaviour", 0.0, "higher")
    assert decide(claim, -0.3, -0.1, p=0.999, p_against=0.001) == "fails"
    assert decide(claim, 0.1, 0.3, p=0.001, p_against=0.999) == "holds"
    assert decide(claim, -0.1, 0.3, p=0.2, p_against=0.8) == "undetermined"
    # a declared "lower" claim reads the same numbers the other way
    assert decide(Claim("known behaviour", 0.0, "lower"), -0.3, -0.1) == "holds"


def test_the_test_not_the_interval_decides_when_there_is_one():
    # an interval that excludes 0 with a test that does not reject is not a finding
    assert decide(Claim("comparison", 0.0), 0.01, 0.2, p=0.08, p_against=0.9) == "undetermined"


def test_equivalence_when_the_interval_lies_within_the_smallest_difference_of_interest():
    claim = Claim("comparison", 0.0, margin=0.01)
    # chapter 04's primary at cd3530b: −0.0024 (−0.0063 to +0.0012), declared difference 0.01
    assert decide(claim, -0.0063, 0.0012, p=0.88, p_against=0.12) == "ruled out"
    assert decide(claim, -0.0063, 0.0112, p=0.3, p_against=0.7) == "undetermined"
    assert decide(Claim("comparison", 0.0), -0.0063, 0.0012, p=0.88, p_against=0.12) == "undetermined"


def test_target_checks():
    claim = Claim("human labels", 0.40)
    assert decide(claim, 0.42, 0.6) == "holds"
    assert decide(claim, 0.2, 0.38) == "fails"
    assert decide(claim, 0.3, 0.5) == "undetermined"


def test_claims_refuse_unknown_checks_and_bad_levels():
    with pytest.raises(ValueError):
        Claim("vibes", 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Claim("comparison", 0.0, alpha=1.5)


def _two():
    a = verdict("03", "known_answer.tone", "judge (E[g])", "tells a dismissive nudge from its source",
                Claim("known answer", 0.5, margin=0.1), "AUC", 0.8, 0.7, 0.9, "entries", 40, "judge_discrimination",
                confirmatory=True)
    b = verdict("04", "primary", "value_aware", "ranks better than embedding on NDCG@3",
                Claim("comparison", 0.0, margin=0.01), "mean difference", -0.0024, -0.0063, 0.0012, "entries", 40,
                "ndcg_comparisons", test="exact sign-flip, one-sided", p=0.88, p_against=0.12, primary=True,
                depends_on=["03.known_answer.tone"])
    return a, b


def test_records_and_table_round_trip_and_match_the_schema():
    a, b = _two()
    assert (a.key, a.verdict, b.verdict) == ("03.known_answer.tone", "sees", "ruled out")
    table = verdicts.frame([a, b])
    assert list(table.columns) == list(tables.SCHEMAS["verdicts"])
    pd.testing.assert_frame_equal(verdicts.frame(verdicts.records(table)), table)  # NaN ≠ NaN between records


def test_a_verdict_outside_the_vocabulary_or_with_a_foreign_key_is_refused():
    a, _ = _two()
    with pytest.raises(ValueError):
        verdicts.Verdict(**{**a.__dict__, "verdict": "probably fine"})
    with pytest.raises(ValueError):
        verdicts.Verdict(**{**a.__dict__, "key": "04.known_answer.tone"})


def test_write_replaces_only_the_chapters_rows(tmp_path, monkeypatch):
    monkeypatch.setattr("lib.paths.TABLES", tmp_path)
    a, b = _two()
    verdicts.write("04", [b])
    verdicts.write("03", [a])
    assert [v.key for v in verdicts.read()] == ["03.known_answer.tone", "04.primary"]
    first = (tmp_path / "verdicts.parquet").read_bytes()
    verdicts.write("03", [a])
    assert (tmp_path / "verdicts.parquet").read_bytes() == first
    verdicts.write("03", [])
    assert [v.key for v in verdicts.read()] == ["04.primary"]
    with pytest.raises(ValueError):
        verdicts.write("03", [b])


def test_formatters_only_format_the_record():
    a, b = _two()
    text = verdicts.sentence(b)
    assert "**ruled out**" in text and "mean difference -0.0024 (-0.0063 to 0.0012, 40 entries" in text
    assert "exact sign-flip, one-sided, p = 0.88" in text
    headline = verdicts.headline(b, {a.key: a})
    assert headline.startswith(text) and "Caveat: **judge (E[g])**" in headline
    assert "**sees** [confirmatory]" in headline
    # a caveat whose chapter has not run is named, not silently dropped
    assert verdicts.headline(b, {}).endswith(" Caveat: 03.known_answer.tone (not in the verdicts table; run its "
                                             "chapter).")
    assert "no interval: 4 queries" in verdicts.evidence_text(
        verdict("07", "x", "s", "c", Claim("human labels", 0.4), "κ_w", 0.5, NAN, NAN, "queries", 4, "t"))


def test_changes_against_an_earlier_run():
    a, b = _two()
    changed = verdicts.changes([a, b], {"04.primary": "undetermined", "03.known_answer.tone": "sees"})
    assert changed.to_dict("records") == [{"key": "04.primary", "system": "value_aware",
                                           "claims to measure": "ranks better than embedding on NDCG@3",
                                           "earlier": "undetermined", "now": "ruled out"}]
    assert isinstance(verdicts.table([a, b]), pd.DataFrame)
