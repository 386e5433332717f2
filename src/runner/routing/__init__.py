"""The deployed gate as a routing contract: thresholds, the MLflow model, routing, audit.

A fitted gate is used at budgets, not at every threshold: review the riskiest share,
accept the safest share unreviewed, send the rest to a stronger verifier. This package
holds the machinery the `operating_report`, `fit_gate`, `route` and `audit` studies
orchestrate. No study talks to MLflow: `fit_gate` returns its model as a
`runner.results.ModelSpec` and `route`/`audit` return a `runner.results.ModelLink`, which
`runner.tracking.publish` registers and links; the pipeline loads the registered model a
study routes with (`runner.routing.registry`) and hands it over as ``Inputs.model``. Below
the studies, the route engines load that model version again in each Ray worker
(`runner.routing.stream`), and a route over traces writes its decisions back onto them
(`runner.routing.trace_feedback`, called by tracking once the run id is known).
"""

from runner.routing.thresholds import (
    DECISIONS,
    Thresholds,
    budget_thresholds,
    decide,
    risk_controlled_accept,
)

__all__ = ["DECISIONS", "Thresholds", "budget_thresholds", "decide", "risk_controlled_accept"]
