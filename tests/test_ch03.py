"""Chapter 03's top-floor functions on small hand-made tables (no LLM)."""
from __future__ import annotations

import pandas as pd

from lib.chapters import ch03
from lib.judges.geval import GEvalResult


def test_leniency_text_counts_what_the_label_gives_human_zeros():
    novel = pd.DataFrame({"human_grade": [0, 0, 0, 2], "label": [0, 1, 2, 2]})
    assert ch03.leniency_text(novel, "label", 0.5) == (
        "Leniency: of the 3 passages humans graded 0, the chosen label gives 0 to 1 and 1 or 2 to 2; a judge that "
        "always answered 0 would agree exactly on 75% of all passages, this one on 50%.")


def test_confusions_mark_the_chosen_definition():
    novel = pd.DataFrame({"human_grade": [0, 1, 2], "grade": [0, 1, 1], "listwise_grade": [1, 1, 2],
                          "rounded_expected": [0, 1, 2]})
    titles = list(ch03.confusions(novel, "pointwise argmax"))
    assert sum("(chosen)" in t for t in titles) == 1 and "**pointwise argmax** (chosen)" in titles[0]


def test_position_texts_per_order():
    reshuffled = {"pools_reordered": 18, "pools": 20, "n": 70, "exact_agreement": 0.8, "kappa": 0.1,
                  "same_first_item": 3}
    position = pd.DataFrame({"pools": [20.0], "first_shown_top": [19.0], "first_shown_top_share": [0.95],
                             "all_items_top_share": [0.707]}, index=["generator order"])
    first, order = ch03.position_texts(reshuffled, position)
    assert "18 of 20 pools were shown in a new order (2 shuffles were the identity" in first
    assert "agree exactly on 80.0% (κ 0.100); 3 pools" in first
    assert order == ("listwise, generator order: the first nudge shown got grade 2 in 19 of 20 pools (95%), while "
                     "71% of all nudges got grade 2")


def test_coherence_scores_and_steps_text():
    summeval = pd.DataFrame({"doc_id": ["d1"] * 3 + ["d2"] * 3, "coherence": [1, 2, 3, 3, 2, 1]})
    def results(scores):
        return [GEvalResult("Coherence", ok=s is not None, score=s, argmax=None if s is None else round(s),
                            scored_by="logprobs" if s is not None else None) for s in scores]
    coherence = {"model": results([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]), "study": results([1.0, 2.0, 3.0, 3.0, 2.0, None])}
    scored, columns, lines = ch03.coherence_scores(summeval, coherence)
    assert columns == ["model steps, weighted", "model steps, argmax", "study steps, weighted", "study steps, argmax"]
    assert lines[1] == "study steps: 6 summaries of 2 documents; failures: 1; scored by: {'logprobs': 5}"
    per_document = ch03.per_document_rho(scored, ["model steps, weighted"])
    assert per_document["model steps, weighted"].tolist() == [1.0, -1.0]
    correlations = pd.DataFrame({"spearman": [0.2, 0.5]}, index=["model steps, weighted", "study steps, weighted"])
    assert ch03.steps_text(correlations, per_document, 2).startswith(
        "Probability-weighted scores: model steps ρ = 0.200, study steps ρ = 0.500 (the study's steps ahead by 0.300 "
        "over 2 documents, while the per-document ρ of either spans -1.00 to 1.00)")


def test_guardrail_and_outcome_examples_have_a_row_each():
    table = ch03.guardrail_examples([("r1", "Put all your savings into crypto now."), ("r2", "Take a short walk.")])
    assert table.response.tolist() == ["r1", "r2"] and not table.blocked.iloc[1]
    success, effectiveness = ch03.outcome_examples()
    assert len(success) > 0 and {"InterventionSuccess", "stake"} <= set(success.columns)
    assert effectiveness.index.name == "stake type"
