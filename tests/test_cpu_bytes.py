"""The same bytes on any CPU: every table, figure and decision built from MiniLM cosines stays byte-identical when
the embeddings move in their last bits, as they do between CPUs (lib.embeddings.similarity says why); a tie the
rounding makes is broken by the seeded tie rule; and no decision of the committed run sits within rounding
distance of its cut (lib.tools.cut_margins).

The embeddings are perturbed at their source (``lib.embeddings.minilm``), so every caller sees the perturbation
however it imports ``embed``; the tables are built by the study's own functions on a small real sample of the
committed chapter 01 tables, with the real MiniLM.
"""
from __future__ import annotations

import io
import os

import numpy as np
import pandas as pd
import pytest

from lib import baselines, embeddings, nudges, nuggets, rankers, tables
from lib.crs.metrics import legacy_similarities
from lib.design import PERSONAS
from lib.tools import cut_margins

SAMPLE_POOLS = 4
# Far above the differences between SIMD paths of MiniLM's float64 computation (measured ≤ 1.2e-15 in a cosine,
# lib.embeddings.embed), far below the rounding step 1e-5: a perturbed value crosses a rounding boundary with a
# probability of about 1e-12 / 1e-5 = 1e-7 each. Noise of float32's size (1e-7) would flip about 1 rounded value in
# 100, which is why MiniLM runs in float64.
NOISE = 1e-12


class NoisyModel:
    """MiniLM whose unit vectors get seeded Gaussian noise of sd ``scale`` per component and are normalised again."""

    def __init__(self, model, scale: float, seed: int) -> None:
        self.model, self.scale, self.rng = model, scale, np.random.default_rng(seed)

    def encode(self, texts, **kwargs):
        vectors = np.asarray(self.model.encode(texts, **kwargs), dtype=np.float64)
        noisy = vectors + self.rng.normal(scale=self.scale, size=vectors.shape)
        return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def sample() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ``SAMPLE_POOLS`` entries with a pool and their candidates, without the columns MiniLM adds."""
    entries = tables.read_table("entries")
    entries = entries[entries.generation_ok].head(SAMPLE_POOLS).reset_index(drop=True)
    candidates = tables.read_table("candidates")
    candidates = candidates[candidates.entry_id.isin(entries.entry_id)].reset_index(drop=True)
    return entries, candidates.drop(columns=["near_duplicate_of", "pool_diversity", "near_duplicate"])


def parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def embedding_outputs(entries: pd.DataFrame, candidates: pd.DataFrame) -> dict[str, bytes]:
    """Every kind of MiniLM-derived output of the study on the sample, as bytes: chapter 01's persona cosines and
    rule, near-duplicates, pool diversity and pair cosines; chapter 02's rankings and zero-shot categories;
    chapter 05's embedding match; chapter 07's cosine baseline; chapter 06's legacy segmentation."""
    embed = embeddings.embed
    persona = nudges.persona_similarities(entries.text.tolist())
    marked, pairs = nudges.mark_near_duplicates(candidates, threshold=0.85)
    pooled = nudges.pool_candidates(marked, "drop")
    pools = rankers.build_pools(entries, pooled, embed)
    ranking = rankers.rank_all(pools, rankers.study_rankers(pools, embed, n_random_seeds=2, alpha=0.5), tie_seed=0)
    texts = candidates.nudge_text.tolist()
    legacy = legacy_similarities(texts, "embedding")
    return {
        "persona_similarities": parquet(persona.assign(persona_id=nudges.most_similar_persona(persona))),
        "candidates": parquet(marked),
        "pair_similarities": pairs.tobytes(),
        "rankings": parquet(ranking),
        "zero_shot": parquet(rankers.zero_shot_categories(pools, embed)),
        "embedding_match": nuggets.embedding_match(embed(texts[:10]), embed(entries.text.tolist())).tobytes(),
        "cosine_scores": baselines.cosine_scores(entries.text.tolist(), texts[:len(entries)]).tobytes(),
        "legacy_similarities": legacy.tobytes(),
        "legacy_boundaries": np.asarray(np.flatnonzero(legacy < 0.5)).tobytes(),
    }


# The outputs that carry cosine values themselves (the others are decisions on them).
VALUED = ("persona_similarities", "candidates", "pair_similarities", "rankings", "embedding_match", "cosine_scores",
          "legacy_similarities")


def perturbed_outputs(monkeypatch, sample, scale: float, seed: int) -> dict[str, bytes]:
    model = embeddings.minilm()
    with monkeypatch.context() as patch:
        patch.setattr(embeddings, "minilm", lambda: NoisyModel(model, scale, seed))
        return embedding_outputs(*sample)


def test_outputs_are_byte_identical_when_the_embeddings_move_in_their_last_bits(monkeypatch, sample):
    plain = embedding_outputs(*sample)
    perturbed = perturbed_outputs(monkeypatch, sample, NOISE, seed=0)
    assert [name for name in plain if perturbed[name] != plain[name]] == []


def test_the_perturbation_reaches_every_value_when_cosines_keep_their_last_bits(monkeypatch, sample):
    """The control: with 15 decimals instead of 5 the same perturbation changes every valued output, so the test
    above would see a cosine that escaped the rounding."""
    monkeypatch.setattr(embeddings, "DECIMALS", 15)
    plain = embedding_outputs(*sample)
    perturbed = perturbed_outputs(monkeypatch, sample, NOISE, seed=0)
    assert [name for name in VALUED if perturbed[name] == plain[name]] == []


class CountingModel:
    """A stand-in encoder: each text's vector is a one-hot of its length; every batch it is asked for is kept."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts, **kwargs):
        self.batches.append(list(texts))
        return np.eye(384)[[len(t) for t in texts]]


def test_a_text_is_encoded_once_per_model_and_a_new_model_starts_anew(monkeypatch):
    first = CountingModel()
    monkeypatch.setattr(embeddings, "minilm", lambda: first)
    one = embeddings.embed(["ab", "abc", "ab"])
    two = embeddings.embed(["abc", "abcd"])
    assert first.batches == [["ab", "abc"], ["abcd"]]  # new texts only, each once, in one batch
    assert one.tolist() == np.eye(384)[[2, 3, 2]].tolist() and two.tolist() == np.eye(384)[[3, 4]].tolist()
    second = CountingModel()
    monkeypatch.setattr(embeddings, "minilm", lambda: second)
    embeddings.embed(["ab"])
    assert second.batches == [["ab"]]  # another model's vectors are not reused


def test_a_study_run_keeps_each_vector_for_later_runs_and_no_other_run_writes_one(monkeypatch, tmp_path):
    store = tmp_path / "embeddings.sqlite"
    monkeypatch.delenv(embeddings.STORE_ENV, raising=False)
    first = CountingModel()
    monkeypatch.setattr(embeddings, "minilm", lambda: first)
    embeddings.embed(["x"])  # outside a study run: kept in memory only
    assert not store.exists()
    with embeddings.study_store(store):
        one = embeddings.embed(["ab", "abc"])
    assert embeddings.STORE_ENV not in os.environ  # the block's setting does not outlive it
    later = CountingModel()  # another process: nothing in memory
    monkeypatch.setattr(embeddings, "minilm", lambda: later)
    with embeddings.study_store(store):
        two = embeddings.embed(["abc", "ab", "abcd"])
    assert first.batches == [["x"], ["ab", "abc"]] and later.batches == [["abcd"]]  # only the new text is encoded
    assert two[:2].tobytes() == one[::-1].tobytes()  # the stored vectors, bit for bit
    monkeypatch.setenv(embeddings.STORE_ENV, str(tmp_path / "bench.sqlite"))
    with embeddings.study_store(store):  # a store the caller named (a bench's, a dry run's) is kept
        embeddings.embed(["abcde"])
    assert os.environ[embeddings.STORE_ENV] == str(tmp_path / "bench.sqlite")
    assert embeddings.VectorStore(tmp_path / "bench.sqlite").read(["abcde", "ab"]).keys() == {"abcde"}


def test_minilm_computes_in_float64():
    """Rounding hides the CPU's last bits only when they are far below 1e-5: float64's are (≤ 1.2e-15 between SIMD
    paths), float32's are not (up to 4e-7; lib.embeddings.embed)."""
    import torch

    assert {p.dtype for p in embeddings.minilm().parameters()} == {torch.float64}
    assert embeddings.embed(["a"]).dtype == np.float64


def test_a_tie_the_rounding_makes_is_broken_by_the_seeded_tie_order():
    # cos with the entry 0.500001 and 0.500003: both 0.5 after rounding, a tie; 0.9 is first.
    angles = np.arccos([0.500001, 0.9, 0.500003])
    vectors = np.column_stack([np.cos(angles), np.sin(angles)])
    candidates = pd.DataFrame({"candidate_id": ["c0", "c1", "c2"], "position": [0, 1, 2],
                               "nudge_text": ["a", "b", "c"], "confidence": [0.5] * 3})
    for entry_id in ("e1", "e2", "e3", "e4"):
        pool = rankers.Pool(entry_id, np.array([1.0, 0.0]), "support", PERSONAS[0], candidates, vectors)
        scores = rankers.EmbeddingSimilarityRanker().scores(pool)
        assert scores.tolist() == [0.5, 0.9, 0.5]
        ties = rankers.tie_order(entry_id, 3, 0, "embedding")
        expected = ["c1"] + (["c0", "c2"] if ties[0] < ties[2] else ["c2", "c0"])
        assert rankers.order(pool, scores, tie_seed=0, ranker="embedding").candidate_id.tolist() == expected


def test_margins_and_ties_by_hand():
    assert cut_margins.threshold_margin([0.84999, 0.85, np.nan, 0.9], 0.85).round(6).tolist() == [1e-05, 0.0, 0.05]
    assert cut_margins.argmax_margin(np.array([[0.1, 0.3, 0.2], [0.4, 0.4, 0.0]])).round(6).tolist() == [0.1, 0.0]
    assert cut_margins.order_margin([0.3, -np.inf, 0.1, 0.3]).round(6).tolist() == [0.2, 0.0]
    assert cut_margins.ties([0.3, 0.1, 0.3, 0.3, -np.inf, -np.inf]) == 3


def test_no_decision_of_the_committed_run_sits_within_rounding_distance_of_its_cut():
    """Every chapter's decisions on MiniLM cosines, read from the chapters' own code on the committed inputs. A
    failure means a decision may have been made by the rounding: say so in that chapter's narrative (with the
    number from lib.tools.cut_margins), then adjust this test."""
    report = cut_margins.report()
    print(report.to_string())
    orders = report.cut == "neighbour"
    assert report.loc[~orders, "below_risk"].to_dict() == dict.fromkeys(report.index[~orders], 0)
    assert report.ties_by_rounding.to_dict() == dict.fromkeys(report.index, 0)
