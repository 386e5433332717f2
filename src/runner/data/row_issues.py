"""Row problems: the field checks every frame shares, and how a bad row is reported.

Bad rows raise a `DataError` at the first problem, or, with ``skip_invalid=True``, are
dropped, counted, listed in ``info["skipped"]`` and logged (`IssueLog`). Nothing is
dropped silently.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.errors import DataError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowIssue:
    """One problem in one row: where it is and what is wrong."""

    file: str
    row: int | str
    field: str
    reason: str
    ident: str | None = None
    """The row's id as written, when known (named in the error, see `DataError`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form for ``info["skipped"]``."""
        return {"file": self.file, "row": self.row, "field": self.field, "reason": self.reason}

    def to_error(self) -> DataError:
        """The error raised for this problem when rows are not skipped."""
        return DataError(
            self.reason, file=self.file, row=self.row, field=self.field, ident=self.ident
        )


class IssueLog:
    """Collects row problems: raises at the first, or records and logs each when skipping.

    Parameters
    ----------
    skip_invalid : bool
        False: `add` raises the problem as a `DataError`. True: `add` records it.
    """

    def __init__(self, skip_invalid: bool = False) -> None:
        self.skip_invalid = skip_invalid
        self.issues: list[RowIssue] = []

    def add(
        self, file: str, row: int | str, field: str, reason: str, ident: str | None = None
    ) -> None:
        """Report one problem (raises unless skipping); `ident` is the row's id, if known."""
        issue = RowIssue(str(file), plain_row(row), field, reason, ident)
        if not self.skip_invalid:
            raise issue.to_error()
        named = f" (id {ident!r})" if ident is not None else ""
        logger.warning("skipping %s row %s%s, field '%s': %s", file, row, named, field, reason)
        self.issues.append(issue)

    def skipped(self) -> list[dict[str, Any]]:
        """Every recorded problem, in the order found."""
        return [i.to_dict() for i in self.issues]

    def skipped_rows(self) -> int:
        """Number of distinct (file, row) pairs skipped."""
        return len({(i.file, i.row) for i in self.issues})


def is_missing(value: Any) -> bool:
    """True for None and float NaN (what pandas puts in an empty cell)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def text_problem(value: Any, *, allow_empty: bool) -> str | None:
    """Why `value` is not a usable text field (missing, not a string, or empty), else None."""
    if is_missing(value):
        return "missing value"
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__} {value!r}"
    if not allow_empty and not value.strip():
        return "empty string"
    return None


def plain_row(row: Any) -> int | str:
    """A row label as a JSON-friendly int or str."""
    if isinstance(row, (int, np.integer)):
        return int(row)
    return str(row)
