"""Audit a routing contract: the accepted risk on audited accepted rows against its target.

The target is ``routing.max_accepted_risk`` when set, else the model's own
``accepted_risk_target`` (the risk-controlled target, or the upper end of the out-of-fold
accepted-risk interval it promised). The study loads the model version the decisions
were routed by from the run's store; the run is linked to it (`ModelLink`: the run is
tagged with the version, the version's ``last_audit_run`` tag names the run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.errors import DataError
from runner.results import ModelLink, StudyResult
from runner.routing import RoutingConf, estimate, load_routed_model
from runner.studies.contract import RunContext, Study

TITLES = {"audit": "Audit of accepted rows: accepted risk, exact 95 % CI, target"}


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
        result.model_link = ModelLink(name, version, "last_audit_run")
        result.tags["audit_verdict"] = est.verdict
        return result


def _routed_by(data: Any) -> tuple[str, str]:
    """(name, version) of the one model version that routed the audited decisions."""
    models = data.info["models"]
    if len(models) != 1:
        raise DataError(f"audit labels cover rows of several models {models}: audit one at a time")
    name, version = models[0].rsplit("/", 1)
    return name, version
