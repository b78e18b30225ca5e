"""Sensitivity to the judge: labels moved by measured layout changes within the scale, the gain's layout changes,
weak orders with explicit ties, reading variants and the perturbation check, by hand."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lib.analysis import sensitivity
from lib.analysis.sensitivity import (
    entries_by_variant,
    label_variants,
    layout_changes,
    mean_by_ranker,
    means_by_draw,
    means_by_variant,
    order_text,
    perturb_labels,
    perturbation_check,
    weak_order,
)


def test_perturb_labels_moves_each_label_by_a_measured_change_within_the_scale():
    labels = pd.DataFrame({"entry_id": ["e"] * 5, "candidate_id": [f"c{i}" for i in range(5)],
                           "label": [0.1, 1.0, 1.95, None, 1.5]})
    moved = perturb_labels(labels, np.array([0.2]), seed=0)  # one measured change: every label moves by it
    assert moved.label.tolist()[:3] == pytest.approx([0.3, 1.2, 2.0]) and math.isnan(moved.label.iloc[3])
    assert moved.label.iloc[4] == pytest.approx(1.7)
    assert labels.label.iloc[0] == 0.1  # the input is not changed
    both = perturb_labels(labels, np.array([-0.5, 0.5]), seed=3)
    assert set(np.round(both.label.dropna() - labels.label.dropna(), 6)) <= {-0.5, 0.5, 0.05, -0.1}  # 0.05: clipped
    assert both.equals(perturb_labels(labels, np.array([-0.5, 0.5]), seed=3))


def test_layout_changes_use_the_gain_column():
    labels = pd.DataFrame({"candidate_id": ["a", "b", "c", "d", "e"], "label_source": ["expected_grade"] * 5,
                           "expected_grade": [1.8, 1.1, 2.0, None, 0.9], "label": [1.8, 1.1, 2.0, None, 0.9]})
    repeat = pd.DataFrame({"candidate_id": ["a", "b", "d", "e"], "expected_grade": [1.9, 1.1, 1.2, None],
                           "label": [1.9, 1.1, 1.2, None]})
    # pairs with both present: a (1.8 -> 1.9) and b (1.1 -> 1.1)
    changes = layout_changes(labels, repeat)
    assert changes["column"] == "expected_grade" and changes["n"] == 2 and changes["changed"] == 1
    assert changes["changes"] == pytest.approx([0.1, 0.0])
    missing = layout_changes(labels, repeat.drop(columns="label"))
    assert missing["n"] == 0 and not len(missing["changes"])


def test_weak_order_keeps_ties_as_ties():
    means = pd.Series({"b": 0.5, "sys": 0.9, "a": 0.5, "c": 0.7})
    assert weak_order(means) == (("sys",), ("c",), ("a", "b"))
    assert weak_order(means[["a", "c", "b", "sys"]]) == weak_order(means)  # independent of the input order
    assert weak_order(pd.Series({"x": 0.1 + 0.2, "y": 0.3})) == (("x", "y"),)  # equal to 10 decimals
    assert order_text(means) == "sys > c > a = b"


def test_perturbation_check_compares_weak_orders(monkeypatch):
    # The base means tie a and b; a perturbation that keeps the tie (listing b first, or off in the 17th
    # decimal) leaves the order unchanged; one that breaks it changes the order but keeps the signs vs sys.
    base = pd.Series({"sys": 0.9, "a": 0.5, "b": 0.5})
    perturbed = [pd.Series({"b": 0.5, "sys": 0.9, "a": 0.5}), pd.Series({"sys": 0.9, "a": 0.5 + 1e-17, "b": 0.5}),
                 pd.Series({"sys": 0.9, "a": 0.6, "b": 0.5})]
    monkeypatch.setattr(sensitivity, "mean_by_ranker", lambda *args, **kwargs: base)
    monkeypatch.setattr(sensitivity, "means_by_draw", lambda *args, **kwargs: perturbed)
    labels = pd.DataFrame({"label": [1.0]})
    same_order, keeps = perturbation_check(pd.DataFrame(), labels, "sys", np.array([0.5]), repeats=3, seed=0)
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


def test_perturbation_check_with_zero_changes_is_not_run():
    rankings, labels = two_candidate_case()
    for changes in (np.zeros(0), np.zeros(3)):
        same_order, keeps = perturbation_check(rankings, labels, "sys", changes, repeats=3, seed=0)
        assert math.isnan(same_order) and keeps.isna().all() and list(keeps.index) == ["other", "same"]


def test_perturbation_check_small_changes_keep_the_order_and_large_ones_swap_it():
    rankings, labels = two_candidate_case()  # gains c0 = 1, c1 = 0
    same_order, keeps = perturbation_check(rankings, labels, "sys", np.array([0.1]), repeats=3, seed=0)
    assert same_order == 1.0 and keeps.to_dict() == {"other": 1.0, "same": 1.0}
    # +1 for every label: c0 = 2, c1 = 1; 'other' (c1 first) still loses, by less: order and signs hold
    same_order, keeps = perturbation_check(rankings, labels, "sys", np.array([1.0]), repeats=2, seed=0)
    assert same_order == 1.0 and keeps.to_dict() == {"other": 1.0, "same": 1.0}


def test_label_variants_use_each_definition_and_the_repeat_grades():
    rankings, labels = two_candidate_case()
    labels = labels.assign(rounded_expected=pd.array([0, 1], dtype="Int64"))
    readings = {"grade": "pointwise argmax", "rounded_expected": "pointwise rounded E[g]"}
    repeat = pd.DataFrame({"candidate_id": ["c1"], "label": pd.array([2], dtype="Int64")})
    variants = label_variants(labels, readings, repeat)
    replaced = "the gain, 1 re-judged under another prompt layout replaced"
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


def test_means_by_draw_equal_mean_by_ranker_under_each_draw_to_the_bit():
    # random pools of E[g]-like gains, a ranker with several runs, one unjudged candidate per third entry
    rng = np.random.default_rng(5)
    rankings, labels = [], []
    for e in range(30):
        pool = [f"e{e}/c{i}" for i in range(int(rng.integers(2, 7)))]
        labels += [{"entry_id": f"e{e}", "candidate_id": c,
                    "label": None if (e % 3 == 0 and i == 0) else float(rng.uniform(0, 2))} for i, c in enumerate(pool)]
        for ranker, runs in (("sys", 1), ("random", 3), ("other", 1)):
            for run in range(runs):
                rankings += [{"ranker": ranker, "run": run, "entry_id": f"e{e}", "rank": r, "candidate_id": c}
                             for r, c in enumerate(rng.permutation(pool), start=1)]
    rankings, labels = pd.DataFrame(rankings), pd.DataFrame(labels)
    changes = np.array([-0.4, -0.1, 0.0, 0.3, 0.8])
    moved = [perturb_labels(labels, changes, seed) for seed in range(4)]
    batched = means_by_draw(rankings, labels, np.stack([m.label.to_numpy(dtype=float) for m in moved]))
    for one, table in zip(batched, moved, strict=True):
        alone = mean_by_ranker(rankings, table)
        assert one.index.tolist() == alone.index.tolist() and (one.to_numpy() == alone.to_numpy()).all()
    assert not batched[0].equals(batched[1])  # the draws differ: the comparison is not of one table with itself
