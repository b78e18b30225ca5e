"""Chapter 07's analysis: G-Eval's correlation protocol with document-bootstrap CIs, the relevance agreement set
against hand-computed κ and α, and the dev/test split with ordinal thresholds fit on dev only."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.analysis import calibration, validity
from lib.analysis.stats import cohen_kappa, unit_bootstrap


def summeval_like():
    """Four documents x three systems X, Y, Z. Document C: constant human scores; D: constant judge scores."""
    return pd.DataFrame({
        "doc_id": ["A"] * 3 + ["B"] * 3 + ["C"] * 3 + ["D"] * 3,
        "system_id": ["X", "Y", "Z"] * 4,
        "coherence": [1, 2, 3, 1, 2, 3, 2, 2, 2, 1, 2, 3],
        "judge": [1, 3, 2, 3, 2, 1, 1, 2, 3, 2, 2, 2],
        "fluency": [1, 2, 3, 3, 2, 1, 1, 2, 3, 1, 2, 3],
    })


def test_document_correlations_skip_constant_documents():
    values = validity.document_correlations(summeval_like(), "doc_id", "coherence", "judge")
    # A: judge ranks 1,3,2 against 1,2,3: ρ = 1 − 6·2/(3·8) = 0.5; B: reversed, ρ = −1; C and D constant.
    assert values.to_dict() == pytest.approx({"A": 0.5, "B": -1.0})
    tau = validity.document_correlations(summeval_like(), "doc_id", "coherence", "judge", "kendall")
    assert tau.to_dict() == pytest.approx({"A": 1 / 3, "B": -1.0})  # A: 2 concordant, 1 discordant pair of 3


def test_summary_level_averages_kept_documents_and_resamples_documents():
    frame = summeval_like()
    result = validity.summary_level(frame, "doc_id", [("coherence", "judge")], "spearman", seed=1, n_resamples=500)
    assert result["value"] == pytest.approx(-0.25) and result["documents"] == 2
    # two documents kept: no interval under the study's minimum of 10 units (a bootstrap over 2 takes 3 values)
    assert np.isnan(result["ci_low"]) and np.isnan(result["ci_high"])
    assert validity.per_group_correlation(frame, "doc_id", "coherence", "judge") == (pytest.approx(-0.25), 2)


def test_summary_level_average_over_dimensions_is_the_mean_of_their_values():
    frame = summeval_like()
    # fluency vs judge: A ρ = 0.5, B ρ = 1 (both descending), C ρ = 1 (both ascending), D constant judge: skipped.
    fluency = validity.summary_level(frame, "doc_id", [("fluency", "judge")], "spearman", 0, 200)
    assert fluency["value"] == pytest.approx((0.5 + 1 + 1) / 3) and fluency["documents"] == 3
    both = validity.summary_level(frame, "doc_id", [("coherence", "judge"), ("fluency", "judge")], "spearman", 0, 200)
    assert both["value"] == pytest.approx((-0.25 + 5 / 6) / 2) and both["documents"] == 3


def test_system_level_correlates_system_means_over_documents():
    frame = summeval_like()
    # Judge means: X (1+3+1+2)/4 = 1.75, Y 2.25, Z 2.0; human means: X 1.25, Y 2.0, Z 2.75.
    # Ranks judge X<Z<Y = (1, 3, 2), human (1, 2, 3): ρ = 0.5, τ = 1/3.
    rho = validity.system_level(frame, "doc_id", "system_id", "coherence", "judge", "spearman", 0, 300)
    tau = validity.system_level(frame, "doc_id", "system_id", "coherence", "judge", "kendall", 0, 300)
    assert rho["value"] == pytest.approx(0.5) and tau["value"] == pytest.approx(1 / 3)
    assert rho["systems"] == 3 and rho["documents"] == 4
    assert np.isnan(rho["ci_low"]) and np.isnan(rho["ci_high"])  # 4 documents: under the study's minimum


def test_items_that_share_no_document_are_refused_not_returned_as_nan():
    independent = pd.DataFrame({"doc_id": list("ABCDE"), "human": [1, 2, 3, 4, 5], "judge": [2, 1, 4, 3, 5]})
    with pytest.raises(ValueError, match="every item is its own 'doc_id'"):
        validity.summary_level(independent, "doc_id", [("human", "judge")], "spearman", 0, 100)


def test_document_bootstrap_is_reproducible_with_its_seed():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"doc_id": np.repeat(np.arange(12), 5), "system_id": np.tile(list("VWXYZ"), 12),
                          "human": rng.integers(1, 6, 60), "judge": rng.normal(size=60)})
    first = validity.summary_level(frame, "doc_id", [("human", "judge")], "spearman", seed=5, n_resamples=300)
    assert -1 <= first["ci_low"] <= first["value"] <= first["ci_high"] <= 1  # 12 documents: an interval
    assert first == validity.summary_level(frame, "doc_id", [("human", "judge")], "spearman", 5, 300)
    assert first != validity.summary_level(frame, "doc_id", [("human", "judge")], "spearman", 6, 300)
    system = validity.system_level(frame, "doc_id", "system_id", "human", "judge", "kendall", 5, 300)
    assert system == validity.system_level(frame, "doc_id", "system_id", "human", "judge", "kendall", 5, 300)


@pytest.mark.parametrize("coefficient", ["spearman", "kendall"])
def test_system_level_interval_equals_scipy_on_every_resample(coefficient):
    """The resamples' coefficients at once (τ-b as one kernel) against scipy on each resample's system means, with
    ties, systems missing from a resample's documents and resamples with a constant side."""
    from scipy import stats as sps

    from lib.analysis.stats import resample_counts

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"doc_id": np.repeat(np.arange(10), 4), "system_id": np.tile(list("WXYZ"), 10),
                          "human": rng.integers(1, 3, 40).astype(float), "judge": rng.integers(1, 3, 40) / 2})
    frame.loc[rng.random(40) < 0.6, "judge"] = np.nan  # failed judgments: a system may vanish from a resample
    result = validity.system_level(frame, "doc_id", "system_id", "human", "judge", coefficient, 7, 500)
    rows = frame.dropna(subset=["judge"])
    func = {"spearman": lambda a, b: sps.spearmanr(a, b).statistic,
            "kendall": lambda a, b: sps.kendalltau(a, b).statistic}[coefficient]
    documents = sorted(rows.doc_id.unique())
    expected = []
    for counts in resample_counts(len(documents), 7, 500):
        drawn = rows.assign(weight=rows.doc_id.map(dict(zip(documents, counts, strict=True))))
        drawn = drawn[drawn.weight > 0]
        totals = drawn.assign(j=drawn.judge * drawn.weight, h=drawn.human * drawn.weight).groupby("system_id")
        means = totals[["j", "h"]].sum().div(totals.weight.sum(), axis=0)
        a, b = means.j.to_numpy(), means.h.to_numpy()
        expected.append(float(func(a, b)) if len(a) > 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else np.nan)
    low, high = validity._percentile_ci(np.array(expected), 0.95)
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert np.isnan(expected).any() and not np.isnan(expected).all()


def test_system_level_uses_only_rows_with_a_score():
    frame = summeval_like()
    frame.loc[(frame.doc_id == "A") & (frame.system_id == "Y"), "judge"] = np.nan  # a failed judgment
    # Y's means now over B, C, D only: judge (2+2+2)/3 = 2, human (2+2+2)/3 = 2; X 1.75/1.25, Z 2.0/2.75.
    result = validity.system_level(frame, "doc_id", "system_id", "coherence", "judge", "spearman", 0, 100)
    assert result["value"] == pytest.approx(pd.Series([1.75, 2.0, 2.0]).corr(pd.Series([1.25, 2.0, 2.75]), "spearman"))


def test_geval_protocol_long_table():
    table = validity.geval_protocol(summeval_like(), {"coherence": "judge", "fluency": "judge"}, seed=0,
                                    n_resamples=100)
    assert len(table) == 2 * (2 * 2 + 1)  # coefficients x (dimensions x levels + average)
    row = table[(table.dimension == "coherence") & (table.level == "summary") & (table.coefficient == "spearman")]
    assert row.value.item() == pytest.approx(-0.25) and row.n.item() == 2
    assert set(table[table.dimension == "average"].level) == {"summary"}
    # the documents each CI resamples: the two kept ones at summary level, all four at system level (16 systems
    # or 3, the interval still rests on the documents drawn)
    system = table[(table.dimension == "coherence") & (table.level == "system") & (table.coefficient == "spearman")]
    assert (row.documents.item(), system.n.item(), system.documents.item()) == (2, 3, 4)
    one = validity.geval_protocol(summeval_like()[lambda f: f.doc_id == "A"], {"coherence": "judge"}, seed=0,
                                  n_resamples=50)
    assert set(one.level) == {"summary"}  # one document: no system-level row repeating it


def agreement_frame():
    return pd.DataFrame({"human_grade": [0, 1, 2, 2, 1], "grade": pd.array([0, 1, 2, 1, None], dtype="Int64"),
                         "expected_grade": [0.1, 0.9, 1.9, 1.2, np.nan], "qid": ["a", "a", "b", "c", "c"]})


def test_relevance_agreement_against_hand_computed_values():
    result = validity.relevance_agreement(agreement_frame(), "grade", "qid", scale=(0, 1, 2), relevant_from=2, seed=0,
                                          n_resamples=200)
    assert result["n"] == 4 and result["failed"] == 1 and result["exact_agreement"] == 0.75
    # Human 0,1,2,2 vs judge 0,1,2,1: p_o = 3/4, p_e = 5/16, κ = (12 − 5)/11 = 7/11.
    assert result["kappa"] == pytest.approx(7 / 11)
    # Quadratic weights (i−j)²/4: Σw·O = 1/16, Σw·E = 5/16, κ_w = 1 − 1/5.
    assert result["weighted_kappa"] == pytest.approx(0.8)
    # Binarised at 2: 0,0,1,1 vs 0,0,1,0: p_o = 3/4, p_e = 1/2, κ = 0.5.
    assert result["binary_kappa"] == pytest.approx(0.5)
    # Ordinal α: n_0 = 2, n_1 = 3, n_2 = 3 pooled; δ(1,2) = (3 + 3 − 3)² = 9, δ(0,1) = 2.5², δ(0,2) = 5.5²;
    # D_o = 2·9/8, D_e = 2·(2·3·6.25 + 3·3·9 + 2·3·30.25)/(8·7) = 600/56; α = 1 − 2.25·56/600 = 0.79.
    assert result["alpha"] == pytest.approx(0.79)
    assert result["expected_rho"] == pytest.approx(pd.Series([0.1, 0.9, 1.9, 1.2]).corr(pd.Series([0, 1, 2, 2]),
                                                                                        "spearman"))
    # 3 queries: no interval anywhere (fewer than MIN_CI_UNITS units)
    assert (result["units"], result["ci_over"]) == (3, "3 queries")
    for name in ("kappa", "weighted_kappa", "binary_kappa", "alpha", "expected_rho"):
        assert np.isnan(result[f"{name}_ci_low"]) and np.isnan(result[f"{name}_ci_high"])


def test_relevance_agreement_intervals_resample_queries():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"qid": np.repeat([f"q{k}" for k in range(12)], 4), "human_grade": rng.integers(0, 3, 48)})
    frame["grade"] = np.where(rng.random(48) < 0.6, frame.human_grade, rng.integers(0, 3, 48))
    frame["expected_grade"] = frame.grade + rng.random(48)
    result = validity.relevance_agreement(frame, "grade", "qid", scale=(0, 1, 2), seed=2, n_resamples=300)
    assert (result["units"], result["ci_over"]) == (12, "12 queries")
    by_query = unit_bootstrap(lambda x, y: cohen_kappa(x, y, (0, 1, 2), weights="quadratic"),
                              [frame.human_grade, frame.grade], frame.qid, "queries", 2, 300)
    assert (result["weighted_kappa_ci_low"], result["weighted_kappa_ci_high"]) == (by_query.low, by_query.high)
    for name in ("kappa", "binary_kappa", "alpha", "expected_rho", "expected_rho_within"):
        assert result[f"{name}_ci_low"] <= result[name] <= result[f"{name}_ci_high"]


def test_expected_grade_correlation_within_queries_skips_constant_queries():
    frame = pd.DataFrame({"qid": ["a"] * 3 + ["b"] * 3 + ["c"] * 2, "human_grade": [0, 1, 2, 2, 1, 0, 1, 1],
                          "grade": [0, 1, 2, 2, 1, 0, 1, 1],
                          "expected_grade": [0.1, 0.5, 0.9, 0.1, 0.5, 0.9, 1.5, 1.9]})
    result = validity.relevance_agreement(frame, "grade", "qid", scale=(0, 1, 2), seed=0, n_resamples=50)
    # a: ρ = 1, b: ρ = −1, c: constant human grades, skipped → mean 0 over 2 queries, though pooled ρ differs
    assert (result["expected_rho_within"], result["expected_groups"]) == (0.0, 2)
    assert result["expected_rho"] == pytest.approx(frame.expected_grade.corr(frame.human_grade, "spearman"))


def test_a_constant_judge_gets_kappa_zero_without_an_interval():
    frame = pd.DataFrame({"human_grade": [0, 1, 2, 2, 1, 0] * 2, "grade": [2] * 12,
                          "two_grades": [1, 2, 1, 2, 1, 1] * 2,  # never 0: varies on the scale, constant binarised at 1
                          "qid": range(12)})
    constant = validity.relevance_agreement(frame, "grade", "qid", expected=None, scale=(0, 1, 2), seed=0,
                                            n_resamples=100)
    assert (constant["kappa"] == 0 and np.isnan(constant["kappa_ci_low"])
            and np.isnan(constant["weighted_kappa_ci_high"]))
    assert np.isnan(constant["binary_kappa_ci_low"])
    binary = validity.relevance_agreement(frame, "two_grades", "qid", expected=None, scale=(0, 1, 2), relevant_from=1,
                                          seed=0, n_resamples=100)
    assert np.isfinite(binary["kappa_ci_low"]) and np.isnan(binary["binary_kappa_ci_low"])


def test_alpha_ci_is_seeded_and_interval_alpha_by_hand():
    # Interval α of (1, 2, 3) vs (1, 2, 4): pooled values 1,1,2,2,3,4; D_o = 2·1/6; Σ_{i<j}(v_i − v_j)² =
    # 6·35 − 13² = 41, D_e = 2·41/30; α = 1 − (1/3)/(82/30) = 72/82.
    result = validity.alpha_ci([1, 2, 3], [1, 2, 4], ["a", "b", "c"], seed=3, level_of_measurement="interval",
                               n_resamples=200)
    assert result["alpha"] == pytest.approx(72 / 82) and np.isnan(result["alpha_ci_low"])  # 3 units: no interval
    twelve = validity.alpha_ci([1, 2, 3] * 4, [1, 2, 4] * 4, range(12), 3, "interval", 200)
    assert twelve == validity.alpha_ci([1, 2, 3] * 4, [1, 2, 4] * 4, range(12), 3, "interval", 200)
    assert twelve["alpha_ci_low"] <= twelve["alpha"] <= twelve["alpha_ci_high"]


def test_binarise_keeps_missing():
    assert validity.binarise(pd.array([0, 1, 2, 3, None], dtype="Int64"), 2).tolist() == [0, 0, 1, 1, pd.NA]


def passages(n_queries=6, per_query=4):
    return pd.DataFrame({"qid": np.repeat([f"q{k}" for k in range(n_queries)], per_query),
                         "docid": [f"d{k}" for k in range(n_queries * per_query)]})


def test_split_is_by_group_disjoint_seeded_and_covers_the_groups():
    frame = passages()
    split = calibration.split_groups(frame, "qid", n_dev=2, seed=7)
    assert len(split.dev) == 2 and len(split.test) == 4 and not set(split.dev) & set(split.test)
    assert set(split.dev) | set(split.test) == set(frame.qid)
    dev, test = split.dev_rows(frame), split.test_rows(frame)
    assert not set(dev.docid) & set(test.docid) and len(dev) + len(test) == len(frame)
    assert calibration.split_groups(frame, "qid", 2, seed=7) == split
    assert calibration.split_groups(frame, "qid", 2, 3, n_test=1).test.__len__() == 1
    with pytest.raises(ValueError, match="n_dev must be between 1 and 5"):
        calibration.split_groups(frame, "qid", 6, seed=0)
    with pytest.raises(ValueError, match="share groups"):
        calibration.Split("qid", ("q1",), ("q1", "q2"), 0)


def test_sample_per_group_is_seeded_by_id_and_keeps_small_groups_whole():
    frame = pd.concat([passages(n_queries=3, per_query=5), pd.DataFrame({"qid": ["q9"], "docid": ["x"]})])
    sample = calibration.sample_per_group(frame, "qid", "docid", k=2, seed=3)
    assert sample.groupby("qid").size().to_dict() == {"q0": 2, "q1": 2, "q2": 2, "q9": 1}
    assert sample.equals(calibration.sample_per_group(frame.iloc[::-1], "qid", "docid", 2, 3).iloc[::-1])
    assert not sample.equals(calibration.sample_per_group(frame, "qid", "docid", 2, 4))


def test_thresholds_apply_and_fit_by_hand():
    assert calibration.apply_thresholds([0.2, 0.5, 1.7, 2.5, None], [0.5, 1.5, 2.5], (0, 1, 2, 3)).tolist() == \
        [0, 1, 2, 3, pd.NA]
    with pytest.raises(ValueError, match="3 non-decreasing cuts"):
        calibration.apply_thresholds([1.0], [1.5, 0.5, 2.0], (0, 1, 2, 3))
    # Two groups of scores separate the grades perfectly; the cut between them is the midpoint 0.5.
    assert calibration.fit_thresholds([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], (0, 1)) == (pytest.approx(0.5),)
    cuts = calibration.fit_thresholds([0.3, 0.4, 1.1, 1.2, 2.8, 2.9], [0, 0, 1, 1, 2, 2], (0, 1, 2))
    assert calibration.apply_thresholds([0.3, 0.4, 1.1, 1.2, 2.8, 2.9], cuts, (0, 1, 2)).tolist() == [0, 0, 1, 1, 2, 2]


def test_fast_weighted_kappa_equals_statsmodels():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 50), rng.integers(0, 4, 50)
    table = np.bincount(a * 4 + b, minlength=16).reshape(1, 4, 4).astype(float)
    assert calibration._weighted_kappas(table, 50)[0] == pytest.approx(
        cohen_kappa(a.tolist(), b.tolist(), (0, 1, 2, 3), weights="quadratic"))


def test_thresholds_are_the_first_best_of_grading_every_choice_of_cuts_one_by_one():
    import itertools

    rng = np.random.default_rng(1)
    for trial in range(25):
        k, n = int(rng.integers(2, 5)), int(rng.integers(5, 60))
        human = rng.integers(0, k, n)
        scores = np.round(human + rng.normal(size=n), 1 if trial % 2 else 3)
        grid = np.concatenate([[scores.min() - 1.0], calibration.candidate_cuts(scores, 12), [scores.max() + 1.0]])
        best: float = -np.inf
        expected: tuple[float, ...] = ()
        for cuts in itertools.combinations_with_replacement(grid, k - 1):
            grades = np.searchsorted(cuts, scores, side="right")
            table = np.bincount(human * k + grades, minlength=k * k).reshape(1, k, k).astype(float)
            kappa = float(calibration._weighted_kappas(table, n)[0])
            if kappa > best + 1e-12:
                best, expected = kappa, tuple(float(c) for c in cuts)
        assert calibration.fit_thresholds(scores, human, list(range(k)), grid_size=12) == expected


def test_thresholds_fit_on_dev_never_see_test_rows():
    frame = passages().assign(score=np.linspace(0, 3, 24), human_grade=np.repeat([0, 1, 2, 3, 1, 2], 4))
    split = calibration.split_groups(frame, "qid", n_dev=3, seed=1)
    seen = {}

    def spy(scores, human, scale):
        seen["scores"] = list(scores)
        return calibration.fit_thresholds(scores, human, scale)

    cuts, test = calibration.fit_on_dev(frame, split, "score", "human_grade", (0, 1, 2, 3), fit=spy)
    assert seen["scores"] == split.dev_rows(frame).score.tolist()  # exactly the dev rows, nothing of test
    assert set(test.qid) == set(split.test) and test.score_grade.notna().all()
    assert test.score_grade.tolist() == calibration.apply_thresholds(test.score, cuts, (0, 1, 2, 3)).tolist()


def test_summary_and_system_level_intervals_are_undefined_over_one_document():
    one = summeval_like()[lambda f: f.doc_id == "A"]
    summary = validity.summary_level(one, "doc_id", [("coherence", "judge")], "spearman", 0, 100)
    system = validity.system_level(one, "doc_id", "system_id", "coherence", "judge", "spearman", 0, 100)
    assert summary["value"] == pytest.approx(0.5) and np.isnan(summary["ci_low"]) and np.isnan(summary["ci_high"])
    assert system["value"] == pytest.approx(0.5) and np.isnan(system["ci_low"])


def test_weighted_kappa_difference_pairs_the_items():
    frame = pd.DataFrame({"human_grade": [0, 1, 2, 2, 1, 0] * 2, "a": [0, 1, 2, 2, 1, 0] * 2,
                          "b": [0, 2, 2, 1, 1, None] * 2, "qid": np.repeat(range(6), 2)})
    result = validity.weighted_kappa_difference(frame, "a", "b", "qid", categories=(0, 1, 2), seed=0, n_resamples=300)
    both = frame.dropna().astype(int)
    expected = 1 - cohen_kappa(both.human_grade.tolist(), both.b.tolist(), (0, 1, 2), weights="quadratic")
    assert result["n"] == 10 and result["difference"] == pytest.approx(expected)  # κ_w(human, a) = 1 on those rows
    assert (result["units"], result["ci_over"]) == (6, "6 queries") and np.isnan(result["ci_low"])  # 6 queries
    frame["qid"] = range(12)
    result = validity.weighted_kappa_difference(frame, "a", "b", "qid", categories=(0, 1, 2), seed=0, n_resamples=300)
    assert result["ci_low"] <= result["difference"] <= result["ci_high"] and result["ci_over"] == "10 queries"
    assert validity.weighted_kappa_difference(frame, "a", "a", "qid", categories=(0, 1, 2), seed=0, n_resamples=50)[
        "ci_high"] == 0


def dev_frame():
    """Three dev queries; 'good' orders the grades (thresholds recover them), 'noisy' does not."""
    human = [0, 1, 2, 3] * 3
    return pd.DataFrame({"qid": np.repeat(["a", "b", "c"], 4), "human_grade": human,
                         "good": [g + 0.01 * k for k, g in enumerate(human)],
                         "argmax": [0, 1, 2, 3, 0, 1, 2, 2, 1, 1, 2, 3], "noisy": [3, 0, 1, 2] * 3})


def test_out_of_fold_grades_never_grade_a_group_with_its_own_cuts():
    frame = dev_frame()
    fitted_on = []

    def spy(scores, human, scale):
        fitted_on.append(sorted(scores))
        return calibration.fit_thresholds(scores, human, scale)

    grades = calibration.out_of_fold_grades(frame, "qid", "good", "human_grade", (0, 1, 2, 3), fit=spy)
    assert len(fitted_on) == 3 and all(len(scores) == 8 for scores in fitted_on)
    for held_out, scores in zip("abc", fitted_on, strict=True):  # each fit saw the other two queries only
        assert not set(scores) & set(frame[frame.qid == held_out].good)
    assert grades.tolist() == frame.human_grade.tolist()
    with pytest.raises(ValueError, match="at least two"):
        calibration.out_of_fold_grades(frame[frame.qid == "a"], "qid", "good", "human_grade", (0, 1, 2, 3))


def test_choose_method_prefers_the_cheapest_among_those_indistinguishable_from_the_best():
    table = pd.DataFrame({"calls": [1, 1, 3, 0], "weighted_kappa": [0.30, 0.45, 0.60, 0.90],
                          "weighted_kappa_ci_low": [0.0, 0.20, 0.40, 0.80]},
                         index=pd.Index(["plain", "thresholds", "criteria", "bm25"], name="method"))
    # The best LLM method is criteria (0.60, low 0.40): thresholds (0.45) is within, plain (0.30) is not; the
    # baseline never competes. Thresholds costs 1 call against 3.
    assert calibration.choose_method(table) == "thresholds"
    assert calibration.tied_with_best(table) == ["thresholds", "criteria"]
    assert calibration.choose_method(table.assign(weighted_kappa_ci_low=[0.0, 0.2, 0.5, 0.8])) == "criteria"


def test_compare_on_dev_and_freeze():
    frame = dev_frame()
    methods = [calibration.Method("argmax", "argmax", fit=False, calls=1),
               calibration.Method("thresholds", "good", fit=True, calls=1),
               calibration.Method("noise", "noisy", fit=True, calls=0)]
    table = calibration.compare_on_dev(frame, methods, "qid", "human_grade", (0, 1, 2, 3), seed=0, n_resamples=100)
    assert list(table.index) == ["argmax", "thresholds", "noise"] and table.n.tolist() == [12, 12, 12]
    assert table.at["thresholds", "weighted_kappa"] == pytest.approx(1.0)
    assert table.at["argmax", "exact_agreement"] == pytest.approx(10 / 12)  # two of twelve differ
    assert calibration.choose_method(table) == "thresholds"
    frozen = calibration.freeze(methods[1], frame, "human_grade", (0, 1, 2, 3))
    new = pd.DataFrame({"good": [0.05, 3.2, None]}, index=[7, 8, 9])
    assert frozen.grades(new, (0, 1, 2, 3)).tolist() == [0, 3, pd.NA]
    assert frozen.cuts == calibration.fit_thresholds(frame.good, frame.human_grade, (0, 1, 2, 3))
    as_written = calibration.freeze(methods[0], frame, "human_grade", (0, 1, 2, 3))
    assert as_written.cuts is None and as_written.grades(frame, (0, 1, 2, 3)).tolist() == frame.argmax.tolist()


def test_summary_level_average_is_undefined_when_a_dimension_keeps_no_document():
    import warnings

    frame = summeval_like().assign(flat=2)  # the flat score is constant in every document
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" may reach the report
        result = validity.summary_level(frame, "doc_id", [("coherence", "judge"), ("fluency", "flat")], "spearman",
                                        0, 100)
    assert np.isnan(result["value"]) and result["documents"] == 2
