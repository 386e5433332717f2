"""An experiment's MLflow traces as the canonical response frame (`dataset=mlflow_traces`).

Why a loader: a team whose RAG app is instrumented with MLflow Tracing already has its
traffic in the tracking store; reading it there (rather than asking for a hand-made export)
lets every study that reads a RAG frame (operating_report, fit_gate, route, audit, the
rq-style gate comparisons) run on it, and lets `route` write its decisions back onto the
same traces. The per-trace mapping is `runner.data.traces`; this module talks to the store.

Every trace the search returns is accounted for: one that cannot be a row (no retriever
span, an empty answer, an error state, ...) raises a `DataError` naming the trace id, or,
with ``skip_invalid=True``, is counted and listed in ``info["skipped"]`` (the trace id in
``row`` and ``id``), never dropped silently.

Traces are read in request-time order (then trace id), so the same store and filter give the
same frame, and the fingerprint (trace ids and the rows' text) changes when a trace does.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import frame_fingerprint
from runner.data.row_issues import IssueLog
from runner.data.traces import HUMAN, TraceMapping, TraceProblem, trace_row
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.settings import checked_by

LOADER_VERSION = 1
PAGE = 500
"""Traces per search request (the store's page)."""
SHOWN = 5
"""Trace ids named in a message about many traces."""
log = logging.getLogger(__name__)


def check_trace_settings(
    experiment: Any, max_results: int | None, since: Any, until: Any, **_: Any
) -> None:
    """Refuse settings that cannot work, before the store is opened (also run by the schema)."""
    if experiment in (None, "") or str(experiment) == "???":
        raise ConfigError("dataset.experiment: the MLflow experiment (name or id) to read")
    if max_results is not None and (isinstance(max_results, bool) or int(max_results) < 1):
        raise ConfigError(f"dataset.max_results={max_results!r}: a positive number, or null")
    for key, value in (("since", since), ("until", until)):
        if value is not None:
            to_ms(value, key)


def to_ms(value: Any, key: str) -> int:
    """Epoch milliseconds from an int (ms) or an ISO-8601 date/time (UTC when no zone)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    try:
        stamp = datetime.datetime.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(
            f"dataset.{key}={value!r}: an ISO-8601 date/time (2026-01-31, "
            "2026-01-31T12:00:00+00:00) or epoch milliseconds"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.UTC)
    return int(stamp.timestamp() * 1000)


def search_filter(filter_string: str | None, since: Any, until: Any) -> str | None:
    """The user's filter with the time range ANDed on (``timestamp_ms`` is request time).

    MLflow's search syntax has no parentheses or OR, so ANDing clauses keeps its meaning.
    """
    parts = [filter_string] if filter_string else []
    if since is not None:
        parts.append(f"timestamp_ms >= {to_ms(since, 'since')}")
    if until is not None:
        parts.append(f"timestamp_ms < {to_ms(until, 'until')}")
    return " AND ".join(parts) or None


def resolve_experiment(client: Any, experiment: Any, uri: str) -> tuple[str, str]:
    """(id, name) of an experiment given by name or id; a missing one says where it looked."""
    found = client.get_experiment_by_name(str(experiment))
    if found is None and str(experiment).isdigit():
        try:
            found = client.get_experiment(str(experiment))
        except Exception:  # MLflow raises its own error for an unknown id
            found = None
    if found is None:
        raise DataNotFoundError(
            f"dataset.experiment={experiment!r}: no such experiment in the tracking store "
            f"{uri} (set dataset.tracking_uri, or tracking.uri, to the store your app logs to)"
        )
    return found.experiment_id, found.name


def search_all(
    uri: str,
    experiment_id: str,
    filter_string: str | None,
    max_results: int | None,
    include_spans: bool = True,
) -> list[Any]:
    """Every matching trace, paginated, oldest first (then by trace id)."""
    from mlflow.tracing.client import TracingClient

    client = TracingClient(tracking_uri=uri)
    traces: list[Any] = []
    token = None
    while True:
        want = PAGE if max_results is None else min(PAGE, int(max_results) - len(traces))
        page = client.search_traces(
            locations=[experiment_id],
            filter_string=filter_string,
            max_results=want,
            order_by=["timestamp_ms ASC"],
            page_token=token,
            include_spans=include_spans,
        )
        traces.extend(page)
        token = page.token
        if not token or not page or (max_results is not None and len(traces) >= max_results):
            break
    traces.sort(key=lambda t: (t.info.request_time or 0, t.info.trace_id))
    return traces


@checked_by(check_trace_settings)
def load_mlflow_traces(
    experiment: str,
    tracking_uri: str | None = None,
    filter_string: str | None = None,
    since: Any = None,
    until: Any = None,
    max_results: int | None = None,
    question_key: str | None = "question",
    answer_key: str | None = None,
    source_tag: str = "source",
    task_tag: str = "task",
    label: str | None = None,
    skip_invalid: bool = False,
    name: str = "mlflow_traces",
) -> LoadedData:
    """Read an experiment's traces into the canonical response frame (settings:
    `runner.data.base`; a trace plays the part of a row, named by its trace id).

    ``experiment`` is the MLflow experiment name (or id) the app logs its traces to;
    ``tracking_uri`` the store (None means the run's own, ``tracking.uri``, SQLite under
    artifacts/ by default, filled in by the pipeline). Which traces: ``filter_string``
    (MLflow's trace filter syntax), a request-time range ``since`` / ``until`` (ISO-8601 or
    epoch ms; ``until`` exclusive) and a cap ``max_results`` (oldest first). The mapping:
    ``question_key``, ``answer_key``, ``source_tag``, ``task_tag`` and ``label``
    (`runner.data.traces.TraceMapping`). A bad trace is a `DataError` naming the trace id
    and the field at fault (with ``skip_invalid``, skipped and counted), and so is a
    search that leaves no usable trace.

    ``info`` adds ``location``, ``tracking_uri``, ``experiment_id``, ``experiment``,
    ``filter``, ``labelled``, ``labelled_rows``, ``label``, ``label_names`` (the
    assessments that could hold a label), ``ids``, ``groups``, ``rows_read`` and
    ``positives`` (when labelled); each skipped trace's ``id`` is its trace id.
    """
    check_trace_settings(experiment, max_results, since, until)
    if not tracking_uri:
        raise ConfigError("dataset.tracking_uri: the tracking store to read traces from")
    store, traces = _read(experiment, tracking_uri, filter_string, since, until, max_results)
    mapping = TraceMapping(question_key, answer_key, source_tag, task_tag, label)
    issues = IssueLog(skip_invalid=skip_invalid)
    frame, labelling = _map(traces, mapping, issues, _where(store))
    params = {
        "experiment_id": store["experiment_id"],
        "filter": store["filter"],
        "max_results": max_results,
        "mapping": vars(mapping),
        "skip_invalid": skip_invalid,
    }
    return _record(frame, store, labelling, issues, len(traces), params, name)


def _where(store: dict[str, Any]) -> str:
    """The experiment as messages name it (in the place of a file)."""
    return f"MLflow experiment {store['experiment']!r}"


def _read(
    experiment: str,
    tracking_uri: str,
    filter_string: str | None,
    since: Any,
    until: Any,
    max_results: int | None,
) -> tuple[dict[str, Any], list[Any]]:
    """Where the traces are (``info``'s keys for it) and the traces the search matches;
    none matching fails here."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    exp_id, exp_name = resolve_experiment(client, experiment, tracking_uri)
    query = search_filter(filter_string, since, until)
    store = {
        "location": f"{tracking_uri}#experiment={exp_id}",
        "tracking_uri": tracking_uri,
        "experiment_id": exp_id,
        "experiment": exp_name,
        "filter": query,
    }
    traces = search_all(tracking_uri, exp_id, query, max_results)
    if not traces:
        raise DataError(
            f"no traces match (filter: {query!r}) in {tracking_uri}", file=_where(store)
        )
    return store, traces


def _map(
    traces: list[Any], mapping: TraceMapping, issues: IssueLog, where: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The canonical frame of the traces that can be rows (the others go to `issues`), and
    ``info``'s keys on its labels (``label`` int64 when every row has one, else Int64)."""
    rows = []
    for trace in traces:
        row = trace_row(trace, mapping)
        if isinstance(row, TraceProblem):
            issues.add(where, trace.info.trace_id, row.field, row.reason)
            continue
        rows.append(row)
    candidates = label_names(traces)
    if not rows:
        raise DataError(f"no valid traces to load ({len(issues.issues)} skipped)", file=where)
    frame = pd.DataFrame(rows)
    labels = frame["label"]
    labelled = bool(mapping.label) and bool(labels.notna().all())
    frame["label"] = (
        labels.astype("int64") if labelled else pd.array(labels.tolist(), dtype="Int64")
    )
    labelling = {
        "labelled": labelled,
        "labelled_rows": int(labels.notna().sum()),
        "label": mapping.label,
        "label_names": candidates,
    }
    return frame, labelling


def _record(
    frame: pd.DataFrame,
    store: dict[str, Any],
    labelling: dict[str, Any],
    issues: IssueLog,
    rows_read: int,
    params: dict[str, Any],
    name: str,
) -> LoadedData:
    """The `LoadedData`: ``info`` and a fingerprint of the rows' content (the traces play
    the part of a file's bytes) and the settings in `params`."""
    info = {
        "rows": len(frame),
        "origin": "mlflow",
        **store,
        **labelling,
        "skip_invalid": params["skip_invalid"],
        "ids": "trace ids",
        "groups": int(frame["group_id"].nunique()),
        "counts_per_source": _count(frame["source"]),
        "counts_per_task": _count(frame["task"]),
        "skipped": [{**p, "id": p["row"]} for p in issues.skipped()],
        "skipped_rows": issues.skipped_rows(),
        "rows_read": rows_read,
    }
    if labelling["labelled"]:
        info["positives"] = int(frame["label"].sum())
    return LoadedData(
        name=name,
        frame=frame,
        files=[],
        fingerprint=frame_fingerprint(_content_digest(frame), __name__, LOADER_VERSION, params),
        info=info,
    )


def label_names(traces: list[Any]) -> list[str]:
    """Names of the assessments on `traces` that can hold a label (expectations and human
    feedback), to name in an error when ``dataset.label`` is unset or matches none."""
    names = {
        a.name
        for trace in traces
        for a in trace.info.assessments or []
        if a.expectation is not None or str(getattr(a.source, "source_type", "")) == HUMAN
    }
    return sorted(names)


def labelled_traces(data: LoadedData, what: str) -> LoadedData:
    """The traces a study that needs a label on every row (fit_gate, operating_report) uses.

    Why here: only the traces' loader knows why a trace has no label: ``dataset.label`` is
    unset, names no assessment on these traces, or some traces are not labelled yet (normal
    for traffic, which `route` reads unlabelled). Each is one error naming the fix (and the
    first unlabelled trace's id); with ``dataset.skip_invalid=true`` unlabelled traces are
    skipped and counted as the loader counts any bad trace (``info["skipped"]``, field
    ``label``), and the rest are returned. `data.info` is updated in place, so the run's
    manifest says what was used.
    """
    info = data.info
    where = f"MLflow experiment {info.get('experiment')!r}"
    missing = data.frame["label"].isna().to_numpy()
    _check_label_named(info, len(data.frame), missing, what, where)
    if not missing.any():
        return data
    ids = data.frame.loc[missing, "example_id"].astype(str).tolist()
    if not info.get("skip_invalid"):
        raise _unlabelled_error(ids, info.get("label"), len(data.frame), what, where)
    return _skip_unlabelled(data, missing, ids, what, where)


def _check_label_named(
    info: dict[str, Any], traces: int, missing: np.ndarray, what: str, where: str
) -> None:
    """Refuse traces read without ``dataset.label``, or with one on none of them."""
    label = info.get("label")
    names = ", ".join(repr(n) for n in info.get("label_names") or []) or "none"
    if not label:
        raise DataError(
            f"{what} needs labelled traces: set dataset.label=<assessment name>, the "
            "expectation or reviewer (HUMAN) feedback that holds each trace's label "
            f"(expectations and human feedback on these traces: {names})",
            file=where,
            field="dataset.label",
        )
    if missing.all():
        raise DataError(
            f"{what} needs labelled traces: dataset.label={label!r} is on none of the "
            f"{traces} traces as an expectation or a reviewer (HUMAN) feedback "
            f"(expectations and human feedback on these traces: {names}); set dataset.label "
            "to the one that holds the label",
            file=where,
            field="dataset.label",
        )


def _unlabelled_error(ids: list[str], label: Any, traces: int, what: str, where: str) -> DataError:
    """The error for unlabelled traces (`ids`) when they are not skipped: the first by its
    id, how many more, and the three ways out."""
    first = f"trace {ids[0]} has no {label!r} label (an expectation, or a reviewer feedback)"
    others = f"; {len(ids) - 1} more of the {traces} traces have none"
    others, them = (others, "them") if len(ids) > 1 else ("", "it")
    return DataError(
        f"{first}{others}: {what} needs a label on every trace it uses; label {them}, "
        f"leave {them} out (dataset.filter_string), or set dataset.skip_invalid=true to "
        "skip the unlabelled traces (counted as skips)",
        file=where,
        row=ids[0],
        field="label",
    )


def _skip_unlabelled(
    data: LoadedData, missing: np.ndarray, ids: list[str], what: str, where: str
) -> LoadedData:
    """`data` without its unlabelled traces (`ids`), counted and listed as skips in its
    ``info`` (updated in place) and logged."""
    info = data.info
    label = info.get("label")
    kept = data.frame.loc[~missing].reset_index(drop=True)
    kept["label"] = kept["label"].astype("int64")
    reason = f"has no {label!r} label (an expectation, or a reviewer feedback)"
    skipped = [
        {"file": where, "row": i, "field": "label", "reason": f"trace {i} {reason}", "id": i}
        for i in ids
    ]
    shown = ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
    log.warning(
        "skipping %d unlabelled traces of %s (%s): %s uses the %d labelled ones",
        len(ids),
        where,
        shown,
        what,
        len(kept),
    )
    info.update(
        {
            "rows": len(kept),
            "labelled": True,
            "labelled_rows": len(kept),
            "positives": int(kept["label"].sum()),
            "groups": int(kept["group_id"].nunique()),
            "counts_per_source": _count(kept["source"]),
            "counts_per_task": _count(kept["task"]),
            "skipped": list(info.get("skipped") or []) + skipped,
            "skipped_rows": int(info.get("skipped_rows") or 0) + len(ids),
        }
    )
    data.frame = kept
    return data


def _content_digest(frame: pd.DataFrame) -> str:
    """sha256 over the rows as read (the traces play the part of a file's bytes)."""
    digest = hashlib.sha256()
    columns = ["example_id", "group_id", "task", "source", "question", "context", "answer"]
    for record in frame[columns].itertuples(index=False):
        digest.update(json.dumps(list(record)).encode())
    digest.update(json.dumps([None if pd.isna(v) else int(v) for v in frame["label"]]).encode())
    return digest.hexdigest()


def _count(series: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in sorted(Counter(series.tolist()).items())}
