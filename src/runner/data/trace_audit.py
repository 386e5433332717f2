"""Audit labels read from the traces themselves (`dataset=mlflow_trace_audit`): no file.

Why: after `route` over ``dataset=mlflow_traces`` the decisions are assessments on the
traces (`runner.routing.audit.trace_feedback`) and reviewers judge the marked traces in the MLflow
UI, which stores each judgement as a human feedback assessment. This loader joins the two
on the trace and hands `runner.studies.audit` the same frame as `load_audit_labels` does
(``id, label, risk, model``), so route -> review in the UI -> audit needs no export.

Rows come oldest trace first (then by trace id), as `route` read them: the order the
audit's running test feeds new rows in, fixed before any row was labelled.

Which rows: with ``scope=marked`` (the default) the audit sample of ONE routing run,
``routing_run`` (default: the newest routing run that wrote on these traces). Each run's
marks carry its run id, and a later run supersedes, never erases, an earlier run's mark,
so any run's sample can be read back exactly, and never a union of several runs' marks
(the accepted-risk bound is drawn for one run's seeded sample). With ``scope=accepted``:
every trace whose current decision (`runner.data.route_answer`) is accept. Reviewer labels
on other traces (the review band, say) are their work, not the audit's: they are counted in
``info["ignored_labels"]``, not used.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import frame_fingerprint
from runner.data.mlflow_traces import resolve_experiment, search_all
from runner.data.rag_file import parse_label
from runner.data.traces import (
    ROUTE_SOURCE,
    RUN_KEY,
    is_routed,
    latest_assessment,
    newest,
    route_answer,
)
from runner.errors import ConfigError, DataError
from runner.settings import checked_by

LOADER_VERSION = 2
SCOPES = ("marked", "accepted")
DECISION, RISK, AUDIT = "ragscope_decision", "ragscope_risk", "ragscope_audit"
SHOWN = 5
"""Routing runs named in an error message (newest first)."""


def _model(assessment: Any) -> str:
    """``<name>/<version>`` of the model version that logged a `route` assessment."""
    return str(assessment.source.source_id).removeprefix(ROUTE_SOURCE)


def _run(assessment: Any) -> str:
    return str((assessment.metadata or {}).get(RUN_KEY) or "")


@dataclass
class RoutingRuns:
    """The routing runs that wrote on an experiment's traces: their models and audit marks."""

    last_write: dict[str, int]
    """run id -> creation time (ms) of the newest assessment it wrote."""
    models: dict[str, set[str]]
    """run id -> the model versions it routed with."""
    marks: dict[str, dict[str, Any]]
    """run id -> trace id -> its audit mark (value True) on that trace, valid or superseded."""

    @classmethod
    def of(cls, traces: list[Any]) -> RoutingRuns:
        """Collect every `route` assessment of `traces` by the run that wrote it."""
        runs = cls({}, {}, {})
        for trace in traces:
            for a in trace.info.assessments or []:
                run = _run(a)
                if not is_routed(a) or not run:
                    continue
                runs.last_write[run] = max(runs.last_write.get(run, 0), a.create_time_ms or 0)
                runs.models.setdefault(run, set()).add(_model(a))
                if a.name == AUDIT and a.value is True:
                    runs.marks.setdefault(run, {})[trace.info.trace_id] = a
        return runs

    def newest_first(self, model: str | None = None) -> list[str]:
        """Run ids, newest write first (those that routed with `model` when given)."""
        runs = [r for r in self.last_write if model is None or model in self.models[r]]
        return sorted(runs, key=lambda r: (self.last_write[r], r), reverse=True)

    def named(self, model: str | None = None) -> str:
        """The newest few run ids for a message."""
        runs = self.newest_first(model)
        more = f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
        return (", ".join(runs[:SHOWN]) + more) if runs else "none"


def check_trace_audit_settings(scope: Any, routing_run: Any, **_: Any) -> None:
    """Refuse settings that cannot work, before the store is opened (also run by the schema)."""
    if scope not in SCOPES:
        raise ConfigError(f"dataset.scope={scope!r}: one of {SCOPES}")
    if routing_run is not None and scope != "marked":
        raise ConfigError(
            f"dataset.routing_run={routing_run!r} picks a routing run's audit sample: it "
            "needs dataset.scope=marked (scope=accepted reads every trace's current decision)"
        )
    if routing_run is not None and not str(routing_run).strip():
        raise ConfigError("dataset.routing_run: the MLflow run id of a route run, or null")


@checked_by(check_trace_audit_settings)
def load_trace_audit_labels(
    experiment: str,
    tracking_uri: str | None = None,
    label: str = "hallucinated",
    scope: str = "marked",
    model: str | None = None,
    routing_run: str | None = None,
    name: str = "mlflow_trace_audit",
) -> LoadedData:
    """Reviewers' labels on audited traces, joined onto the decisions logged on them
    (``name`` as in `runner.data.base`).

    Reads the traces of ``experiment`` in the store ``tracking_uri`` (the pipeline fills
    in the run's own). ``label`` names the reviewers' human feedback holding the label
    (spellings as in the rag_file format; the MLflow UI's yes/no feedback is true/false).
    ``scope``: ``marked`` reads the audit sample of one routing run, ``routing_run`` (its
    MLflow run id; None: the newest routing run that wrote on these traces); ``accepted``
    every trace whose current decision is accept. ``model`` (``<name>/<version>``): with
    ``scope=marked`` the newest routing run of that model version (when ``routing_run`` is
    not given) and a check that the run used it; with ``scope=accepted`` whose current
    decisions to audit (None: the only one on labelled traces).

    The frame is ``id, label, risk, model``, as `load_audit_labels` gives; ``info`` holds
    ``location``, ``labelled``, ``marked_rows``, ``accepted_rows``, ``models``, ``scope``,
    ``routing_run_id``, ``ignored_labels`` and ``label_source``. A `DataError` says when
    no labelled trace is in scope, a label does not parse (naming the trace), a routing
    run did not write on these traces, or (``scope=accepted``) labelled traces were routed
    by several model versions and ``model`` is not given.
    """
    _check_settings(scope, routing_run, tracking_uri)
    exp_id, where, traces = _read(experiment, tracking_uri)
    rows, ignored, info, run = _map(traces, label, scope, model, routing_run, where)
    params = {
        "experiment_id": exp_id,
        "label": label,
        "scope": scope,
        "model": info["models"],
        "routing_run": run,
    }
    location = f"{tracking_uri}#experiment={exp_id}"
    return _record(rows, ignored, info, params, location, where, name)


def _check_settings(scope: str, routing_run: str | None, tracking_uri: str | None) -> None:
    """`check_trace_audit_settings`, and a store to read (the pipeline fills in its own)."""
    check_trace_audit_settings(scope, routing_run)
    if not tracking_uri:
        raise ConfigError("dataset.tracking_uri: the tracking store holding the traces")


def _read(experiment: str, tracking_uri: str) -> tuple[str, str, list[Any]]:
    """The experiment's id, its name for messages and its traces (without their spans)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    exp_id, exp_name = resolve_experiment(client, experiment, tracking_uri)
    where = f"MLflow experiment {exp_name!r}"
    traces = search_all(tracking_uri, exp_id, None, None, include_spans=False)
    return exp_id, where, traces


def _map(
    traces: list[Any],
    label: str,
    scope: str,
    model: str | None,
    routing_run: str | None,
    where: str,
) -> tuple[list[dict], Counter, dict[str, Any], str | None]:
    """The rows in ``scope``, the labels left out (counted by why), what ``info`` says of
    them and the routing run whose sample they are (None for ``scope=accepted``)."""
    labelled = []
    for trace in traces:
        found = latest_assessment(trace, label, ("human_feedback",))
        if found is not None:
            labelled.append((trace, found))
    runs = RoutingRuns.of(traces)
    if scope == "marked":
        run = _pick_run(runs, routing_run, model, where)
        rows, ignored, info = _marked_rows(traces, labelled, runs, run, label, where)
    else:
        run = None
        rows, ignored, info = _accepted_rows(traces, labelled, model, label, where)
    if not rows:
        raise DataError(
            f"no {label!r} human feedback on traces "
            + (f"in the audit sample of routing run {run}" if run else f"{info['models']} accepted")
            + f" (labels elsewhere: {dict(ignored)})",
            file=where,
        )
    return rows, ignored, info, run


def _record(
    rows: list[dict],
    ignored: Counter,
    info: dict[str, Any],
    params: dict[str, Any],
    location: str,
    where: str,
    name: str,
) -> LoadedData:
    """The `LoadedData`, fingerprinted by the rows' ids and labels (the traces play the
    part of a file) and the settings in `params`."""
    frame = pd.DataFrame(rows)
    digest = frame_fingerprint(
        str(sorted((r["id"], r["label"]) for r in rows)), __name__, LOADER_VERSION, params
    )
    return LoadedData(
        name=name,
        frame=frame,
        files=[],
        fingerprint=digest,
        info={
            "rows": len(frame),
            "origin": "mlflow",
            "location": location,
            **info,
            "scope": params["scope"],
            "routing_run_id": params["routing_run"],
            "ignored_labels": dict(sorted(ignored.items())),
            "label_source": {"file": where, "field": params["label"]},
        },
    )


def _pick_run(runs: RoutingRuns, routing_run: str | None, model: str | None, where: str) -> str:
    """The routing run whose sample to audit: the one named, else the newest (of `model`)."""
    if routing_run is not None:
        run = str(routing_run).strip()
        if run not in runs.last_write:
            raise DataError(
                f"dataset.routing_run={run!r}: no routing run with that id wrote on these "
                f"traces (routing runs here, newest first: {runs.named()})",
                file=where,
            )
        if model is not None and model not in runs.models[run]:
            raise DataError(
                f"dataset.model={model!r}: routing run {run} routed with "
                f"{sorted(runs.models[run])}",
                file=where,
            )
        return run
    newest = runs.newest_first(model)
    if not newest:
        of = f" with {model}" if model else ""
        raise DataError(
            f"no routing run{of} wrote on these traces: route them first (experiment=route "
            "dataset=mlflow_traces)"
            + (f"; routing runs of other models: {runs.named()}" if model and runs.models else ""),
            file=where,
        )
    return newest[0]


def _marked_rows(
    traces: list[Any],
    labelled: list[tuple[Any, Any]],
    runs: RoutingRuns,
    run: str,
    label: str,
    where: str,
) -> tuple[list[dict], Counter, dict[str, Any]]:
    """The labelled traces in routing run `run`'s audit sample, and why other labels are not."""
    marks = runs.marks.get(run, {})
    if not marks:
        raise DataError(
            f"routing run {run} marked no trace for audit (routing.audit_fraction=0, or no "
            "accepted traces); set dataset.routing_run=<run id> to audit another run's sample "
            f"(routing runs here, newest first: {runs.named()})",
            file=where,
        )
    models = sorted({_model(m) for m in marks.values()})
    rows, ignored = [], Counter()
    for trace, found in labelled:
        ident = trace.info.trace_id
        mark = marks.get(ident)
        if mark is None:
            decision = route_answer(trace, DECISION)
            if decision is None:
                ignored["not routed"] += 1
            elif decision.value != "accept":
                ignored[f"decision {decision.value}"] += 1
            else:
                ignored[f"accepted, not in the audit sample of run {run}"] += 1
            continue
        rows.append(
            {
                "id": ident,
                "label": _label(found, label, ident, where),
                "risk": _mark_risk(trace, mark, run),
                "model": _model(mark),
            }
        )
    sample = next(iter(marks.values())).metadata or {}
    info = {
        "labelled": True,
        "marked_rows": len(marks),
        "accepted_rows": _int(sample.get("accepted_rows")),
        "models": models,
    }
    return rows, ignored, info


def _accepted_rows(
    traces: list[Any], labelled: list[tuple[Any, Any]], model: str | None, label: str, where: str
) -> tuple[list[dict], Counter, dict[str, Any]]:
    """The labelled traces whose current decision is accept, by one model version."""
    decided = {t.info.trace_id: route_answer(t, DECISION) for t in traces}
    models = sorted({_model(d) for t, _ in labelled if (d := decided[t.info.trace_id])})
    if model is None:
        if len(models) > 1:
            raise DataError(
                f"labelled traces carry current decisions of several models {models}: set "
                "dataset.model=<name>/<version> to audit one",
                file=where,
            )
        if not models:
            raise DataError(
                f"no trace with a {label!r} human feedback carries a ragscope_decision: "
                "route the traces first (experiment=route dataset=mlflow_traces)",
                file=where,
            )
        model = models[0]
    rows, ignored = [], Counter()
    for trace, found in labelled:
        ident = trace.info.trace_id
        decision = decided[ident]
        if decision is None or _model(decision) != model:
            ignored["not routed by this model"] += 1
            continue
        if decision.value != "accept":
            ignored[f"decision {decision.value}"] += 1
            continue
        risk = route_answer(trace, RISK)
        rows.append(
            {
                "id": ident,
                "label": _label(found, label, ident, where),
                "risk": float(risk.value) if risk is not None else float("nan"),
                "model": model,
            }
        )
    current = [d for d in decided.values() if d is not None and _model(d) == model]
    info = {
        "labelled": True,
        "marked_rows": sum(
            (m := route_answer(t, AUDIT)) is not None and m.value is True for t in traces
        ),
        "accepted_rows": sum(d.value == "accept" for d in current),
        "models": [model],
    }
    return rows, ignored, info


def _label(found: Any, label: str, ident: str, where: str) -> int:
    value = parse_label(found.value)
    if value is None:
        raise DataError(
            f"trace {ident}: {label!r} = {found.value!r} is no label (1/0, true/false, "
            "hallucinated/faithful, FAIL/PASS)",
            file=where,
            row=ident,
            field=label,
        )
    return value


def _mark_risk(trace: Any, mark: Any, run: str) -> float:
    """The risk the mark was drawn with: on the mark; for a mark an earlier version of the
    runner wrote (no risk on it), the same run's risk assessment, else the newest one of
    the same model version (that version's risk of the trace does not change)."""
    meta = mark.metadata or {}
    if meta.get("risk") is not None:
        return float(meta["risk"])
    risks = [a for a in trace.info.assessments or [] if a.name == RISK and is_routed(a)]
    found = newest(a for a in risks if _run(a) == run) or newest(
        a for a in risks if _model(a) == _model(mark)
    )
    return float(found.value) if found is not None else float("nan")


def _int(value: Any) -> int | None:
    return int(value) if value is not None and str(value).isdigit() else None
