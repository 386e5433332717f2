"""Gold character spans -> per-token labels, and spans back from token flags.

Why here: LettuceDetect's training target and its span-level measure both rest on one
convention, and a detector trained with one convention and scored with another looks
worse (or better) than it is. The convention (lettucedetect's ``RagTruthDataset``): an
answer token is hallucinated (1) when its character range ``[start, end)`` overlaps a gold
span ``[start, end)`` by at least one character; span-level precision and recall count
overlapping characters between predicted and gold spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.errors import DataError

Span = tuple[int, int]


def gold_spans(raw: Sequence[Any], answer: str, example_id: str = "?") -> list[Span]:
    """Character spans ``(start, end)`` of one answer's annotations.

    Parameters
    ----------
    raw : sequence
        RAGTruth's span records (mappings with ``start`` and ``end``) or ``(start, end)``
        pairs.
    answer : str
        The answer the offsets index (Python string positions).
    example_id : str
        Named in errors.

    Raises
    ------
    DataError
        A span without integer bounds, or outside the answer.
    """
    spans = []
    for item in raw:
        start, end = (item.get("start"), item.get("end")) if isinstance(item, dict) else item
        if not isinstance(start, int | np.integer) or not isinstance(end, int | np.integer):
            raise DataError(
                f"span {item!r} has no integer start/end", row=example_id, field="spans"
            )
        if not 0 <= start <= end <= len(answer):
            raise DataError(
                f"span [{start}, {end}) lies outside the answer ({len(answer)} characters)",
                row=example_id,
                field="spans",
            )
        if end > start:
            spans.append((int(start), int(end)))
    return sorted(spans)


def token_labels(offsets: Sequence[Span], spans: Sequence[Span]) -> np.ndarray:
    """1 for each token whose ``[start, end)`` overlaps a span by a character, else 0."""
    labels = np.zeros(len(offsets), dtype=np.int64)
    for k, (s, e) in enumerate(offsets):
        labels[k] = any(s < b and a < e for a, b in spans)
    return labels


def _covered(spans: Sequence[Span]) -> set[int]:
    return {c for a, b in spans for c in range(a, b)}


def span_overlap_counts(predicted: Sequence[Span], gold: Sequence[Span]) -> tuple[int, int, int]:
    """(overlapping characters, predicted characters, gold characters) of one answer."""
    p, g = _covered(predicted), _covered(gold)
    return len(p & g), len(p), len(g)
