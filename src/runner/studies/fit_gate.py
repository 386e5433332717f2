"""Fit the routing gate on every labelled row and hand it to the registry as a pyfunc model.

Thresholds come from out-of-fold scores (grouped CV): budgets (``routing.review_budget``,
``routing.accept_budget``), or certified bounds (``routing.accept_rule=risk_controlled``:
accepted risk <= ``max_accepted_risk``; ``routing.review_rule=precision_controlled``:
review precision >= ``min_review_precision``; both with probability 1 - ``routing.delta``,
`runner.routing.risk_control`). A target these rows cannot certify stops the run with one
line saying which side binds and the tightest targets that fit (`runner.routing.reach`).
With ``routing.verifier=<name>`` the cascade is calibrated as one system: the gate's
accept threshold and the verifier's threshold chosen together for the final accepted risk,
at the least verifier cost (`calibrate_cascade`), and registered with the model
(``cascade`` in its metadata, which `route` applies), with the final accept / verify /
review shares it expects and the share sent to the verifier, each with an exact 95 %
interval (the ``cascade`` table; `route` compares its traffic's shares with them). A
verify-band row the calibrated verifier does not accept stays ``verify``; when it accepts
none at all (the gate-alone path) the fit warns that `route` will not call it.
The gate itself is then fitted on all rows. The model's metadata carries the thresholds,
budgets, the bounds, the OOF promise with intervals, the calibration risk profile (for
`route`'s shift test), the training data fingerprint and sources; the tracking layer logs
it into this run, registers it and sets the alias (`runner.tracking.hand_over`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone

from runner.data import require_labels
from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf, score_gates
from runner.features import with_lexical_features
from runner.results import ModelSpec, StudyResult
from runner.routing import (
    CascadeCalibration,
    Contract,
    RoutingConf,
    Thresholds,
    cascade,
    cascade_infeasible_message,
    cascade_shares,
    infeasible_message,
    operating_tables,
    set_contract,
    shift,
)
from runner.run_record import TrackingConf
from runner.studies.contract import RunContext, Study, check_named

log = logging.getLogger(__name__)

TITLES = {
    "contract": "The routing contract on the out-of-fold scores",
    "cascade": "The calibrated cascade's final shares on the calibration rows, as route "
    "realises them (exact 95 % intervals, context groups by their effective number)",
    **operating_tables.TITLES,
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
    verifiers: dict[str, Any] = field(default_factory=dict)  # the cascade's (routing.verifier)
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """The contract's settings, the gate and tracking, before any data is read."""
        routing = self.routing
        check_named(self.gates, [routing.gate], "routing.gate", "gates")
        if routing.verifier:
            check_named(self.verifiers, [routing.verifier], "routing.verifier", "verifiers")
            if routing.accept_rule != "risk_controlled":
                raise ConfigError(
                    f"routing.verifier={routing.verifier!r}: fit_gate calibrates the cascade "
                    "for a final accepted risk; set routing.accept_rule=risk_controlled and "
                    "routing.max_accepted_risk"
                )
        elif self.verifiers:
            raise ConfigError(
                f"fit_gate: verifiers {sorted(self.verifiers)} are configured but "
                "routing.verifier is unset; name the cascade's verifier or remove them"
            )
        if self.tracking is None or not self.tracking.enabled:
            raise ConfigError(
                "fit_gate registers the model in MLflow: it cannot run with tracking=off"
            )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """OOF scores -> thresholds -> fit on all rows -> a `ModelSpec` to register."""
        # the routing model is an MLflow pyfunc: imported when a fit_gate runs, not whenever
        # the configs are registered (which imports every experiment's study class)
        from runner.routing.model import INPUT_FIELDS, RoutingModel, signature

        routing, params = self.routing, self.params
        data = require_labels(data, "fit_gate")
        name = routing.gate
        gate = self.gates[name]
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        scores = score_gates({name: gate}, frame, self.split, progress=run.progress)
        y, risk = scores["label"].to_numpy(), scores[name].to_numpy(float)
        groups = scores["group_id"].to_numpy()  # answers to one context are not independent
        try:
            contract = set_contract(y, risk, routing, groups)
        except ValueError as exc:
            raise DataError(f"fit_gate: {exc}") from None
        guarantee = contract.guarantee
        if guarantee is not None and not guarantee.feasible:
            raise DataError(f"fit_gate: {infeasible_message(y, risk, routing, groups)}")
        calibrated = self._calibrate_cascade(frame, y, risk, groups, contract)
        thresholds = contract.thresholds if calibrated is None else calibrated[0].thresholds
        result = StudyResult(scores=scores, titles=dict(TITLES))
        controlled = guarantee is not None and guarantee.accept is not None
        accept_budget = thresholds.accept_share if controlled else routing.accept_budget
        stats = operating_tables.add_operating_table(
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
        if calibrated is not None:
            _add_cascade_shares(result, calibrated[0].cascade)
        fitted = clone(gate).fit(frame, y) if getattr(gate, "needs_fit", False) else gate
        sources = sorted(frame["source"].astype(str).unique())
        promised = operating_tables.promise(
            stats, name, routing.review_budget, routing.accept_budget
        )
        target = routing.max_accepted_risk
        if target is None and routing.accept_budget > 0:
            target = promised[operating_tables.accept_col(routing.accept_budget)]["ci_high"]
        metadata = {
            "gate": name,
            "thresholds": thresholds.to_dict(),
            "review_budget": routing.review_budget,
            "accept_budget": routing.accept_budget,
            "accept_rule": routing.accept_rule,
            "accepted_risk_target": target,
            "review_rule": routing.review_rule,
            "risk_control": None if guarantee is None else guarantee.to_dict(),
            "cascade": None if calibrated is None else calibrated[1],
            "oof_report": promised,
            "oof_realised": realised,
            "training_data": {
                "name": data.name,
                "fingerprint": data.fingerprint,
                "rows": len(frame),
                "positives": int(y.sum()),
            },
            "training_sources": sources,
            "calibration_profile": shift.risk_profile(risk, groups),
            "runner_commit": run.commit or "unknown",
        }
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

    def _calibrate_cascade(
        self, frame: Any, y: np.ndarray, risk: np.ndarray, groups: np.ndarray, gate: Contract
    ) -> tuple[Contract, dict] | None:
        """With ``routing.verifier``: the contract with the cascade calibrated as one system
        (`set_contract`) on the verifier's scores of every row below the review threshold,
        and the cascade's metadata; None without a verifier."""
        routing = self.routing
        if not routing.verifier:
            return None
        verifier = self.verifiers[routing.verifier]
        band = cascade.score_band(verifier, frame, risk < gate.thresholds.review_at)
        contract = set_contract(y, risk, routing, groups, band.risk)
        if not contract.cascade.feasible:
            name = f"{routing.gate} -> {routing.verifier}"
            why = cascade_infeasible_message(y, risk, band.risk, routing, groups, name)
            raise DataError(f"fit_gate: {why}")
        if not math.isfinite(contract.cascade.verifier_threshold):
            log.warning(
                "fit_gate: at routing.max_accepted_risk=%g the calibrated %s accepts no "
                "verify-band row (path %r): route will not call it, and the gate alone "
                "decides (verify share %.3f)",
                routing.max_accepted_risk,
                routing.verifier,
                contract.cascade.path,
                contract.cascade.verify_share,
            )
        meta = {
            **contract.cascade.to_dict(),
            "verifier": routing.verifier,
            "verifier_class": type(verifier).__name__,
            "verifier_model": getattr(verifier, "model", None),
            "verifier_ms_per_row": band.ms_per_row,
        }
        return contract, meta


def _add_cascade_shares(result: StudyResult, cal: CascadeCalibration) -> None:
    """The ``cascade`` table: each final share the fit expects, with its interval (what
    `route` compares its realised shares with)."""
    for row, key in cascade_shares.SHARES.items():
        result.add("cascade", row, "expected share", getattr(cal, key), cal.share_intervals[key])
