"""Decisions back on the traces: `route` over `dataset=mlflow_traces` logs assessments.

Why: reviewers work in the MLflow UI, on the traces; a decision that lives only in
``decisions.parquet`` has to be joined back by hand. Per routed trace this logs the
feedback assessments

- ``ragscope_risk``: the gate's risk (a number), rationale = the band and thresholds;
- ``ragscope_decision``: accept / verify / review (the final decision when a verifier
  decided the verify band), metadata = model URI, name and version, thresholds, the
  routing run id (and the gate's own decision and the verifier's risk with a cascade);
- ``ragscope_audit``: ``True`` on the traces marked for the audit sample only,

all with source ``CODE`` / ``ragscope:<model>/<version>``. Idempotent per model version:
an assessment of the same name already logged for that version is not logged again, so a
rerun adds nothing and a new version adds its own. The traces' experiment is marked as a
GenAI experiment (unless it has a kind), so the MLflow UI opens it on its traces. The study
returns a `TraceFeedback` as `StudyResult.trace_feedback`; the tracking layer
(`runner.tracking.publish`) writes it once the routing run id is known.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

RISK, DECISION, AUDIT = "ragscope_risk", "ragscope_decision", "ragscope_audit"
NAMES = (RISK, DECISION, AUDIT)


@dataclass
class TraceFeedback:
    """What to write onto which traces (built by the route study, written by tracking)."""

    tracking_uri: str
    experiment_id: str
    decisions: pd.DataFrame
    model_uri: str
    model_name: str
    model_version: str
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def source_id(self) -> str:
        """Who logged it: the model version, so versions are told apart in the UI."""
        return f"ragscope:{self.model_name}/{self.model_version}"

    def write(self, run_id: str | None) -> dict[str, Any]:
        """Log the assessments onto the traces (`log_assessments`); returns the counts."""
        return log_assessments(self, run_id)


def existing(traces: list[Any], source_id: str) -> set[tuple[str, str]]:
    """(trace id, assessment name) pairs this model version has already logged."""
    found = set()
    for trace in traces:
        for a in trace.info.assessments or []:
            if a.name in NAMES and getattr(a.source, "source_id", None) == source_id:
                found.add((trace.info.trace_id, a.name))
    return found


def assessments(feedback: TraceFeedback, row: Any, run_id: str | None) -> dict[str, Any]:
    """name -> (value, rationale, metadata) of one decisions row."""
    th = feedback.thresholds
    meta = {
        "model_uri": feedback.model_uri,
        "model_name": feedback.model_name,
        "model_version": feedback.model_version,
        "review_at": str(th.get("review_at")),
        "accept_at": str(th.get("accept_at")),
        "threshold_rule": str(th.get("rule")),
        "routing_run_id": run_id or "",
    }
    decision = str(row["decision"])
    final = str(row.get("final_decision") or decision)
    reason = str(row.get("reason") or "")
    band = (
        f"risk {row['risk']:.4f}: review at >= {th.get('review_at')}, accept at <= "
        f"{th.get('accept_at')}"
    )
    decision_meta = dict(meta)
    if final != decision:
        decision_meta["gate_decision"] = decision
    for column in row.index:
        if str(column).endswith("_risk") and pd.notna(row[column]):
            decision_meta[str(column)] = f"{float(row[column]):.6g}"
    out = {
        RISK: (float(row["risk"]), band, meta),
        DECISION: (final, "; ".join(x for x in (reason, band) if x), decision_meta),
    }
    if bool(row["audit"]):
        out[AUDIT] = (True, "marked for the audit sample of accepted traces", meta)
    return out


def log_assessments(feedback: TraceFeedback, run_id: str | None) -> dict[str, Any]:
    """Log every trace's assessments not yet logged by this model version; returns counts."""
    import mlflow
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    from runner.data import search_all
    from runner.tracking import TRACES_KIND, mark_kind

    start = time.perf_counter()
    store = mlflow.MlflowClient(tracking_uri=feedback.tracking_uri)
    mark_kind(store, store.get_experiment(feedback.experiment_id), TRACES_KIND)
    client = TracingClient(tracking_uri=feedback.tracking_uri)
    ids = set(feedback.decisions["id"].astype(str))
    traces = [
        t
        for t in search_all(feedback.tracking_uri, feedback.experiment_id, None, None, False)
        if t.info.trace_id in ids
    ]
    done = existing(traces, feedback.source_id)
    source = AssessmentSource(source_type="CODE", source_id=feedback.source_id)
    logged, kept = {n: 0 for n in NAMES}, {n: 0 for n in NAMES}
    for _, row in feedback.decisions.iterrows():
        trace_id = str(row["id"])
        for name, (value, rationale, meta) in assessments(feedback, row, run_id).items():
            if (trace_id, name) in done:
                kept[name] += 1
                continue
            assessment = Feedback(
                name=name, value=value, source=source, rationale=rationale, metadata=meta
            )
            client.log_assessment(trace_id, assessment)
            logged[name] += 1
    seconds = time.perf_counter() - start
    log.info("assessments on %d traces: logged %s, already there %s", len(ids), logged, kept)
    return {
        "tracking_uri": feedback.tracking_uri,
        "experiment_id": feedback.experiment_id,
        "source_id": feedback.source_id,
        "traces": len(ids),
        "logged": logged,
        "already_logged": kept,
        "seconds": round(seconds, 3),
    }
