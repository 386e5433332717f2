"""The deployed gate as a routing contract: thresholds, the MLflow model, routing, audit.

A fitted gate is used at budgets, not at every threshold: review the riskiest share,
accept the safest share unreviewed, send the rest to a stronger verifier. This package
holds the machinery the `operating_report`, `fit_gate`, `route` and `audit` studies
orchestrate; MLflow logging and registration stay in `runner.routing.registry`, called by
the pipeline, never by a study.
"""

from runner.routing.thresholds import (
    DECISIONS,
    Thresholds,
    budget_thresholds,
    decide,
    risk_controlled_accept,
)

__all__ = ["DECISIONS", "Thresholds", "budget_thresholds", "decide", "risk_controlled_accept"]
