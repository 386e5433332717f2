"""Wall-clock cost per example, measured the same way for every gate and verifier.

Why: the accuracy–cost comparison (Table VII, Fig. 5) is only fair when every method is
timed by one rule: a warm-up call first (imports, caches, lazy model loading do not
count), then several timed runs over the same examples with `time.perf_counter`, reported
as the median (the headline number) plus the minimum and every run for `runtime.json`.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from runner.frames import REQUIRED_COLUMNS


def _count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def measure_ms_per_example(
    fn: Callable[[], Any], n_examples: int, repeats: int = 5, warmup: int = 1
) -> dict[str, Any]:
    """Time `fn()` (which processes `n_examples` examples) and report ms per example.

    Parameters
    ----------
    fn : callable
        Runs the complete local inference for the examples once (its result is ignored).
    n_examples : int
        How many examples one call of `fn` processes (≥ 1).
    repeats : int
        Timed runs (≥ 1).
    warmup : int
        Untimed runs before the timed ones (≥ 0).

    Returns
    -------
    dict
        `median_ms_per_example`, `min_ms_per_example`, `runs_ms_per_example` (list, in run
        order), `n_examples`, `repeats`, `warmup`, `timer` ("time.perf_counter").
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    n_examples = _count(n_examples, "n_examples", 1)
    repeats = _count(repeats, "repeats", 1)
    warmup = _count(warmup, "warmup", 0)
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000.0 / n_examples)
    ordered = sorted(runs)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "median_ms_per_example": median,
        "min_ms_per_example": ordered[0],
        "runs_ms_per_example": runs,
        "n_examples": n_examples,
        "repeats": repeats,
        "warmup": warmup,
        "timer": "time.perf_counter",
    }


def gate_runtime(
    gates: Mapping[str, Any], frame: pd.DataFrame, splitter: Any, timing_rows: int, repeats: int
) -> dict[str, Any]:
    """ms/example of complete inference for each gate, from raw text.

    Features are recomputed from the raw question/context/answer (no cache), so the
    figure is what a deployment pays per example. Fitted gates are fitted on the first
    training fold (not timed) and timed scoring that fold's held-out rows.
    """
    from sklearn.base import clone

    fold = next(iter(splitter.folds(frame)))
    raw_cols = [c for c in REQUIRED_COLUMNS if c in frame.columns]
    test_raw = frame.iloc[fold.test_idx][raw_cols].reset_index(drop=True)
    if timing_rows and len(test_raw) > timing_rows:
        test_raw = test_raw.iloc[:timing_rows]
    train = frame.iloc[fold.train_idx]
    out: dict[str, Any] = {}
    for name, gate in gates.items():
        fitted = gate
        if getattr(gate, "needs_fit", False):
            fitted = clone(gate).fit(train, train["label"].to_numpy())
        timing = measure_ms_per_example(
            lambda g=fitted: g.score(test_raw), len(test_raw), repeats=repeats, warmup=1
        )
        out[name] = {
            **timing,
            "rows": len(test_raw),
            "includes": "feature extraction from raw text + scoring",
        }
    return out
