"""Thresholds of the routing contract, set on out-of-fold scores, and the decision rule.

Why out-of-fold: a threshold read off scores the gate produced on its own training rows
would be set on optimistic scores; out-of-fold scores are what the gate does on rows it has
not seen, so the budgets hold on new traffic of the same kind.

Decision rule, in this order: ``review`` when risk >= the review threshold (the top
``review_budget`` share of the OOF scores); ``accept`` when risk <= the accept threshold
(the lowest ``accept_budget`` share, or the risk-controlled share); ``verify`` otherwise
(the band a stronger verifier sees). With tied scores at a cut-off the realised share can
exceed the budget; the realised shares are recorded beside the thresholds.

The risk-controlled accept threshold uses MAPIE's Learn-Then-Test controller
(`mapie.risk_control.BinaryClassificationController`): among candidate thresholds (the
OOF score quantiles at 1 %, 2 %, ..., 100 % accepted), those whose accepted risk
(positives among accepted rows) is <= the target with probability 1 - delta (Hoeffding-
Bentkus p-values, Bonferroni-Holm over the candidates), and among them the one accepting
the most rows. The guarantee assumes the routed rows are exchangeable with the OOF rows.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np

DECISIONS = ("accept", "verify", "review")


@dataclass(frozen=True)
class Thresholds:
    """Where the bands start, and what they gave on the OOF scores they were set on."""

    review_at: float
    accept_at: float
    review_share: float
    accept_share: float
    rule: str

    def to_dict(self) -> dict:
        """JSON-friendly form (infinite thresholds as strings)."""
        return {
            k: (str(v) if isinstance(v, float) and math.isinf(v) else v)
            for k, v in asdict(self).items()
        }


def _count(share: float, n: int) -> int:
    return math.ceil(round(share * n, 9))


def budget_thresholds(risk: np.ndarray, review_budget: float, accept_budget: float) -> Thresholds:
    """Thresholds that review the top `review_budget` and accept the lowest `accept_budget`.

    Parameters
    ----------
    risk : array of float
        Out-of-fold risk scores of the labelled rows.
    review_budget, accept_budget : float
        Shares of rows, ``review_budget`` in (0, 1], ``accept_budget`` in [0, 1], summing
        to at most 1.

    Returns
    -------
    Thresholds
        ``review_at`` = the ⌈ρn⌉-th largest score, ``accept_at`` = the ⌈αn⌉-th smallest
        (``-inf`` for α = 0), with the shares they give on `risk` under `decide`.
    """
    s = np.sort(np.asarray(risk, dtype=np.float64))
    n = s.size
    if n == 0 or not np.isfinite(s).all():
        raise ValueError("risk must be a non-empty array of finite scores")
    review_at = float(s[n - _count(review_budget, n)])
    k = _count(accept_budget, n)
    accept_at = float(s[k - 1]) if k > 0 else -math.inf
    return _with_shares(risk, review_at, accept_at, "budget")


def _with_shares(risk: np.ndarray, review_at: float, accept_at: float, rule: str) -> Thresholds:
    decisions = decide(risk, review_at, accept_at)
    return Thresholds(
        review_at=review_at,
        accept_at=accept_at,
        review_share=float(np.mean(decisions == "review")),
        accept_share=float(np.mean(decisions == "accept")),
        rule=rule,
    )


def decide(risk: np.ndarray, review_at: float, accept_at: float) -> np.ndarray:
    """``review`` / ``accept`` / ``verify`` per row (see the module docstring for the order)."""
    r = np.asarray(risk, dtype=np.float64)
    out = np.full(r.shape, "verify", dtype=object)
    out[r <= accept_at] = "accept"
    out[r >= review_at] = "review"
    return out


@dataclass(frozen=True)
class RiskControlled:
    """The risk-controlled accept threshold and what it gives on the calibration scores."""

    threshold: float
    accepted_share: float
    empirical_accepted_risk: float | None
    max_accepted_risk: float
    delta: float
    candidates: int
    valid_candidates: int


def risk_controlled_accept(
    y: np.ndarray, risk: np.ndarray, max_accepted_risk: float, delta: float, grid: int = 100
) -> RiskControlled:
    """Largest accepted share whose accepted risk is <= the target with probability 1 - δ.

    Parameters
    ----------
    y : array of 0/1
        Labels of the calibration rows (1 = hallucinated).
    risk : array of float
        Their out-of-fold risk scores.
    max_accepted_risk : float
        Target accepted risk in (0, 1].
    delta : float
        Allowed probability that the target does not hold.
    grid : int
        Number of candidate accepted shares (1/grid, 2/grid, ..., 1).

    Returns
    -------
    RiskControlled
        ``threshold`` is ``-inf`` (accept nothing) when no candidate is valid.
    """
    from mapie.risk_control import BinaryClassificationController, BinaryRisk

    labels = np.asarray(y, dtype=np.int64)
    r = np.asarray(risk, dtype=np.float64)
    s = np.sort(r)
    n = s.size
    candidates = np.unique([s[_count(k / grid, n) - 1] for k in range(1, grid + 1)])
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
    threshold = -math.inf if best is None else float(-best)
    accepted = r <= threshold
    return RiskControlled(
        threshold=threshold,
        accepted_share=float(accepted.mean()),
        empirical_accepted_risk=float(labels[accepted].mean()) if accepted.any() else None,
        max_accepted_risk=float(max_accepted_risk),
        delta=float(delta),
        candidates=int(candidates.size),
        valid_candidates=len(controller.valid_predict_params),
    )


def contract_thresholds(
    y: np.ndarray,
    risk: np.ndarray,
    review_budget: float,
    accept_budget: float,
    accept_rule: str,
    max_accepted_risk: float | None,
    delta: float,
) -> tuple[Thresholds, RiskControlled | None]:
    """The contract's thresholds under `accept_rule` (``budget`` or ``risk_controlled``)."""
    base = budget_thresholds(risk, review_budget, accept_budget)
    if accept_rule == "budget":
        return base, None
    rc = risk_controlled_accept(y, risk, float(max_accepted_risk), delta)
    accept_at = min(rc.threshold, np.nextafter(base.review_at, -math.inf))
    return _with_shares(risk, base.review_at, float(accept_at), "risk_controlled"), rc
