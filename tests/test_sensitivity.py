"""Sensitivity to the judge: label flips (only to the label's grades), the chosen label's repeat disagreement,
weak orders with explicit ties, label variants and the perturbation check, by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.analysis import sensitivity
from lib.analysis.sensitivity import (
    entries_by_variant,
    flip_labels,
    label_grades,
    label_repeat_disagreement,
    label_variants,
    mean_by_ranker,
    means_by_variant,
    order_text,
    perturbation_check,
    weak_order,
)


def test_flip_labels_changes_exactly_the_fraction():
    labels = pd.DataFrame({"entry_id": ["e"] * 10, "candidate_id": [f"c{i}" for i in range(10)],
                           "label": pd.array([0, 1, 2, 0, 1, 2, 0, 1, None, 2], dtype="Int64")})
    flipped = flip_labels(labels, 0.33, seed=1, grades=(0, 1, 2))
    changed = (flipped.label != labels.label).fillna(False)
    assert changed.sum() == 3 and flipped.label.isna().sum() == 1
    assert flipped.equals(flip_labels(labels, 0.33, seed=1, grades=(0, 1, 2)))


def test_flip_labels_only_to_grades_the_label_takes():
    labels = pd.DataFrame({"entry_id": ["e"] * 6, "candidate_id": [f"c{i}" for i in range(6)],
                           "label": pd.array([1, 2, 2, 1, 2, 2], dtype="Int64")})
    assert label_grades(labels) == (1, 2)
    flipped = flip_labels(labels, 1.0, seed=0, grades=label_grades(labels))
    assert flipped.label.tolist() == [2, 1, 1, 2, 1, 1]  # on two grades every flip is a swap; never a 0
    with pytest.raises(ValueError, match="no other grade"):
        flip_labels(labels, 1.0, seed=0, grades=(2,))


def test_label_repeat_disagreement_uses_the_chosen_labels_column():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c", "d", "e"], "label_source": ["rounded_expected"] * 5,
                           "grade": pd.array([0, 0, 0, 0, 0], dtype="Int64"),
                           "expected_grade": [1.8, 1.1, 2.0, None, 0.9],
                           "label": pd.array([2, 1, 2, None, 1], dtype="Int64")})
    repeat = pd.DataFrame({"candidate_id": ["a", "b", "d", "e"], "grade": pd.array([2, 2, 2, 2], dtype="Int64"),
                           "expected_grade": [1.9, 1.6, 1.2, None], "label": pd.array([2, 2, 1, None], dtype="Int64")})
    # pairs with both labels present: a (2, 2) and b (1, 2) -> 1 of 2 differ; the argmax grade would give 4 of 4
    assert label_repeat_disagreement(labels, repeat) == {"rate": 0.5, "column": "rounded_expected", "n": 2}
    missing = label_repeat_disagreement(labels, repeat.drop(columns="label"))
    assert math.isnan(missing["rate"]) and missing["column"] == "rounded_expected" and missing["n"] == 0


def test_weak_order_keeps_ties_as_ties():
    means = pd.Series({"b": 0.5, "sys": 0.9, "a": 0.5, "c": 0.7})
    assert weak_order(means) == (("sys",), ("c",), ("a", "b"))
    assert weak_order(means[["a", "c", "b", "sys"]]) == weak_order(means)  # independent of the input order
    assert weak_order(pd.Series({"x": 0.1 + 0.2, "y": 0.3})) == (("x", "y"),)  # equal to 10 decimals
    assert order_text(means) == "sys > c > a = b"


def test_perturbation_check_compares_weak_orders(monkeypatch):
    # The base means tie a and b; a perturbation that keeps the tie (listing b first, or off in the 17th
    # decimal) leaves the order unchanged; one that breaks it changes the order but keeps the signs vs sys.
    results = iter([pd.Series({"sys": 0.9, "a": 0.5, "b": 0.5}),
                    pd.Series({"b": 0.5, "sys": 0.9, "a": 0.5}),
                    pd.Series({"sys": 0.9, "a": 0.5 + 1e-17, "b": 0.5}),
                    pd.Series({"sys": 0.9, "a": 0.6, "b": 0.5})])
    monkeypatch.setattr(sensitivity, "mean_by_ranker", lambda *args, **kwargs: next(results))
    monkeypatch.setattr(sensitivity, "flip_labels", lambda labels, *args: labels)
    same_order, keeps = perturbation_check(pd.DataFrame(), pd.DataFrame(), "sys", 0.5, repeats=3, seed=0,
                                           grades=(1, 2))
    assert same_order == pytest.approx(2 / 3) and keeps.to_dict() == {"a": 1.0, "b": 1.0}


def two_candidate_case():
    """One entry, c0 graded 1 and c1 graded 0. 'sys' and 'same' rank c0 first, 'other' ranks c1 first."""
    rankings = pd.DataFrame([{"ranker": m, "run": 0, "entry_id": "e", "rank": r, "candidate_id": c}
                             for m, order in (("sys", ["c0", "c1"]), ("same", ["c0", "c1"]), ("other", ["c1", "c0"]))
                             for r, c in enumerate(order, start=1)])
    labels = pd.DataFrame({"entry_id": ["e", "e"], "candidate_id": ["c0", "c1"],
                           "grade": pd.array([1, 0], dtype="Int64"), "label": pd.array([1, 0], dtype="Int64")})
    return rankings, labels


def test_mean_by_ranker_by_hand():
    rankings, labels = two_candidate_case()
    means = mean_by_ranker(rankings, labels)
    # NDCG@3: relevant first -> 1; relevant second -> (1/log2 3) / 1
    assert means.to_dict() == {"other": pytest.approx(1 / math.log2(3)), "same": 1.0, "sys": 1.0}


def test_perturbation_check_without_flips_keeps_everything():
    rankings, labels = two_candidate_case()
    same_order, keeps = perturbation_check(rankings, labels, "sys", fraction=0.0, repeats=3, seed=0, grades=(0, 1))
    assert same_order == 1.0 and keeps.to_dict() == {"other": 1.0, "same": 1.0}


def test_perturbation_check_without_a_rate_or_a_second_grade_is_not_run():
    rankings, labels = two_candidate_case()
    for fraction, grades in ((float("nan"), (0, 1)), (0.5, (1,))):
        same_order, keeps = perturbation_check(rankings, labels, "sys", fraction, repeats=3, seed=0, grades=grades)
        assert math.isnan(same_order) and keeps.isna().all() and list(keeps.index) == ["other", "same"]


def test_perturbation_check_when_every_label_flips_on_a_binary_scale():
    # On grades (0, 1) flipping every label swaps c0 and c1: 'other' now beats 'sys' (sign reversed, order
    # changed) in every repetition, while 'same' stays tied with 'sys' (sign 0 kept).
    rankings, labels = two_candidate_case()
    same_order, keeps = perturbation_check(rankings, labels, "sys", fraction=1.0, repeats=4, seed=0, grades=(0, 1))
    assert same_order == 0.0 and keeps.to_dict() == {"other": 0.0, "same": 1.0}


def test_label_variants_use_each_definition_and_the_repeat_grades():
    rankings, labels = two_candidate_case()
    labels = labels.assign(rounded_expected=pd.array([0, 1], dtype="Int64"))
    judge_validity = pd.DataFrame({"label_definition": ["pointwise argmax", "pointwise rounded E[g]"],
                                   "column": ["grade", "rounded_expected"]})
    repeat = pd.DataFrame({"candidate_id": ["c1"], "label": pd.array([2], dtype="Int64")})
    variants = label_variants(labels, judge_validity, repeat)
    replaced = "chosen label, 1 re-judged under another prompt layout replaced"
    assert list(variants) == ["pointwise argmax (column grade)", "pointwise rounded E[g] (column rounded_expected)",
                              replaced]
    assert variants["pointwise rounded E[g] (column rounded_expected)"].label.tolist() == [0, 1]
    assert variants[replaced].label.tolist() == [labels.label.iloc[0], 2]
    means = means_by_variant(rankings, variants)
    assert means.loc["pointwise argmax (column grade)", "sys"] == 1.0
    assert means.loc["pointwise rounded E[g] (column rounded_expected)", "other"] == 1.0
    assert entries_by_variant(variants).tolist() == [1, 1, 1]
    none_relevant = {"all 0": labels.assign(label=pd.array([0, 0], dtype="Int64"))}
    assert entries_by_variant(none_relevant).tolist() == [0]
