"""Model-backed scorers (NLI, HHEM, LettuceDetect) with the gates' ``score(frame)`` interface.

Why a package of small modules: evidence selection, tokenisation with evidence-only
truncation, model loading (local, cached Hub, or random weights of the exact
architecture) and batched inference are shared by every verifier and tested once; each
verifier module only says what its input looks like and how logits become risk. Training
a detector is `runner.training`, which builds on these inputs and writes the card
(`detector_card`) the verifiers read.
"""

from runner.verifiers.base import FRAME_COLUMNS, Verifier
from runner.verifiers.checkpoint_check import check_tokenizer_present, check_weights_present
from runner.verifiers.deberta_nli import DebertaNLIVerifier
from runner.verifiers.detector_card import read_detector_card, write_detector_card
from runner.verifiers.detector_inputs import InputRule, Segments, build_segments
from runner.verifiers.encoding import TruncationStats, pad
from runner.verifiers.evidence import POLICIES, select_evidence, sentence_spans, top_k_sentences
from runner.verifiers.fingerprint import folder_sha256
from runner.verifiers.hhem import HHEM_TEMPLATE, HHEMVerifier
from runner.verifiers.lettuce_detect import LettuceDetectVerifier, TokenScores
from runner.verifiers.loading import (
    ModelNotAvailableError,
    read_config_json,
    registered_folder,
    resolve_source,
    use_registry,
)
from runner.verifiers.runtime import measure_verifier, score_in_chunks, time_scoring, timing_sample
from runner.verifiers.sentence_pairs import (
    AGGREGATES,
    SentencePairs,
    build_pairs,
    example_risks,
    subsample_negatives,
)
from runner.verifiers.token_labels import gold_spans, span_overlap_counts, token_labels

__all__ = [
    "AGGREGATES",
    "FRAME_COLUMNS",
    "HHEM_TEMPLATE",
    "POLICIES",
    "DebertaNLIVerifier",
    "HHEMVerifier",
    "InputRule",
    "LettuceDetectVerifier",
    "ModelNotAvailableError",
    "Segments",
    "SentencePairs",
    "TokenScores",
    "TruncationStats",
    "Verifier",
    "build_pairs",
    "build_segments",
    "check_tokenizer_present",
    "check_weights_present",
    "example_risks",
    "folder_sha256",
    "gold_spans",
    "measure_verifier",
    "pad",
    "read_config_json",
    "read_detector_card",
    "registered_folder",
    "resolve_source",
    "score_in_chunks",
    "select_evidence",
    "sentence_spans",
    "span_overlap_counts",
    "subsample_negatives",
    "time_scoring",
    "timing_sample",
    "token_labels",
    "top_k_sentences",
    "use_registry",
    "write_detector_card",
]
