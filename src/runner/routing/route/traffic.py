"""What a route run finds in its traffic: unseen sources, audit sample, realised rates, skips.

Why apart from the study: each rule here is a contract term a team must be able to read
and test on its own (which rows count as unseen, which accepted rows are audited).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from runner.errors import DataError

log = logging.getLogger(__name__)


def handle_unseen(
    unseen: dict[str, int], policy: str, training_sources: list[str], file: str | None
) -> None:
    """Report unseen sources loudly; ``error`` stops the run before any row is routed."""
    if not unseen:
        return
    message = (
        f"{sum(unseen.values())} rows come from source(s) the gate was not fitted on: "
        f"{unseen} (training sources: {training_sources}); a learned gate's ranking may not "
        "transfer until a target-labelled audit shows it does"
    )
    if policy == "error":
        raise DataError(message + " (routing.on_unseen_source=error)", file=file, field="source")
    suffix = " -> sent to review" if policy == "review" else ""
    log.warning("UNSEEN SOURCES: %s%s", message, suffix)


def audit_sample(decisions: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """A seeded random ⌈fraction · accepted⌉ of the accepted rows, as a boolean mask."""
    accepted = np.flatnonzero(decisions == "accept")
    mask = np.zeros(decisions.shape[0], dtype=bool)
    k = math.ceil(round(fraction * accepted.size, 9))
    if k:
        rng = np.random.default_rng(seed)
        mask[rng.choice(accepted, size=k, replace=False)] = True
    return mask


def realised(labels: np.ndarray, decisions: np.ndarray) -> dict[str, float | None]:
    """On labelled traffic: hallucinated share per band (review precision, accepted risk)."""
    out: dict[str, float | None] = {}
    for band, key in (
        ("review", "review precision"),
        ("accept", "accepted risk"),
        ("verify", "verify band hallucinated share"),
    ):
        sel = decisions == band
        out[key] = float(labels[sel].mean()) if sel.any() else None
    out["hallucinated share"] = float(labels.mean())
    return out


SKIPPED_COLUMNS = ("row", "id", "decision", "field", "reason", "file")


def skipped_rows(problems: list[dict]) -> pd.DataFrame:
    """One row per input row the loader skipped, ``decision=invalid``, with its first problem.

    Why: a skipped row must not vanish from the run's outputs; beside ``decisions.parquet``
    it says which input rows got no decision and why (``id`` is None when the row had none
    readable; ``row`` is the line, or the Parquet row index, the loader names).
    """
    first: dict[tuple[str, str], dict] = {}
    for problem in problems:
        first.setdefault((str(problem["file"]), str(problem["row"])), problem)
    return pd.DataFrame(
        {
            "row": [str(p["row"]) for p in first.values()],
            "id": pd.array([p.get("id") for p in first.values()], dtype="string"),
            "decision": "invalid",
            "field": [str(p["field"]) for p in first.values()],
            "reason": [str(p["reason"]) for p in first.values()],
            "file": [str(p["file"]) for p in first.values()],
        },
        columns=list(SKIPPED_COLUMNS),
    )


def row_counts(read: int | None, routed: int, skipped: int) -> dict[str, int]:
    """``read``, ``routed``, ``skipped``; read defaults to routed + skipped."""
    return {
        "read": int(read if read is not None else routed + skipped),
        "routed": int(routed),
        "skipped": int(skipped),
    }


def accounting(counts: dict[str, int]) -> str:
    """The one line every output says it with: ``31 read, 26 routed, 5 skipped``."""
    return f"{counts['read']} read, {counts['routed']} routed, {counts['skipped']} skipped"
