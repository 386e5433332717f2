"""Fit the routing gate on every labelled row and hand it to the registry as a pyfunc model.

Thresholds come from out-of-fold scores (grouped CV): budgets (``routing.review_budget``,
``routing.accept_budget``), or certified bounds (``routing.accept_rule=risk_controlled``:
accepted risk <= ``max_accepted_risk``; ``routing.review_rule=precision_controlled``:
review precision >= ``min_review_precision``; both with probability 1 - ``routing.delta``,
`runner.routing.contract.risk_control`). A target these rows cannot certify stops the run with one
line saying which side binds and the tightest targets that fit (`runner.routing.contract.reach`).
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
from runner.routing import RoutingConf
from runner.routing.audit import shift
from runner.routing.contract import (
    Contract,
    cascade,
    cascade_infeasible_message,
    infeasible_message,
    set_contract,
)
from runner.routing.report import contract_record, operating_tables
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
        routing = self.routing
        data = require_labels(data, "fit_gate")
        name = routing.gate
        gate = self.gates[name]
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        scores = score_gates({name: gate}, frame, self.split, progress=run.progress)
        y, risk = scores["label"].to_numpy(), scores[name].to_numpy(float)
        groups = scores["group_id"].to_numpy()  # answers to one context are not independent
        guarantee, calibrated, thresholds = self._contract(frame, y, risk, groups)
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
        realised = contract_record.oof_realised(y, risk, thresholds)
        cascade_cal = None if calibrated is None else calibrated[0].cascade
        contract_record.add_contract_cells(result, thresholds, realised, cascade_cal)
        fitted = clone(gate).fit(frame, y) if getattr(gate, "needs_fit", False) else gate
        sources = sorted(frame["source"].astype(str).unique())
        training = {
            "name": data.name,
            "fingerprint": data.fingerprint,
            "rows": len(frame),
            "positives": int(y.sum()),
        }
        metadata = contract_record.contract_metadata(
            routing, thresholds, guarantee, None if calibrated is None else calibrated[1],
            stats, realised, training, sources, shift.risk_profile(risk, groups), run.commit,
        )  # fmt: skip
        result.model = self._model_spec(data, fitted, thresholds, sources, metadata)
        result.extra["contract.json"] = metadata
        return result

    def _contract(self, frame: Any, y: np.ndarray, risk: np.ndarray, groups: np.ndarray) -> tuple:
        """The contract set on the out-of-fold scores (its guarantee refused when no
        threshold meets it), the calibrated cascade if any, and the thresholds to ship."""
        routing = self.routing
        try:
            contract = set_contract(y, risk, routing, groups)
        except ValueError as exc:
            raise DataError(f"fit_gate: {exc}") from None
        guarantee = contract.guarantee
        if guarantee is not None and not guarantee.feasible:
            raise DataError(f"fit_gate: {infeasible_message(y, risk, routing, groups)}")
        calibrated = self._calibrate_cascade(frame, y, risk, groups, contract)
        thresholds = contract.thresholds if calibrated is None else calibrated[0].thresholds
        return guarantee, calibrated, thresholds

    def _model_spec(
        self, data: Any, fitted: Any, thresholds: Any, sources: list[str], metadata: dict
    ) -> ModelSpec:
        """The fitted gate and its thresholds as the MLflow pyfunc to register."""
        # the routing model is an MLflow pyfunc: imported when a fit_gate runs, not whenever
        # the configs are registered (which imports every experiment's study class)
        from runner.routing.model import INPUT_FIELDS, RoutingModel, signature

        routing = self.routing
        example = data.frame[list(INPUT_FIELDS)].head(self.params.input_example_rows)
        return ModelSpec(
            python_model=RoutingModel(
                fitted, thresholds.review_at, thresholds.accept_at, training_sources=sources
            ),
            name=routing.model_name or routing.gate,
            alias=routing.alias,
            metadata=metadata,
            input_example=example.reset_index(drop=True),
            signature=signature(),
            tags={
                "training_data_fingerprint": data.fingerprint,
                "training_sources": ",".join(sources),
            },
        )

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
