"""Lexical evidence features of RAGScope: base family φ and support features.

Pure per-example functions live in `base` and `support`; `lexical_features` applies them to
a frame (with an on-disk cache); `TfidfSupport` is the one fitted feature transformer;
`similarity_features` adds a frozen sentence encoder's best-evidence cosines (`similarity`).
"""

from runner.features.base import (
    answer_context_jaccard,
    answer_length,
    best_sentence_support,
    context_length,
    coverage,
    jaccard,
    longest_supported_run,
    numeric_count,
    numeric_coverage,
    question_answer_jaccard,
    rare_token_coverage,
    uncovered_fraction,
)
from runner.features.family import (
    BASE_FEATURE_NAMES,
    FEATURE_VERSION,
    FEATURES,
    LEXICAL_FEATURE_NAMES,
    SUPPORT_FEATURE_NAMES,
    VIEWS_KEPT,
    lexical_features,
    validate_texts,
    with_lexical_features,
)
from runner.features.kept import Kept
from runner.features.similarity import (
    DEFAULT_ENCODER,
    ENCODER_PACKAGES,
    SIMILARITY_FEATURE_NAMES,
    SIMILARITY_THRESHOLDS,
    SentenceEncoder,
    SentenceVectors,
    encoder_folder,
    sentence_vectors,
    similarity_features,
)
from runner.features.support import rouge_l_risk, token_f1_risk
from runner.features.tfidf import TFIDF_FEATURE_NAMES, TfidfSupport
from runner.features.views import ContextView, ExampleView, TextView

__all__ = [
    "BASE_FEATURE_NAMES",
    "DEFAULT_ENCODER",
    "ENCODER_PACKAGES",
    "FEATURES",
    "FEATURE_VERSION",
    "LEXICAL_FEATURE_NAMES",
    "SIMILARITY_FEATURE_NAMES",
    "SIMILARITY_THRESHOLDS",
    "SUPPORT_FEATURE_NAMES",
    "TFIDF_FEATURE_NAMES",
    "VIEWS_KEPT",
    "ContextView",
    "ExampleView",
    "Kept",
    "SentenceEncoder",
    "SentenceVectors",
    "TextView",
    "TfidfSupport",
    "answer_context_jaccard",
    "answer_length",
    "best_sentence_support",
    "context_length",
    "coverage",
    "encoder_folder",
    "jaccard",
    "lexical_features",
    "longest_supported_run",
    "numeric_count",
    "numeric_coverage",
    "question_answer_jaccard",
    "rare_token_coverage",
    "rouge_l_risk",
    "sentence_vectors",
    "similarity_features",
    "token_f1_risk",
    "uncovered_fraction",
    "validate_texts",
    "with_lexical_features",
]
