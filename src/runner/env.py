"""Offline-by-default process environment.

Why: on a machine without the Hub, `datasets`/`transformers` retry for ~20 s before they
fail. The runner sets the offline flags (and disables MLflow telemetry) before those
libraries are imported, unless the user opts in with `RUNNER_ALLOW_HUB=1`.
"""

from __future__ import annotations

import os

OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def apply_offline_defaults() -> None:
    """Set offline flags and telemetry opt-outs unless already set or the Hub is allowed."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    if os.environ.get("RUNNER_ALLOW_HUB") == "1":
        return
    for flag in OFFLINE_FLAGS:
        os.environ.setdefault(flag, "1")


def hub_offline() -> bool:
    """True when any offline flag forbids Hub access."""
    return any(
        os.environ.get(flag, "0") not in ("", "0", "false", "False") for flag in OFFLINE_FLAGS
    )
