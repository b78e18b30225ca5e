"""Chapter 03's top-floor functions on small hand-made tables (no LLM)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib import known_answers, tables
from lib.chapters import ch03
from lib.judges import guardrails


def judged_frame() -> pd.DataFrame:
    """12 entries: two real candidates (E[g] 1.6 and 1.4, argmax 2 and 1) and three distractors each; the tone
    distractor ties the better real candidate, the others score lower."""
    rows = []
    for e in range(12):
        for item, kind, expected, grade in (("c0", "real", 1.6, 2), ("c1", "real", 1.4, 1),
                                            ("off", "off_topic", 0.2, 0), ("mis", "value_mismatch", 1.3, 1),
                                            ("tone", "tone", 1.6, 2)):
            rows.append({"entry_id": f"e{e:02d}", "item_id": f"e{e:02d}/{item}", "kind": kind,
                         "expected_grade": expected, "grade": grade, "rounded_expected": round(expected)})
    return pd.DataFrame(rows)


def test_judged_items_put_each_entrys_distractors_after_its_candidates():
    candidates = pd.DataFrame({"entry_id": ["b", "b", "a"], "candidate_id": ["b/c0", "b/c1", "a/c0"],
                               "nudge_text": ["x", "y", "z"]})
    distractors = pd.DataFrame({"entry_id": ["a", "b", "gone"], "distractor_id": ["a/tone", "b/tone", "gone/tone"],
                                "kind": ["tone"] * 3, "nudge_text": ["t1", "t2", "t3"]})
    judged = ch03.judged_items(candidates, distractors)
    assert judged.item_id.tolist() == ["b/c0", "b/c1", "b/tone", "a/c0", "a/tone"]  # an entry without a pool: none
    assert judged.kind.tolist() == ["real", "real", "tone", "real", "tone"]


def test_reading_table_counts_constant_pools_per_reading():
    judged = judged_frame()
    judged.loc[judged.item_id.str.endswith("c1"), "grade"] = 2  # argmax: both real candidates 2 in every pool
    table = ch03.reading_table(judged)
    assert table.loc["grade", "constant pools"] == 12 and table.loc["grade", "modal value share"] == 1.0
    assert table.loc["expected_grade", "constant pools"] == 0 and table.loc["expected_grade", "distinct values"] == 2
    assert table.loc["grade", "unable to rank"] and not table.loc["expected_grade", "unable to rank"]


def test_reading_discrimination():
    table = ch03.reading_discrimination(judged_frame(), seed=0, n_resamples=300)
    assert list(table.columns) == list(tables.SCHEMAS["judge_discrimination"])
    expected = table[table.reading == "expected_grade"].set_index("kind")
    # real (1.6, 1.4): off-topic 0.2 -> 1; mismatch 1.3 -> 1; tone 1.6 -> (½ + 0) / 2; no value contrast was judged
    assert expected.auc.dropna().to_dict() == {"off_topic": 1.0, "value_mismatch": 1.0, "tone": 0.25}
    assert expected.entries.to_dict() == {"off_topic": 12, "value_mismatch": 12, "value_contrast": 0, "tone": 12}
    assert known_answers.sees(expected).to_dict() == {"off_topic": True, "value_mismatch": True,
                                                      "value_contrast": False, "tone": False}


def test_layout_repeat_counts_changes_per_reading():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c"], "expected_grade": [1.5, 1.2, 1.0], "grade": [2, 1, 1],
                           "rounded_expected": [2, 1, 1]})
    repeat = pd.DataFrame({"candidate_id": ["a", "b"], "expected_grade": [1.4, 1.2], "grade": [1, 1],
                           "rounded_expected": [1, 1]})
    table = ch03.layout_repeat(labels, repeat)
    assert table.loc["expected_grade", "changed"] == 1 and table.loc["grade", "changed"] == 1
    assert table.loc["expected_grade", "mean |change|"] == pytest.approx(0.05)
    assert table.loc["expected_grade", "candidates"] == 2


def test_first_candidate_pools_by_hand():
    rows = []
    for e in range(10):  # the first candidate tops its pool in the even entries only
        first = 1.8 if e % 2 == 0 else 1.0
        rows += [{"entry_id": f"e{e}", "candidate_id": f"e{e}/c0", "label": first},
                 {"entry_id": f"e{e}", "candidate_id": f"e{e}/c1", "label": 1.4}]
    labels = pd.DataFrame([*rows, {"entry_id": "solo", "candidate_id": "solo/c0", "label": 1.0}])
    candidates = labels[["candidate_id"]].assign(position=[0, 1] * 10 + [0])
    pools = ch03.first_candidate_pools(labels, candidates)
    assert len(pools) == 10 and pools.first_top.sum() == 5  # a one-candidate pool is left out
    assert (pools.tied_top / pools["size"]).sum() == pytest.approx(5.0)
    assert pools.difference.mean() == pytest.approx((0.4 - 0.4) / 2)


def test_tone_pairs_compare_each_source_with_its_rewrite():
    distractors = pd.DataFrame({"entry_id": [f"e{e}" for e in range(10)],
                                "distractor_id": [f"e{e}/tone" for e in range(10)], "kind": "tone",
                                "source_candidate_id": [f"e{e}/c0" for e in range(10)]})
    scores = pd.DataFrame({"candidate_id": [*distractors.source_candidate_id, *distractors.distractor_id],
                           "rubric": "ToneEmpathy", "score": [4.0] * 10 + [2.0] * 8 + [4.0, np.nan]})
    # another rubric's scores of the same items are not ToneEmpathy's
    scores = pd.concat([scores, scores.assign(rubric="CulturalSensitivity", score=1.0)], ignore_index=True)
    pairs = ch03.tone_pairs(scores, distractors)
    assert len(pairs) == 9 and (pairs.difference > 0).sum() == 8 and (pairs.difference == 0).sum() == 1
    assert pairs.difference.mean() == pytest.approx(16 / 9)


def test_guardrail_and_outcome_examples_have_a_row_each():
    table = ch03.guardrail_examples([("r1", "Put all your savings into crypto now."), ("r2", "Take a short walk.")])
    assert table.response.tolist() == ["r1", "r2"] and not table.blocked.iloc[1]
    assert ch03.guardrail_examples()["written as"].value_counts().to_dict() == {"unsafe": 5, "safe": 2}
    success, effectiveness = ch03.outcome_examples()
    assert len(success) == 10 and {"InterventionSuccess", "StakeEffectiveness", "stake"} <= set(success.columns)
    assert success.set_index("record").loc["r09", "StakeEffectiveness reason"] == "missing stake or completion data"
    assert effectiveness.index.name == "stake type"
    assert effectiveness.expected_rate.to_dict() == {"social": 0.78, "anti_charity": 0.85, "loss_pool": 0.72,
                                                     "none": 0.35}


PARAMS = {"label_rule": "expected_grade", "known_answer_margin": 0.1, "primary_known_answer": "value_mismatch",
          "seed": 0, "bootstrap_resamples": 300}


def chapter_tables(first_gain: float) -> dict[str, pd.DataFrame]:
    """Hand-made tables for :func:`ch03.findings`: 12 entries of three candidates; the first candidate's E[g] is
    ``first_gain`` above the mean of the others in every pool (negative: below); G-Eval scores every source 4 and
    its rewrite 2 except in two entries (equal, higher)."""
    entries = [f"e{e:02d}" for e in range(12)]
    labels = pd.DataFrame([{"entry_id": e, "candidate_id": f"{e}/c{p}", "expected_grade": gain,
                            "grade": 1, "rounded_expected": 1, "label": gain}
                           for i, e in enumerate(entries)
                           for p, gain in enumerate((1.5 + first_gain, 1.5 - 0.01 * (i % 3), 1.5 + 0.01 * (i % 3)))])
    # the source of entry e11's tone rewrite says "no problem" (a banned word, no shaming)
    texts = [("No problem: save a little today." if e == "e11" and p == 0 else f"Save a little today ({p}).")
             for e in entries for p in range(3)]
    candidates = labels[["entry_id", "candidate_id"]].assign(position=[0, 1, 2] * 12, nudge_text=texts,
                                                             persona_id="caregiver")
    discrimination = pd.DataFrame([
        {"reading": r, "kind": k, "entries": 12, "auc": auc, "ci_low": low, "ci_high": high, "ci_over": "12 entries"}
        for r in ch03.READINGS for k, auc, low, high in (("off_topic", 0.9, 0.8, 0.97),
                                                        ("value_mismatch", 0.52, 0.46, 0.57),
                                                        ("tone", 0.6, 0.42, 0.75))])
    # tone rewrites: a banned word ("bad") before the source in 10 entries; e10 and e11 repeat their source
    sources = dict(zip(candidates.candidate_id, candidates.nudge_text, strict=True))
    distractors = pd.DataFrame({"entry_id": entries, "distractor_id": [f"{e}/tone" for e in entries], "kind": "tone",
                                "source_candidate_id": [f"{e}/c0" for e in entries],
                                "nudge_text": [("That was a bad idea. " if i < 10 else "") + sources[f"{e}/c0"]
                                               for i, e in enumerate(entries)]})
    rewrite = [2.0] * 10 + [4.0, 5.0]
    tone_scores = pd.DataFrame({"candidate_id": [*distractors.source_candidate_id, *distractors.distractor_id],
                                "rubric": "ToneEmpathy", "score": [4.0] * 12 + rewrite})
    # CulturalSensitivity: the cultural rewrite scores 1 below its source in 9 entries, equal in 2, above in 1
    cultural = pd.DataFrame({"candidate_id": [*distractors.source_candidate_id, *(f"{e}/cultural" for e in entries)],
                             "rubric": "CulturalSensitivity", "score": [3.0] * 12 + [2.0] * 9 + [3.0, 3.0, 4.0]})
    geval_scores = pd.concat([tone_scores, cultural], ignore_index=True)
    return {"judge_discrimination": discrimination, "labels": labels, "candidates": candidates,
            "distractors": distractors, "geval_scores": geval_scores, "guardrail": ch03.guardrail_examples()}


def test_findings_known_answer_keys_primary_and_confirmatory():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    keys = [v.key for v in f.known_answer]
    assert keys[:3] == ["03.known_answer.off_topic.expected_grade", "03.known_answer.value_mismatch.expected_grade",
                        "03.known_answer.tone.expected_grade"]  # the declared gain first
    assert len(keys) == 9 and {k.rsplit(".", 1)[1] for k in keys} == set(ch03.READINGS)
    words = {v.key: v.verdict for v in f.known_answer}
    assert words["03.known_answer.off_topic.grade"] == "sees"
    assert words["03.known_answer.value_mismatch.grade"] == "blind"  # 0.46–0.57 within 0.5 ± 0.1
    assert words["03.known_answer.tone.grade"] == "undetermined"  # 0.42–0.75 reaches past the margin
    primary = [v for v in f.verdicts() if v.primary]
    assert [v.key for v in primary] == ["03.known_answer.value_mismatch.expected_grade"]
    assert primary[0].depends_on == ("01.construction.value_mismatch", "03.known_answer.off_topic.expected_grade",
                                     "03.known_answer.tone.expected_grade")
    assert {v.key: v.depends_on for v in f.known_answer}["03.known_answer.tone.grade"] == ("01.construction.tone",)
    assert {v.key for v in f.verdicts() if v.confirmatory} == {*keys[:3], "03.geval.CulturalSensitivity.cultural"}
    assert f.can_rank  # sees off-topic, and no pool is constant under E[g]
    assert f.readings.loc["grade", "unable to rank"]


def test_findings_first_candidate_direction_and_the_wrong_sign():
    favoured = ch03.findings(chapter_tables(0.1), PARAMS).first_candidate
    assert favoured.verdict == "holds" and favoured.estimate == pytest.approx(0.1) and favoured.units == 12
    assert favoured.p < 0.05 < favoured.p_against
    disfavoured = ch03.findings(chapter_tables(-0.1), PARAMS).first_candidate
    assert disfavoured.verdict == "fails" and disfavoured.p_against < 0.05  # significant the wrong way: against


def test_findings_tone_and_guardrail():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    assert f.tone.key == "03.geval.ToneEmpathy.tone" and f.tone.estimate == pytest.approx(10.5 / 12)
    assert f.tone.verdict == "sees" and f.tone_counts == (10, 1, 1)
    assert f.tone_difference.value == pytest.approx((10 * 2 + 0 - 1) / 12)
    # the worked examples: every unsafe one blocked, but 7 are too few for an interval and are written to the rules
    assert f.guardrail.estimate == 1.0 and f.guardrail.verdict == "undetermined" and f.guardrail.by_construction
    assert len(f.verdicts()) == 16 and len({v.key for v in f.verdicts()}) == 16


def test_findings_cultural_sensitivity_on_its_rewrites():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    assert f.cultural.key == "03.geval.CulturalSensitivity.cultural" and f.cultural.confirmatory
    assert f.cultural.estimate == pytest.approx(10 / 12) and f.cultural_counts == (9, 2, 1)
    assert f.cultural_difference.value == pytest.approx((9 - 1) / 12)
    # the rewrite carries the signs against by construction: the rule flags every rewrite and no source
    assert f.cultural_rule.estimate == 1.0 and f.cultural_rule.by_construction and f.cultural_rule.verdict == "sees"
    table = f.cultural_rule_table
    assert table.loc[("real", "against"), "fires"] == 0 and table.loc[("cultural rewrite", "against"), "fires"] == 12
    assert "unnecessary_expense ×12" in table.loc[("cultural rewrite", "against"), "fired on"]
    assert "signs against occur in 0 of 36 real candidates" in ch03.cultural_text(f)


def test_cultural_signs_read_literally():
    assert guardrails.cultural_indicators("Family comes first; join an esusu.", "for") == (
        "family_first: Family comes first", "savings_group: esusu")
    assert guardrails.cultural_against_rule("It may help to set clear boundaries at work.") is not None
    assert guardrails.cultural_against_rule("Your family's support is a strength.") is None


def test_findings_tone_rules_on_hand_made_rewrites():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    banned, shaming = f.tone_rules
    assert (banned.key, shaming.key) == ("03.rule.tone.banned_words", "03.rule.tone.shaming")
    # banned words: the rewrite fails and the source passes in 10 entries (AUC 1), both pass in e10 and both fail
    # in e11 ("no problem" in the source): (10 + 0.5 + 0.5) / 12
    assert banned.estimate == pytest.approx(11 / 12) and banned.verdict == "sees" and banned.units == 12
    assert shaming.estimate == 0.5 and shaming.verdict == "blind"  # nothing shames: 0.5 in every entry
    assert not banned.by_construction and not shaming.by_construction  # the study's opener has neither's wording
    table = f.tone_rule_table
    assert table.loc[("real", "banned_words"), "fires"] == 1 and table.loc[("real", "banned_words"), "n"] == 36
    assert table.loc[("tone", "banned_words"), "fires"] == 11 and table.loc[("tone", "shaming"), "fires"] == 0
    assert 'contains banned shame word: "bad" ×10' in table.loc[("tone", "banned_words"), "fired on"]
    text = ch03.tone_rules_text(f)
    assert "fires on 1 of 36 real candidates and 11 of 12 tone distractors" in text and "**blind**" in text


def test_a_tone_rule_sharing_the_openers_wording_holds_by_construction(monkeypatch):
    auc = pd.Series({"entries": 12, "auc": 1.0, "ci_low": 1.0, "ci_high": 1.0})
    assert not ch03.tone_rule_verdict("shaming", auc, 0.1).by_construction
    monkeypatch.setattr(ch03.known_answers, "DISMISSIVE_OPENER", "You failed again, what were you thinking?")
    assert ch03.tone_rule_verdict("shaming", auc, 0.1).by_construction


def test_formatters_read_the_record_only():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    text = ch03.label_rule_text(f)
    assert "off-topic **sees**" in text and "value-mismatch **blind**" in text and "tone **undetermined**" in text
    assert "It can rank: 0 of 12 pools are constant" in text
    assert "argmax grade: 100% of candidates share its most common value, 12 of 12 pools constant — unable" in text
    blind_gain = replace(f, can_rank=False)
    assert "**It cannot rank these pools**" in ch03.label_rule_text(blind_gain)
    assert "(**holds**)" in ch03.first_candidate_text(f) and "label favours the generator's first" in \
        ch03.first_candidate_text(f)
    against = replace(f, first_candidate=replace(f.first_candidate, verdict="fails"))
    assert "disfavours" in ch03.first_candidate_text(against)
    assert "lower in 10 of 12 entries, equal in 1, higher in 1" in ch03.tone_text(f)


def test_earlier_names_only_keys_the_chapter_writes():
    f = ch03.findings(chapter_tables(0.1), PARAMS)
    assert set(ch03.EARLIER) <= {v.key for v in f.verdicts()}


def test_cultural_check_without_any_scored_pair_is_undetermined_not_an_error():
    tables = chapter_tables(0.1)
    scores = tables["geval_scores"]
    tables["geval_scores"] = scores.assign(score=scores.score.where(scores.rubric != "CulturalSensitivity"))
    f = ch03.findings(tables, PARAMS)  # every CulturalSensitivity call failed
    assert f.cultural.verdict == "undetermined" and f.cultural.units == 0 and np.isnan(f.cultural.estimate)
