"""Shared test setup: offline flags, a per-test artifacts dir, and the real data path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MPLBACKEND", "Agg")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def real_data_dir() -> Path:
    """The real data sets: `RUNNER_DATA_DIR`, else `../shared/data`; fail loudly if absent."""
    value = os.environ.get("RUNNER_DATA_DIR")
    path = Path(value) if value else SHARED_DATA
    if not (path / "ragtruth" / "test.parquet").exists():
        pytest.fail(f"real data not found at {path}: set RUNNER_DATA_DIR (see README, Data)")
    return path


@pytest.fixture
def data_dir() -> Path:
    """Path of the real offline data sets."""
    return real_data_dir()
