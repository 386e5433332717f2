"""The canonical claim frame: its columns, its validator, and how a loader finishes one.

Why one module: the claim-verification study judges *claims against passages*, not whole
responses, so every claim loader (`runner.data.wice`, `runner.data.factcheck_stance`,
`runner.data.claims_jsonl`) builds the same frame (`CLAIM_COLUMNS`) through `finish`, and
one validator makes a user's file fail with the same precise message as a public set would.

Canonical claim frame, one row per *verification unit*:

- ``claim_id`` str, ``response_id`` str (claims of one answer share it), ``question`` str
  (may be ""), ``claim`` str, ``passages`` list of str (at least one, none empty),
  ``label`` green / yellow / red, ``raw_label`` (the data's own label), ``category`` str
  ("" when uncategorised), ``source`` (dataset name); optional ``criticality`` (nullable
  Int64, only where the data has it).
- Usually one unit per claim. The WiCE oracle variant has several units per claim (one per
  oracle chunk): those rows share ``claim_id`` and carry ``unit_id`` (``<claim_id>#<k>``),
  ``chunk`` (k, 0-based) and ``chunk_label`` (that chunk's own label); ``label`` is the
  claim's label (see `runner.data.wice.load_wice_oracle`). A study scores units and
  combines them per claim.

The flag task: a claim is *flagged* by a system that says yellow or red; the positives are
the yellow + red claims (`runner.data.claim_labels`). The user format is documented in
``docs/claims_format.md``.
"""

from __future__ import annotations

import numbers
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.claim_labels import LABELS, SEVERITY, to_label
from runner.data.hashing import fingerprint_files, frame_fingerprint
from runner.data.row_issues import IssueLog, text_problem
from runner.data.text_files import read_jsonl
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.paths import data_dir as default_data_dir

LOADER_VERSION = 1
"""Bump when a mapping changes, so fingerprints (and caches keyed on them) change too."""

CLAIM_COLUMNS: tuple[str, ...] = (
    "claim_id",
    "response_id",
    "question",
    "claim",
    "passages",
    "label",
    "raw_label",
    "category",
    "source",
)
"""Columns every canonical claim frame has, in this order (then optional ones)."""

# --------------------------------------------------------------------------- validation


def validate_claim_frame(frame: pd.DataFrame, file: str) -> None:
    """Check a canonical claim frame; raise at the first problem.

    Parameters
    ----------
    frame : DataFrame
        Claim frame; its index holds the user-visible row numbers (1-based JSONL lines).
    file : str
        File named in messages.

    Raises
    ------
    DataError
        Naming file, row and field: a missing column (row ``"header"``), an id or claim
        that is not a non-empty string, a question that is not a string, passages that are
        not a non-empty list of non-empty strings, a label outside green / yellow / red, a
        category that is not a string, a criticality that is not a non-negative integer,
        a duplicate unit (``unit_id``, else ``claim_id``), or one claim with two labels.
    """
    for column in CLAIM_COLUMNS:
        if column not in frame.columns:
            raise DataError("required column missing", file=file, row="header", field=column)
    key = "unit_id" if "unit_id" in frame.columns else "claim_id"
    seen: dict[str, Any] = {}
    claim_label: dict[str, str] = {}
    has_crit = "criticality" in frame.columns
    for row, rec in zip(frame.index, frame.to_dict("records"), strict=True):
        _check_claim_fields(rec, key, has_crit, file, row)
        _check_claim_unique(rec, key, seen, claim_label, file, row)


def _check_claim_fields(rec: dict, key: str, has_crit: bool, file: str, row: Any) -> None:
    """One row's own fields, in the order the validator documents them."""
    for column in ("claim_id", "response_id", "claim", *([key] if key != "claim_id" else [])):
        problem = text_problem(rec[column], allow_empty=False)
        if problem:
            raise DataError(problem, file=file, row=row, field=column)
    for column in ("question", "category"):
        problem = text_problem(rec[column], allow_empty=True)
        if problem:
            raise DataError(problem, file=file, row=row, field=column)
    problem = passages_problem(rec["passages"])
    if problem:
        raise DataError(problem, file=file, row=row, field="passages")
    if rec["label"] not in SEVERITY:
        raise DataError(
            f"label must be one of {LABELS}, got {rec['label']!r}",
            file=file,
            row=row,
            field="label",
        )
    if has_crit and not pd.isna(rec["criticality"]):
        problem = criticality_problem(rec["criticality"])
        if problem:
            raise DataError(problem, file=file, row=row, field="criticality")


def _check_claim_unique(
    rec: dict,
    key: str,
    seen: dict[str, Any],
    claim_label: dict[str, str],
    file: str,
    row: Any,
) -> None:
    """A unit occurs once and a claim has one label.

    Records this row in `seen` (first row per unit) and `claim_label` (first label per
    claim), against which the rows after it are checked.
    """
    unit = rec[key]
    if unit in seen:
        raise DataError(
            f"duplicate {key} {unit!r} (first at row {seen[unit]})",
            file=file,
            row=row,
            field=key,
        )
    seen[unit] = row
    previous = claim_label.setdefault(rec["claim_id"], rec["label"])
    if previous != rec["label"]:
        raise DataError(
            f"claim {rec['claim_id']!r} has two labels ({previous!r}, {rec['label']!r})",
            file=file,
            row=row,
            field="label",
        )


def passages_problem(value: Any) -> str | None:
    if not isinstance(value, (list, tuple)):
        return f"passages must be a list of strings, got {type(value).__name__}"
    if len(value) == 0:
        return "passages is an empty list: a claim needs at least one passage"
    for k, passage in enumerate(value):  # numbered from 1, like the rows (JSONL lines)
        if not isinstance(passage, str):
            return f"passage {k + 1} must be a string, got {type(passage).__name__}"
        if not passage.strip():
            return f"passage {k + 1} is empty"
    return None


def criticality_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return f"criticality must be a non-negative integer, got {type(value).__name__} {value!r}"
    if value < 0:
        return f"criticality must be a non-negative integer, got {value!r}"
    return None


# --------------------------------------------------------------------------- building a frame


def _data_root(data_dir: str | None, how_to: str) -> Path:
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    if root is None:
        raise DataNotFoundError(f"RUNNER_DATA_DIR is not set. {how_to}")
    return root


def data_file(path: str | None, data_dir: str | None, relative: str, how_to: str) -> Path:
    """The file at `path`, else `relative` under the data root; `how_to` says how to get it."""
    file = Path(path).expanduser() if path else _data_root(data_dir, how_to) / relative
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found. {how_to}")
    return file


def check_limit(limit: int | None) -> None:
    """Raise `ConfigError` unless `limit` is a positive integer or None."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive integer or null, got {limit!r}")


def record_field(record: dict, key: str, file: Path, line: int) -> Any:
    """``record[key]``, or a `DataError` naming file, line and the missing field."""
    if key not in record:
        raise DataError("required field missing", file=str(file), row=line, field=key)
    return record[key]


def str_list(value: Any, file: Path, line: int, key: str) -> list[str]:
    """`value` as a list of strings, or a `DataError` naming file, line and `key`."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError("must be a list of strings", file=str(file), row=line, field=key)
    return list(value)


def mapped_label(value: Any, table: dict[str, str], file: Path, line: int, key: str) -> str:
    """A raw label mapped onto green / yellow / red by `table` (`DataError` if unknown)."""
    try:
        return to_label(value, table)
    except ValueError as exc:
        raise DataError(str(exc), file=str(file), row=line, field=key) from None


def finish(
    rows: list[dict], lines: list[int], file: Path, name: str, loader: str, params: dict, info: dict
) -> LoadedData:
    """A loader's rows as a validated canonical claim frame with its fingerprint and info.

    `lines` are the rows' 1-based file lines (named in messages); `loader` and `params`
    enter the fingerprint; `info` adds to (and overrides) the counts computed here. The
    claim loaders name themselves ``runner.data.claims.<loader>``, where they lived when
    their fingerprints were first computed, so moving code changes no fingerprint (nor a
    cache keyed on one); a changed mapping bumps `LOADER_VERSION` instead.
    """
    if not rows:
        raise DataError("no claims to load", file=str(file))
    frame = pd.DataFrame(rows, index=pd.Index(lines, name="line"))
    order = list(CLAIM_COLUMNS) + [c for c in frame.columns if c not in CLAIM_COLUMNS]
    frame = frame[order]
    validate_claim_frame(frame, str(file))
    frame = frame.reset_index(drop=True)
    claims = frame.drop_duplicates("claim_id")
    info = {
        "rows": len(frame),
        "claims": int(frame["claim_id"].nunique()),
        "responses": int(frame["response_id"].nunique()),
        "labels": count_values(claims["label"]),
        "raw_labels": count_values(claims["raw_label"]),
        "flagged_positives": int((claims["label"] != "green").sum()),
        "categories": count_values(claims.loc[claims["category"] != "", "category"]),
        "origin": "local",
        "public_benchmark": False,  # a user's claim file; public loaders say True
        **info,
    }
    return LoadedData(
        name=name,
        frame=frame,
        files=[str(file)],
        fingerprint=frame_fingerprint(fingerprint_files([file]), loader, LOADER_VERSION, params),
        info=info,
    )


def count_values(values: Any) -> dict[str, int]:
    """How often each value occurs (as strings), sorted by value."""
    return dict(sorted(Counter(str(v) for v in values).items()))


def strict_records(file: Path) -> list[tuple[int, dict]]:
    """The (line, record) pairs of a JSONL file; the first bad line raises."""
    records, _ = read_jsonl(file, IssueLog(skip_invalid=False))
    return records
