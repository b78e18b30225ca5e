"""Analysis shared by the chapters (03, 04, and later 05 and 07): measures over rankings, method comparisons,
sensitivity to the judge, judge validity, and the statistics under them. No LLM is called here.

* :mod:`~lib.analysis.ranking` — the measure registry (Hit@k, NDCG@k as numpy kernels over whole runs),
  per-entry values, random-order expectations, coverage.
* :mod:`~lib.analysis.comparisons` — method summaries with CIs by entry and by persona; one exact test per
  comparison on the informative entries, a declared primary comparison and a Holm-corrected secondary family,
  minimum detectable effects.
* :mod:`~lib.analysis.sensitivity` — label variants, re-judged labels, perturbed labels.
* :mod:`~lib.analysis.validity` — judge vs human grades with CIs and constant baselines, label choice by
  weighted κ, per-group correlation, consistency, position effect and repeatability.
* :mod:`~lib.analysis.stats` — Cohen's κ, Krippendorff's α, bootstrap CIs, exact sign and sign-flip tests,
  MDE.
* :mod:`~lib.analysis.text` — how numbers, counts and intervals are written in prose (formatting only).
* :mod:`~lib.analysis.calibration` — the dev/test split by group and ordinal thresholds fit on dev (chapter 07).
* :mod:`~lib.analysis.report_card` — chapter 07's report card: published anchors, one table of every judge
  against human labels, threats to validity from the numbers (its plan: ``CHAPTER07.md`` in this folder).

Vocabulary (one word per concept, in code, tables and prose):

entry
    a journal entry; its *pool* is the candidates generated for it.
candidate
    one generated nudge of a pool (``candidate_id``). Nothing else is called a candidate.
ranker
    a way of ordering a pool (``lib.rankers``; ``RANKER_ORDER`` is the order of every table and figure); *run*
    is its seed index; the *system* is the ranker under test, every other ranker a *baseline*.
method
    a way of grading relevance from judge calls or a baseline's score (chapter 07: ``calibration.Method``,
    argmax, rounded E[g], thresholds fit on dev); never a ranker. A correlation's *coefficient* (Spearman,
    Kendall) keeps the column name ``method`` that scipy gives it.
grade
    a relevance value on ``lib.design.GRADES`` (0, 1, 2) given by a judge or a human.
label
    the gain chapter 04 scores with (``labels.label``): one *reading* of the pointwise judge call (argmax grade,
    E[g], rounded E[g]; ``lib.chapters.ch03.READINGS``), named by chapter 03's ``label_rule`` before the labels.
informative entry
    an entry whose pool's best and worst orders score differently on a measure: only there can methods differ,
    so tests run on the informative entries (decided by the labels alone, never by a method's ranking).
measure
    a number computed from a ranking and labels (Hit@k, NDCG@k; ``ranking.MEASURES``, the ranking metrics of
    the registry ``lib.metrics``); its per-entry number
    is a *value*.
rubric
    a G-Eval criterion scored on integer points by an LLM (``lib.judges.geval.RUBRICS``); its number is a
    *score*. Outcome scores (``lib.judges.outcomes``) come from records of user actions.
metric
    a number that scores one system output or conversation without a ranking (chapter 06's CC, CR, TAS, CAS;
    the monitor's groundedness, relevance, completeness, no-hallucination); a ranking's number is a *measure*.
    Every measure, rubric and metric is declared in the one registry ``lib.metrics`` (construct, scale,
    citation) and called alike: ``score(gateway, items)`` → score, reason, failed.
model
    an LLM, named by its identity (``name@sha256:…`` for the embedded one) in every table's ``model``,
    ``judge_model`` and ``generator_model`` columns; never a ranker or a CRS.
system
    what produces the outputs under evaluation: the ranker under test in chapter 04, a summariser in SummEval,
    an answering system in ALCE, a CRS in chapter 06 (``crs_sessions.system``).
assignment
    a nugget's support by an answer (support, partial_support, not_support; chapter 05); never a *label*.
call label
    the gateway's name of one LLM call (``LLMCall.call_label``; progress bars, cache-miss messages); it is not
    part of the cache key.
dev / test split
    disjoint sets of whole groups (queries, documents) drawn from ids before anything is judged; methods and
    thresholds are chosen on *dev*, the chosen one is reported once on *test*.
anchor
    a published number shown beside the study's own (``report_card.ANCHORS``), with its source and whether it
    was checked in the paper itself.

Column names of tables and result frames are snake_case (``mean_diff``, ``ci_low``, ``p_holm_permutation``).
"""
