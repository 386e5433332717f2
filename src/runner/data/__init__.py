"""Loaders that turn data sets into one canonical frame, and the checks that frame must pass.

Studies see only `LoadedData`; where the rows came from (a parquet, the original JSONL, a
CSV sample, the Hub) stays here.
"""

from runner.data.base import LoadedData
from runner.data.claim_labels import (
    CLAIM_CHECK,
    GREEN,
    LABELS,
    RED,
    SEVERITY,
    YELLOW,
    from_severity,
    is_flagged,
    severity,
)
from runner.data.halubench import load_halubench
from runner.data.hashing import fingerprint_files, sha256_file
from runner.data.hri_claims import responses_from_frame
from runner.data.hri_records import (
    Claim,
    FeedbackEvent,
    LabelAssignment,
    Response,
    check_structure,
    source_of,
)
from runner.data.labelled_rows import require_labels
from runner.data.mlflow_traces import labelled_traces, load_mlflow_traces, search_all
from runner.data.rag_file import PASSAGE_JOIN, duplicate_reason
from runner.data.rag_stream import RagStream, RowStream, as_stream
from runner.data.ragtruth import load_ragtruth
from runner.data.ragtruth_sentences import ragtruth_sentence_claims
from runner.data.response_frame import validate_response_frame
from runner.data.text_files import read_text
from runner.data.traces import (
    ROUTE_SOURCE,
    RUN_KEY,
    TraceMapping,
    TraceProblem,
    evaluated_row,
    route_answer,
    trace_row,
)
from runner.data.training_parts import evaluated_part, overlapping, trained_parts
from runner.data.wice import load_wice
from runner.data.wice_training import load_wice_claim_training
from runner.frames import REQUIRED_COLUMNS

__all__ = [
    "CLAIM_CHECK",
    "GREEN",
    "LABELS",
    "PASSAGE_JOIN",
    "RED",
    "REQUIRED_COLUMNS",
    "ROUTE_SOURCE",
    "RUN_KEY",
    "SEVERITY",
    "YELLOW",
    "Claim",
    "FeedbackEvent",
    "LabelAssignment",
    "LoadedData",
    "RagStream",
    "Response",
    "RowStream",
    "TraceMapping",
    "TraceProblem",
    "as_stream",
    "check_structure",
    "duplicate_reason",
    "evaluated_part",
    "evaluated_row",
    "fingerprint_files",
    "from_severity",
    "is_flagged",
    "labelled_traces",
    "load_halubench",
    "load_mlflow_traces",
    "load_ragtruth",
    "load_wice",
    "load_wice_claim_training",
    "overlapping",
    "ragtruth_sentence_claims",
    "read_text",
    "require_labels",
    "responses_from_frame",
    "route_answer",
    "search_all",
    "severity",
    "sha256_file",
    "source_of",
    "trace_row",
    "trained_parts",
    "validate_response_frame",
]
