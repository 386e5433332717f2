"""A user's own claim file (``claims_jsonl``; format: ``docs/claims_format.md``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from runner.data.base import LoadedData
from runner.data.claim_frame import check_limit, criticality_problem, finish, passages_problem
from runner.data.claim_labels import to_label
from runner.data.row_issues import IssueLog, text_problem
from runner.data.text_files import read_jsonl
from runner.errors import DataNotFoundError

USER_REQUIRED = ("question", "claim", "passages", "label")
USER_OPTIONAL = ("claim_id", "response_id", "category", "criticality")
USER_LABELS = {
    "green": "green",
    "supported": "green",
    "yellow": "yellow",
    "partial": "yellow",
    "partially_supported": "yellow",
    "red": "red",
    "unsupported": "red",
    "not_supported": "red",
}
"""Labels the user format accepts (lower-case), and what they map to."""


def load_claims_jsonl(
    path: str, limit: int | None = None, skip_invalid: bool = False, name: str = "claims_jsonl"
) -> LoadedData:
    """A user's own claim file (format: ``docs/claims_format.md``; `runner.data.base`).

    ``path`` is the JSONL file (required; there is no default location). One JSON object
    per line with ``question`` (str, may be ""), ``claim`` (non-empty str), ``passages``
    (non-empty list of non-empty str) and ``label`` (green / yellow / red, or supported /
    partial / partially_supported / unsupported / not_supported, any case), and optionally
    ``claim_id`` (unique, default ``<file stem>:<line>``), ``response_id`` (default:
    ``q:<sha1(question)[:16]>`` when the question is not empty, so claims of one answer
    group together, else the claim id), ``category`` (str) and ``criticality``
    (non-negative int). Any other field is an error, so a misspelt field never goes
    unnoticed. Blank lines are ignored. ``limit`` keeps the first valid claims. A bad line
    is a `DataError` naming the file, the 1-based line and the field. ``info`` adds
    ``blank_lines``, ``skipped_rows`` and ``skipped``.
    """
    check_limit(limit)
    file = _locate(path)
    issues = IssueLog(skip_invalid=skip_invalid)
    records, blank = read_jsonl(file, issues)
    rows, lines = _map(records, file, limit, name, issues)
    params = {"limit": limit, "skip_invalid": skip_invalid, "path": str(file)}
    info = {
        "blank_lines": blank,
        "skipped_rows": issues.skipped_rows(),
        "skipped": issues.skipped(),
    }
    return _record(rows, lines, file, name, params, info)


def _locate(path: str) -> Path:
    """The file at ``path``, or a `DataNotFoundError` saying the loader needs one."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found: claims_jsonl needs path=<your .jsonl file>")
    return file


def _map(
    records: list[tuple[int, dict]], file: Path, limit: int | None, name: str, issues: IssueLog
) -> tuple[list[dict], list[int]]:
    """The valid claims (up to ``limit``) as canonical rows, and their lines.

    A repeated ``claim_id`` is a bad line naming the first. When any claim has a
    ``criticality``, the others get ``<NA>``, so the column is there for every row.
    """
    rows, lines = [], []
    ids: dict[str, int] = {}
    for line, rec in records:
        if limit is not None and len(rows) >= limit:
            break
        row = _user_row(rec, file, line, issues)
        if row is None:
            continue
        if row["claim_id"] in ids:
            issues.add(
                str(file),
                line,
                "claim_id",
                f"duplicate claim_id {row['claim_id']!r} (first at line {ids[row['claim_id']]})",
            )
            continue
        ids[row["claim_id"]] = line
        row["source"] = name
        rows.append(row)
        lines.append(line)
    if any("criticality" in r for r in rows):
        for r in rows:
            r["criticality"] = r.get("criticality", pd.NA)
    return rows, lines


def _record(
    rows: list[dict], lines: list[int], file: Path, name: str, params: dict, info: dict
) -> LoadedData:
    """The validated claim frame (`finish`), ``criticality`` as a nullable ``Int64``."""
    # fingerprinted under its former name, runner.data.claims.*: see `finish`
    loaded = finish(rows, lines, file, name, "runner.data.claims.load_claims_jsonl", params, info)
    if "criticality" in loaded.frame.columns:
        loaded.frame["criticality"] = loaded.frame["criticality"].astype("Int64")
    return loaded


def _user_row(rec: dict, file: Path, line: int, issues: IssueLog) -> dict | None:
    """One record as a claim row; None when it is bad (reported to ``issues``)."""
    problem = _field_problem(rec)
    label = None
    if problem is None:
        checks, label = _value_checks(rec)
        problem = next(((key, reason) for key, reason in checks if reason), None)
    if problem is not None:
        issues.add(str(file), line, *problem)
        return None
    question = rec["question"]
    claim_id = rec.get("claim_id", f"{file.stem}:{line}")
    row = {
        "claim_id": claim_id,
        "response_id": _response_id(rec, question, claim_id),
        "question": question,
        "claim": rec["claim"],
        "passages": list(rec["passages"]),
        "label": label,
        "raw_label": rec["label"],
        "category": rec.get("category", "").strip(),
    }
    if "criticality" in rec:
        row["criticality"] = int(rec["criticality"])
    return row


def _field_problem(rec: dict) -> tuple[str, str] | None:
    """The first unknown field, else the first missing required one (field, reason)."""
    unknown = sorted(set(rec) - set(USER_REQUIRED) - set(USER_OPTIONAL))
    if unknown:
        allowed = ", ".join(USER_REQUIRED + USER_OPTIONAL)
        return unknown[0], f"unknown field (allowed: {allowed})"
    for key in USER_REQUIRED:
        if key not in rec:
            return key, "required field missing"
    return None


def _value_checks(rec: dict) -> tuple[list[tuple[str, str | None]], str | None]:
    """Each field's problem (None when fine), in the order reported, and the mapped label
    (None when unknown)."""
    checks = [
        ("question", text_problem(rec["question"], allow_empty=True)),
        ("claim", text_problem(rec["claim"], allow_empty=False)),
        ("passages", passages_problem(rec["passages"])),
    ]
    for key in ("claim_id", "response_id"):
        if key in rec:
            checks.append((key, text_problem(rec[key], allow_empty=False)))
    if "category" in rec:
        checks.append(("category", text_problem(rec["category"], allow_empty=True)))
    if "criticality" in rec:
        checks.append(("criticality", criticality_problem(rec["criticality"])))
    label = None
    try:
        label = to_label(rec["label"], USER_LABELS)
    except ValueError as exc:
        checks.append(("label", str(exc)))
    return checks, label


def _response_id(rec: dict, question: str, claim_id: str) -> str:
    """The record's ``response_id``, else one shared by the claims of one question, else
    the claim id."""
    if "response_id" in rec:
        return rec["response_id"]
    if question.strip():
        return "q:" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:16]
    return claim_id
