"""The RAG25 draw chapters 01, 03 and 05 share (lib.rag): the log calendar, nesting when the draw grows, the
answers and importance set it asks for, the check a reading chapter makes on an earlier chapter's table, and the
one draw the three chapters' parameters give (params.yaml and the full profile)."""
from __future__ import annotations

import pandas as pd
import pytest

from lib import rag, tables
from lib.tools import pipeline

CHAPTERS = ("01_nudge_candidates", "05_nugget_evaluation")


def _human(topics: int = 12, per_topic: int = 6) -> pd.DataFrame:
    return pd.DataFrame([{"qid": str(q), "nugget_index": i, "nugget": f"fact {q}.{i}",
                          "importance": "vital" if i % 3 == 0 else "okay"}
                         for q in range(1, topics + 1) for i in range(per_topic)])


def _topics(topics: int = 12) -> pd.DataFrame:
    return pd.DataFrame({"qid": [str(q) for q in range(1, topics + 1)],
                         "narrative": [f"need {q}" for q in range(1, topics + 1)]})


def _draw(**changes: int) -> rag.StudyDraw:
    sizes = {"topic_sample": 4, "topic_seed": 0, "triad_topics": 6, "importance_topics": 8, "importance_per_topic": 3,
             "assessed_per_topic": 5, "context_nuggets": 2, "nugget_seed": 0, "log_days": 2, "degraded_day": 2}
    return rag.study_draw(_topics(), _human(), start_day="2026-11-01", **(sizes | changes))


def test_log_design_puts_the_degraded_days_topics_under_nugget_evaluation():
    design = rag.log_design(["1", "2", "3", "4", "5", "6", "7", "8"], "2026-11-01", 4, 3)
    assert design.days == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    assert (design.per_day, design.degraded, design.recheck) == (2, "2026-11-03", "2026-11-05")
    assert design.nugget_qids == ["5", "6"]


def test_the_draw_nests_log_then_triad_then_importance_topics():
    draw = _draw()
    assert draw.triad_qids[:4] == draw.log.topics and len(draw.triad_qids) == 6
    assert draw.importance_qids[:6] == draw.triad_qids and len(draw.importance_qids) == 8
    assert set(draw.assessed.qid) == set(draw.importance_qids)
    assert (draw.assessed.groupby("qid").size() == 5).all()


def test_more_triad_or_importance_topics_keep_the_log_topics_and_their_nuggets():
    small, large = _draw(), _draw(triad_topics=8, importance_topics=10)
    assert large.log.topics == small.log.topics == large.triad_qids[:4]
    kept = small.assessed[small.assessed.qid.isin(small.log.topics)]
    shared = kept.merge(large.assessed, on=["qid", "order"], suffixes=("_small", "_large"))
    assert len(shared) == len(kept) and (shared.nugget_small == shared.nugget_large).all()


def test_answer_requests_are_every_triad_topic_with_notes_and_the_degraded_days_without():
    draw = _draw()
    requests = draw.answer_requests(_topics().set_index("qid").narrative)
    with_notes = requests[requests.variant == "with_context"]
    assert with_notes.qid.tolist() == draw.triad_qids
    assert with_notes.notes.tolist() == [draw.notes(q) for q in draw.triad_qids]
    assert all(len(n) == 2 for n in with_notes.notes)
    without = requests[requests.variant == "no_context"]
    assert without.qid.tolist() == draw.log.nugget_qids == draw.log.topics[2:4]
    assert without.notes.isna().all()


def test_the_importance_set_is_the_first_nuggets_of_every_importance_topic():
    draw = _draw()
    picked = draw.importance_nuggets()
    assert set(picked.qid) == set(draw.importance_qids) and (picked.order < 3).all()
    assert len(picked) == 8 * 3
    triad = draw.nuggets_of(draw.triad_qids)
    assert set(triad.qid) == set(draw.triad_qids) and (triad.in_context == (triad.order < 2)).all()


def test_an_upstream_table_is_read_in_the_draws_order_and_must_hold_exactly_the_draw():
    draw = _draw()
    expected = draw.answer_requests(_topics().set_index("qid").narrative)
    written = expected.assign(answer="text").iloc[::-1].reset_index(drop=True)  # as a parquet round trip gives lists
    written["notes"] = [None if n is None else list(n) for n in written.notes]
    keys, same = ["qid", "variant"], ["notes"]
    read = tables.check_upstream(written, expected, keys, same, "rag_answers", "01", "rag25_draw")
    assert read[["qid", "variant"]].equals(expected[["qid", "variant"]])
    with pytest.raises(tables.UpstreamMismatch, match=r"missing.*same rag25_draw"):
        tables.check_upstream(written.iloc[1:], expected, keys, same, "rag_answers", "01", "rag25_draw")
    other = _draw(context_nuggets=3).answer_requests(_topics().set_index("qid").narrative).assign(answer="text")
    with pytest.raises(tables.UpstreamMismatch, match="notes"):
        tables.check_upstream(other, expected, keys, same, "rag_answers", "01", "rag25_draw")


@pytest.mark.parametrize("profile", [None, "full"])
def test_the_answering_and_the_evaluating_chapter_get_one_draw_from_the_parameters(profile):
    draws = [pipeline.parameters_for(name, profile=profile)["rag25_draw"] for name in CHAPTERS]
    assert draws[0] == draws[1]
