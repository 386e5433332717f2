"""Where things live: the data directory and the artifacts directory.

One place decides, so loaders, studies and scripts agree. `RUNNER_DATA_DIR` points at the
offline data sets (the Makefile and `.ci/run` set it to `../shared/data` when present).
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path | None:
    """The configured offline data directory, or None when `RUNNER_DATA_DIR` is unset."""
    value = os.environ.get("RUNNER_DATA_DIR")
    return Path(value).expanduser().resolve() if value else None


def artifacts_dir() -> Path:
    """Root for run outputs (`RUNNER_ARTIFACTS_DIR`, default `<project>/artifacts`)."""
    value = os.environ.get("RUNNER_ARTIFACTS_DIR")
    return Path(value).expanduser().resolve() if value else PROJECT_ROOT / "artifacts"
