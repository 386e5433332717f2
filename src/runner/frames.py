"""The canonical response-level frame's columns: one definition for every layer.

Why here, among the shared small modules: the loaders (`runner.data`) build frames with
these columns and the evaluation protocol (`runner.evaluation.timing`) strips a frame back
to them, and the import contracts keep `data` and `evaluation` independent of each other.
`runner.data` re-exports it.
"""

from __future__ import annotations

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
