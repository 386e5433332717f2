"""Audit labels: the hallucination labels of audited rows, joined onto a route run's decisions.

Why a loader of its own: the audit (`runner.studies.audit`) estimates the accepted risk
from a seeded random sample of accepted rows, so a label is only usable when its row was
accepted and (by default) marked for audit by the route run. Checking that here, naming
file, row and field, keeps a wrong labels file from ever reaching the estimate
(`runner.routing.audit.interval.estimate`).

The rows come out in audit order, the order of the route run's decisions, whatever the
labels file's order: the audit's running test (`runner.routing.audit.sequential`) feeds new rows
in this order, and its bets stay valid only in an order not chosen from the labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import fingerprint_files, frame_fingerprint
from runner.data.rag_file import parse_label, read_records
from runner.data.response_frame import as_id
from runner.data.row_issues import IssueLog
from runner.errors import ConfigError, DataError, DataNotFoundError

LOADER = "runner.routing.audit.interval"
"""Loader identity in the data fingerprint; kept from the loader's first home so the
fingerprints of audit data recorded before the move still match."""
LOADER_VERSION = 1
SCOPES = ("marked", "accepted")


def load_audit_labels(
    decisions: str,
    labels: str,
    scope: str = "marked",
    id_column: str = "id",
    label_column: str = "label",
    name: str = "audit_labels",
) -> LoadedData:
    """Audit labels joined onto the routed decisions they judge, in audit order (``name``
    as in `runner.data.base`).

    ``decisions`` is the ``decisions.parquet`` written by the route experiment; ``labels``
    a ``.jsonl`` / ``.csv`` / ``.parquet`` with an id (``id_column``) and a label
    (``label_column``, spellings as in the rag_file format) per audited row; other columns
    are ignored. ``scope`` says which rows may be labelled: ``"marked"`` (default) only
    those the route run marked for audit (the random sample the interval assumes),
    ``"accepted"`` any accepted row.

    The frame is ``id, label, risk, model, label_row`` (the labels file's row, for
    messages) in the order of the decisions file; ``info`` holds ``labelled``,
    ``marked_rows``, ``accepted_rows``, ``models``, ``scope`` and ``label_source`` (the
    labels file and its label field). A label that does not parse, an id not in the
    decisions, a row outside ``scope`` or a duplicate id is a `DataError` naming file, row
    and field.
    """
    _check_settings(scope)
    dec_path, lab_path = _locate(decisions, labels)
    routed = _read_decisions(dec_path)
    records, rows = read_records(lab_path, IssueLog(skip_invalid=False))
    out = _map(records, rows, routed, scope, id_column, label_column, lab_path)
    frame = _in_audit_order(pd.DataFrame(out), routed.frame["id"])
    params = {"scope": scope, "id_column": id_column, "label_column": label_column}
    return _record(frame, routed, lab_path, scope, label_column, params, name)


@dataclass(frozen=True)
class _Decisions:
    """The route run's decisions, by id, and the column that says whether a row was
    accepted."""

    path: Path
    frame: pd.DataFrame
    by_id: pd.DataFrame
    accepted: str


def _check_settings(scope: str) -> None:
    """Refuse an unknown ``scope`` before any file is read."""
    if scope not in SCOPES:
        raise ConfigError(f"dataset.scope={scope!r}: one of {SCOPES}")


def _locate(decisions: str, labels: str) -> tuple[Path, Path]:
    """The decisions and labels files; a missing one, or a labels file of another
    extension, fails here."""
    dec_path, lab_path = Path(decisions).expanduser(), Path(labels).expanduser()
    for path in (dec_path, lab_path):
        if not path.is_file():
            raise DataNotFoundError(f"{path} not found")
    if lab_path.suffix.lower() not in (".jsonl", ".csv", ".parquet"):
        raise ConfigError(f"dataset.labels={labels!r}: extension .jsonl, .csv or .parquet")
    return dec_path, lab_path


def _read_decisions(dec_path: Path) -> _Decisions:
    """The decisions file, refused when it lacks a column the join needs."""
    routed = pd.read_parquet(dec_path)
    for column in ("id", "decision", "audit", "model"):
        if column not in routed.columns:
            raise DataError("not a decisions file", file=str(dec_path), row="header", field=column)
    # a cascade's route accepts through its final decision (the verifier's accepts too)
    accepted = "final_decision" if "final_decision" in routed.columns else "decision"
    return _Decisions(dec_path, routed, routed.set_index("id"), accepted)


def _map(
    records: list[dict],
    rows: list[int],
    routed: _Decisions,
    scope: str,
    id_column: str,
    label_column: str,
    lab_path: Path,
) -> list[dict]:
    """One row per label, in the labels file's order; any bad row fails, naming it."""
    out, seen = [], {}
    for row, rec in zip(rows, records, strict=True):
        ident = _new_id(rec.get(id_column), row, seen, routed, id_column, lab_path)
        seen[ident] = row
        _check_scope(ident, row, routed, scope, id_column, lab_path)
        out.append(
            {
                "id": ident,
                "label": _label(rec.get(label_column), row, label_column, lab_path),
                "risk": float(routed.by_id.at[ident, "risk"]),
                "model": str(routed.by_id.at[ident, "model"]),
                "label_row": row,
            }
        )
    if not out:
        raise DataError("no audit labels", file=str(lab_path))
    return out


def _new_id(
    value: Any,
    row: int,
    seen: dict[str, int],
    routed: _Decisions,
    id_column: str,
    lab_path: Path,
) -> str:
    """The row's id: one of the decisions' ids, not labelled before in this file."""
    ident = as_id(value)
    if not isinstance(ident, str) or ident not in routed.by_id.index:
        raise DataError(
            f"id {ident!r} is not in the decisions file {routed.path}",
            file=str(lab_path),
            row=row,
            field=id_column,
        )
    if ident in seen:
        raise DataError(
            f"duplicate id {ident!r} (first at row {seen[ident]})",
            file=str(lab_path),
            row=row,
            field=id_column,
        )
    return ident


def _check_scope(
    ident: str, row: int, routed: _Decisions, scope: str, id_column: str, lab_path: Path
) -> None:
    """Refuse a label on a row the audit may not use: not accepted, or (``scope=marked``)
    not in the sample the route run marked for audit."""
    accepted = routed.accepted
    decision, marked = routed.by_id.at[ident, accepted], bool(routed.by_id.at[ident, "audit"])
    if decision != "accept" or (scope == "marked" and not marked):
        what = "accepted" if decision != "accept" else "marked for audit"
        pool = "the marked sample" if scope == "marked" else "accepted rows"
        raise DataError(
            f"row {ident!r} was not {what} ({accepted} {decision!r}); the audit estimates "
            f"the accepted risk from {pool} (dataset.scope={scope})",
            file=str(lab_path),
            row=row,
            field=id_column,
        )


def _label(value: Any, row: int, label_column: str, lab_path: Path) -> int:
    """The row's label as 1 (hallucinated) or 0, or a `DataError` naming the cell."""
    label = parse_label(value)
    if label is None:
        raise DataError(
            f"label must be 1/0, true/false, hallucinated/faithful or FAIL/PASS, got {value!r}",
            file=str(lab_path),
            row=row,
            field=label_column,
        )
    return label


def _record(
    frame: pd.DataFrame,
    routed: _Decisions,
    lab_path: Path,
    scope: str,
    label_column: str,
    params: dict[str, Any],
    name: str,
) -> LoadedData:
    """The `LoadedData`, fingerprinted by both files' bytes and the settings."""
    digest = fingerprint_files([routed.path, lab_path])
    return LoadedData(
        name=name,
        frame=frame,
        files=[str(lab_path), str(routed.path)],
        fingerprint=frame_fingerprint(digest, LOADER, LOADER_VERSION, params),
        info={
            "rows": len(frame),
            "labelled": True,
            "marked_rows": int(routed.frame["audit"].sum()),
            "accepted_rows": int((routed.frame[routed.accepted] == "accept").sum()),
            "models": sorted(frame["model"].unique().tolist()),
            "scope": scope,
            "label_source": {"file": str(lab_path), "field": label_column},
        },
    )


def _in_audit_order(frame: pd.DataFrame, routed_ids: pd.Series) -> pd.DataFrame:
    """`frame`'s rows in the order their ids have in the decisions (`routed_ids`).

    Why: the labels file's order is the reviewers' (or a spreadsheet's sort), possibly
    chosen from the labels; the decisions' order was fixed before any row was labelled.
    """
    position = pd.Series(range(len(routed_ids)), index=routed_ids.to_numpy())
    order = position.loc[frame["id"].to_numpy()].to_numpy().argsort(kind="stable")
    return frame.iloc[order].reset_index(drop=True)
