"""Audit a routing contract: the accepted risk on audited accepted rows against its target.

The target is ``routing.max_accepted_risk`` when set, else the model's own
``accepted_risk_target`` (the risk-controlled target, or the upper end of the out-of-fold
accepted-risk interval it promised). The study loads the model version the decisions
were routed by from the run's store; the run is linked to it (`ModelLink`: the run is
tagged with the version, the version's ``last_audit_run`` tag names the run).

Two answers, side by side. The one-shot Clopper-Pearson interval judges this run's labels
alone (`runner.routing.audit.interval.estimate`). The running test
(`runner.routing.audit.sequential`) judges every row audited for this model version so far:
each run continues the test the last *finished* audit run of the version left on it (version
tag ``audit_sequential_state``, written through ``ModelLink.records``), so looking after
every batch is allowed and an alarm (``violated``) keeps its error ``delta``. Its delta is
the contract's: ``risk_control.delta`` from the model when fitted risk-controlled, else
``routing.delta``. Each row counts once, by its id: the run feeds only ids the test has not
counted, in the route run's order (never the labels file's: an order chosen from the labels
would void the test), says how many it added and how many were counted already, and refuses
a label that changed since its row was counted (`DataError`, nothing moves). The ids counted
so far go into the run's ``audit_counted.parquet``, which the next audit reads back
(`runner.routing.audit.sequential.resume`). The run logs the test's path row by row as
metric histories (``series/audit_e_value``, ``series/audit_cs_high``, ``series/audit_risk``,
``series/audit_alarm``, step = audited rows over every run of the version), the metric
``audit_alarm`` and the tags ``audit_alarm`` and ``audit_sequential_verdict``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from runner.errors import DataError
from runner.results import ModelLink, StudyResult
from runner.routing import RoutingConf
from runner.routing.audit import estimate, sequential
from runner.routing.route import load_routed_model
from runner.studies.contract import RunContext, Study

log = logging.getLogger(__name__)

TITLES = {
    "audit": "Audit of accepted rows: accepted risk, exact 95 % CI (this run) and the "
    "anytime-valid running test over every audit of the version, target"
}
SERIES = ("e_value", "e_value_holds", "cs_low", "cs_high", "risk", "alarm")
"""What the run logs per audited row (metric ``series/audit_<name>``)."""
MAX_POINTS = 5000
"""Per-row metric points per series and run; past that, evenly spaced rows and the last."""
SEQUENTIAL_ROW = "running test (all audits)"


@dataclass
class Params:
    """Interval level."""

    level: float = 0.95


@dataclass
class Audit(Study, name="audit", titles=TITLES):
    """Judge the accepted risk of audited accepted rows against the contract's target."""

    routing: RoutingConf
    params: Params = field(default_factory=Params)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Estimate the accepted risk and judge it against the contract's target."""
        routing, params = self.routing, self.params
        name, version = _routed_by(data)
        uri = routing.model_uri or f"models:/{name}/{version}"
        model = load_routed_model(run.tracking_uri, uri)
        if model.version != version or model.name != name:
            raise DataError(
                f"routing.model_uri={routing.model_uri!r} is {model.name}/{model.version} but the "
                f"decisions were routed by {name}/{version}"
            )
        target = routing.max_accepted_risk
        if target is None:
            target = model.metadata.get("accepted_risk_target")
        est = estimate(data.frame["label"], target, params.level)
        result = StudyResult(titles=dict(TITLES))
        result.add("audit", "accepted", "audited rows", est.rows)
        result.add("audit", "accepted", "hallucinated", est.hallucinated)
        result.add(
            "audit", "accepted", "accepted risk", est.accepted_risk, (est.ci_low, est.ci_high)
        )
        result.add("audit", "accepted", "target", est.target)
        result.add(
            "audit", "accepted", "target holds", {"holds": 1, "violated": 0}.get(est.verdict)
        )
        promise = (model.metadata.get("oof_realised") or {}).get("accepted_risk")
        result.add("audit", "accepted", "OOF promise", promise)
        result.extra["audit.json"] = {
            **vars(est),
            "model": {"name": name, "version": version, "training_run_id": model.run_id},
            "scope": data.info["scope"],
            "marked_rows": data.info["marked_rows"],
            "accepted_rows": data.info["accepted_rows"],
        }
        if data.info.get("routing_run_id"):  # audit labels read from traces: whose sample
            result.extra["audit.json"]["routing_run_id"] = data.info["routing_run_id"]
        records = {}
        if target is not None and 0.0 < target < 1.0:
            delta = _audit_delta(model, routing)
            block, records = _sequential(
                data, result, run.tracking_uri, name, version, target, delta
            )
        else:
            why = "no target: set routing.max_accepted_risk" if target is None else "target 1"
            block = {"available": False, "why": why}
        result.extra["audit.json"]["sequential"] = block
        result.model_link = ModelLink(name, version, "last_audit_run", records=records)
        result.tags["audit_verdict"] = est.verdict
        return result


def _routed_by(data: Any) -> tuple[str, str]:
    """(name, version) of the one model version that routed the audited decisions."""
    models = data.info["models"]
    if len(models) != 1:
        raise DataError(f"audit labels cover rows of several models {models}: audit one at a time")
    name, version = models[0].rsplit("/", 1)
    return name, version


def _audit_delta(model: Any, routing: RoutingConf) -> float:
    """The running test's error: the model's ``risk_control.delta``, else ``routing.delta``."""
    delta = (model.metadata.get("risk_control") or {}).get("delta")
    return float(delta if delta is not None else routing.delta)


def _sequential(
    data: Any,
    result: StudyResult,
    tracking_uri: str,
    name: str,
    version: str,
    target: float,
    delta: float,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Continue the version's running test with this run's new rows; fill the result.

    Rows are fed in the frame's order, which the audit loaders give label-blind (a labels
    file: the order of the route run's ``decisions.parquet``; traces: oldest first).
    Returns the ``sequential`` block of ``audit.json`` and the version records to leave.
    """
    resumed = sequential.resume(tracking_uri, name, version, float(target), float(delta))
    if resumed.note:
        log.warning("audit: %s", resumed.note)
    ids, labels = data.frame["id"].tolist(), data.frame["label"].astype(int).tolist()
    changed = sequential.changed_labels(resumed.counted, ids, labels)
    if changed:
        raise _changed_label(data, changed, f"{name}/{version}", resumed.run_id)
    state, points, counted = sequential.feed(resumed.state, resumed.counted, ids, labels)
    already = len(ids) - len(points)
    log.info(
        "audit: the running test of %s/%s: %d rows added this run, %d counted already "
        "(%d in all)", name, version, len(points), already, state["rows"],
    )  # fmt: skip
    idle = "" if points else "every row was counted already: the test did not move"
    note = resumed.note or idle
    rep = sequential.report(state, len(points), already, resumed.run_id, note)
    result.files[sequential.COUNTED_FILE] = counted
    _fill(result, rep, points, target)
    if rep.verdict == "violated":
        log.warning(
            "AUDIT ALARM: the accepted risk of %s/%s exceeds its target %s (anytime-valid "
            "test at delta %s, alarm at audited row %s; e-value %.3g)",
            name, version, target, delta, rep.violated_at, rep.e_value,
        )  # fmt: skip
    records = {sequential.STATE_TAG: sequential.record(state, resumed.prior)}
    return rep.to_dict(), records


def _changed_label(
    data: Any, changed: list[tuple[str, int, int]], model: str, run_id: str | None
) -> DataError:
    """The refusal of a label that changed after the running test counted its row.

    The test cannot take a row back, and counting it again would feed it twice; named as
    the loader names a bad label (file, row and id, field), the first of them, with both
    labels.
    """
    ident, before, now = changed[0]
    source = data.info.get("label_source") or {}
    frame = data.frame
    rows = frame.set_index("id")["label_row"] if "label_row" in frame else {}
    more = f" ({len(changed) - 1} more rows changed too)" if len(changed) > 1 else ""
    return DataError(
        f"label {now}, but the running test of {model} counted this row with label {before} "
        f"(state of audit run {run_id}){more}: a row is counted once, so its label cannot "
        f"change; restore the label, or delete the tag {sequential.STATE_TAG} of {model} to "
        "start its running test anew",
        file=source.get("file"),
        row=int(rows[ident]) if ident in rows else None,
        field=source.get("field"),
        ident=ident,
    )


def _fill(
    result: StudyResult, rep: sequential.SequentialReport, points: list[dict], target: float
) -> None:
    """The running test's row of the audit table, its metrics, tags and per-row series."""
    for key in SERIES:
        result.series[f"audit_{key}"] = [(p["step"], float(p[key])) for p in _thin(points)]
    alarm = rep.verdict == "violated"
    result.metrics.update(
        {"audit_alarm": float(alarm), "audit_e_value": rep.e_value, "audit_cs_high": rep.cs_high}
    )
    result.tags["audit_alarm"] = str(alarm).lower()
    result.tags["audit_sequential_verdict"] = rep.verdict
    row = SEQUENTIAL_ROW
    result.add("audit", row, "audited rows", rep.rows)
    result.add("audit", row, "added this run", rep.added)
    result.add("audit", row, "counted already", rep.counted_already)
    result.add("audit", row, "hallucinated", rep.hallucinated)
    result.add(
        "audit", row, "accepted risk", rep.hallucinated / rep.rows, (rep.cs_low, rep.cs_high)
    )
    result.add("audit", row, "target", target)
    result.add("audit", row, "target holds", {"holds": 1, "violated": 0}.get(rep.verdict))
    result.add("audit", row, "e-value (violated side)", rep.e_value)
    result.add("audit", row, "e-value (holds side)", rep.e_value_holds)
    result.add("audit", row, "alarm", float(alarm))


def _thin(points: list[dict]) -> list[dict]:
    """At most `MAX_POINTS` of `points`, evenly spaced, the last always kept."""
    if len(points) <= MAX_POINTS:
        return points
    keep = {round(i * (len(points) - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)}
    return [p for i, p in enumerate(points) if i in keep]
