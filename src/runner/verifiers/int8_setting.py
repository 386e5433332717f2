"""The int8 activation-range setting: its environment variable, its choices, its check.

Why a module of its own: the verifier checks the setting when it is built (cheap, no
torch), and `runner.verifiers.quantization` reads it when it quantises; both import it
from here, so neither imports the other.
"""

from __future__ import annotations

import os

from runner.errors import ConfigError

INT8_RANGE_ENV = "RUNNER_INT8_RANGE"
"""Environment override of the activation range: ``auto`` (default), ``full`` or ``reduced``."""

INT8_RANGES = ("auto", "full", "reduced")


def int8_range_setting(setting: str | None = None) -> str:
    """`setting`, or the ``RUNNER_INT8_RANGE`` environment variable (default ``auto``), checked.

    Cheap (no torch work), so a verifier checks it when it is built, before any data load.
    """
    source = "int8 range"
    if setting is None:
        setting = os.environ.get(INT8_RANGE_ENV, "") or "auto"
        source = INT8_RANGE_ENV
    if setting not in INT8_RANGES:
        raise ConfigError(f"{source} {setting!r} not in {INT8_RANGES}")
    return setting
