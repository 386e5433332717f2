"""What every gate shares: lexical columns taken from the frame or computed, risk checks.

A study may compute `runner.features.lexical_features` once per data set and join the
columns onto the frame; gates then read them instead of recomputing per fold. A frame
without them still works: the gate computes the missing ones itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.features import LEXICAL_FEATURE_NAMES, lexical_features


def refuse_before_data(check: Callable[[], object]) -> None:
    """Run a gate's own parameter check at the pre-flight check, before any data is read.

    A gate is a scikit-learn estimator, so its constructor only stores its parameters and
    `fit` / `score` check them; each gate's ``check_settings`` (the hook the derived config
    schema calls, `runner.settings.CHECK`) runs that same check on the configured values,
    and a refusal becomes a `ConfigError`, reported as one line naming ``gates.<name>``.
    """
    try:
        check()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def check_lexical_names(names: Sequence[str]) -> list[str]:
    """Validate lexical feature names.

    Parameters
    ----------
    names : sequence of str
        Requested feature names.

    Returns
    -------
    list of str
        The names, as a plain list.

    Raises
    ------
    ValueError
        On a name that is not a lexical feature, or a repeat.
    """
    if isinstance(names, str):
        raise ValueError(f"features must be a list of names, got the string {names!r}")
    names = [str(n) for n in names]
    unknown = [n for n in names if n not in LEXICAL_FEATURE_NAMES]
    if unknown:
        raise ValueError(
            f"unknown lexical feature(s) {unknown}; known: {list(LEXICAL_FEATURE_NAMES)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"feature names repeat: {names}")
    return names


def with_lexical(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """`frame` with the lexical feature columns `names` present and checked.

    Parameters
    ----------
    frame : DataFrame
        Response-level frame (``question``, ``context``, ``answer``), possibly already
        holding lexical feature columns.
    names : sequence of str
        Lexical features needed.

    Returns
    -------
    DataFrame
        `frame` itself when every column is present, else a copy with the missing columns
        computed by `lexical_features`.

    Raises
    ------
    ValueError
        When a present feature column is not numeric or holds a non-finite value (row named).
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [n for n in names if n not in frame.columns]
    present = [n for n in names if n in frame.columns]
    for name in present:
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            label = frame.index[np.flatnonzero(bad)[0]]
            raise ValueError(
                f"row {label!r}, field '{name}': lexical feature must be a finite number, "
                f"got {frame.at[label, name]!r}"
            )
    if not missing:
        return frame
    computed = lexical_features(frame, features=missing)
    # Assign by position, not by index label: a frame's index may repeat.
    return frame.assign(**{name: computed[name].to_numpy() for name in missing})


def as_risk(values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
    """Check a gate's output: float64, one finite value per row of `frame`."""
    risk = np.asarray(values, dtype=np.float64).reshape(-1)
    if risk.shape[0] != len(frame):
        raise RuntimeError(f"gate returned {risk.shape[0]} scores for {len(frame)} rows")
    bad = ~np.isfinite(risk)
    if bad.any():
        raise RuntimeError(f"row {frame.index[np.flatnonzero(bad)[0]]!r}: non-finite risk")
    return risk
