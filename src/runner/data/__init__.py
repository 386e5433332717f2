"""Loaders that turn data sets into one canonical frame, and the checks that frame must pass.

Studies see only `LoadedData`; where the rows came from (a parquet, the original JSONL, a
CSV sample, the Hub) stays here.
"""

from runner.data.base import LoadedData
from runner.data.halubench import load_halubench
from runner.data.hashing import fingerprint_files
from runner.data.ragtruth import load_ragtruth
from runner.data.response_frame import validate_response_frame
from runner.frames import REQUIRED_COLUMNS

__all__ = [
    "REQUIRED_COLUMNS",
    "LoadedData",
    "fingerprint_files",
    "load_halubench",
    "load_ragtruth",
    "validate_response_frame",
]
