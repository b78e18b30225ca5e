"""The decision rule of every verdict (lib.verdicts.decide), the records' table round trip and the formatters."""
import fnmatch
import math

import pandas as pd
import pytest

from lib import paths, tables, verdicts
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


# The verdicts table as committed (not STUDY_OUTPUT_DIR's): the rows the report states.
COMMITTED = paths.ROOT / "outputs" / "tables" / "verdicts.parquet"
SPECS = paths.ROOT.parent / "shared" / "specs"


def _row(key: str, outcome: str, *, primary: bool = False, confirmatory: bool = False) -> verdicts.Verdict:
    """A verdict with key ``key`` whose claim decides ``outcome`` (a known-answer word for a known answer)."""
    low, high = {"sees": (0.7, 0.9), "holds": (0.7, 0.9), "blind": (0.45, 0.55), "ruled out": (0.45, 0.55),
                 "fails": (0.1, 0.3), "undetermined": (0.3, 0.7)}[outcome]
    check: verdicts.Check = "known answer" if outcome in ("sees", "blind") else "comparison"
    chapter, name = key.split(".", 1)
    return verdict(chapter, name, f"system of {key}", "claims", Claim(check, 0.5, margin=0.1), "AUC",
                   (low + high) / 2, low, high, "entries", 40, "t", primary=primary, confirmatory=confirmatory)


@pytest.mark.parametrize("key, system", [
    ("03.known_answer.value_mismatch.expected_grade", "nudge relevance judge"),
    ("02.self_confidence_restates_order", "rankers"),
    ("05.alce.importance.vital_questions", "nugget importance"),  # an ALCE row that is not a nugget score
    ("05.alce.vital.pooled", "nugget scores"),
    ("06.judge_vs_tas", "conversation judge"),  # a chapter-06 row that is not TAS/CAS
    ("06.known_behaviour_by_matcher", "TAS/CAS"),
    ("07.monitor", "nightly monitor"),
    ("07.primary.outside_pilot", "relevance judge on DL19"),
    ("05.triad.nuggetized.groundedness.unsupported", "nuggetized RAG triad"),  # rows still to come
    ("03.geval.CulturalSensitivity.negative_indicators", "CulturalSensitivity"),
    ("01.construction.tone", None),
])
def test_seed_system_of_a_key(key, system):
    assert verdicts.seed_system(key) == system


def test_a_key_matching_two_seed_systems_is_an_error(monkeypatch):
    monkeypatch.setattr(verdicts, "SEED_SYSTEMS", (verdicts.SeedSystem("a", "s.md", "05", ("05.*",)),
                                                   verdicts.SeedSystem("b", "s.md", "05", ("05.primary",))))
    with pytest.raises(ValueError, match="more than one seed system"):
        verdicts.seed_system("05.primary")
    assert verdicts.seed_system("05.other") == "a"


def test_seed_systems_are_named_once_with_their_chapters_and_specs():
    names = [s.name for s in verdicts.SEED_SYSTEMS]
    assert len(names) == len(set(names)) == 16
    chapters = {s.name: s.chapters for s in verdicts.SEED_SYSTEMS}
    assert (chapters["rankers"], chapters["nugget scores"], chapters["FinancialSafety"]) == ("02, 04", "05, 07", "03")
    if SPECS.is_dir():  # the specifications sit beside the repository, not in it
        assert {s.spec for s in verdicts.SEED_SYSTEMS} == {p.name for p in SPECS.glob("0*.md")}


def test_every_committed_verdict_key_has_one_seed_system_or_a_reason():
    keys = pd.read_parquet(COMMITTED)["key"].tolist()
    systems = {key: verdicts.seed_system(key) for key in keys}  # raises on a key of two systems
    reasons = {key: [p for p, _ in verdicts.UNASSIGNED if fnmatch.fnmatchcase(key, p)] for key in keys}
    assert [k for k in keys if systems[k] is None and len(reasons[k]) != 1] == []
    assert [k for k in keys if systems[k] is not None and reasons[k]] == []  # a key is either assigned or not
    assert verdicts.NO_SEED_SYSTEM not in verdicts.unassigned(keys)


def test_unassigned_keys_by_reason():
    reason = verdicts.UNASSIGNED[0][1]
    assert verdicts.unassigned(["01.construction.tone", "05.primary", "99.new"]) == {
        reason: ["01.construction.tone"], verdicts.NO_SEED_SYSTEM: ["99.new"]}


def test_matrix_counts_outcomes_and_leads_with_the_primary_row():
    rows = [_row("04.secondary.a", "undetermined"), _row("04.primary", "ruled out", primary=True),
            _row("02.restates", "holds"),
            _row("03.known_answer.b", "blind"), _row("03.known_answer.a", "sees", confirmatory=True),
            _row("03.guardrail.FinancialSafety", "fails"),
            _row("01.construction.tone", "sees")]  # of no seed system: not counted
    table = verdicts.matrix(verdicts.frame(rows)).set_index("seed system")
    assert list(table.index) == [s.name for s in verdicts.SEED_SYSTEMS]
    assert list(table.columns) == ["spec", "chapter(s)", "rows", *verdicts.VERDICTS, "lead verdict", "confirmatory"]
    assert table["rows"].sum() == 6
    rankers = table.loc["rankers"]
    assert (rankers["rows"], rankers["ruled out"], rankers["holds"], rankers["undetermined"], rankers["sees"]) == (
        3, 1, 1, 1, 0)
    assert rankers["lead verdict"] == verdicts.brief(rows[1])  # the primary, though not the first row
    judge = table.loc["nudge relevance judge"]
    assert judge["lead verdict"] == verdicts.brief(rows[3])  # no primary: the first row in table order
    assert (judge["blind"], judge["sees"], judge["confirmatory"]) == (1, 1, True)
    assert (table.loc["FinancialSafety", "fails"], table.loc["FinancialSafety", "confirmatory"]) == (1, False)
    tone = table.loc["ToneEmpathy"]
    assert (tone["rows"], tone["lead verdict"], tone["confirmatory"]) == (0, verdicts.NO_VERDICT_YET, False)
    assert (tone[list(verdicts.VERDICTS)] == 0).all()


def test_matrix_of_an_empty_table_lists_every_seed_system():
    table = verdicts.matrix(verdicts.frame([]))
    assert len(table) == len(verdicts.SEED_SYSTEMS) and (table["lead verdict"] == verdicts.NO_VERDICT_YET).all()


def test_every_seed_system_has_a_verdict():
    """Issue #35's "done when": the committed verdicts table has a row for every seed system."""
    table = verdicts.matrix(pd.read_parquet(COMMITTED))
    assert table.loc[table["rows"] == 0, "seed system"].tolist() == []


def test_brief_is_the_claim_the_verdict_and_the_interval_without_threshold_or_test():
    v = verdicts.verdict("03", "known_answer.tone", "judge (E[g])", "tells a dismissive nudge from its source",
                         verdicts.Claim("known answer", 0.5, margin=0.1), "AUC", 0.956, 0.9, 0.99, "entries", 12,
                         "judge_discrimination")
    assert verdicts.brief(v) == "tells a dismissive nudge from its source: **sees**; AUC 0.96 (0.90–0.99, 12 entries)"
    without = verdicts.verdict("05", "primary", "s", "orders", verdicts.Claim("human labels", 0.0, margin=0.3), "ρ",
                               0.2, math.nan, math.nan, "questions", 5, "t")
    assert verdicts.brief(without).endswith("ρ 0.20 (no interval, 5 questions)")
