"""The Hallucination Risk Index (seed 001): configuration, scoring, aggregation, feedback,
AHP weights, and its calibration against known outcomes.

The claim records the index reads are data (`runner.data.hri_records`); the index itself is
computed here, from a validated `runner.hri.config.HRIConfig`.
"""

from runner.hri.aggregation import AGGREGATIONS
from runner.hri.calibration_scopes import calibrate_collection
from runner.hri.config import HRIConfig, load_hri_config
from runner.hri.label_agreement import collection_agreement
from runner.hri.scoring import HRIResult, score_response

__all__ = [
    "AGGREGATIONS",
    "HRIConfig",
    "HRIResult",
    "calibrate_collection",
    "collection_agreement",
    "load_hri_config",
    "score_response",
]
