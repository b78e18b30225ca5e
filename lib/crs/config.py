"""Every weight and threshold of the CRS metrics, in one frozen config (METHODOLOGY.md, "Thresholds"), declared
before any run. A notebook passes a changed copy (``dataclasses.replace``) for an ablation, never edits this file
to fit a result."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

# TAS_t = clip(α·CC_t + β·CR_t − γ·I_t, −1, 1). γ = α + β makes a turn that copies the user completely (I = 1)
# score at most 0 however well it matches the user's concepts: the echo system must not look adaptive.
TAS_WEIGHTS: Mapping[str, float] = MappingProxyType({"alpha": 0.5, "beta": 0.5, "gamma": 1.0})
# CAS = Σ_k w_k · component_k over the session's TAS, shift recovery rate and stability (1 − interference).
CAS_WEIGHTS: Mapping[str, float] = MappingProxyType({"tas": 0.5, "recovery": 0.25, "stability": 0.25})
# Legacy segmentation: a boundary where the similarity of consecutive user turns falls below this.
LEGACY_THRESHOLDS: Mapping[str, float] = MappingProxyType({"embedding": 0.5, "jaccard": 0.2})

LegacyMethod = Literal["embedding", "jaccard"]


@dataclass(frozen=True)
class MetricConfig:
    """``ngram_orders``: the n of the copy ratio I (unigrams left out: a reply shares "a", "the" with anything);
    ``recovery_threshold`` θ and ``window`` W: a shift is recovered when TAS_t ≥ θ at one of the W system turns
    from the shift on; ``legacy_method`` / ``legacy_threshold``: the legacy segmentation rule;
    ``boundary_tolerance``: how many turns apart a legacy boundary may be from a shift and still match it;
    ``top_k``: length of the missing / hallucinated concept lists."""

    tas_weights: Mapping[str, float] = field(default_factory=lambda: TAS_WEIGHTS)
    cas_weights: Mapping[str, float] = field(default_factory=lambda: CAS_WEIGHTS)
    ngram_orders: tuple[int, ...] = (2, 3, 4)
    recovery_threshold: float = 0.5
    window: int = 3
    legacy_method: LegacyMethod = "embedding"
    legacy_threshold: float | None = None  # None: LEGACY_THRESHOLDS[legacy_method]
    boundary_tolerance: int = 0
    top_k: int = 10

    def __post_init__(self) -> None:
        if set(self.tas_weights) != {"alpha", "beta", "gamma"}:
            raise ValueError(f"tas_weights needs alpha, beta, gamma; got {sorted(self.tas_weights)}")
        if set(self.cas_weights) - {"tas", "recovery", "stability"}:
            raise ValueError(f"cas_weights: unknown components {sorted(set(self.cas_weights) - set(CAS_WEIGHTS))}")
        if self.window < 1 or not self.ngram_orders or min(self.ngram_orders) < 1:
            raise ValueError("window and every n-gram order must be at least 1")

    @property
    def legacy_cut(self) -> float:
        return LEGACY_THRESHOLDS[self.legacy_method] if self.legacy_threshold is None else self.legacy_threshold
