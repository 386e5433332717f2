"""A verifier's measured cost: ms/example end to end, and peak memory while scoring.

Why: Table VII's ms/example must mean the same for every row: the complete local inference
(evidence selection, tokenisation, forward passes, risk), timed by
`runner.evaluation.timing.measure_ms_per_example` (warm-up, then the median of timed
passes). Model loading is not timed (it happens once per process, before the warm-up).

Peak memory is the resident set's high-water mark (``VmHWM``) during the warm-up and timed
passes: Linux lets a process reset it (``/proc/self/clear_refs``), so the number is this
verifier's peak, weights included. Where that reset is unavailable the process-lifetime
peak (``getrusage``) is reported and ``peak_rss_scope`` says so. A quantised verifier keeps
its float32 weights beside the int8 copy (so `Verifier.with_settings` can build other paths), and
its peak includes both.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.evaluation import measure_ms_per_example
from runner.verifiers.encoding import TruncationStats

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kb(key: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset the resident-set high-water mark; False where the OS does not allow it."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_kb("VmHWM") is not None


def peak_rss_mb(since_reset: bool) -> tuple[float, str]:
    """(peak resident set in MiB, scope) with scope ``since_reset`` or ``process``."""
    if since_reset:
        kb = _status_kb("VmHWM")
        if kb is not None:
            return kb / 1024.0, "since_reset"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kb = peak / 1024.0 if sys.platform == "darwin" else float(peak)
    return kb / 1024.0, "process"


def timing_sample(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """`n` rows split as evenly as possible over tasks, drawn with a seeded generator.

    Parameters
    ----------
    frame : DataFrame
        Canonical frame (``task`` column).
    n : int
        Rows wanted (all rows when the frame is smaller).
    seed : int

    Returns
    -------
    DataFrame
        In the frame's row order, index reset. Same frame and seed -> same rows.
    """
    if n < 1:
        raise ValueError(f"timing sample size must be >= 1, got {n}")
    if n >= len(frame):
        return frame.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    tasks = list(dict.fromkeys(frame["task"]))
    per = {t: n // len(tasks) + (1 if i < n % len(tasks) else 0) for i, t in enumerate(tasks)}
    task_of = frame["task"].to_numpy()
    picks: list[int] = []
    for task in tasks:
        idx = np.flatnonzero(task_of == task)
        picks.extend(rng.choice(idx, size=min(per[task], len(idx)), replace=False).tolist())
    return frame.iloc[sorted(picks)].reset_index(drop=True)


def time_scoring(
    verifier: Any, frame: pd.DataFrame, repeats: int = 3, warmup: int = 1, with_logit: bool = False
) -> tuple[dict[str, Any], Any]:
    """Time `verifier.score(frame)` end to end; also return the last pass's output.

    Parameters
    ----------
    verifier : Verifier
    frame : DataFrame
        Canonical frame of the examples to time.
    repeats, warmup : int
        Timed and untimed passes over `frame`.
    with_logit : bool
        Time `Verifier.score_and_logit` instead (same forward pass, the risk's log-odds
        computed too) and return its (risk, logit) pair.

    Returns
    -------
    (dict, output)
        `Verifier.runtime_info` plus ``ms_per_example`` (median), the timing record
        (``timing``), ``peak_rss_mb``, ``peak_rss_scope`` and ``n_timed_examples``; and the
        risks (or the (risk, logit) pair) of the last timed pass.
    """
    verifier.load()
    last: dict[str, Any] = {}
    call = verifier.score_and_logit if with_logit else verifier.score

    def run() -> None:
        last["out"] = call(frame)

    reset = reset_peak_rss()
    timing = measure_ms_per_example(run, len(frame), repeats=repeats, warmup=warmup)
    peak, scope = peak_rss_mb(reset)
    info = verifier.runtime_info()
    info.update(
        {
            "ms_per_example": timing["median_ms_per_example"],
            "timing": timing,
            "peak_rss_mb": round(peak, 1),
            "peak_rss_scope": scope,
            "n_timed_examples": len(frame),
        }
    )
    return info, last["out"]


def measure_verifier(
    verifier: Any, frame: pd.DataFrame, repeats: int = 3, warmup: int = 1
) -> dict[str, Any]:
    """The runtime record of `time_scoring` (scores dropped)."""
    return time_scoring(verifier, frame, repeats, warmup)[0]


def score_in_chunks(
    verifier: Any, frame: pd.DataFrame, chunk: int, progress: bool = False
) -> tuple[np.ndarray, TruncationStats]:
    """Risk of every row of `frame`, scored `chunk` rows per call (a progress bar per chunk).

    Chunking changes neither the scores (each example is scored on its own input) nor the
    truncation counts, which are merged over the chunks (`TruncationStats.merged`).

    Returns
    -------
    (ndarray of float64, TruncationStats)
        Risks in the frame's row order, and the truncation of all rows.
    """
    from tqdm.auto import tqdm

    if chunk < 1:
        raise ValueError(f"score_in_chunks: chunk must be >= 1, got {chunk}")
    risks, stats = [], []
    for start in tqdm(
        range(0, len(frame), chunk), desc=f"scoring {verifier.kind}", disable=not progress
    ):
        risks.append(verifier.score(frame.iloc[start : start + chunk]))
        stats.append(verifier.last_truncation_)
    return np.concatenate(risks), TruncationStats.merged(stats)
