"""Both RAG triads: the defective answers, the combination rule by hand, the traditional call against the fake
endpoint, and chapter 05's triad verdicts on hand-made scores (including a drop the wrong way)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import triads
from lib.chapters import ch05
from lib.llm.gateway import Endpoint, Gateway
from tests.fakes import FakeOpenAI, always


def assessed_for(qids, per_topic=4):
    return pd.DataFrame([{"qid": q, "nugget": f"fact {k} of {q}", "order": k} for q in qids for k in range(per_topic)])


def test_defective_answers_append_held_out_nuggets_of_the_topic_and_of_the_next():
    clean = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["q1", "q2", "q3"], "answer": ["A one.", "A two.", None]})
    answers = triads.defective_answers(clean, assessed_for(["1", "2", "3"]), n_context=2)
    assert answers.qid.unique().tolist() == ["1", "2"]  # topic 3's generation failed: no answer, no defect
    by = answers.set_index(["qid", "variant"]).answer
    assert by[("1", "clean")] == "A one."
    assert by[("1", "unsupported")] == "A one. Fact 2 of 1. Fact 3 of 1."  # held out: order ≥ n_context
    assert by[("1", "irrelevant")] == "A one. Fact 2 of 2. Fact 3 of 2."
    assert by[("2", "irrelevant")] == "A two. Fact 2 of 1. Fact 3 of 1."  # the last takes the first topic's
    short = triads.defective_answers(clean, assessed_for(["1", "2"], per_topic=3), n_context=2)
    assert short.empty  # one held-out nugget where two are injected: no topic qualifies


def test_weighted_score_by_hand():
    # vital 1, okay 0.5: (1·1 + 1·0 + 0.5·1) / (1 + 1 + 0.5); a nugget without a label does not count
    assert triads.weighted_score(["vital", "vital", "okay", None], [1.0, 0.0, 1.0, 1.0]) == pytest.approx(1.5 / 2.5)
    assert np.isnan(triads.weighted_score([None], [1.0]))


def test_nuggetized_scores_each_variant_on_its_own_nuggets():
    labels = pd.DataFrame({"qid": "1", "nugget": ["a", "b", "u1", "i1"],
                           "origin": ["answer", "answer", "unsupported", "irrelevant"],
                           "importance": ["vital", "okay", "vital", "okay"],
                           "support": ["support", "partial_support", "not_support", "not_support"],
                           "relevance": ["relevant", "relevant", "relevant", "not_relevant"]})
    scores = triads.nuggetized(labels).set_index(["variant", "component"]).score
    assert scores[("clean", "groundedness")] == pytest.approx((1 + 0.25) / 1.5)
    assert scores[("unsupported", "groundedness")] == pytest.approx((1 + 0.25 + 0) / 2.5)
    assert scores[("unsupported", "relevance")] == 1.0
    assert scores[("irrelevant", "relevance")] == pytest.approx(1.5 / 2.0)


def test_traditional_reads_both_grades_from_one_call(tmp_path):
    with FakeOpenAI(always('{"groundedness": 3, "relevance": 1}')) as fake:
        gateway = Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=tmp_path / "c.sqlite")
        answers = pd.DataFrame({"qid": ["1"], "query": ["why?"], "variant": ["clean"], "answer": ["Because."]})
        scores = triads.traditional(gateway, answers, {"1": ["note one", "note two"]})
    assert scores.set_index("component").score.to_dict() == {"groundedness": 1.0, "relevance": pytest.approx(1 / 3)}
    assert (scores.scored_by == "argmax").all()  # no logprobs from this endpoint: the written grades
    user = fake.requests[0]["messages"][1]["content"]
    assert "[1] note one" in user and user.endswith("Answer: Because.\nGive both grades.")


def drops_for(nuggetized_drop, traditional_drop, topics=12):
    rows = []
    for t in range(topics):
        for triad, drop in (("nuggetized", nuggetized_drop), ("traditional", traditional_drop)):
            for defect, component in triads.DECLARED.items():
                rows.append({"qid": str(t), "triad": triad, "component": component, "defect": defect,
                             "clean": 0.8, "defective": 0.8 - drop(t), "drop": drop(t)})
    return pd.DataFrame(rows)


def test_triad_verdicts_see_a_drop_and_compare_the_triads():
    found = {v.key: v for v in ch05.triad_verdicts(drops_for(lambda t: 0.3, lambda t: 0.1 if t % 4 else -0.05),
                                                   0.1, 0.05, 0, 300)}
    seen = found["05.triad.nuggetized.groundedness.unsupported"]
    assert seen.verdict == "sees" and seen.estimate == 1.0 and seen.units == 12 and seen.confirmatory
    traditional = found["05.triad.traditional.relevance.irrelevant"]
    assert traditional.estimate == pytest.approx(9 / 12)  # three topics drop the wrong way
    better = found["05.triad.nuggetized.vs_traditional.unsupported"]
    assert better.verdict == "holds" and better.p < 0.05 < better.p_against
    assert better.depends_on == ("05.triad.traditional.groundedness.unsupported",
                                 "05.triad.nuggetized.groundedness.unsupported")


def test_triad_verdicts_the_wrong_way_is_evidence_against():
    found = {v.key: v for v in ch05.triad_verdicts(drops_for(lambda t: -0.2, lambda t: 0.2), 0.1, 0.05, 0, 300)}
    assert found["05.triad.nuggetized.relevance.irrelevant"].verdict == "fails"  # the defect scores higher
    worse = found["05.triad.nuggetized.vs_traditional.irrelevant"]
    assert worse.verdict == "fails" and worse.p_against < 0.05


def test_construction_verdicts_read_minilm_per_defect():
    rows = [{"entry_id": str(t), "kind": kind, "cos_query": q, "cos_notes": n}
            for t in range(10) for kind, q, n in (("real", 0.6, 0.8), ("real", 0.5, 0.7),
                                                  ("unsupported", 0.55, 0.4), ("irrelevant", 0.1, 0.2))]
    found = {v.key: v for v in ch05.triad_construction_verdicts(pd.DataFrame(rows), 0.1, 0, 300)}
    assert found["05.triad.construction.unsupported"].estimate == 1.0  # further from every note
    assert found["05.triad.construction.irrelevant"].verdict == "sees"


def test_the_monitor_plan_reads_each_triads_drop_and_spread():
    from lib.analysis.power import control_limit_power
    rows = [{"qid": str(t), "variant": v, "triad": tr, "component": c,
             "score": (0.8 + 0.02 * (t % 2)) - (0.3 if v == "unsupported" and tr == "nuggetized" else 0.0)}
            for t in range(10) for v in triads.VARIANTS for tr in triads.TRIADS for c in triads.COMPONENTS]
    plan = ch05.triad_monitor_plan(pd.DataFrame(rows), logged_per_day=20).set_index(["triad", "defect"])
    seen = plan.loc[("nuggetized", "unsupported")]
    sd = float(np.std([0.8, 0.82] * 5, ddof=1))
    assert seen["mean drop"] == pytest.approx(0.3) and seen["per-item SD"] == pytest.approx(sd)
    assert seen["items a day at the default rate"] == 2  # 10% of 20 queries
    assert seen.power == pytest.approx(control_limit_power(0.3, sd, 2))
    assert np.isnan(plan.loc[("traditional", "unsupported")].power)  # no drop: nothing to catch


def test_creation_recall_counts_the_notes_some_created_nugget_states():
    def embed(texts):  # a word is a direction: the same first word, cosine 1; another, 0
        axes = ["cats", "dogs", "birds", "why"]
        return np.array([[1.0 if t.lower().split()[0] == a else 0.0 for a in axes] for t in texts])

    answers = pd.DataFrame({"qid": ["1"], "query": ["why purr"], "variant": ["clean"], "answer": ["x"]})
    labels = pd.DataFrame({"qid": "1", "nugget": ["cats purr", "birds sing", "dogs bark"],
                           "origin": ["answer", "answer", "irrelevant"]})
    notes = {"1": ["cats are content", "dogs are loyal", "why not"]}
    row = triads.creation_recall(labels, answers, notes, embed, 0.6).iloc[0]
    # the created nuggets state the cats note only (the dogs nugget was injected, not created); the query, "why"
    assert (row.created, row.notes) == (2, 3)
    assert row.recall_created == pytest.approx(1 / 3) and row.recall_query == pytest.approx(1 / 3)
