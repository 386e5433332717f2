"""Evidence gates: zero-shot lexical risks and learned logistic gates (scikit-learn estimators).

Contract of every gate: ``fit(frame, y) -> self``; ``score(frame) -> ndarray`` of float64
risks, one per row, larger = more likely unfaithful; ``needs_fit`` says whether `fit`
learns anything (and so must be called on a training fold only). Gates never know about
folds; `sklearn.base.clone` gives an unfitted copy.
"""

from runner.gates.claim_gate import ClaimGate
from runner.gates.feature_sets import (
    BASE_FEATURES,
    COVERAGE_FEATURES,
    ENHANCED_FEATURES,
    ZERO_SHOT_FEATURES,
)
from runner.gates.logit import LogitGate
from runner.gates.tfidf import TfidfGate, TfidfKind
from runner.gates.zero_shot import FeatureGate

__all__ = [
    "BASE_FEATURES",
    "COVERAGE_FEATURES",
    "ENHANCED_FEATURES",
    "ZERO_SHOT_FEATURES",
    "ClaimGate",
    "FeatureGate",
    "LogitGate",
    "TfidfGate",
    "TfidfKind",
]
