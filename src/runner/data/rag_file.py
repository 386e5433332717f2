"""A team's own RAG outputs (`dataset=rag_file dataset.path=FILE`): JSONL, CSV or Parquet.

Why its own loader: the routing contract (operating report, fitted gate, routing, audit)
runs on a team's own traffic, which comes as whatever their logging wrote. The loader maps
it onto the canonical response frame (`runner.frames.REQUIRED_COLUMNS`) with the same
strictness as ``claims_jsonl``: every problem names the file, the row and the field, and
``skip_invalid=True`` drops bad rows only after counting and listing them.

Fields (after ``columns`` renames): ``question``, ``context`` (a string, or a list of
passages joined by a blank line), ``answer``, optional ``id`` (without one, a stable hash
of the row's content, so an export such as RAGAS's routes without hand edits), ``label``
(1/0, true/false, hallucinated/faithful, FAIL/PASS), ``group`` (default: a hash of the
context, so answers of one context stay together in folds and bootstrap), ``source`` and
``task``. The format is documented in ``docs/rag_file_format.md``.

Row numbers in messages: JSONL and CSV name the physical line in the file, where the row
starts (a CSV's header is line 1, so its first record is line 2; a quoted field spanning
lines or a blank line moves every later row down, as in a text editor); Parquet names the
0-based row index. A row whose id is readable is also named by its id.
"""

from __future__ import annotations

import csv
import io
import json
import numbers
import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import frame_fingerprint, group_key, sha256_file
from runner.data.response_frame import as_id
from runner.data.row_issues import IssueLog, is_missing
from runner.data.text_files import read_jsonl, read_text
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.settings import checked_by

# OmegaConf reads the config annotations at runtime and does not understand `X | None`.

LOADER_VERSION = 1
"""Bump when a mapping changes, so fingerprints (and caches keyed on them) change too."""

FIELDS: tuple[str, ...] = (
    "id",
    "question",
    "context",
    "answer",
    "label",
    "group",
    "source",
    "task",
)
REQUIRED: tuple[str, ...] = ("question", "context", "answer")
CONTENT_ID = "content"
"""Prefix of an id made from a row's content when the file has no ``id`` column."""
IDS_FROM_FILE = "from the file"
"""`LoadedData.info["ids"]` when the file has an ``id`` column (else `GENERATED_IDS`)."""
GENERATED_IDS = (
    "generated: content:<sha1[:16]> of question, context and answer (the file has no id column)"
)
DEFAULT_SOURCE = "unspecified"
DEFAULT_TASK = "all"
PASSAGE_JOIN = "\n\n"
SUFFIXES = (".jsonl", ".csv", ".parquet")

# A cell that starts a JSON list of strings (`["...`): meant as passages, so one that does
# not parse is a broken export, not text. `[1] Paris ...` (a citation) stays text.
_LOOKS_LIKE_LIST = re.compile(r'\s*\[\s*"')

POSITIVE = ("1", "true", "hallucinated", "fail")
NEGATIVE = ("0", "false", "faithful", "pass")


def parse_label(value: Any) -> int | None:
    """1 (hallucinated) / 0 (faithful) for an accepted label spelling, else None.

    Accepted: the integers 1/0 (also as floats 1.0/0.0), booleans, and the strings
    ``1/0``, ``true/false``, ``hallucinated/faithful``, ``FAIL/PASS`` in any case.
    """
    if isinstance(value, (bool, np.bool_)):
        return int(bool(value))
    if isinstance(value, numbers.Number) and not is_missing(value):
        return int(value) if value in (0, 1) else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in POSITIVE:
            return 1
        if text in NEGATIVE:
            return 0
    return None


def check_rag_file_settings(
    columns: Mapping[str, str], extra_columns: str, limit: int | None, **_: Any
) -> None:
    """Refuse settings that cannot work, before any file is read (also run by the schema).

    Raises
    ------
    ConfigError
        Naming the ``dataset.<key>`` and what it accepts.
    """
    if extra_columns not in ("error", "ignore"):
        raise ConfigError(f"dataset.extra_columns={extra_columns!r}: use 'error' or 'ignore'")
    if limit is not None and (isinstance(limit, bool) or int(limit) < 1):
        raise ConfigError(f"dataset.limit={limit!r}: a positive number of rows, or null")
    unknown = sorted(set(columns) - set(FIELDS))
    if unknown:
        raise ConfigError(f"dataset.columns: {unknown} are not fields (fields: {list(FIELDS)})")


NO_COLUMNS: Mapping[str, str] = MappingProxyType({})
"""No renames: every field under its own name."""


@checked_by(check_rag_file_settings)
def load_rag_file(
    path: str,
    columns: Mapping[str, str] = NO_COLUMNS,
    extra_columns: str = "error",
    limit: int | None = None,
    skip_invalid: bool = False,
    name: str = "rag_file",
) -> LoadedData:
    """Read a team's RAG outputs into the canonical response frame (settings:
    `runner.data.base`).

    ``path`` is one ``.jsonl``, ``.csv`` or ``.parquet`` file, read by its extension (a
    folder of Parquet shards streams through ``experiment=route`` instead). ``columns``
    maps fields onto the file's columns, ``{field: column in your file}``, e.g.
    ``{"id": "request_id", "answer": "response"}``. ``extra_columns`` says what to do with
    columns that are not fields: ``"error"`` (default, so a misspelt field never goes
    unnoticed) fails naming them, ``"ignore"`` ignores them. ``limit`` keeps the first N
    valid rows. A bad row is a `DataError` naming the file, row and field.

    ``label`` is int64 when the file has labels and all-missing (``Int64``) when it has
    none. ``info`` adds ``format``, ``labelled`` (which of the two), ``fields_present``,
    ``ids`` (from the file, or generated), ``groups``, ``rows_read``, ``first_row`` and
    ``positives`` (when labelled); each skipped row carries its ``id`` as written.
    """
    columns = dict(columns or {})
    check_rag_file_settings(columns, extra_columns, limit)
    file = _locate(path)
    issues = IssueLog(skip_invalid=skip_invalid)
    records, rows = _read(file, issues)
    present, out, kept_rows = _map(records, rows, columns, extra_columns, limit, name, file, issues)
    frame = canonical_frame(out, "label" in present)
    skipped = with_ids(issues.skipped(), dict(zip(rows, records, strict=True)), columns)
    params = {
        "columns": dict(sorted(columns.items())),
        "extra_columns": extra_columns,
        "limit": limit,
        "skip_invalid": skip_invalid,
        "name": name,
    }
    return _record(file, frame, present, kept_rows[0], skipped, issues, params, name)


def _locate(path: str) -> Path:
    """The one file to read; a folder, another extension or a missing file fails here."""
    file = Path(path).expanduser()
    if file.is_dir():
        raise ConfigError(
            f"dataset.path={path!r} is a folder: a folder of Parquet shards streams through "
            "experiment=route; other experiments read one .jsonl, .csv or .parquet file"
        )
    if file.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"dataset.path={path!r}: extension must be one of {', '.join(SUFFIXES)}")
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found: set dataset.path=<your data file>")
    return file


def _read(file: Path, issues: IssueLog) -> tuple[list[dict], list[int]]:
    """The file's records and their row numbers; a file without a data row fails here."""
    records, rows = read_records(file, issues)
    if not records and not issues.issues:
        raise DataError("no rows: the file is empty or holds only a header", file=str(file))
    return records, rows


def _map(
    records: list[dict],
    rows: list[int],
    columns: dict[str, str],
    extra_columns: str,
    limit: int | None,
    name: str,
    file: Path,
    issues: IssueLog,
) -> tuple[set[str], list[dict], list[int]]:
    """The fields present, the canonical rows and their row numbers; none valid fails."""
    present = map_header(records, columns, extra_columns, str(file))
    out, kept_rows = map_records(
        records, rows, present, columns, name, str(file), issues, limit=limit
    )
    if not out:
        skipped = f" ({len(issues.issues)} problems skipped)" if issues.issues else ""
        raise DataError(f"no valid rows to load{skipped}", file=str(file))
    return present, out, kept_rows


def _record(
    file: Path,
    frame: pd.DataFrame,
    present: set[str],
    first_row: int,
    skipped: list[dict],
    issues: IssueLog,
    params: dict[str, Any],
    name: str,
) -> LoadedData:
    """The `LoadedData`: ``info`` and a fingerprint of the file's bytes and the settings."""
    digest = sha256_file(file)
    labelled = "label" in present
    info = {
        "rows": len(frame),
        "origin": "local",
        "format": file.suffix.lower().lstrip("."),
        "labelled": labelled,
        "fields_present": sorted(present),
        "ids": IDS_FROM_FILE if "id" in present else GENERATED_IDS,
        "groups": int(frame["group_id"].nunique()),
        "counts_per_source": _count(frame["source"]),
        "counts_per_task": _count(frame["task"]),
        "files_sha256": {str(file): digest},
        "skipped": skipped,
        "skipped_rows": issues.skipped_rows(),
        "rows_read": len(frame) + issues.skipped_rows(),
        "first_row": first_row,
    }
    if labelled:
        info["positives"] = int(frame["label"].sum())
    return LoadedData(
        name=name,
        frame=frame,
        files=[str(file)],
        fingerprint=frame_fingerprint(digest, "runner.data.rag_file", LOADER_VERSION, params),
        info=info,
    )


def map_records(
    records: list[dict],
    rows: list[int],
    present: set[str],
    columns: dict[str, str],
    name: str,
    file: str,
    issues: IssueLog,
    limit: int | None = None,
) -> tuple[list[dict], list[int]]:
    """Canonical rows of `records` and their row numbers; problems go to `issues`.

    A repeated id is a problem of the later row (the first stays). `limit` stops after
    that many valid rows; later records are not read.
    """
    out, kept_rows, ids = [], [], {}
    for row, rec in zip(rows, records, strict=True):
        if limit is not None and len(out) >= int(limit):
            break
        mapped = _row(rec, present, columns, name, file, row, issues)
        if mapped is None:
            continue
        if mapped["example_id"] in ids:
            reason = duplicate_reason(mapped["example_id"], ids[mapped["example_id"]], present)
            issues.add(file, row, columns.get("id", "id"), reason, mapped["example_id"])
            continue
        ids[mapped["example_id"]] = row
        out.append(mapped)
        kept_rows.append(row)
    return out, kept_rows


def duplicate_reason(
    ident: str, first: int | str, present: set[str], first_file: str | None = None
) -> str:
    """Why a row whose id was already seen (at row `first`) is not routed twice.

    `first_file` names the file of the first occurrence when it is another file than the
    repeated row's (a folder of shards): a row number alone would point into the wrong one.
    """
    at = f"row {first}" if first_file is None else f"row {first} of {first_file}"
    if "id" in present:
        return f"duplicate id {ident!r} (first at {at})"
    return (
        f"same question, context and answer as {at} (ids are generated "
        "from the content; add an id column to keep both)"
    )


def canonical_frame(rows: list[dict], labelled: bool) -> pd.DataFrame:
    """The canonical frame of mapped rows: ``label`` int64 when labelled, else all-missing."""
    frame = pd.DataFrame(rows)
    frame["label"] = (
        frame["label"].astype("int64")
        if labelled
        else pd.array([pd.NA] * len(frame), dtype="Int64")
    )
    return frame


def with_ids(skipped: list[dict], by_row: dict[int, dict], columns: dict[str, str]) -> list[dict]:
    """Each skipped problem with the row's id as written (None when it has none readable),
    so a skipped row can be found in the file and in the run's ``skipped.parquet``."""
    out = []
    for problem in skipped:
        raw = as_id((by_row.get(problem["row"]) or {}).get(columns.get("id", "id")))
        out.append({**problem, "id": raw if isinstance(raw, str) else None})
    return out


def _count(series: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in sorted(Counter(series.tolist()).items())}


def read_records(file: Path, issues: IssueLog) -> tuple[list[dict], list[int]]:
    """Records and their user-visible row numbers, by file extension.

    Text files are decoded by `runner.data.text_files.text_lines`, so a byte that is not UTF-8
    names the line and the byte offset (and ``skip_invalid`` skips just that JSONL line).
    """
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        pairs, _ = read_jsonl(file, issues)
        return [rec for _, rec in pairs], [line for line, _ in pairs]
    if suffix == ".csv":
        text = read_text(file).removeprefix("\ufeff")  # a BOM from spreadsheet exports
        try:
            frame = pd.read_csv(
                io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False
            )
        except Exception as exc:  # the CSV parser raises several types for a broken file
            raise DataError(
                f"cannot read CSV: {type(exc).__name__}: {exc}", file=str(file)
            ) from exc
        lines = csv_record_lines(text, len(frame))
        return frame.to_dict("records"), lines or [i + 2 for i in range(len(frame))]
    try:
        frame = pd.read_parquet(file)
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise DataError(
            f"cannot read Parquet: {type(exc).__name__}: {exc}", file=str(file)
        ) from exc
    return frame.to_dict("records"), list(range(len(frame)))


def csv_record_lines(text: str, records: int) -> list[int] | None:
    """The physical line (1-based, as `runner.data.text_files.text_lines` counts) where each
    data record of a CSV text starts, or None when they cannot be matched to pandas' records.

    Why a second pass: pandas parses the CSV (so values are exactly what every other CSV
    path reads) but does not say where a record starts; a quoted field spanning lines, or a
    blank line pandas skips, would otherwise shift every later row's number away from the
    line a user opens in an editor. Python's `csv` reader follows the same quoting rules
    (RFC 4180, ``""`` inside quotes) and counts lines; lines pandas skips as blank (empty or
    whitespace only, outside quotes) are skipped here too. When the counts still disagree
    (a file pandas reads with rules `csv` does not share, such as a lone ``\r`` line end),
    None: the caller falls back to the record position, never to a wrong match.

    Parameters
    ----------
    text : str
        The decoded file, BOM removed.
    records : int
        How many data records pandas read (the header not counted).
    """
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))  # a context may exceed the 128 KiB default
    try:
        # Lines end at "\n" only, as `text_lines` (and so the non-UTF-8 message) counts them.
        parts = text.split("\n")
        physical = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        reader = csv.reader(physical)
        starts, end = [], 0
        for fields in reader:
            start, end = end + 1, reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            starts.append(start)
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(limit)
    data = starts[1:]  # the first record is the header
    return data if len(data) == records else None


def map_header(
    records: list[dict], columns: dict[str, str], extra_columns: str, file: str
) -> set[str]:
    """Which fields the file holds; unknown columns and missing required fields fail here."""
    seen: dict[str, None] = {}
    for rec in records:
        seen.update(dict.fromkeys(rec))
    inverse = {column: f for f, column in columns.items()}
    present = {inverse.get(c, c) for c in seen if inverse.get(c, c) in FIELDS}
    for f, column in columns.items():
        if column not in seen:
            raise DataError(
                f"dataset.columns maps {f!r} to {column!r}, which the file does not have "
                f"(columns: {', '.join(map(str, seen))})",
                file=file,
                row="header",
                field=column,
            )
    shadowed = [c for c in seen if c in FIELDS and c in columns and columns[c] != c]
    extra = [c for c in seen if inverse.get(c, c) not in FIELDS or c in shadowed]
    if extra and extra_columns == "error":
        raise DataError(
            f"unknown column(s) {extra}: map them onto fields with dataset.columns."
            f"<field>=<column> (fields: {', '.join(FIELDS)}) or pass "
            "dataset.extra_columns=ignore",
            file=file,
            row="header",
            field=str(extra[0]),
        )
    for f in REQUIRED:
        if f not in present:
            raise DataError(
                f"required field missing (columns present: {', '.join(map(str, seen))})",
                file=file,
                row="header",
                field=columns.get(f, f),
            )
    return present


def _row(
    rec: dict,
    present: set[str],
    columns: dict[str, str],
    name: str,
    file: str,
    row: int,
    issues: IssueLog,
) -> dict | None:
    """One canonical row, or None after reporting its first problem to `issues`."""

    def get(f: str) -> Any:
        return rec.get(columns.get(f, f))

    ident = as_id(get("id")) if "id" in present else ""
    written = ident if isinstance(ident, str) and ident.strip() else None
    mapped = _mapped(get, present, ident)
    if isinstance(mapped, tuple):
        f, reason = mapped
        issues.add(file, row, columns.get(f, f), reason, written)
        return None
    return mapped


def _mapped(get: Callable[[str], Any], present: set[str], ident: Any) -> dict | tuple[str, str]:
    """One record's canonical row, or ``(field, reason)`` for its first problem.

    `get` reads a field (through the ``columns`` renames); `ident` is the id as read.
    """
    if "id" in present and (is_missing(ident) or not isinstance(ident, str) or not ident.strip()):
        return "id", f"id must be a non-empty string or integer, got {ident!r}"
    question = get("question")
    if is_missing(question):
        question = None
    if not isinstance(question, str):
        return "question", f"must be a string (may be empty), got {question!r}"
    context = _context(get("context"))
    if isinstance(context, tuple):
        return "context", context[0]
    answer = get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return "answer", f"must be a non-empty string, got {answer!r}"
    label = _label(get, present)
    if isinstance(label, tuple):
        return label
    optional = _optional(get, present)
    if isinstance(optional, tuple):
        return optional
    if "id" not in present:
        ident = group_key(CONTENT_ID, "\x1f".join((question, context, answer)))
    return {
        "example_id": ident,
        "group_id": optional["group"] or group_key("ctx", context),
        "task": optional["task"] or DEFAULT_TASK,
        "source": optional["source"] or DEFAULT_SOURCE,
        "question": question,
        "context": context,
        "answer": answer,
        "label": label,
    }


def _label(get: Callable[[str], Any], present: set[str]) -> int | tuple[str, str] | None:
    """The row's label (None when the file has none), or ``("label", reason)``."""
    if "label" not in present:
        return None
    label = parse_label(get("label"))
    if label is None:
        return (
            "label",
            f"label must be 1/0, true/false, hallucinated/faithful or FAIL/PASS, "
            f"got {get('label')!r}",
        )
    return label


def _optional(
    get: Callable[[str], Any], present: set[str]
) -> dict[str, str | None] | tuple[str, str]:
    """``group``, ``source`` and ``task`` (None when absent or empty), or ``(field, reason)``."""
    optional: dict[str, str | None] = {}
    for f in ("group", "source", "task"):
        value = as_id(get(f)) if f in present else None
        if is_missing(value) or value == "":
            optional[f] = None
        elif not isinstance(value, str) or not value.strip():
            return f, f"must be a non-empty string when given, got {value!r}"
        else:
            optional[f] = value
    return optional


def _context(value: Any) -> str | tuple[str]:
    """The context as one string, or a one-element tuple holding the reason it is bad."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            if _LOOKS_LIKE_LIST.match(value):
                return (
                    f"looks like a JSON list of passages but does not parse ({exc}); "
                    "close the list and its strings, or write the context as plain text",
                )
            parsed = None
        if isinstance(parsed, list):
            value = parsed
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if not value:
            return ("context must hold at least one passage, got an empty list",)
        for k, passage in enumerate(value):
            if not isinstance(passage, str) or not passage.strip():
                return (f"passage {k + 1} must be a non-empty string, got {passage!r}",)
        return PASSAGE_JOIN.join(value)
    if not isinstance(value, str) or not value.strip():
        return (f"must be a non-empty string or a list of passages, got {value!r}",)
    return value
