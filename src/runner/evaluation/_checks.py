"""Input checks shared by the metric and operating-point modules.

Why: every metric takes the same (labels, scores, resample weights) triple; checking it in
one place means one wording for each mistake and no metric that quietly accepts NaN scores,
labels such as 2 (`runner.frames.check_labels`, shared with every other layer), or negative
weights.
"""

from __future__ import annotations

import numpy as np

from runner.errors import ConfigError
from runner.frames import check_labels


def check_scores(s: object, n: int, *, name: str = "s") -> np.ndarray:
    """Return `s` as a 1-D finite float array of length `n`, or raise ValueError."""
    arr = np.asarray(s, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with {n} entries (one per label), got {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be finite; position {first} holds {arr[first]!r} "
            f"({int(bad.sum())} non-finite values)"
        )
    return arr


def check_weights(weights: object, n: int) -> np.ndarray:
    """Return resample weights as a (B, n) float array of finite, non-negative values."""
    arr = np.asarray(weights, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(
            f"weights must be a (B, {n}) matrix of per-example multiplicities, got {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError("weights has no resamples (B = 0)")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError("weights must be finite and non-negative")
    return arr


def check_fractions(fractions: object, *, name: str) -> np.ndarray:
    """Return a 1-D array of fractions in (0, 1], or raise ValueError naming `name`."""
    arr = np.atleast_1d(np.asarray(fractions, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a 1-D list of numbers, got {fractions!r}")
    bad = ~((arr > 0) & (arr <= 1))
    if bad.any():
        raise ValueError(f"{name} must lie in (0, 1]; got {arr[bad].tolist()}")
    return arr


def ceil_count(fraction: float | np.ndarray, total: float | np.ndarray) -> np.ndarray:
    """⌈fraction · total⌉, computed after rounding the product to 9 decimals.

    The rounding absorbs binary floating-point error, so 0.07 × 100 gives 7 and not 8.
    """
    return np.ceil(np.round(np.multiply(fraction, total), 9))


def tie_blocks(sorted_scores: np.ndarray) -> np.ndarray:
    """Start positions of the runs of equal values in an already sorted score array."""
    change = np.empty(sorted_scores.shape[0], dtype=bool)
    change[0] = True
    np.not_equal(sorted_scores[1:], sorted_scores[:-1], out=change[1:])
    return np.flatnonzero(change)


def block_masses(
    y: np.ndarray, s: np.ndarray, weights: np.ndarray, *, descending: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Positive and negative weight of every tied-score block, per resample.

    Sorts `s` once (ascending or descending) and returns two (B, K) arrays for the K
    distinct score values in that order.
    """
    order = np.argsort(-s if descending else s, kind="stable")
    starts = tie_blocks(s[order])
    w = weights[:, order]
    y_sorted = y[order]
    pos = np.add.reduceat(w * y_sorted, starts, axis=1)
    neg = np.add.reduceat(w * (1.0 - y_sorted), starts, axis=1)
    return pos, neg


def checked_block_masses(
    y: object, s: object, weights: object, *, descending: bool
) -> tuple[np.ndarray, np.ndarray]:
    """`block_masses` of a (labels, scores, resample weights) triple checked first.

    Every batched metric and operating point starts here, so each one rejects the same
    mistakes with the same words.
    """
    y_arr = check_labels(y).astype(np.float64)
    s_arr = check_scores(s, y_arr.shape[0])
    w = check_weights(weights, y_arr.shape[0])
    return block_masses(y_arr, s_arr, w, descending=descending)


def describe_rows(rows: np.ndarray, limit: int = 5) -> str:
    """'3 (first: 0, 4, 9)' style summary of flagged row positions."""
    rows = np.asarray(rows)
    head = ", ".join(str(int(r)) for r in rows[:limit])
    more = ", ..." if rows.size > limit else ""
    return f"{rows.size} (first: {head}{more})"


def check_bootstrap_settings(n_resamples: object, level: object, *, key: str = "bootstrap") -> None:
    """Raise `ConfigError` naming ``<key>.n_resamples`` / ``<key>.level`` when unusable.

    Needs no data, so the config check runs it before anything is loaded.
    """
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 1
    ):
        raise ConfigError(f"{key}.n_resamples must be a positive integer, got {n_resamples!r}")
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.0 < level < 1.0:
        raise ConfigError(f"{key}.level must lie in (0, 1), got {level!r}")
