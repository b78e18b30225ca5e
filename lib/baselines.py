"""Non-LLM baselines on the items the judges grade, so a reader sees what the LLM adds.

* Relevance: :func:`bm25_scores` (BM25 Okapi, Robertson et al. 1994, by ``rank_bm25`` with its defaults
  k1 = 1.5, b = 0.75, ε = 0.25) and :func:`cosine_scores` (MiniLM cosine of query and passage,
  :func:`lib.embeddings.embed`); mapped to grades by thresholds fit on the dev split
  (:func:`lib.analysis.calibration.fit_on_dev`).
* SummEval: :func:`cosine_scores` of summary and source (a BERTScore-like reference-free score, without
  BERTScore's token alignment) and :func:`rouge1` of summary and reference (``rouge-score``, Google Research's
  reimplementation of ROUGE-1.5.5; F-measure, Porter stemming).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lib.analysis.calibration import Method
from lib.embeddings import Embed, similarity

# The relevance baselines as methods of the dev comparison: thresholds on the score fit on dev, no LLM call.
RELEVANCE_BASELINES = (Method("BM25, thresholds", "bm25", fit=True, calls=0),
                       Method("MiniLM cosine, thresholds", "cosine", fit=True, calls=0))

TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """BM25's tokenisation: lower case, runs of word characters (``\\w+``, Unicode), nothing removed or stemmed."""
    return TOKEN.findall(text.lower())


def bm25_scores(frame: pd.DataFrame, query: str = "query", passage: str = "passage") -> np.ndarray:
    """BM25 score of each row's passage for the row's query. The corpus — the document frequencies and the mean
    length of BM25 — is the distinct passages of ``frame`` (so a score depends on the sample it is computed in;
    TREC DL19's file also carries the official ``bm25_score`` over all of MS MARCO). Scores are not comparable
    across queries of different length: a threshold fit over many queries is a crude rule, as baselines are."""
    from rank_bm25 import BM25Okapi

    passages = list(dict.fromkeys(frame[passage]))
    position = {text: k for k, text in enumerate(passages)}
    model = BM25Okapi([tokens(text) for text in passages])
    by_query = {q: model.get_scores(tokens(q)) for q in dict.fromkeys(frame[query])}
    return np.array([by_query[q][position[p]] for q, p in zip(frame[query], frame[passage], strict=True)], dtype=float)


def cosine_scores(first: Sequence[str], second: Sequence[str], embed: Embed | None = None) -> np.ndarray:
    """Row-wise cosine of ``first[i]`` and ``second[i]``: the dot product of their unit embeddings (each distinct
    text embedded once), rounded by :func:`lib.embeddings.similarity`. ``embed`` defaults to MiniLM
    (:func:`lib.embeddings.embed`); tests pass a fake."""
    if embed is None:
        from lib.embeddings import embed as minilm

        embed = minilm
    if len(first) != len(second):
        raise ValueError(f"{len(first)} texts against {len(second)}")
    distinct = list(dict.fromkeys([*first, *second]))
    vectors = dict(zip(distinct, np.asarray(embed(distinct), dtype=float), strict=True))
    return np.array([float(similarity(vectors[a], vectors[b])) for a, b in zip(first, second, strict=True)])


def rouge1(summaries: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """ROUGE-1 F-measure of each summary against its reference (rouge_score.RougeScorer, ``use_stemmer=True``;
    its tokeniser lower-cases and keeps runs of letters and digits)."""
    from rouge_score import rouge_scorer

    if len(summaries) != len(references):
        raise ValueError(f"{len(summaries)} summaries against {len(references)} references")
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    return np.array([scorer.score(reference, summary)["rouge1"].fmeasure
                     for summary, reference in zip(summaries, references, strict=True)])
