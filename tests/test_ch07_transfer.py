"""Chapter 07's transfer of the relevance readings to queries their cuts were not fit on (issue #35): the split-half
table, NovelEval's sample and rows, the verdicts and the words — on hand-made frames, one whose cuts transfer and
one whose cuts do not while the order within each query holds."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import baselines, verdicts
from lib.analysis import calibration
from lib.chapters import ch07
from tests.test_ch07 import make_findings, transfer_rows

PRIMARY = ch07.POINTWISE_READINGS[2]
READINGS = [PRIMARY, baselines.RELEVANCE_BASELINES[1]]  # E[g] and the MiniLM cosine, each with cuts


def two_halves(shifted: bool, queries: int = 24) -> tuple[pd.DataFrame, calibration.Split]:
    """``queries`` queries of six passages (grades 0, 0, 1, 2, 2, 3): E[g] = 1 + g/2 and cosine = 0.2 + g/10, with
    small noise. ``shifted``: on the held-out half E[g] is squeezed into 2.05 + g/10, above the fit half's cuts for
    every grade but keeping each query's order (what a judge whose scale drifts between query sets does)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame([{"qid": f"q{q:02d}", "docid": f"d{q}-{k}", "human_grade": int(g)}
                          for q in range(queries) for k, g in enumerate(rng.permutation([0, 0, 1, 2, 2, 3]))])
    noise = rng.normal(scale=0.08, size=len(frame))
    frame["pointwise_expected"] = 1.0 + 0.5 * frame.human_grade + noise
    frame["cosine"] = 0.2 + 0.1 * frame.human_grade + rng.normal(scale=0.02, size=len(frame))
    halves = ch07.transfer_halves(frame, queries // 2, seed=3)
    if shifted:
        held = frame.qid.isin(halves.test).to_numpy()
        frame.loc[held, "pointwise_expected"] = 2.05 + 0.1 * frame.loc[held, "human_grade"] + noise[held] / 4
    return frame, halves


def declared_verdicts(table: pd.DataFrame) -> dict[str, verdicts.Verdict]:
    found = ch07.transfer_verdicts(table, ch07.DECLARED, "relevance.transfer", "held-out DL19 queries", PRIMARY.name,
                                   0.40)
    return {v.key.rsplit(".", 1)[1]: v for v in found}


def test_the_halves_are_drawn_from_the_query_ids_alone():
    frame, halves = two_halves(shifted=False)
    assert len(halves.dev) == 12 and len(halves.test) == 12 and not set(halves.dev) & set(halves.test)
    regraded = frame.assign(human_grade=3 - frame.human_grade, pointwise_expected=0.0)
    assert ch07.transfer_halves(regraded, 12, seed=3) == halves  # grades and judgments play no part
    assert ch07.transfer_halves(frame, 12, seed=4) != halves


def test_cuts_that_transfer_hold_on_the_held_out_half():
    frame, halves = two_halves(shifted=False)
    table = ch07.transfer_table(frame, READINGS, "pointwise_expected", halves, seed=0, n_resamples=300)
    assert list(table.direction.unique()) == [ch07.DECLARED, ch07.REVERSE]  # no NovelEval rows without its frame
    declared = table[table.direction == ch07.DECLARED].set_index("reading")
    # the cuts come from the declared half alone and are carried to the other half unchanged
    fit = halves.dev_rows(frame)
    cuts = calibration.fit_thresholds(fit.pointwise_expected, fit.human_grade, ch07.SCALE)
    assert declared.loc[PRIMARY.name, "cuts"] == ", ".join(f"{c:.4f}" for c in cuts)
    assert (declared.fit_queries.iloc[0], declared.held_out_queries.iloc[0]) == (12, 12)
    assert declared.loc[PRIMARY.name, "ci_over"] == "12 queries" and declared.loc[PRIMARY.name, "value"] > 0.9
    reverse = table[table.direction == ch07.REVERSE].set_index("reading")
    assert reverse.loc[PRIMARY.name, "cuts"] != declared.loc[PRIMARY.name, "cuts"]  # fit on the other half
    found = declared_verdicts(table)
    assert {k: v.verdict for k, v in found.items()} == {"cuts": "holds", "minilm": "holds", "order": "holds"}
    assert all(not v.confirmatory and v.unit == "held-out queries" and v.units == 12 for v in found.values())
    assert found["order"].statistic == ch07.TRANSFER_TAU and found["order"].threshold == 0.0


def test_cuts_that_do_not_transfer_fail_while_the_order_within_queries_holds():
    frame, halves = two_halves(shifted=True)
    table = ch07.transfer_table(frame, READINGS, "pointwise_expected", halves, seed=0, n_resamples=300)
    found = declared_verdicts(table)
    # every held-out E[g] lies above the fit half's middle cut: grades 0–2 all come out 2, so κ_w falls below 0.40
    assert found["cuts"].estimate < 0.40 and found["cuts"].verdict == "fails"
    assert found["order"].verdict == "holds" and found["order"].estimate > 0.9  # each query's order is intact
    assert found["minilm"].verdict == "holds"  # the cosine's scale did not move
    # the numbers behind the verdicts are those of the table, row by row
    declared = table[table.direction == ch07.DECLARED].set_index("reading")
    assert found["cuts"].estimate == pytest.approx(declared.loc[PRIMARY.name, "value"])


def test_noveleval_sample_nests_its_queries_and_maps_its_grades():
    noveleval = pd.DataFrame({"qid": [str(q) for q in range(12) for _ in range(3)],
                              "docid": [f"{q}-{k}" for q in range(12) for k in range(3)],
                              "human_grade": [0, 1, 2] * 12})
    small = ch07.noveleval_sample(noveleval, 4, seed=0, grades={0: 0, 1: 2, 2: 3})
    large = ch07.noveleval_sample(noveleval, 10, seed=0, grades={0: 0, 1: 2, 2: 3})
    assert list(dict.fromkeys(large.qid))[:4] == list(dict.fromkeys(small.qid)) and small.qid.nunique() == 4
    assert small.human_grade.tolist() == [0, 2, 3] * 4 and small.noveleval_grade.tolist() == [0, 1, 2] * 4
    with pytest.raises(ValueError, match="no TREC DL grade"):
        ch07.noveleval_sample(noveleval, 4, seed=0, grades={0: 0, 1: 2})
    # papermill passes a mapping parameter with its keys as text (the full profile's run stopped here)
    as_passed = ch07.noveleval_sample(noveleval, 4, seed=0, grades={"0": 0, "1": 2, "2": 3})
    assert as_passed.equals(small)


def test_noveleval_rows_carry_the_cuts_fit_on_every_dl19_query():
    dl19, halves = two_halves(shifted=False)
    novel, _ = two_halves(shifted=False, queries=12)
    novel = novel.assign(qid="n" + novel.qid, pointwise_expected=novel.pointwise_expected - 0.4)  # a lower scale
    table = ch07.transfer_table(dl19, READINGS, "pointwise_expected", halves, seed=0, n_resamples=300,
                                noveleval=novel)
    rows = table[table.direction == ch07.NOVELEVAL].set_index("reading")
    cuts = calibration.fit_thresholds(dl19.pointwise_expected, dl19.human_grade, ch07.SCALE)
    assert rows.loc[PRIMARY.name, "cuts"] == ", ".join(f"{c:.4f}" for c in cuts)
    assert (rows.fit_queries.iloc[0], rows.held_out_queries.iloc[0]) == (24, 12)
    found = ch07.transfer_verdicts(table, ch07.NOVELEVAL, "relevance.noveleval", "NovelEval's queries",
                                   PRIMARY.name, 0.40)
    assert [v.key for v in found] == ["07.relevance.noveleval.cuts", "07.relevance.noveleval.minilm",
                                      "07.relevance.noveleval.order"]
    assert found[2].verdict == "holds"
    f = make_findings(transfer=pd.concat([transfer_rows(), transfer_rows(directions=(ch07.NOVELEVAL,))]))
    assert [v.key for v in f.noveleval] == [v.key for v in found]
    assert f.primary.depends_on[-3:] == tuple(v.key for v in found)  # the primary carries NovelEval's rows too


def test_the_words_say_whether_the_primary_is_confirmed_on_held_out_queries():
    f = make_findings()  # the reviewer's numbers: cuts 0.20 (0.05 to 0.36), MiniLM 0.39, τ-b 0.24 (0.10 to 0.36)
    keys = f.by_key()
    assert keys["07.relevance.transfer.cuts"].verdict == "fails"
    assert keys["07.relevance.transfer.minilm"].verdict == "undetermined"
    assert keys["07.relevance.transfer.order"].verdict == "holds" and f.noveleval == ()
    lines = ch07.transfer_bullets(f, transfer_rows(), {0: 0, 1: 2, 2: 3})
    assert "cuts fit on 21 queries, applied unchanged to the other 22" in lines[0]
    assert "cuts 2.0402, 2.2203, 2.2935" in lines[0] and "decides nothing" in lines[1]
    assert "Not run" in lines[2] and "0 → 0, 1 → 2, 2 → 3" in lines[2]
    assert "The primary's DL19 result is not confirmed on held-out queries." in lines[3]
    assert "the order of E[g] within each query for ranking its passages, which survives the transfer" in lines[3]
    assert "neither E[g]'s cuts (fails) nor MiniLM's (undetermined) hold" in lines[3]
    threat = ch07.transfer_threat(f)
    assert threat.startswith("- **Cuts fit on DL19's queries.**") and "their agreement is **fails** against" in threat
    assert "not to another query set (NovelEval, which would, was not judged in this run)" in threat
    # cuts that hold: the same words say so, and recommend them
    held = make_findings(transfer=transfer_rows(cuts=(0.55, 0.45, 0.65)))
    text = ch07.transfer_bullets(held, transfer_rows(cuts=(0.55, 0.45, 0.65)), {0: 0, 1: 2, 2: 3})[3]
    assert "is confirmed on held-out queries" in text and "the grades through the E[g] cuts" in text
    # the order undecided on the held-out queries: still the reading with nothing carried over, said with its outcome
    undecided = ch07.preferred_reading(make_findings(transfer=transfer_rows(order=(0.02, -0.08, 0.12))))
    assert "it carries no cuts over, though on the held-out queries its τ-b is undetermined too" in undecided
    # the order the wrong way: nothing is recommended from the judge; MiniLM's cuts that hold are, for grades
    lost = ch07.preferred_reading(make_findings(transfer=transfer_rows(minilm=(0.55, 0.45, 0.65),
                                                                       order=(-0.20, -0.30, -0.10))))
    assert lost.startswith("no reading of the judge") and "MiniLM's cuts, which hold" in lost
    headline = verdicts.headline(f.primary, f.by_key())
    assert "Caveat: **pointwise, E[g] thresholds cross-fitted** — grades held-out DL19 queries as NIST does" in headline


def test_noveleval_is_off_by_default_and_then_asks_the_judge_nothing():
    noveleval = pd.DataFrame({"qid": ["0"], "docid": ["0-0"], "query": ["q"], "passage": ["p"], "human_grade": [2]})
    assert ch07.noveleval_judged(None, noveleval, 0, seed=0, grades={0: 0, 1: 2, 2: 3}) is None  # type: ignore[arg-type]
    assert [r.name for r in ch07.transfer_readings(PRIMARY)] == [PRIMARY.name, ch07.MINILM]
