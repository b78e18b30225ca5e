"""Chapter 01's construction check of the known-answer distractors on hand-made tables and a fake embedding."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lib import design, known_answers
from lib.chapters import ch01

PARAMS = {"known_answer_margin": 0.1, "seed": 0, "bootstrap_resamples": 300}
WORDS = ("exam", "garden", "family", "career", "travel")


def fake_embed(texts: list[str]) -> np.ndarray:
    """A unit vector per text over a few topic words, plus one axis per persona mentioned by id or description."""
    axes = [*WORDS, *(p.persona_id for p in design.PERSONAS)]
    descriptions = {p.description: p.persona_id for p in design.PERSONAS}
    rows = []
    for text in texts:
        vector = np.array([float(axis in text.lower()) for axis in axes]) + 0.01
        if text in descriptions:
            vector[axes.index(descriptions[text])] += 1.0
        rows.append(vector / np.linalg.norm(vector))
    return np.array(rows)


def scores_table(lean_real: float, lean_mismatch: float) -> pd.DataFrame:
    """12 entries: two real candidates and one distractor of each kind, with the scores the check reads."""
    rows = []
    for e in range(12):
        entry = f"e{e:02d}"
        for item, kind, cos_entry, lean, flagged in (
                ("c0", "real", 0.6, lean_real, 0), ("c1", "real", 0.5, lean_real, 0),
                ("off_topic", "off_topic", 0.1, lean_real, 0), ("value_mismatch", "value_mismatch", 0.55,
                                                                lean_mismatch + 0.001 * e, 0),
                ("value_contrast", "value_contrast", 0.6, lean_real, 2), ("tone", "tone", 0.6, lean_real, 1)):
            rows.append({"entry_id": entry, "item_id": f"{entry}/{item}", "kind": kind, "cos_entry": cos_entry,
                         "cos_persona": 0.3, "cos_contrasting": 0.3 - lean, "value_lean": lean,
                         "not_against_values": float(flagged != 2), "not_dismissive": float(flagged != 1)})
    return pd.DataFrame(rows)


def test_dismissive_rule_flags_the_tone_distractor_by_construction():
    assert ch01.dismissive(known_answers.dismissive_rewrite("Take a short walk."))
    assert not ch01.dismissive("Take a short walk after the exam.")


def test_the_value_rule_flags_the_sentence_against_the_personas_top_value_only():
    caregiver = design.PERSONAS_BY_ID["caregiver"]  # benevolence first
    rewrite = known_answers.value_contrast_rewrite("Call your sister tonight.", caregiver)
    assert rewrite.endswith(known_answers.VALUE_DISMISSALS["benevolence"])
    assert ch01.against_values(rewrite, "caregiver")
    assert not ch01.against_values(rewrite, "striver")  # the striver weights achievement most
    assert not ch01.against_values("Call your sister tonight.", "caregiver")


def test_construction_scores_by_hand():
    persona = design.PERSONAS[0]
    contrasting = known_answers.contrasting_persona(persona.persona_id)
    entries = pd.DataFrame({"entry_id": ["a", "b"], "text": ["my exam went badly", "my garden is dying"],
                            "persona_id": [persona.persona_id] * 2})
    pools = pd.DataFrame({"entry_id": ["a", "b"], "candidate_id": ["a/c0", "b/c0"],
                          "nudge_text": ["study for the next exam", "water the garden"]})
    distractors = pd.DataFrame({"entry_id": ["a", "a", "gone"], "distractor_id": ["a/off_topic", "a/tone", "gone/x"],
                                "kind": ["off_topic", "tone", "tone"],
                                "nudge_text": ["water the garden", known_answers.dismissive_rewrite("exam"), "x"]})
    scores = ch01.construction_scores(entries, pools, distractors, fake_embed).set_index("item_id")
    assert scores.index.tolist() == ["a/c0", "b/c0", "a/off_topic", "a/tone"]  # an entry without a pool: none
    assert scores.at["a/c0", "cos_entry"] > 0.9 and scores.at["a/off_topic", "cos_entry"] < 0.1
    assert scores.at["a/tone", "not_dismissive"] == 0.0 and scores.at["a/c0", "not_dismissive"] == 1.0
    lean = scores.cos_persona - scores.cos_contrasting
    assert scores.value_lean.to_numpy() == pytest.approx(lean.to_numpy())
    assert contrasting.persona_id != persona.persona_id


def test_findings_one_verdict_per_kind():
    f = ch01.findings({"construction_scores": scores_table(0.2, 0.0)}, PARAMS)
    by_key = {v.key: v for v in f.verdicts()}
    assert list(by_key) == ["01.construction.off_topic", "01.construction.value_mismatch",
                            "01.construction.value_contrast", "01.construction.tone"]
    assert by_key["01.construction.off_topic"].verdict == "sees"
    assert by_key["01.construction.value_mismatch"].verdict == "sees"
    tone = by_key["01.construction.tone"]
    assert tone.verdict == "sees" and tone.by_construction and tone.estimate == 1.0
    contrast = by_key["01.construction.value_contrast"]
    assert contrast.verdict == "sees" and contrast.by_construction and contrast.estimate == 1.0
    assert not any(v.confirmatory or v.primary for v in f.verdicts())
    assert f.table.declared.sum() == 4


def test_findings_value_mismatch_the_wrong_way_and_inseparable():
    # the distractor leans towards the entry's persona more than the real candidates: evidence against
    against = ch01.findings({"construction_scores": scores_table(0.0, 0.2)}, PARAMS)
    assert {v.key: v.verdict for v in against.verdicts()}["01.construction.value_mismatch"] == "fails"
    # the same lean for all: no embedding difference, so the known answer is in doubt
    flat = scores_table(0.1, 0.1).assign(value_lean=0.1)
    assert {v.key: v.verdict for v in ch01.findings({"construction_scores": flat}, PARAMS).verdicts()}[
        "01.construction.value_mismatch"] == "blind"


def test_construction_text_reads_the_record():
    f = ch01.findings({"construction_scores": scores_table(0.2, 0.0)}, PARAMS)
    text = ch01.construction_text(f)
    assert text.count("\n") == 3 and "shown worse without the judge" in text
    doubtful = replace(f, construction=(replace(f.construction[1], verdict="blind"),))
    assert "itself in doubt" in ch01.construction_text(doubtful)
    unwritten = ch01.findings({"construction_scores": scores_table(0.2, 0.0).query("kind != 'value_mismatch'")},
                              PARAMS)
    row = {v.key: v for v in unwritten.verdicts()}["01.construction.value_mismatch"]
    assert (row.units, row.verdict) == (0, "undetermined")
    assert "value-mismatch distractor is not written in this run" in ch01.construction_text(unwritten)


def test_bookkeeping_counts_the_tables():
    entries = pd.DataFrame({"generation_ok": [True, True, False]})
    candidates = pd.DataFrame({"near_duplicate": [False, True, False, False]})
    assert ch01.bookkeeping({"entries": entries, "candidates": candidates}) == (
        "4 candidate nudges for 3 journal entries: 2 of 3 generation calls (67%) returned a schema-valid answer, "
        "and 1 candidates are near-duplicates of an earlier one.")
