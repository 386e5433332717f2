"""Model-backed scorers (NLI, HHEM, LettuceDetect) with the gates' ``score(frame)`` interface.

Why a package of small modules: evidence selection, tokenisation with evidence-only
truncation, model loading (local, cached Hub, or random weights of the exact
architecture) and batched inference are shared by every verifier and tested once; each
verifier module only says what its input looks like and how logits become risk.
"""

from runner.verifiers.base import FRAME_COLUMNS, Verifier
from runner.verifiers.checkpoint_check import check_tokenizer_present, check_weights_present
from runner.verifiers.deberta_nli import DebertaNLIVerifier
from runner.verifiers.detector_config import (
    DetectorConf,
    TrainConf,
    backbone_folder,
    check_training_plan,
)
from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.detector_training import (
    check_training_folder,
    choose_threshold,
    label_segments,
    predict_token_probs,
    read_detector_card,
    resolve_device,
    train,
    write_detector_card,
)
from runner.verifiers.encoding import TruncationStats
from runner.verifiers.evidence import POLICIES, select_evidence, top_k_sentences
from runner.verifiers.fingerprint import folder_sha256
from runner.verifiers.hhem import HHEM_TEMPLATE, HHEMVerifier
from runner.verifiers.lettuce_detect import LettuceDetectVerifier, TokenScores
from runner.verifiers.loading import (
    ModelNotAvailableError,
    read_config_json,
    resolve_source,
    use_registry,
)
from runner.verifiers.promotion import (
    CANDIDATE_ALIAS,
    Promotion,
    alias_version,
    answer_length_ap,
    champion_on,
    choose_alias,
    existing_version,
    promote,
    rows_fingerprint,
    verifier_ap,
)
from runner.verifiers.recipes import RecipeJob, Trained, labelled_pairs, train_recipe
from runner.verifiers.runtime import measure_verifier, score_in_chunks, time_scoring, timing_sample
from runner.verifiers.sentence_pairs import (
    AGGREGATES,
    build_pairs,
    example_risks,
    subsample_negatives,
)
from runner.verifiers.sentence_training import (
    pair_metrics,
    pair_tensors,
    predict_pair_probs,
    train_sentences,
)
from runner.verifiers.token_labels import gold_spans, span_overlap_counts
from runner.verifiers.training_record import add_training_cells, detector_card
from runner.verifiers.training_rows import (
    by_task,
    check_training_data,
    grouped_split,
    plan_key,
    plan_settings,
    sample_rows,
)

__all__ = [
    "AGGREGATES",
    "CANDIDATE_ALIAS",
    "FRAME_COLUMNS",
    "HHEM_TEMPLATE",
    "POLICIES",
    "DebertaNLIVerifier",
    "DetectorConf",
    "HHEMVerifier",
    "InputRule",
    "LettuceDetectVerifier",
    "ModelNotAvailableError",
    "Promotion",
    "RecipeJob",
    "TokenScores",
    "TrainConf",
    "Trained",
    "TruncationStats",
    "Verifier",
    "add_training_cells",
    "alias_version",
    "answer_length_ap",
    "backbone_folder",
    "build_pairs",
    "by_task",
    "champion_on",
    "check_tokenizer_present",
    "check_training_data",
    "check_training_folder",
    "check_training_plan",
    "check_weights_present",
    "choose_alias",
    "choose_threshold",
    "detector_card",
    "example_risks",
    "existing_version",
    "folder_sha256",
    "gold_spans",
    "grouped_split",
    "label_segments",
    "labelled_pairs",
    "measure_verifier",
    "pair_metrics",
    "pair_tensors",
    "plan_key",
    "plan_settings",
    "predict_pair_probs",
    "predict_token_probs",
    "promote",
    "read_config_json",
    "read_detector_card",
    "resolve_device",
    "resolve_source",
    "rows_fingerprint",
    "sample_rows",
    "score_in_chunks",
    "select_evidence",
    "span_overlap_counts",
    "subsample_negatives",
    "time_scoring",
    "timing_sample",
    "top_k_sentences",
    "train",
    "train_recipe",
    "train_sentences",
    "use_registry",
    "verifier_ap",
    "write_detector_card",
]
