"""Audit labels read from the traces themselves (`dataset=mlflow_trace_audit`): no file.

Why: after `route` over ``dataset=mlflow_traces`` the decisions are assessments on the
traces (`runner.routing.trace_feedback`) and reviewers judge the marked traces in the MLflow
UI, which stores each judgement as a human feedback assessment. This loader joins the two
on the trace and hands `runner.studies.audit` the same frame as `load_audit_labels` does
(``id, label, risk, model``), so route -> review in the UI -> audit needs no export.

A reviewer label counts when its trace was accepted by the audited model version and (with
``scope=marked``, the default) marked for its audit sample; labels reviewers put on other
traces (the review band, say) are their work, not the audit's, and are counted in
``info["ignored_labels"]``, not used.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import frame_fingerprint
from runner.data.mlflow_traces import resolve_experiment, search_all
from runner.data.rag_file import parse_label
from runner.data.traces import latest_assessment
from runner.errors import ConfigError, DataError

LOADER_VERSION = 1
SCOPES = ("marked", "accepted")
DECISION, RISK, AUDIT = "ragscope_decision", "ragscope_risk", "ragscope_audit"


def _by_model(trace: Any, name: str) -> dict[str, Any]:
    """model ``name/version`` -> the latest valid runner assessment `name` on a trace."""
    out: dict[str, Any] = {}
    for a in trace.info.assessments or []:
        source = str(getattr(a.source, "source_id", "") or "")
        if a.name != name or a.valid is False or not source.startswith("ragscope:"):
            continue
        model = source.removeprefix("ragscope:")
        if model not in out or (a.create_time_ms or 0) > (out[model].create_time_ms or 0):
            out[model] = a
    return out


def load_trace_audit_labels(
    experiment: str,
    tracking_uri: str | None = None,
    label: str = "hallucinated",
    scope: str = "marked",
    model: str | None = None,
    name: str = "mlflow_trace_audit",
) -> LoadedData:
    """Reviewers' labels on audited traces, joined onto the decisions logged on them.

    Parameters
    ----------
    experiment : str
        The experiment holding the routed traces.
    tracking_uri : str, optional
        The store (the pipeline fills in the run's own).
    label : str
        Name of the reviewers' human feedback holding the label (spellings as in the
        rag_file format; the MLflow UI's yes/no feedback is true/false).
    scope : {"marked", "accepted"}
        As in `load_audit_labels`.
    model : str, optional
        ``<name>/<version>`` whose decisions to audit; None: the only one on labelled traces.

    Raises
    ------
    DataError
        No labelled trace in scope, a label that does not parse (naming the trace), or
        labelled traces routed by several model versions without ``model``.
    """
    if scope not in SCOPES:
        raise ConfigError(f"dataset.scope={scope!r}: one of {SCOPES}")
    if not tracking_uri:
        raise ConfigError("dataset.tracking_uri: the tracking store holding the traces")
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    exp_id, exp_name = resolve_experiment(client, experiment, tracking_uri)
    where = f"MLflow experiment {exp_name!r}"
    traces = search_all(tracking_uri, exp_id, None, None, include_spans=False)
    labelled = []
    for trace in traces:
        found = latest_assessment(trace, label, ("human_feedback",))
        if found is not None:
            labelled.append((trace, found))
    models = sorted({m for t, _ in labelled for m in _by_model(t, DECISION)})
    if model is None:
        if len(models) > 1:
            raise DataError(
                f"labelled traces carry decisions of several models {models}: set "
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
        decision = _by_model(trace, DECISION).get(model)
        marked = _by_model(trace, AUDIT).get(model)
        if decision is None:
            ignored["not routed by this model"] += 1
            continue
        if decision.value != "accept":
            ignored[f"decision {decision.value}"] += 1
            continue
        if scope == "marked" and (marked is None or marked.value is not True):
            ignored["accepted, not marked for audit"] += 1
            continue
        value = parse_label(found.value)
        if value is None:
            raise DataError(
                f"trace {ident}: {label!r} = {found.value!r} is no label (1/0, true/false, "
                "hallucinated/faithful, FAIL/PASS)",
                file=where,
                row=ident,
                field=label,
            )
        risk = _by_model(trace, RISK).get(model)
        rows.append(
            {
                "id": ident,
                "label": value,
                "risk": float(risk.value) if risk is not None else float("nan"),
                "model": model,
            }
        )
    if not rows:
        raise DataError(
            f"no {label!r} human feedback on traces {model} accepted"
            + (" and marked for audit" if scope == "marked" else "")
            + f" (labels elsewhere: {dict(ignored)})",
            file=where,
        )
    frame = pd.DataFrame(rows)
    decided = [_by_model(t, DECISION).get(model) for t in traces]
    marked = [_by_model(t, AUDIT).get(model) for t in traces]
    params = {"experiment_id": exp_id, "label": label, "scope": scope, "model": model}
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
            "location": f"{tracking_uri}#experiment={exp_id}",
            "labelled": True,
            "marked_rows": sum(m is not None and m.value is True for m in marked),
            "accepted_rows": sum(d is not None and d.value == "accept" for d in decided),
            "models": [model],
            "scope": scope,
            "ignored_labels": dict(sorted(ignored.items())),
        },
    )
