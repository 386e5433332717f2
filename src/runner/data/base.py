"""What every response-level loader returns, and the checks its frame must pass.

Loaders differ in where rows come from; they agree on the canonical frame (see
docs/architecture.md, "Canonical frames") and on how bad rows are reported. One validator here
means a user's own file fails with the same, precise message as RAGTruth or HaluBench would.

Row numbers in messages are the ones the user sees in their file. A loader puts them in the
frame's index before validation:

- JSONL: the 1-based line number.
- Parquet and CSV: the 0-based data-row index (pandas' row position; the header is not
  counted, so CSV row ``i`` is line ``i + 2`` in a text editor when no field spans lines).
- The Hub: the 0-based row index of the split.

Bad rows raise a `DataError` at the first problem, or, with ``skip_invalid=True``, are
dropped, counted, listed in ``info["skipped"]`` and logged. Nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError, DataError
from runner.frames import REQUIRED_COLUMNS

logger = logging.getLogger(__name__)


_ID_COLUMNS = ("example_id", "group_id", "task", "source")
_NON_EMPTY_TEXT = ("context", "answer")

_CHUNK = 1 << 20


@dataclass
class LoadedData:
    """A canonical response-level frame and where it came from.

    Attributes
    ----------
    name : str
        Dataset name (as in the dataset config), used in run names and tables.
    frame : DataFrame
        Canonical frame: `REQUIRED_COLUMNS`, optional ``spans``, then extra columns.
    files : list of str
        Files the rows were read from (for the Hub: the local cache files).
    fingerprint : str
        sha256 identifying the frame: the bytes of `files` plus the loader, its version and
        the selection parameters (split, limit, sources, ...). Equal fingerprints mean the
        same rows, so caches can key on it. Per-file sha256 are in ``info["files_sha256"]``.
    info : dict
        JSON-serialisable summary: ``rows``, ``origin`` ("local" or "hub"), counts per task
        and source, positives per task, ``skipped`` rows with reasons, and loader extras.
    """

    name: str
    frame: pd.DataFrame
    files: list[str]
    fingerprint: str
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Label the frame with the data set it came from (`frame.attrs["dataset"]`).

        Why here: splitters and the out-of-fold loop see only the frame, and name the data
        set in every error they raise (`runner.evaluation.splits.dataset_name`); set once
        where every loader builds its result, no frame reaches them as "<unnamed frame>".
        The name is followed by the file when the rows come from one local file. A label
        only: `runner.reporting.outputs.write_parquet` keeps it out of the files a run
        writes.
        """
        if isinstance(self.frame, pd.DataFrame) and "dataset" not in self.frame.attrs:
            one_file = len(self.files) == 1 and self.info.get("origin") == "local"
            label = f"{self.name} ({self.files[0]})" if one_file else self.name
            self.frame.attrs["dataset"] = label


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
        issue = RowIssue(str(file), _plain(row), field, reason, ident)
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


def sha256_file(path: str | Path) -> str:
    """sha256 hex digest of one file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint_files(paths: Iterable[str | Path]) -> str:
    """sha256 over the bytes of files, streamed.

    Parameters
    ----------
    paths : iterable of path
        Files, in a meaningful order (order changes the result).

    Returns
    -------
    str
        For one file, its plain sha256 (what ``sha256sum`` prints). For several, the sha256
        of their per-file digests joined by newlines, so no two file lists collide by
        concatenation.
    """
    digests = [sha256_file(p) for p in paths]
    if not digests:
        raise ValueError("fingerprint_files: no files given")
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def frame_fingerprint(files_digest: str, loader: str, version: int, params: Mapping) -> str:
    """Fingerprint of a loaded frame: file bytes + loader identity + selection parameters."""
    payload = json.dumps(
        {"files": files_digest, "loader": loader, "version": version, "params": dict(params)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def group_key(prefix: str, text: str) -> str:
    """Group id ``"<prefix>:<sha1(text)[:16]>"``: one id per (task or source, context)."""
    return f"{prefix}:{hashlib.sha1(text.encode('utf-8')).hexdigest()[:16]}"


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
    found: list[tuple[int, RowIssue]] = []

    def add(pos: int, column: str, reason: str) -> None:
        found.append((pos, RowIssue(str(files[pos]), _plain(rows[pos]), column, reason)))

    columns = {c: frame[c].tolist() for c in REQUIRED_COLUMNS}
    answers = columns["answer"]
    spans = frame["spans"].tolist() if "spans" in frame.columns else None
    for pos in range(len(frame)):
        for column in _ID_COLUMNS:
            reason = text_problem(columns[column][pos], allow_empty=False)
            if reason:
                add(pos, column, reason)
        reason = text_problem(columns["question"][pos], allow_empty=True)
        if reason:
            add(pos, "question", reason)
        for column in _NON_EMPTY_TEXT:
            reason = text_problem(columns[column][pos], allow_empty=False)
            if reason:
                add(pos, column, reason)
        reason = _label_problem(columns["label"][pos])
        if reason:
            add(pos, "label", reason)
        if spans is not None and isinstance(answers[pos], str):
            reason = span_problem(spans[pos], answers[pos])
            if reason:
                add(pos, "spans", reason)

    bad = {pos for pos, _ in found}
    first_seen: dict[str, int] = {}
    for pos, value in enumerate(columns["example_id"]):
        if pos in bad:
            continue
        if value in first_seen:
            first = first_seen[value]
            add(
                pos,
                "example_id",
                f"duplicate example_id {value!r} (first at file {files[first]}, row {rows[first]})",
            )
        else:
            first_seen[value] = pos
    found.sort(key=lambda item: item[0])
    return found


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


NOT_UTF8_FIELD = "<bytes>"
"""Field named by a line that is not valid UTF-8 (the problem is below the record)."""


def text_lines(
    path: str | Path,
    issues: IssueLog | None = None,
    start: int = 0,
    first_line: int = 1,
    max_lines: int | None = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line, text)`` of a UTF-8 text file, each line decoded on its own.

    Why one helper: every text loader (JSONL, CSV, YAML) reads through it, so a stray
    Latin-1 byte in a user's file is one `DataError` naming the file, the line and the byte
    offset, instead of a ``UnicodeDecodeError`` traceback, and ``skip_invalid`` can skip
    just that line. Lines end at ``\n``; the text keeps its line ending.

    Parameters
    ----------
    path : path
    issues : IssueLog, optional
        Where an undecodable line goes (raises unless skipping; a skipped line is not
        yielded). None: raise at once.
    start, first_line : int
        Byte offset to start reading at, and the number of the line that starts there (a
        streaming reader resumes mid-file, `runner.data.rag_stream`).
    max_lines : int, optional
        Stop after this many lines (all lines to the end when None).

    Raises
    ------
    DataError
        Field ``"<bytes>"``: the line, the offending byte, and its offset in the file and
        in the line (0-based byte offsets, as ``xxd`` / ``dd skip=`` count).
    """
    issues = issues if issues is not None else IssueLog(skip_invalid=False)
    offset = start
    with open(path, "rb") as handle:
        handle.seek(start)
        for number, raw in enumerate(handle, start=first_line):
            if max_lines is not None and number >= first_line + max_lines:
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = raw[exc.start : exc.end]
                issues.add(
                    str(path),
                    number,
                    NOT_UTF8_FIELD,
                    f"line {number} is not valid UTF-8: byte {bad[:1].hex(' ')} at byte "
                    f"offset {offset + exc.start} of the file (byte {exc.start} of the "
                    f"line; {exc.reason}); save the file as UTF-8",
                )
                text = None
            offset += len(raw)
            if text is not None:
                yield number, text


def read_text(path: str | Path) -> str:
    """The whole UTF-8 text of a file (strict: the first undecodable line raises, see
    `text_lines`)."""
    return "".join(text for _, text in text_lines(path))


def read_jsonl(
    path: Path,
    issues: IssueLog,
    start: int = 0,
    first_line: int = 1,
    max_lines: int | None = None,
) -> tuple[list[tuple[int, dict]], int]:
    """Parse a JSONL file (or ``max_lines`` lines of it from byte `start`, see `text_lines`)
    into ``(1-based line, record)`` pairs.

    A UTF-8 BOM before the first line is dropped (as for CSV). Whitespace-only lines hold
    no record and are counted, not parsed. A line that is not
    UTF-8 (field ``"<bytes>"``, `text_lines`), not JSON, or not a JSON object (field
    ``"<record>"``) is a problem for ``issues``.

    Returns
    -------
    records : list of (int, dict)
    blank_lines : int
    """
    records: list[tuple[int, dict]] = []
    blank = 0
    for number, line in text_lines(path, issues, start, first_line, max_lines):
        if number == 1:
            line = line.removeprefix("\ufeff")  # a BOM, as spreadsheet tools write it
        if not line.strip():
            blank += 1
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.add(str(path), number, "<record>", f"line is not valid JSON: {exc}")
            continue
        if not isinstance(record, dict):
            issues.add(
                str(path),
                number,
                "<record>",
                f"line must be a JSON object, got {type(record).__name__}",
            )
            continue
        records.append((number, record))
    return records, blank


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


def _plain(row: Any) -> int | str:
    """A row label as a JSON-friendly int or str."""
    if isinstance(row, (int, np.integer)):
        return int(row)
    return str(row)


def check_split_file(
    dataset: str, split: object, path: str | Path | None, splits: Sequence[str]
) -> None:
    """Raise `ConfigError` unless `split` is one of `splits` and agrees with `path`'s name.

    Why: the split is recorded with the run (manifest, tables); a ``dataset.path`` to
    ``test.parquet`` with ``dataset.split=train`` would read the test rows and record
    "train". A file named after another split (``<split>.parquet`` / ``.jsonl``) is
    refused, naming both settings; a file named otherwise is the user's word for its split.
    Needs no data: the dataset schemas run it in the config check.
    """
    if not isinstance(split, str) or split not in splits:
        raise ConfigError(
            f"{dataset}: dataset.split={split!r} does not exist; valid splits: {', '.join(splits)}"
        )
    if path is None:
        return
    target = Path(str(path))
    stem = target.name.split(".", 1)[0]
    if target.suffix and stem in splits and stem != split:
        raise ConfigError(
            f"{dataset}: dataset.split={split} but dataset.path={target} is the {stem!r} "
            f"split; set dataset.split={stem}, or point dataset.path at the {split} file"
        )
