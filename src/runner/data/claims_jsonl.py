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
    """A user's own claim file (format: ``docs/claims_format.md``).

    One JSON object per line with ``question`` (str, may be ""), ``claim`` (non-empty
    str), ``passages`` (non-empty list of non-empty str) and ``label`` (green / yellow /
    red, or supported / partial / partially_supported / unsupported / not_supported, any
    case), and optionally ``claim_id`` (unique, default ``<file stem>:<line>``),
    ``response_id`` (default: ``q:<sha1(question)[:16]>`` when the question is not empty,
    so claims of one answer group together, else the claim id), ``category`` (str) and
    ``criticality`` (non-negative int). Any other field is an error, so a misspelt field
    never goes unnoticed. Blank lines are ignored.

    Parameters
    ----------
    path : str
        The JSONL file.
    limit : int, optional
        Keep the first N valid claims.
    skip_invalid : bool
        False (default): the first bad line raises. True: bad lines are dropped, counted and
        listed in ``info["skipped"]``.
    name : str
        Dataset name recorded with the run.

    Returns
    -------
    LoadedData

    Raises
    ------
    DataError
        Naming the file, the 1-based line and the field at fault.
    """
    check_limit(limit)
    file = Path(path).expanduser()
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found: claims_jsonl needs path=<your .jsonl file>")
    issues = IssueLog(skip_invalid=skip_invalid)
    records, blank = read_jsonl(file, issues)
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
    params = {"limit": limit, "skip_invalid": skip_invalid, "path": str(file)}
    info = {
        "blank_lines": blank,
        "skipped_rows": issues.skipped_rows(),
        "skipped": issues.skipped(),
    }
    # fingerprinted under its former name, runner.data.claims.*: see `finish`
    loaded = finish(rows, lines, file, name, "runner.data.claims.load_claims_jsonl", params, info)
    if "criticality" in loaded.frame.columns:
        loaded.frame["criticality"] = loaded.frame["criticality"].astype("Int64")
    return loaded


def _user_row(rec: dict, file: Path, line: int, issues: IssueLog) -> dict | None:
    where = str(file)
    unknown = sorted(set(rec) - set(USER_REQUIRED) - set(USER_OPTIONAL))
    if unknown:
        allowed = ", ".join(USER_REQUIRED + USER_OPTIONAL)
        issues.add(where, line, unknown[0], f"unknown field (allowed: {allowed})")
        return None
    for key in USER_REQUIRED:
        if key not in rec:
            issues.add(where, line, key, "required field missing")
            return None
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
    for key, problem in checks:
        if problem:
            issues.add(where, line, key, problem)
            return None
    question = rec["question"]
    claim_id = rec.get("claim_id", f"{file.stem}:{line}")
    if "response_id" in rec:
        response_id = rec["response_id"]
    elif question.strip():
        response_id = "q:" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:16]
    else:
        response_id = claim_id
    row = {
        "claim_id": claim_id,
        "response_id": response_id,
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
