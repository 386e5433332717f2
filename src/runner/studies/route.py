"""Route unlabelled traffic through a registered gate: accept, verify or review each answer.

Writes ``decisions.parquet`` (``id, risk, decision, audit`` plus ``source``,
``unseen_source`` and the model version) and a summary (counts per decision, ms/example).
Every input row is accounted for: rows the loader skipped (``dataset.skip_invalid=true``)
are listed in ``skipped.parquet`` with ``decision=invalid`` and the reason, and the
summary, the console and the MLflow metrics say "N read, M routed, K skipped".
The risks come from the registered pyfunc model, the same object `mlflow models serve`
answers with. Rows from sources the gate was not fitted on are reported loudly and handled
by ``routing.on_unseen_source``. With ``routing.verifier=<name>`` the configured verifier
scores the ``verify`` band only (the cascade), timed against it scoring every row. When the
file has labels, the realised review precision and accepted risk are reported beside the
model's out-of-fold promise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.routing import route as rt
from runner.routing.config import check_routing, routing_or_defaults
from runner.routing.model import INPUT_FIELDS
from runner.routing.registry import load_routed_model, parse_model_uri
from runner.studies.contract import Inputs, Study

TITLES = {
    "rows": "Input rows",
    "decisions": "Routed rows per decision",
    "realised": "Realised on this file's labels vs the model's out-of-fold promise",
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
        if routing.verifier and routing.verifier not in inputs.verifiers:
            raise ConfigError(
                f"routing.verifier={routing.verifier!r} is not a configured verifier "
                f"(configured: {sorted(inputs.verifiers)}); add one with "
                f"+verifier@verifiers.{routing.verifier}=<config>"
            )

    def run(self, inputs: Inputs, params: Params) -> StudyResult:
        """Load the model, route every row, mark the audit sample, summarise."""
        routing, data = routing_or_defaults(inputs.routing), inputs.data
        model = load_routed_model(inputs.require("tracking").uri, routing.model_uri)
        frame = data.frame.reset_index(drop=True)
        training_sources = list(model.metadata.get("training_sources") or [])
        unseen = rt.unseen_sources(frame["source"], training_sources)
        rt.handle_unseen(unseen, routing.on_unseen_source, training_sources, data.files[0])

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
        if routing.verifier:
            runtime["cascade"] = _cascade(
                inputs.verifiers[routing.verifier], routing.verifier, frame, decisions, gate_ms
            )
        if data.info.get("labelled"):
            labels = frame["label"].to_numpy(dtype=np.int64)
            promise = model.metadata.get("oof_realised") or {}
            for key, value in rt.realised(labels, decisions["decision"].to_numpy()).items():
                result.add("realised", key, "this file", value)
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
    verifier: Any, name: str, frame: pd.DataFrame, decisions: pd.DataFrame, gate_ms: float
) -> dict:
    """Score the verify band with the verifier; cost of the cascade vs the verifier alone."""
    band = np.flatnonzero(decisions["decision"].to_numpy() == "verify")
    scores = pd.array([pd.NA] * len(frame), dtype="Float64")
    verify_ms = 0.0
    if band.size:
        start = time.perf_counter()
        scores[band] = verifier.score(frame.iloc[band].reset_index(drop=True))
        verify_ms = (time.perf_counter() - start) * 1000.0 / band.size
    decisions[f"{name}_risk"] = scores
    share = band.size / len(frame)
    return {
        "verifier": name,
        "verify_rows": int(band.size),
        "verifier_ms_per_verified_row": verify_ms,
        "cascade_ms_per_example": gate_ms + share * verify_ms,
        "verifier_on_every_row_ms_per_example": verify_ms,
        "note": "verifier on every row is the measured per-row verifier cost on the verify band",
    }
