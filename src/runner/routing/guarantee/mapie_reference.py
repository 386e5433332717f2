"""MAPIE's Learn-Then-Test controller, kept as the reference `guarantee_check` compares with.

Why keep it: the contract's accept threshold used to come from
`mapie.risk_control.BinaryClassificationController` (Hoeffding-Bentkus p-values,
Bonferroni-Holm over 100 candidate shares). `runner.routing.contract.risk_control` replaced it with
exact binomial tests in a fixed sequence; this is the same question asked of MAPIE on the
same calibration rows, so the report shows what the change bought (accepted share) and
that it cost nothing in violations.
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def mapie_accept_threshold(
    y: np.ndarray, risk: np.ndarray, max_accepted_risk: float, delta: float, grid: int = 100
) -> float:
    """The loosest candidate threshold MAPIE certifies (``-inf``: none).

    Candidates are the risks at accepted shares 1/grid, 2/grid, ..., 1; a row is accepted
    when its risk <= the threshold; among valid candidates, the one accepting the most.
    """
    from mapie.risk_control import BinaryClassificationController, BinaryRisk

    labels = np.asarray(y, dtype=np.int64)
    r = np.asarray(risk, dtype=np.float64)
    s = np.sort(r)
    counts = {math.ceil(round(k * s.size / grid, 9)) for k in range(1, grid + 1)}
    candidates = np.unique([s[c - 1] for c in counts])
    accepted_risk = BinaryRisk(
        risk_occurrence=lambda y_true, y_pred: y_true.ravel() == 1,
        risk_condition=lambda y_true, y_pred: y_pred.ravel() == 1,
        higher_is_better=False,
    )
    rejected_share = BinaryRisk(
        risk_occurrence=lambda y_true, y_pred: y_pred.ravel() == 0,
        risk_condition=lambda y_true, y_pred: np.ones(y_pred.ravel().shape, dtype=bool),
        higher_is_better=False,
    )

    def predict_accept(x: np.ndarray) -> np.ndarray:
        # MAPIE predicts 1 where column 1 >= the parameter: -risk >= -t  <=>  risk <= t.
        a = -np.asarray(x, dtype=np.float64).reshape(-1)
        return np.column_stack([1.0 - a, a])

    controller = BinaryClassificationController(
        predict_function=predict_accept,
        risk=accepted_risk,
        target_level=float(max_accepted_risk),
        confidence_level=1.0 - float(delta),
        best_predict_param_choice=rejected_share,
        list_predict_params=-candidates,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        controller.calibrate(r.reshape(-1, 1), labels)
    best = controller.best_predict_param
    return -math.inf if best is None else float(-best)
