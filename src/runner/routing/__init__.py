"""The deployed gate as a routing contract: thresholds, the MLflow model, routing, audit.

A fitted gate is used at budgets, not at every threshold: review the riskiest share,
accept the safest share unreviewed, send the rest to a stronger verifier. This package
holds the machinery the `operating_report`, `fit_gate`, `route` and `audit` studies
orchestrate. No study talks to MLflow: `fit_gate` returns its model as a
`runner.results.ModelSpec` and `route`/`audit` return a `runner.results.ModelLink`, which
`runner.tracking.hand_over` registers and links; the pipeline loads the registered model a
study routes with (`runner.routing.registry`, loaded from the run's store). Below
the studies, the route engines load that model version again in each Ray worker
(`runner.routing.stream`), and a route over traces writes its decisions back onto them
(`runner.routing.trace_feedback`, called by tracking once the run id is known).
"""

from runner.routing.audit import estimate
from runner.routing.config import RoutingConf
from runner.routing.reach import cascade_infeasible_message, infeasible_message
from runner.routing.registry import RoutedModel, load_routed_model, parse_model_uri
from runner.routing.risk_control import CascadeCalibration, Certified, calibrate_cascade
from runner.routing.thresholds import (
    DECISIONS,
    Contract,
    Guarantee,
    Thresholds,
    budget_thresholds,
    contract_thresholds,
    decide,
    set_contract,
)
from runner.routing.trace_feedback import TraceFeedback
from runner.routing.work_folder import WorkFolder, work_key, work_root

__all__ = [
    "DECISIONS",
    "CascadeCalibration",
    "Certified",
    "Contract",
    "Guarantee",
    "RoutedModel",
    "RoutingConf",
    "Thresholds",
    "TraceFeedback",
    "WorkFolder",
    "budget_thresholds",
    "calibrate_cascade",
    "cascade_infeasible_message",
    "contract_thresholds",
    "decide",
    "estimate",
    "infeasible_message",
    "load_routed_model",
    "parse_model_uri",
    "set_contract",
    "work_key",
    "work_root",
]
