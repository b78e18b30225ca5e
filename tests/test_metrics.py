"""The one metric protocol and registry (lib/metrics.py): every metric of the study is registered and found by
name or alias, every kind's call returns score / reason / failed, and a failure is never a score."""
from __future__ import annotations

import importlib
import math
from dataclasses import replace

import pytest

from lib import metrics
from lib.analysis import ranking
from lib.crs import judge as crs_judge
from lib.crs import metrics as crs_metrics
from lib.crs.config import MetricConfig
from lib.judges import bias, geval, guardrails, outcomes, relevance
from lib.judges.items import JudgeItem
from lib.monitor import METRICS as MONITOR_COLUMNS
from lib.monitor import LogRow
from lib.nuggets import SCORES as NUGGET_COLUMNS
from lib.nuggets import NuggetItem
from tests.crs_tiny import tiny_universe
from tests.fakes import FakeOpenAI, always
from tests.test_judges import digit_logprobs, gateway_for

METRIC_TYPES = (metrics.FunctionMetric, geval.Rubric, ranking.Hit, ranking.NDCG)


def test_every_metric_a_metric_module_defines_is_registered():
    study = metrics.study_metrics()
    for name in metrics.METRIC_MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            defined = value if isinstance(value, tuple | list) else (value,)
            for metric in defined:
                if isinstance(metric, METRIC_TYPES):
                    assert study.get(metric.name) is metric, f"{name}.{attribute} ({metric.name}) is not registered"
    # the columns each kind writes are all metrics of the study (a new column without a metric fails here)
    for column in (*MONITOR_COLUMNS, *(f"nuggets.{c}" for c in NUGGET_COLUMNS), *crs_metrics.SESSION_METRICS,
                   *(f"judge_{c}" for c in crs_judge.RUBRIC_CRITERIA), *(f"SummEval {d}" for d in
                                                                          geval.SUMMEVAL_DIMENSIONS)):
        assert metrics.get(column).name in study


def test_the_registry_lists_every_kind_with_construct_scale_and_citation():
    listing = metrics.table()
    assert set(listing.kind) == set(metrics.KINDS)
    assert listing.index.is_unique and (listing[["construct", "citation", "description", "scale"]] != "").all().all()
    assert {"nudge relevance", "ToneEmpathy", "FinancialSafety", "InterventionSuccess", "nugget vital",
            "groundedness", "TAS", "CAS", "conversation coherence", "NDCG@3"} <= set(listing.index)


def test_the_listing_command_prints_every_metric(capsys):
    metrics.main()
    printed = capsys.readouterr().out
    assert all(name in printed for name in metrics.study_metrics()) and "## ranking" in printed


def test_lookup_by_name_and_alias():
    assert metrics.get("nDCG@3") is metrics.get("NDCG@3") is ranking.MEASURES["NDCG@3"]
    assert metrics.get("cas") is metrics.get("CAS") and metrics.get("Success(rel=2)@3").name == "Hit@3 (g=2)"
    assert metrics.get("SummEval fluency") is geval.FLUENCY is geval.summeval_rubric("fluency")
    assert geval.RUBRICS["SummEval coherence"] is geval.COHERENCE
    with pytest.raises(KeyError, match="no metric is called 'nDCG@4'"):
        metrics.get("nDCG@4")
    with pytest.raises(KeyError, match="no G-Eval rubric metric"):
        geval.RUBRICS["NDCG@3"]  # a view holds only its kind


def test_a_name_or_alias_is_registered_once(monkeypatch):
    monkeypatch.setattr(metrics, "REGISTRY", {})
    monkeypatch.setattr(metrics, "ALIASES", {})
    metrics.register(ranking.NDCG(7))
    with pytest.raises(ValueError, match="'nDCG@7' is already registered"):
        metrics.register(replace(guardrails.FINANCIAL_SAFETY, name="other", aliases=("nDCG@7",)))
    with pytest.raises(ValueError, match="'NDCG@7' is already registered"):
        metrics.register(ranking.NDCG(7))


def test_a_result_is_either_a_score_or_a_failure_never_both():
    assert metrics.Result.failure("timeout").failed and math.isnan(metrics.Result.failure("timeout").score)
    with pytest.raises(ValueError):
        metrics.Result(0.0, failed=True, failure_kind="timeout")  # a failure with a default score
    with pytest.raises(ValueError):
        metrics.Result(float("nan"))  # no score, yet not failed
    with pytest.raises(ValueError):
        metrics.Result(1.0, failure_kind="timeout")
    assert metrics.Result.of(None).failure_kind == metrics.UNDEFINED and metrics.Result.of(0).score == 0.0


def test_a_score_off_the_metrics_scale_is_an_error():
    wrong = replace(guardrails.FINANCIAL_SAFETY, call=lambda gateway, items: [metrics.Result(2.0) for _ in items])
    with pytest.raises(ValueError, match="off its scale"):
        wrong.score(None, [JudgeItem("", "x")])
    short = replace(guardrails.FINANCIAL_SAFETY, call=lambda gateway, items: [])
    with pytest.raises(ValueError, match="0 results for 1 items"):
        short.score(None, [JudgeItem("", "x")])


def assert_results(results, n):
    assert len(results) == n
    for r in results:
        assert isinstance(r, metrics.Result) and isinstance(r.reason, str)
        assert r.failed == math.isnan(r.score) == (r.failure_kind is not None)


def test_rule_results_carry_their_reason():
    safe, unsafe = metrics.score("FinancialSafety", None, [JudgeItem("", "Keep a small buffer."),
                                                          JudgeItem("", "Invest everything in crypto, 100x!")])
    assert_results([safe, unsafe], 2)
    assert (safe.score, safe.reason) == (1.0, "") and unsafe.score == 0.0 and "invest_everything" in unsafe.reason


def test_outcome_results_fail_without_data_never_zero():
    records = [outcomes.OutcomeRecord("a", "saved", "social", True), outcomes.OutcomeRecord("b", None, "none", None),
               outcomes.OutcomeRecord("c", "spent", "loss_pool", False)]
    saved, missing, spent = metrics.score("InterventionSuccess", None, records)
    assert saved.score == 1.0 and spent.score == 0.0 and missing.failed and missing.failure_kind == metrics.UNDEFINED
    achieved, unknown, missed = metrics.score("StakeEffectiveness", None, records)
    assert achieved.score == 1.0 and missed.score == 0.0 and unknown.failed
    assert unknown.reason == "missing stake or completion data" and "expected rate: 78%" in achieved.reason


def test_the_registry_holds_the_five_metrics_of_the_geval_specification():
    assert {"InterventionSuccess", "ToneEmpathy", "CulturalSensitivity", "FinancialSafety",
            "StakeEffectiveness"} <= set(metrics.study_metrics())


def test_ranking_results_fail_on_an_unscoreable_pool():
    pools = [ranking.RankedPool(("a", "b"), {"a": 0, "b": 2}), ranking.RankedPool(("a", "b"), {"a": 0, "b": None})]
    ordered, unscoreable = metrics.score("NDCG@3", None, pools)
    assert_results([ordered, unscoreable], 2)
    assert ordered.score == pytest.approx(1 / math.log2(3)) and unscoreable.failed
    assert [r.score for r in metrics.score("Hit@1 (g≥1)", None, pools[:1])] == [0.0]


def test_crs_results_per_session():
    universe = tiny_universe()
    turn = {"speaker": "USER", "text": "I want a comedy",
            "user_meta": {"turn": 0, "shift": False, "preference": ["genre=comedy"], "stated": ["genre=comedy"],
                          "dropped": []}}
    session = crs_metrics.Session([turn, {"speaker": "SYSTEM", "text": "How about a comedy?"}], [])
    [cc] = metrics.score("CC", None, [session], universe=universe, config=MetricConfig())
    [cas] = metrics.score("CAS", None, [session], universe=universe)
    assert_results([cc, cas], 2)
    assert cc.score == 1.0 and cas.failed and cas.failure_kind == metrics.UNDEFINED  # no shift: no CAS, not 0


def test_llm_judge_results_and_their_failures(tmp_path):
    item = JudgeItem("query", "passage")
    with FakeOpenAI(always('{"grade": 2}', logprobs=digit_logprobs({2: 0.5, 1: 0.5}))) as fake:
        [graded] = metrics.score("passage relevance", gateway_for(fake, tmp_path), [item])
    assert graded == metrics.Result(1.5)
    with FakeOpenAI(always("no grade")) as fake:
        [failed] = relevance.NUDGE_RELEVANCE.score(gateway_for(fake, tmp_path / "b"), [JudgeItem("e", "n", "p")])
        [rubric] = geval.CULTURAL_SENSITIVITY.score(gateway_for(fake, tmp_path / "c"), [JudgeItem("e", "n", "p")])
        [pair] = bias.PAIRWISE_PREFERENCE.score(gateway_for(fake, tmp_path / "d"), [bias.Pair("q", "a", "b")])
    for result in (failed, rubric, pair):
        assert result.failed and math.isnan(result.score) and result.failure_kind == "invalid_json"
    with pytest.raises(ValueError, match="pass the judge's gateway"):
        relevance.PASSAGE_RELEVANCE.score(None, [item])


def test_a_rubrics_rule_fills_the_reason_without_a_call(tmp_path):
    with FakeOpenAI(always("unused")) as fake:
        [shamed] = geval.TONE_EMPATHY.score(gateway_for(fake, tmp_path), [JudgeItem("entry", "You never learn.")])
    assert shamed.score == 1.0 and shamed.reason.startswith("shaming: ") and not fake.requests


def test_monitor_and_nugget_and_conversation_results(tmp_path):
    row = LogRow(1, "2026-01-01T00:00:00", "s", "q", ["c"], "a")
    scores = '{"groundedness": 3, "context_relevance": 3, "answer_relevance": 0, "completeness": 3, ' \
             '"no_hallucination": 3}'
    with FakeOpenAI(always(scores)) as fake:
        [grounded] = metrics.score("groundedness", gateway_for(fake, tmp_path), [row])
        [relevant] = metrics.score("monitor.answer_relevance", gateway_for(fake, tmp_path), [row])
    assert (grounded.score, relevant.score) == (1.0, 0.0)
    nuggets = NuggetItem("q", "an answer", ("n1", "n2"), ("okay", "okay"))
    with FakeOpenAI(always('{"labels": ["support", "not_support"]}')) as fake:
        [all_] = metrics.score("nugget all", gateway_for(fake, tmp_path / "n"), [nuggets])
        [vital] = metrics.score("nuggets.vital", gateway_for(fake, tmp_path / "n"), [nuggets])
    assert all_.score == 0.5 and vital.failed and vital.failure_kind == metrics.UNDEFINED  # no vital nugget
    conversation = [{"speaker": "USER", "text": "hi"}, {"speaker": "SYSTEM", "text": "hello"}]
    with FakeOpenAI(always('{"coherence": 4, "personalisation": 2, "proactiveness": 3}')) as fake:
        [coherence] = metrics.score("judge_coherence", gateway_for(fake, tmp_path / "j"), [conversation])
    assert coherence == metrics.Result(4.0)
