"""Model-backed scorers (NLI, HHEM, LettuceDetect) with the gates' ``score(frame)`` interface.

Why a package of small modules: evidence selection, tokenisation with evidence-only
truncation, model loading (local, cached Hub, or random weights of the exact
architecture) and batched inference are shared by every verifier and tested once; each
verifier module only says what its input looks like and how logits become risk.
"""

from typing import Any

from runner.lazy_exports import on_first_use
from runner.verifiers.base import FRAME_COLUMNS, Verifier
from runner.verifiers.build import build_verifier
from runner.verifiers.deberta_nli import DebertaNLIVerifier
from runner.verifiers.detector_config import DetectorConf, TrainConf, backbone_folder
from runner.verifiers.detector_training import (
    choose_threshold,
    label_segments,
    predict_token_probs,
    read_detector_card,
    train,
    write_detector_card,
)
from runner.verifiers.encoding import TruncationStats
from runner.verifiers.evidence import POLICIES, select_evidence, top_k_sentences
from runner.verifiers.fingerprint import folder_sha256
from runner.verifiers.hhem import HHEM_TEMPLATE, HHEMVerifier
from runner.verifiers.lettuce_detect import LettuceDetectVerifier, TokenScores
from runner.verifiers.loading import ModelNotAvailableError, resolve_source, use_registry
from runner.verifiers.runtime import measure_verifier, score_in_chunks, time_scoring, timing_sample
from runner.verifiers.sentence_pairs import AGGREGATES, build_pairs, example_risks
from runner.verifiers.sentence_training import pair_metrics, predict_pair_probs, train_sentences
from runner.verifiers.token_labels import gold_spans, span_overlap_counts

_ON_FIRST_USE = {
    name: "runner.verifiers.detector_model"
    for name in ("ARTIFACT", "INPUT_FIELDS", "DetectorModel", "signature")
}
"""The detector's MLflow pyfunc: importing it imports MLflow (`runner.lazy_exports`)."""


def __getattr__(name: str) -> Any:
    return on_first_use(__name__, _ON_FIRST_USE, name)


__all__ = [
    "AGGREGATES",
    "ARTIFACT",
    "FRAME_COLUMNS",
    "HHEM_TEMPLATE",
    "INPUT_FIELDS",
    "POLICIES",
    "DebertaNLIVerifier",
    "DetectorConf",
    "DetectorModel",
    "HHEMVerifier",
    "LettuceDetectVerifier",
    "ModelNotAvailableError",
    "TokenScores",
    "TrainConf",
    "TruncationStats",
    "Verifier",
    "backbone_folder",
    "build_pairs",
    "build_verifier",
    "choose_threshold",
    "example_risks",
    "folder_sha256",
    "gold_spans",
    "label_segments",
    "measure_verifier",
    "pair_metrics",
    "predict_pair_probs",
    "predict_token_probs",
    "read_detector_card",
    "resolve_source",
    "score_in_chunks",
    "select_evidence",
    "signature",
    "span_overlap_counts",
    "time_scoring",
    "timing_sample",
    "top_k_sentences",
    "train",
    "train_sentences",
    "use_registry",
    "write_detector_card",
]
