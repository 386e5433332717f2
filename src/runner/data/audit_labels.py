"""Audit labels: the hallucination labels of audited rows, joined onto a route run's decisions.

Why a loader of its own: the audit (`runner.studies.audit`) estimates the accepted risk
from a seeded random sample of accepted rows, so a label is only usable when its row was
accepted and (by default) marked for audit by the route run. Checking that here, naming
file, row and field, keeps a wrong labels file from ever reaching the estimate
(`runner.routing.audit.estimate`).

The rows come out in audit order, the order of the route run's decisions, whatever the
labels file's order: the audit's running test (`runner.routing.sequential`) feeds new rows
in this order, and its bets stay valid only in an order not chosen from the labels.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import fingerprint_files, frame_fingerprint
from runner.data.rag_file import parse_label, read_records
from runner.data.response_frame import as_id
from runner.data.row_issues import IssueLog
from runner.errors import ConfigError, DataError, DataNotFoundError

LOADER = "runner.routing.audit"
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
    """Audit labels joined onto the routed decisions they judge.

    Parameters
    ----------
    decisions : str
        ``decisions.parquet`` written by the route experiment.
    labels : str
        ``.jsonl`` / ``.csv`` / ``.parquet`` with an id and a label per audited row (label
        spellings as in the rag_file format); other columns are ignored.
    scope : {"marked", "accepted"}
        Which rows may be labelled: only those the route run marked for audit (default;
        the random sample the interval assumes), or any accepted row.

    Returns
    -------
    LoadedData
        Frame ``id, label, risk, model, label_row`` (the labels file's row, for messages)
        in the order of the decisions file; ``info["label_source"]`` names the labels file
        and its label field.

    Raises
    ------
    DataError
        A label that does not parse, an id not in the decisions, a row outside `scope`,
        or a duplicate id, naming file, row and field.
    """
    if scope not in SCOPES:
        raise ConfigError(f"dataset.scope={scope!r}: one of {SCOPES}")
    dec_path, lab_path = Path(decisions).expanduser(), Path(labels).expanduser()
    for path in (dec_path, lab_path):
        if not path.is_file():
            raise DataNotFoundError(f"{path} not found")
    if lab_path.suffix.lower() not in (".jsonl", ".csv", ".parquet"):
        raise ConfigError(f"dataset.labels={labels!r}: extension .jsonl, .csv or .parquet")
    routed = pd.read_parquet(dec_path)
    for column in ("id", "decision", "audit", "model"):
        if column not in routed.columns:
            raise DataError("not a decisions file", file=str(dec_path), row="header", field=column)
    by_id = routed.set_index("id")
    # a cascade's route accepts through its final decision (the verifier's accepts too)
    accepted = "final_decision" if "final_decision" in routed.columns else "decision"
    records, rows = read_records(lab_path, IssueLog(skip_invalid=False))
    out, seen = [], {}
    for row, rec in zip(rows, records, strict=True):
        ident = as_id(rec.get(id_column))
        if not isinstance(ident, str) or ident not in by_id.index:
            raise DataError(
                f"id {ident!r} is not in the decisions file {dec_path}",
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
        seen[ident] = row
        decision, marked = by_id.at[ident, accepted], bool(by_id.at[ident, "audit"])
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
        label = parse_label(rec.get(label_column))
        if label is None:
            raise DataError(
                f"label must be 1/0, true/false, hallucinated/faithful or FAIL/PASS, got "
                f"{rec.get(label_column)!r}",
                file=str(lab_path),
                row=row,
                field=label_column,
            )
        out.append(
            {
                "id": ident,
                "label": label,
                "risk": float(by_id.at[ident, "risk"]),
                "model": str(by_id.at[ident, "model"]),
                "label_row": row,
            }
        )
    if not out:
        raise DataError("no audit labels", file=str(lab_path))
    frame = _in_audit_order(pd.DataFrame(out), routed["id"])
    params = {"scope": scope, "id_column": id_column, "label_column": label_column}
    digest = fingerprint_files([dec_path, lab_path])
    return LoadedData(
        name=name,
        frame=frame,
        files=[str(lab_path), str(dec_path)],
        fingerprint=frame_fingerprint(digest, LOADER, LOADER_VERSION, params),
        info={
            "rows": len(frame),
            "labelled": True,
            "marked_rows": int(routed["audit"].sum()),
            "accepted_rows": int((routed[accepted] == "accept").sum()),
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
