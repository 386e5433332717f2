"""Ways to turn dimension and claim scores into one response-level risk.

Why: seed 001 adopts a weighted sum for auditability but warns that it "may dilute a single
severe contradiction when many low-risk claims are present", adds safety floors, and
asks future work to compare max-based and multiplicative aggregation. All variants are
here, side by side, so the calibration study can rank responses with each:

- ``additive``        HRI_add = min(1, Σ_k w_k s_k)                          (seed eq. 1)
- ``hri_star``        HRI* = max(HRI_add, max_i φ(c_i))                      (safety floors)
- ``multiplicative``  1 − Π_k (1 − w_k s_k)    ("noisy-OR" of the weighted dimension terms)
- ``max_dimension``   max_k s_k                (the worst dimension, unweighted)
- ``max_claim``       max_i max_k m_ik         (the worst claim's label contribution)

The seed leaves "max-based" open; both readings are provided. ``max_claim`` is the one
that cannot be diluted by other claims (it ignores criticality and weights);
``max_dimension`` keeps the criticality-weighted averaging inside each dimension.
For any scores, multiplicative ≤ additive, and all variants lie in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

AGGREGATIONS: tuple[str, ...] = (
    "additive",
    "hri_star",
    "multiplicative",
    "max_dimension",
    "max_claim",
)
"""Names of every aggregation variant, in report order."""


def additive(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """HRI_add = min(1, Σ_k w_k s_k) over the weighted dimensions."""
    return min(1.0, math.fsum(weights[k] * scores[k] for k in weights))


def with_floors(additive_score: float, floors: Iterable[float]) -> float:
    """HRI* = max(HRI_add, max_i φ(c_i)); claims without a floor contribute nothing."""
    return max([additive_score, *floors])


def multiplicative(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """1 − Π_k (1 − w_k s_k): each weighted dimension term is an independent chance of harm."""
    product = 1.0
    for k in weights:
        product *= 1.0 - weights[k] * scores[k]
    return 1.0 - product


def max_dimension(scores: Mapping[str, float]) -> float:
    """max_k s_k: the worst dimension score (0 for an empty mapping)."""
    return max(scores.values(), default=0.0)


def max_claim(contributions: Iterable[Mapping[str, float]]) -> float:
    """max_i max_k m_ik: the worst single claim-dimension contribution (0 if none)."""
    return max((max(m.values(), default=0.0) for m in contributions), default=0.0)
