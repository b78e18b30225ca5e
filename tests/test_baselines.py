"""Non-LLM baselines: BM25 by hand, cosine with an injected embedding, ROUGE-1 by hand."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lib import baselines


def test_tokens_lower_case_word_runs():
    assert baselines.tokens("Flea's life-cycle: 20 DAYS") == ["flea", "s", "life", "cycle", "20", "days"]


def test_bm25_by_hand():
    frame = pd.DataFrame({"query": ["banana", "banana", "banana", "Apple"],
                          "passage": ["apple banana", "apple", "cherry", "apple banana"]})
    scores = baselines.bm25_scores(frame)
    # Corpus: the 3 distinct passages, mean length 4/3. idf(banana) = ln((3 − 1 + 0.5)/(1 + 0.5)).
    idf = math.log(2.5 / 1.5)
    k1, b = 1.5, 0.75
    expected = idf * (1 * (k1 + 1)) / (1 + k1 * (1 - b + b * 2 / (4 / 3)))
    assert scores[:3] == pytest.approx([expected, 0.0, 0.0])
    # "apple" is in 2 of 3 passages: its idf ln(1.5/2.5) < 0 is replaced by ε·mean idf (rank_bm25's floor).
    assert scores[3] > 0


def test_cosine_uses_each_texts_unit_vector_once():
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [math.sqrt(0.5), math.sqrt(0.5)]}
    seen = []

    def fake_embed(texts):
        seen.append(list(texts))
        return np.array([vectors[t] for t in texts])

    # Cosines come rounded to 5 decimals (lib.embeddings.similarity).
    assert baselines.cosine_scores(["a", "a", "c"], ["b", "a", "a"], embed=fake_embed).tolist() == \
        [0.0, 1.0, 0.70711]
    assert seen == [["a", "c", "b"]]
    with pytest.raises(ValueError, match="2 texts against 1"):
        baselines.cosine_scores(["a", "b"], ["a"], embed=fake_embed)


def test_rouge1_f_measure_by_hand():
    # 2 of 3 unigrams shared each way: P = R = F = 2/3; stemming maps "cats" to "cat".
    assert baselines.rouge1(["the cat sat", "cats"], ["the cat ran", "cat"]) == pytest.approx([2 / 3, 1.0])
    with pytest.raises(ValueError, match="1 summaries against 2"):
        baselines.rouge1(["x"], ["y", "z"])


def test_summeval_rows_carry_the_reference_for_rouge():
    from lib.data import load_summeval

    table = load_summeval()
    assert table.reference.str.strip().ne("").all()
    assert table.groupby("doc_id").reference.nunique().eq(1).all()  # one reference per document
