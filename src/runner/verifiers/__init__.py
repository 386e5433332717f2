"""Model-backed scorers (NLI, HHEM, LettuceDetect) with the gates' ``score(frame)`` interface.

Why a package of small modules: evidence selection, tokenisation with evidence-only
truncation, model loading (local, cached Hub, or random weights of the exact
architecture) and batched inference are shared by every verifier and tested once; each
verifier module only says what its input looks like and how logits become risk.
"""

from runner.verifiers.base import FRAME_COLUMNS, Verifier
from runner.verifiers.deberta_nli import DebertaNLIVerifier
from runner.verifiers.encoding import TruncationStats
from runner.verifiers.evidence import POLICIES, select_evidence, top_k_sentences
from runner.verifiers.hhem import HHEM_TEMPLATE, HHEMVerifier
from runner.verifiers.lettuce_detect import LettuceDetectVerifier, TokenScores
from runner.verifiers.loading import ModelNotAvailableError
from runner.verifiers.runtime import measure_verifier

__all__ = [
    "FRAME_COLUMNS",
    "HHEM_TEMPLATE",
    "POLICIES",
    "DebertaNLIVerifier",
    "HHEMVerifier",
    "LettuceDetectVerifier",
    "ModelNotAvailableError",
    "TokenScores",
    "TruncationStats",
    "Verifier",
    "measure_verifier",
    "select_evidence",
    "top_k_sentences",
]
