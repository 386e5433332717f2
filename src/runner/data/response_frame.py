"""The canonical response-level frame: the checks every response loader's frame must pass.

One validator here means a user's own file fails with the same, precise message as RAGTruth
or HaluBench would. Row numbers in messages are the ones the user sees in their file. A
loader puts them in the frame's index before validation:

- JSONL: the 1-based line number.
- Parquet and CSV: the 0-based data-row index (pandas' row position; the header is not
  counted, so CSV row ``i`` is line ``i + 2`` in a text editor when no field spans lines).
- The Hub: the 0-based row index of the split.

Bad rows raise a `DataError` at the first problem, or, with ``skip_invalid=True``, are
dropped, counted, listed in ``info["skipped"]`` and logged (`runner.data.row_issues`).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.data.row_issues import IssueLog, RowIssue, is_missing, plain_row, text_problem
from runner.errors import DataError
from runner.frames import REQUIRED_COLUMNS

_ID_COLUMNS = ("example_id", "group_id", "task", "source")
_NON_EMPTY_TEXT = ("context", "answer")


def check_columns(
    frame: pd.DataFrame, file: str, required: Sequence[str] = REQUIRED_COLUMNS
) -> None:
    """Raise a `DataError` (row ``"header"``) for the first `required` column missing."""
    for column in required:
        if column not in frame.columns:
            raise DataError(
                f"required column missing (columns present: {', '.join(map(str, frame.columns))})",
                file=file,
                row="header",
                field=column,
            )


def find_row_problems(
    frame: pd.DataFrame, files: Sequence[str], rows: Sequence[int | str]
) -> list[tuple[int, RowIssue]]:
    """Every row-level problem of a canonical frame, ordered by row position.

    Parameters
    ----------
    frame : DataFrame
        Frame with `REQUIRED_COLUMNS` (checked by `check_columns` first).
    files, rows : sequences
        Per row, the file and the user-visible row number to name in messages.

    Returns
    -------
    list of (position, RowIssue)
        Per-row checks (ids, text fields, label, spans) first; duplicate ``example_id`` is
        then checked among the rows without other problems, the first occurrence kept.
    """

    def issue(pos: int, column: str, reason: str) -> tuple[int, RowIssue]:
        return (pos, RowIssue(str(files[pos]), plain_row(rows[pos]), column, reason))

    columns = {c: frame[c].tolist() for c in REQUIRED_COLUMNS}
    spans = frame["spans"].tolist() if "spans" in frame.columns else None
    found = [
        issue(pos, column, reason)
        for pos in range(len(frame))
        for column, reason in _field_problems(columns, spans, pos)
    ]
    bad = {pos for pos, _ in found}
    for pos, reason in _duplicate_ids(columns["example_id"], bad, files, rows):
        found.append(issue(pos, "example_id", reason))
    found.sort(key=lambda item: item[0])
    return found


def _field_problems(
    columns: dict[str, list], spans: list | None, pos: int
) -> Iterator[tuple[str, str]]:
    """(column, reason) for each problem of the row at `pos`, in the order checked."""
    for column in _ID_COLUMNS:
        reason = text_problem(columns[column][pos], allow_empty=False)
        if reason:
            yield column, reason
    reason = text_problem(columns["question"][pos], allow_empty=True)
    if reason:
        yield "question", reason
    for column in _NON_EMPTY_TEXT:
        reason = text_problem(columns[column][pos], allow_empty=False)
        if reason:
            yield column, reason
    reason = _label_problem(columns["label"][pos])
    if reason:
        yield "label", reason
    answer = columns["answer"][pos]
    if spans is not None and isinstance(answer, str):
        reason = span_problem(spans[pos], answer)
        if reason:
            yield "spans", reason


def _duplicate_ids(
    ids: list, bad: set[int], files: Sequence[str], rows: Sequence[int | str]
) -> Iterator[tuple[int, str]]:
    """(position, reason) for each repeat of an ``example_id`` among the rows not in `bad`.

    Rows with other problems are left out, so a bad row never makes a later good one a
    duplicate; the first occurrence is the one kept.
    """
    first_seen: dict[str, int] = {}
    for pos, value in enumerate(ids):
        if pos in bad:
            continue
        if value in first_seen:
            first = first_seen[value]
            yield (
                pos,
                f"duplicate example_id {value!r} (first at file {files[first]}, row {rows[first]})",
            )
        else:
            first_seen[value] = pos


def validate_response_frame(frame: pd.DataFrame, file: str) -> None:
    """Check a canonical response-level frame; raise at the first problem.

    Parameters
    ----------
    frame : DataFrame
        Canonical frame. Its index holds the user-visible row numbers named in messages
        (see the module docstring); a default RangeIndex means 0-based row positions.
    file : str
        File the rows came from, named in messages.

    Raises
    ------
    DataError
        Naming file, row and field: a missing required column (row ``"header"``), an id,
        task or source that is not a non-empty string, a question that is not a string, an
        empty or non-string answer/context, a label outside {0, 1}, a span out of range or
        not matching the answer text, or a duplicate ``example_id``.
    """
    check_columns(frame, file)
    problems = find_row_problems(frame, [file] * len(frame), list(frame.index))
    if problems:
        raise problems[0][1].to_error()


def screen_rows(
    frame: pd.DataFrame, files: Sequence[str], rows: Sequence[int | str], issues: IssueLog
) -> pd.DataFrame:
    """Validate a frame; return it without invalid rows (only when ``issues`` skips).

    Parameters
    ----------
    frame : DataFrame
        Canonical frame with the required columns present.
    files, rows : sequences
        Per row, file and user-visible row number.
    issues : IssueLog
        Raises at the first problem, or records every one.

    Returns
    -------
    DataFrame
        The valid rows, ``label`` as int64, index reset to 0..n-1.
    """
    problems = find_row_problems(frame, files, rows)
    for _, issue in problems:
        issues.add(issue.file, issue.row, issue.field, issue.reason)
    bad = sorted({pos for pos, _ in problems})
    keep = np.ones(len(frame), dtype=bool)
    keep[bad] = False
    out = frame.loc[keep].reset_index(drop=True)
    out["label"] = out["label"].astype("int64")
    return out


def span_problem(value: Any, answer: str) -> str | None:
    """Why a span list is invalid for ``answer``, or None when it is valid.

    A span list is a list of dicts with integer ``start`` <= ``end`` within the answer;
    when a span has ``text``, ``answer[start:end]`` must equal it.
    """
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        return f"spans must be a list of span dicts, got {type(value).__name__}"
    for k, span in enumerate(value, start=1):  # numbered from 1, like JSONL rows
        if not isinstance(span, Mapping):
            return f"span {k} must be a dict, got {type(span).__name__}"
        start, end = span.get("start"), span.get("end")
        if not _is_int(start) or not _is_int(end):
            return f"span {k} needs integer start and end, got start={start!r}, end={end!r}"
        if not 0 <= start <= end <= len(answer):
            return (
                f"span {k} [{start}, {end}) out of range for an answer of {len(answer)} characters"
            )
        text = span.get("text")
        if text is not None and answer[start:end] != text:
            return (
                f"span {k} text {text!r} does not match answer[{start}:{end}] = "
                f"{answer[start:end]!r}"
            )
    return None


def summarise(frame: pd.DataFrame) -> dict[str, Any]:
    """Row counts, counts per task and source, and positives per task (JSON-serialisable)."""

    def counts(series: pd.Series) -> dict[str, int]:
        return {str(k): int(v) for k, v in series.value_counts().sort_index().items()}

    return {
        "rows": len(frame),
        "groups": int(frame["group_id"].nunique()),
        "counts_per_task": counts(frame["task"]),
        "counts_per_source": counts(frame["source"]),
        "positives_per_task": {
            str(k): int(v) for k, v in frame.groupby("task")["label"].sum().sort_index().items()
        },
    }


def as_id(value: Any) -> Any:
    """An integer id as its decimal string (JSON and parquet may hold ids as numbers).

    Anything else is returned as it is, for the validator to judge.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return value


def require_rows(frame: pd.DataFrame, file: str, issues: IssueLog) -> None:
    """Raise when no row is left: an empty frame is never a result."""
    if frame.empty:
        skipped = f" ({issues.skipped_rows()} invalid rows skipped)" if issues.issues else ""
        raise DataError(f"no valid rows to load{skipped}", file=file)


def _label_problem(value: Any) -> str | None:
    if is_missing(value):
        return "missing label"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        return f"label must be 0 or 1, got {type(value).__name__} {value!r}"
    if value not in (0, 1):
        return f"label must be 0 or 1, got {value!r}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
