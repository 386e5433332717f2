"""Claim labels: the green / yellow / red traffic light and what "flagged" means.

Why one module: every loader maps its own vocabulary (WiCE's ``partially_supported``,
Factcheck-Bench's ``refute``, a user's ``partial``) onto the same three labels, and every
system and ensemble compares labels by the same severity order. A claim is *flagged* when a
system says yellow or red; the positives of the flag task are the yellow + red claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from runner.frames import check_labels

GREEN, YELLOW, RED = "green", "yellow", "red"
LABELS: tuple[str, ...] = (GREEN, YELLOW, RED)
"""The three claim labels, least to most severe."""

SEVERITY: dict[str, int] = {GREEN: 0, YELLOW: 1, RED: 2}

CLAIM_CHECK: dict[str, Any] = {
    "classes": LABELS,
    "kind": "claim",
    "name": "labels",
    "allow_empty": True,
}
"""How claim labels are checked: ``runner.frames.check_labels(labels, **CLAIM_CHECK)``."""

# Every spelling the shipped loaders and the user format accept, after lower-casing and
# stripping. Anything else is an error: an unknown label is never guessed.
SYNONYMS: dict[str, str] = {
    GREEN: GREEN,
    "supported": GREEN,
    "completely-support": GREEN,
    YELLOW: YELLOW,
    "partial": YELLOW,
    "partially_supported": YELLOW,
    "partially-supported": YELLOW,
    "partially-support": YELLOW,
    RED: RED,
    "unsupported": RED,
    "not_supported": RED,
    "not-supported": RED,
    "refute": RED,
    "contradicted": RED,
}


def to_label(raw: object, mapping: Mapping[str, str] | None = None) -> str:
    """Map a raw label onto green / yellow / red.

    Parameters
    ----------
    raw : object
        The label as found in the data (case and surrounding spaces are ignored).
    mapping : mapping, optional
        Raw label -> canonical label; defaults to `SYNONYMS`.

    Returns
    -------
    str
        ``"green"``, ``"yellow"`` or ``"red"``.

    Raises
    ------
    ValueError
        When ``raw`` is not a string or not a known label.
    """
    table = SYNONYMS if mapping is None else mapping
    if not isinstance(raw, str):
        raise ValueError(f"label must be a string, got {type(raw).__name__} {raw!r}")
    key = raw.strip().lower()
    if key not in table:
        raise ValueError(f"unknown label {raw!r} (known: {', '.join(sorted(table))})")
    label = table[key]
    if label not in SEVERITY:
        raise ValueError(f"label {raw!r} maps to {label!r}, not one of {', '.join(LABELS)}")
    return label


def severity(labels: Iterable[str]) -> np.ndarray:
    """Severity codes (green 0, yellow 1, red 2) as an int array."""
    return np.array([SEVERITY[v] for v in check_labels(labels, **CLAIM_CHECK)], dtype=np.int64)


def from_severity(codes: Iterable[int]) -> np.ndarray:
    """Inverse of `severity`: int codes back to label strings."""
    return np.array([LABELS[int(c)] for c in codes], dtype=object)


def is_flagged(labels: Iterable[str]) -> np.ndarray:
    """True where a label is yellow or red (the flag task's positive decision)."""
    return severity(labels) > 0
