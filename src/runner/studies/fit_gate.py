"""Fit the routing gate on every labelled row and hand it to the registry as a pyfunc model.

Thresholds come from out-of-fold scores (grouped CV) at ``routing.review_budget`` and
``routing.accept_budget`` (or, with ``routing.accept_rule=risk_controlled``, MAPIE's
Learn-Then-Test threshold for ``routing.max_accepted_risk`` at 1 - ``routing.delta``);
the gate itself is then fitted on all rows. The model's metadata carries the thresholds,
budgets, the OOF promise with intervals, the training data fingerprint and sources; the
tracking layer logs it into this run, registers it and sets the alias
(`runner.tracking.publish`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone

from runner.config import TrackingConf
from runner.errors import ConfigError
from runner.evaluation import BootstrapConf, score_gates
from runner.features import with_lexical_features
from runner.results import ModelSpec, StudyResult
from runner.routing import RoutingConf, Thresholds, contract_thresholds, report
from runner.studies.contract import RunContext, Study, check_named

log = logging.getLogger(__name__)

TITLES = {
    "contract": "The routing contract on the out-of-fold scores",
    **report.TITLES,
}


@dataclass
class Params:
    """Nothing beyond the routing group; kept for the study contract."""

    input_example_rows: int = 2


def _realised(y: np.ndarray, risk: np.ndarray, thresholds: Thresholds) -> dict:
    """Review precision and accepted risk the thresholds give on the out-of-fold scores."""
    review, accept = risk >= thresholds.review_at, risk <= thresholds.accept_at
    return {
        "review_precision": float(y[review].mean()) if review.any() else None,
        "accepted_risk": float(y[accept].mean()) if accept.any() else None,
    }


@dataclass
class FitGate(Study, name="fit_gate", titles=TITLES):
    """Fit the routing gate, set its thresholds out of fold, hand it over to register."""

    gates: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    routing: RoutingConf
    tracking: TrackingConf  # only whether it is on: the run's store is `RunContext.tracking`
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """The contract's settings, the gate and tracking, before any data is read."""
        check_named(self.gates, [self.routing.gate], "routing.gate", "gates")
        if self.tracking is None or not self.tracking.enabled:
            raise ConfigError(
                "fit_gate registers the model in MLflow: it cannot run with tracking=off"
            )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """OOF scores -> thresholds -> fit on all rows -> a `ModelSpec` to register."""
        # the routing model is an MLflow pyfunc: imported when a fit_gate runs, not whenever
        # the configs are registered (which imports every experiment's study class)
        from runner.routing import INPUT_FIELDS, RoutingModel, signature

        routing, params = self.routing, self.params
        data = report.require_labels(data, "fit_gate")
        name = routing.gate
        gate = self.gates[name]
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        scores = score_gates({name: gate}, frame, self.split, progress=run.progress)
        y, risk = scores["label"].to_numpy(), scores[name].to_numpy(float)
        thresholds, rc = contract_thresholds(
            y,
            risk,
            routing.review_budget,
            routing.accept_budget,
            routing.accept_rule,
            routing.max_accepted_risk,
            routing.delta,
        )
        if rc is not None and rc.valid_candidates == 0:
            log.warning(
                "risk control: no accepted share has accepted risk <= %s with probability %s on "
                "%d labelled rows; nothing will be accepted (more labelled rows, or a larger "
                "routing.delta, give the guarantee room)",
                routing.max_accepted_risk,
                1 - routing.delta,
                len(frame),
            )
        result = StudyResult(scores=scores, titles=dict(TITLES))
        accept_budget = thresholds.accept_share if rc is not None else routing.accept_budget
        stats = report.add_operating_table(
            result,
            scores,
            [name],
            self.bootstrap,
            [routing.review_budget],
            [b for b in {routing.accept_budget, round(accept_budget, 6)} if b > 0],
        )
        realised = _realised(y, risk, thresholds)
        for label, value in (
            ("review share", thresholds.review_share),
            ("accept share", thresholds.accept_share),
            ("verify share", 1.0 - thresholds.review_share - thresholds.accept_share),
            ("review precision", realised["review_precision"]),
            ("accepted risk", realised["accepted_risk"]),
        ):
            result.add("contract", "OOF", label, value)
        fitted = clone(gate).fit(frame, y) if getattr(gate, "needs_fit", False) else gate
        sources = sorted(frame["source"].astype(str).unique())
        promised = report.promise(stats, name, routing.review_budget, routing.accept_budget)
        target = routing.max_accepted_risk
        if target is None and routing.accept_budget > 0:
            target = promised[report.accept_col(routing.accept_budget)]["ci_high"]
        metadata = {
            "gate": name,
            "thresholds": thresholds.to_dict(),
            "review_budget": routing.review_budget,
            "accept_budget": routing.accept_budget,
            "accept_rule": routing.accept_rule,
            "accepted_risk_target": target,
            "risk_control": None if rc is None else {k: v for k, v in vars(rc).items()},
            "oof_report": promised,
            "oof_realised": realised,
            "training_data": {
                "name": data.name,
                "fingerprint": data.fingerprint,
                "rows": len(frame),
                "positives": int(y.sum()),
            },
            "training_sources": sources,
            "runner_commit": run.commit or "unknown",
        }
        if rc is not None and not np.isfinite(rc.threshold):
            metadata["risk_control"]["threshold"] = "-inf"
        example = data.frame[list(INPUT_FIELDS)].head(params.input_example_rows)
        result.model = ModelSpec(
            python_model=RoutingModel(
                fitted, thresholds.review_at, thresholds.accept_at, training_sources=sources
            ),
            name=routing.model_name or name,
            alias=routing.alias,
            metadata=metadata,
            input_example=example.reset_index(drop=True),
            signature=signature(),
            tags={
                "training_data_fingerprint": data.fingerprint,
                "training_sources": ",".join(sources),
            },
        )
        result.extra["contract.json"] = metadata
        return result
