"""The deployed gate as a routing contract, in the order its stages run.

A fitted gate is used at budgets, not at every threshold: review the riskiest share,
accept the safest share unreviewed, send the rest to a stronger verifier. The sub-packages
are the stages the `operating_report`, `fit_gate`, `route`, `audit` and `guarantee_check`
studies orchestrate, each importing only the ones before it:

1. `contract`: thresholds, their bounds, the cascade (no data, no MLflow);
2. `route`: the registered model loaded and routing in batches, on any engine;
3. `audit`: the accepted risk on labelled rows, the running test, the shift test;
4. `report`: the operating report's tables, the recommendation, a contract's record;

and `guarantee`, the check that the accept bound holds as stated. `config.py` holds the
settings (`RoutingConf`); `model.py` is the MLflow pyfunc, at the path registered models
carry. No study talks to MLflow: `fit_gate` returns its model as a
`runner.results.ModelSpec` and `route`/`audit` return a `runner.results.ModelLink`, which
`runner.tracking.hand_over` registers and links.
"""

from runner.routing.config import RoutingConf

__all__ = ["RoutingConf"]
