"""Stage 1, the contract: the thresholds a fitted gate is used at, and the bounds they carry.

Budgets (review the riskiest share, accept the safest) or a risk-controlled accept rule
become `Thresholds` (`thresholds.py`), certified by the bounds of `risk_control.py`; where
a contract cannot be met, `reach.py` says which side binds and what would fit;
`contract_points.py` finds the points a report compares. A verifier deciding the gate's
verify band is the cascade (`cascade.py`), calibrated as one system, and its expected
final shares (`cascade_shares.py`). Nothing here reads data or talks to MLflow.
"""

from runner.routing.contract.cascade import RoutedCascade, cascade_risk, final_decisions, score_band
from runner.routing.contract.contract_points import (
    BandVerifier,
    Scored,
    best_targets,
    contract_point,
    guarantee_hint,
    neighbours,
    rules,
)
from runner.routing.contract.reach import cascade_infeasible_message, infeasible_message
from runner.routing.contract.risk_control import (
    CascadeCalibration,
    Certified,
    calibrate_cascade,
    cascade_masks,
    codes_or_none,
    effective_counts,
    start_rows,
)
from runner.routing.contract.thresholds import (
    DECISIONS,
    Contract,
    Guarantee,
    Thresholds,
    budget_thresholds,
    contract_thresholds,
    decide,
    set_contract,
)

__all__ = [
    "DECISIONS",
    "BandVerifier",
    "CascadeCalibration",
    "Certified",
    "Contract",
    "Guarantee",
    "RoutedCascade",
    "Scored",
    "Thresholds",
    "best_targets",
    "budget_thresholds",
    "calibrate_cascade",
    "cascade_infeasible_message",
    "cascade_masks",
    "cascade_risk",
    "codes_or_none",
    "contract_point",
    "contract_thresholds",
    "decide",
    "effective_counts",
    "final_decisions",
    "guarantee_hint",
    "infeasible_message",
    "neighbours",
    "rules",
    "score_band",
    "set_contract",
    "start_rows",
]
