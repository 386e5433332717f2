"""Route unlabelled traffic through a registered gate: accept, verify or review each answer.

Writes ``decisions.parquet`` (``id, risk, decision, audit`` plus ``source``,
``unseen_source`` and the model version) and a summary (counts per decision, ms/example).
Every input row is accounted for: rows the loader skipped (``dataset.skip_invalid=true``)
are listed in ``skipped.parquet`` with ``decision=invalid`` and the reason, and the
summary, the console and the MLflow metrics say "N read, M routed, K skipped".
Over ``dataset=mlflow_traces`` the decisions also go back onto the traces as assessments
(`runner.routing.trace_feedback`; ``trace_assessments.json`` counts them).
The risks come from the registered pyfunc model, the same object `mlflow models serve`
answers with. Rows from sources the gate was not fitted on are reported loudly and handled
by ``routing.on_unseen_source``. With ``routing.verifier=<name>`` the configured verifier
scores the ``verify`` band only (`runner.routing.cascade`): its risk is the ``<name>_risk``
column and ``final_decision`` turns each verified row into accept or review at the verifier
threshold, the gate's ``decision`` kept beside it; the rows sent and the verifier's
ms/example go into the summary, the tables and MLflow. When the file has labels, the
realised review precision and accepted risk are reported beside the model's out-of-fold
promise (and, with a verifier, after it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.routing import cascade as cs
from runner.routing import route as rt
from runner.routing.config import RoutingConf, check_routing, routing_or_defaults
from runner.routing.model import INPUT_FIELDS
from runner.routing.registry import load_routed_model, parse_model_uri
from runner.routing.trace_feedback import TraceFeedback
from runner.studies.contract import Inputs, Study

TITLES = {
    "rows": "Input rows",
    "decisions": "Routed rows per decision",
    "realised": "Realised on this file's labels vs the model's out-of-fold promise",
    "final": "Final decisions: the verifier decides the verify band (routing.verifier)",
}


@dataclass
class Params:
    """Timing of the verifier cascade."""

    verifier_timing_rows: int = 32


class Route(Study, name="route", params=Params, titles=TITLES):
    """Route traffic through a registered gate: accept, verify or review each answer."""

    def check(self, inputs: Inputs, params: Params) -> None:
        """A model URI, a valid policy, and the verifier configured when one is named."""
        routing = routing_or_defaults(inputs.routing)
        check_routing(routing)
        if not routing.model_uri:
            raise ConfigError("route needs routing.model_uri=models:/<name>@champion")
        parse_model_uri(routing.model_uri)
        if routing.verifier:
            verifier = cs.configured_verifier(
                routing.verifier, inputs.verifiers, "routing.verifier"
            )
            cs.verifier_threshold(verifier, routing.verifier_threshold, routing.verifier)

    def run(self, inputs: Inputs, params: Params) -> StudyResult:
        """Load the model, route every row, mark the audit sample, summarise."""
        routing, data = routing_or_defaults(inputs.routing), inputs.data
        model = load_routed_model(inputs.require("tracking").uri, routing.model_uri)
        frame = data.frame.reset_index(drop=True)
        training_sources = list(model.metadata.get("training_sources") or [])
        unseen = rt.unseen_sources(frame["source"], training_sources)
        where = data.files[0] if data.files else data.info.get("location")
        rt.handle_unseen(unseen, routing.on_unseen_source, training_sources, where)

        start = time.perf_counter()
        routed = model.pyfunc.predict(frame[list(INPUT_FIELDS)])
        gate_ms = (time.perf_counter() - start) * 1000.0 / len(frame)
        decision = routed["decision"].to_numpy(dtype=object)
        is_unseen = ~frame["source"].astype(str).isin(set(training_sources)).to_numpy()
        reason = (
            routed["reason"].to_numpy(dtype=object).astype(str)
            if "reason" in routed
            else np.full(len(frame), "", dtype=object)
        ).astype(object)
        if routing.on_unseen_source == "review":
            decision[is_unseen] = "review"
            reason[is_unseen & (reason == "")] = "unseen source"
        audit = rt.audit_sample(decision, routing.audit_fraction, inputs.seed)
        decisions = pd.DataFrame(
            {
                "id": frame["example_id"].to_numpy(),
                "risk": routed["risk"].to_numpy(np.float64),
                "decision": decision.astype(str),
                "audit": audit,
                "source": frame["source"].to_numpy(),
                "unseen_source": is_unseen,
                "model": f"{model.name}/{model.version}",
                "reason": reason.astype(str),
            }
        )
        result = StudyResult(titles=dict(TITLES))
        skipped = rt.skipped_rows(data.info.get("skipped") or [])
        counts = rt.row_counts(data.info.get("rows_read"), len(decisions), len(skipped))
        result.titles["rows"] = f"Input rows: {rt.accounting(counts)}"
        for key, value in counts.items():
            result.add("rows", "input", key, value)
        for band in ("accept", "verify", "review"):
            count = int((decisions["decision"] == band).sum())
            result.add("decisions", band, "rows", count)
            result.add("decisions", band, "share", count / len(decisions))
        result.add("decisions", "audit", "rows", int(audit.sum()))
        result.add("decisions", "unseen source", "rows", int(is_unseen.sum()))
        runtime = {"gate_ms_per_example": gate_ms, "rows": len(frame)}
        cascade = None
        if routing.verifier:
            cascade = _cascade(routing, inputs.verifiers, frame, decisions, gate_ms, result)
            runtime["cascade"] = cascade
        if data.info.get("labelled"):
            labels = frame["label"].to_numpy(dtype=np.int64)
            promise = model.metadata.get("oof_realised") or {}
            for key, value in rt.realised(labels, decisions["decision"].to_numpy()).items():
                result.add("realised", key, "this file", value)
            if cascade is not None:
                final = decisions["final_decision"].to_numpy()
                for key, value in rt.realised(labels, final).items():
                    result.add("realised", key, "after verifier", value)
            result.add(
                "realised", "review precision", "OOF promise", promise.get("review_precision")
            )
            result.add("realised", "accepted risk", "OOF promise", promise.get("accepted_risk"))
        result.files["decisions.parquet"] = decisions
        if len(skipped):
            result.files["skipped.parquet"] = skipped
        result.runtime.update(runtime)
        result.extra["summary.json"] = {
            "model": {
                "uri": model.uri,
                "name": model.name,
                "version": model.version,
                "training_run_id": model.run_id,
            },
            "rows": {**counts, "accounting": rt.accounting(counts)},
            "ids": data.info.get("ids", "from the file"),
            "counts": decisions["decision"].value_counts().sort_index().to_dict(),
            "audit_rows": int(audit.sum()),
            "unseen_sources": unseen,
            "on_unseen_source": routing.on_unseen_source,
            "training_sources": training_sources,
            "thresholds": model.metadata.get("thresholds"),
        }
        if data.info.get("origin") == "mlflow":
            result.trace_feedback = TraceFeedback(
                tracking_uri=data.info["tracking_uri"],
                experiment_id=data.info["experiment_id"],
                decisions=decisions,
                model_uri=model.uri,
                model_name=model.name,
                model_version=model.version,
                thresholds=dict(model.metadata.get("thresholds") or {}),
            )
        if cascade is not None:
            result.extra["summary.json"]["cascade"] = {
                **cascade,
                "final_counts": decisions["final_decision"].value_counts().sort_index().to_dict(),
            }
        result.tags.update(
            {
                "model_name": model.name,
                "model_version": model.version,
                "model_link": "last_route_run",
                "model_uri": model.uri,
            }
        )
        return result


def _cascade(
    routing: RoutingConf,
    verifiers: dict[str, Any],
    frame: pd.DataFrame,
    decisions: pd.DataFrame,
    gate_ms: float,
    result: StudyResult,
) -> dict[str, Any]:
    """Send the verify band to the verifier, add its risk and the final decision, count it.

    Adds ``<name>_risk`` (empty outside the band) and ``final_decision`` to `decisions`,
    the ``final`` table to `result`; returns the cascade's record (runtime, summary).
    """
    name = routing.verifier
    verifier = verifiers[name]
    threshold = cs.verifier_threshold(verifier, routing.verifier_threshold, name)
    band = decisions["decision"].to_numpy() == "verify"
    scored = cs.score_band(verifier, frame, band)
    risk = pd.array(scored.risk, dtype="Float64")
    risk[~band] = pd.NA
    decisions[f"{name}_risk"] = risk
    final = cs.final_decisions(decisions["decision"].to_numpy(), scored.risk, threshold)
    decisions["final_decision"] = final.astype(str)
    n = len(decisions)
    result.add("final", "sent to verifier", "rows", scored.rows_sent)
    result.add("final", "sent to verifier", "share", scored.rows_sent / n)
    for outcome in ("accept", "review"):
        for source, mask in (("verified", band), ("total", np.ones(n, dtype=bool))):
            count = int(((final == outcome) & mask).sum())
            result.add("final", f"{outcome} ({source})", "rows", count)
            result.add("final", f"{outcome} ({source})", "share", count / n)
    return {
        "verifier": name,
        "threshold": threshold,
        "threshold_source": "routing.verifier_threshold"
        if routing.verifier_threshold is not None
        else "the verifier's own",
        "verify_rows": int(band.sum()),
        "rows_sent_to_verifier": scored.rows_sent,
        "verifier_ms_per_verified_row": scored.ms_per_row,
        "verifier_load_seconds": scored.load_seconds,
        "cascade_ms_per_example": gate_ms + scored.rows_sent / n * scored.ms_per_row,
        "verifier_on_every_row_ms_per_example": scored.ms_per_row,
        "note": "verifier on every row is the measured per-row verifier cost on the verify band",
    }
