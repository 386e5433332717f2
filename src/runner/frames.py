"""The canonical frames' columns and labels: one definition, one check, for every layer.

Why here, among the shared small modules: the loaders (`runner.data`) build frames with
these columns and the evaluation protocol (`runner.evaluation.timing`) strips a frame back
to them, and the import contracts keep `data` and `evaluation` independent of each other.
`runner.data` re-exports `REQUIRED_COLUMNS`. For the same reason `check_labels` is here:
metrics, learned gates, studies, routing and the claim systems all check labels with it,
so each mistake has one wording wherever it is caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

REQUIRED_COLUMNS: tuple[str, ...] = (
    "example_id",
    "group_id",
    "task",
    "source",
    "question",
    "context",
    "answer",
    "label",
)
"""Columns every canonical response-level frame has, in this order."""

BINARY: tuple[int, int] = (0, 1)
"""The response-level labels: 1 = unfaithful (hallucinated), 0 = faithful."""


def check_labels(
    labels: object,
    classes: Sequence[Any] = BINARY,
    *,
    kind: str = "0/1",
    name: str = "y",
    rows: int | None = None,
    allow_empty: bool = False,
    need_all: str | None = None,
    error: type[ValueError] = ValueError,
) -> np.ndarray:
    """Return `labels` as a 1-D array, every value one of `classes`, or raise saying why.

    Parameters
    ----------
    labels : array-like
        One label per example (list, numpy array, pandas Series).
    classes : sequence
        The allowed values: `BINARY` (numbers; booleans count as 0/1) or text labels such as
        the claim labels green / yellow / red (`runner.data.claim_labels.LABELS`).
    kind : str
        What the labels are called in messages ("0/1", "claim").
    name : str
        What holds them, in messages ("y", "data set ragtruth").
    rows : int, optional
        The number of labels expected, one per row of a frame.
    allow_empty : bool
        Whether no labels at all is fine.
    need_all : str, optional
        Who needs every class to occur (e.g. "a learned gate", "AUROC/AP"); None: no such
        requirement.
    error : ValueError subclass
        What to raise: `ValueError`, or `runner.errors.DataError` when the labels are a data
        set's (the command line then prints one ``error:`` line).

    Returns
    -------
    ndarray
        The labels unchanged in dtype for numeric classes (callers cast), as an object array
        for text classes.
    """
    text = all(isinstance(c, str) for c in classes)
    arr = np.asarray(list(labels), dtype=object) if text else np.asarray(labels)
    if rows is not None and (arr.ndim != 1 or arr.shape[0] != rows):
        raise error(f"{name} must hold one label per row: {arr.shape} for {rows} rows")
    if arr.ndim != 1:
        raise error(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise error(f"{name} is empty")
    if text:
        bad = np.array([value not in classes for value in arr], dtype=bool)
    elif arr.dtype == bool:
        bad = np.zeros(arr.shape, dtype=bool)
    elif not np.issubdtype(arr.dtype, np.number):
        raise error(f"{name} must hold {kind} labels, got dtype {arr.dtype}")
    else:
        bad = ~np.isin(arr, classes)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        meaning = " (1 = unfaithful)" if tuple(classes) == BINARY else f" ({', '.join(classes)})"
        raise error(
            f"{name} must hold {kind} labels{meaning}; position {first} holds {arr[first]!r}, "
            f"not a {kind} label ({int(bad.sum())} bad values)"
        )
    if need_all is not None:
        present = sorted(set(arr.tolist()))
        if len(present) < len(classes):
            both = "both" if len(classes) == 2 else "all"
            raise error(
                f"{name} holds only class {present}: {need_all} needs {both} classes"
                + (" (1 = unfaithful, 0 = faithful)" if tuple(classes) == BINARY else "")
            )
    return arr
