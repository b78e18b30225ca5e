"""Sensitivity to the judge: label flips, label variants and the perturbation check, by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.analysis.sensitivity import (flip_labels, label_variants, mean_by_method, means_by_variant,
                                      perturbation_check)


def test_flip_labels_changes_exactly_the_fraction():
    labels = pd.DataFrame({"entry_id": ["e"] * 10, "candidate_id": [f"c{i}" for i in range(10)],
                           "label": pd.array([0, 1, 2, 0, 1, 2, 0, 1, None, 2], dtype="Int64")})
    flipped = flip_labels(labels, 0.33, seed=1)
    changed = (flipped.label != labels.label).fillna(False)
    assert changed.sum() == 3 and flipped.label.isna().sum() == 1
    assert flipped.equals(flip_labels(labels, 0.33, seed=1))


def two_candidate_case():
    """One entry, c0 graded 1 and c1 graded 0. 'sys' and 'same' rank c0 first, 'other' ranks c1 first."""
    rankings = pd.DataFrame([{"method": m, "run": 0, "entry_id": "e", "rank": r, "candidate_id": c}
                             for m, order in (("sys", ["c0", "c1"]), ("same", ["c0", "c1"]), ("other", ["c1", "c0"]))
                             for r, c in enumerate(order, start=1)])
    labels = pd.DataFrame({"entry_id": ["e", "e"], "candidate_id": ["c0", "c1"],
                           "grade": pd.array([1, 0], dtype="Int64"), "label": pd.array([1, 0], dtype="Int64")})
    return rankings, labels


def test_mean_by_method_by_hand():
    rankings, labels = two_candidate_case()
    means = mean_by_method(rankings, labels)
    # NDCG@3: relevant first -> 1; relevant second -> (1/log2 3) / 1
    assert means.to_dict() == {"other": pytest.approx(1 / math.log2(3)), "same": 1.0, "sys": 1.0}


def test_perturbation_check_without_flips_keeps_everything():
    rankings, labels = two_candidate_case()
    same_order, keeps = perturbation_check(rankings, labels, "sys", fraction=0.0, repeats=3, seed=0)
    assert same_order == 1.0 and keeps.to_dict() == {"other": 1.0, "same": 1.0}


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
    repeat = pd.DataFrame({"candidate_id": ["c1"], "grade": pd.array([2], dtype="Int64")})
    variants = label_variants(labels, judge_validity, repeat)
    assert list(variants) == ["pointwise argmax (column grade)", "pointwise rounded E[g] (column rounded_expected)",
                              "pointwise argmax, 1 re-judged at T>0 replaced"]
    assert variants["pointwise rounded E[g] (column rounded_expected)"].label.tolist() == [0, 1]
    assert variants["pointwise argmax, 1 re-judged at T>0 replaced"].label.tolist() == [1, 2]
    means = means_by_variant(rankings, variants)
    assert means.loc["pointwise argmax (column grade)", "sys"] == 1.0
    assert means.loc["pointwise rounded E[g] (column rounded_expected)", "other"] == 1.0
