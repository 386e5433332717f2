"""Thresholds of the routing contract, set on out-of-fold scores, and the decision rule.

Why out-of-fold: a threshold read off scores the gate produced on its own training rows
would be set on optimistic scores; out-of-fold scores are what the gate does on rows it has
not seen, so the budgets hold on new traffic of the same kind.

Decision rule, in this order: ``review`` when risk >= the review threshold (the top
``review_budget`` share of the OOF scores); ``accept`` when risk <= the accept threshold
(the lowest ``accept_budget`` share, or the risk-controlled share); ``verify`` otherwise
(the band a stronger verifier sees). With tied scores at a cut-off the realised share can
exceed the budget; the realised shares are recorded beside the thresholds.

Either side can instead carry a stated bound (`runner.routing.contract.risk_control`):
``routing.accept_rule=risk_controlled`` certifies accepted risk <= ``max_accepted_risk``,
``routing.review_rule=precision_controlled`` certifies review precision >=
``min_review_precision``, each with probability 1 - ``delta`` (shared when both are on), so
the verify band is what neither side can claim. The guarantee assumes the routed rows are
exchangeable with the OOF rows (`runner.routing.audit.shift` says when they visibly are not).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from runner.routing.contract.risk_control import (
    CascadeCalibration,
    Certified,
    calibrate_cascade,
    certify_accept,
    certify_review,
)

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
class Guarantee:
    """What the risk-controlled sides certify (`runner.routing.contract.risk_control`), jointly.

    ``delta`` is the whole contract's: with both sides controlled each side is tested at
    δ/2, so both bounds hold together with probability >= 1 - δ.
    """

    delta: float
    accept: Certified | None
    review: Certified | None

    @property
    def feasible(self) -> bool:
        """Whether every controlled side certified a non-empty set."""
        return all(c.feasible for c in (self.accept, self.review) if c is not None)

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return {
            "delta": self.delta,
            "accept": None if self.accept is None else self.accept.to_dict(),
            "review": None if self.review is None else self.review.to_dict(),
        }


def contract_thresholds(
    y: np.ndarray, risk: np.ndarray, routing: Any, groups: np.ndarray | None = None
) -> tuple[Thresholds, Guarantee | None]:
    """The contract's thresholds under its accept and review rules, set together.

    Parameters
    ----------
    y, risk : arrays
        Labels (1 = hallucinated) and out-of-fold risks of the calibration rows.
    routing : RoutingConf
        ``review_budget`` / ``accept_budget`` for a ``budget`` side;
        ``accept_rule=risk_controlled`` (``max_accepted_risk``) and
        ``review_rule=precision_controlled`` (``min_review_precision``) certify a side;
        ``delta`` is shared by the controlled sides.
    groups : array, optional
        The rows' context groups: a certified side counts grouped rows by their effective
        number (`runner.routing.contract.risk_control.effective_counts`).

    Returns
    -------
    (Thresholds, Guarantee or None)
        None when both sides are budgets. A side that certifies nothing accepts (reviews)
        nothing; `runner.routing.contract.reach.infeasible_message` says why, and `fit_gate`
        refuses to register it.

    Where a certified side would reach into the other side's rows, it stops at the
    largest certified set short of them (review wins, as in `decide`); that set is
    covered by the same guarantee.

    Raises
    ------
    ValueError
        When two budgets would share rows (only budgets can: a certified side stops short).
    """
    base = budget_thresholds(risk, routing.review_budget, routing.accept_budget)
    accept_c = routing.accept_rule == "risk_controlled"
    review_c = routing.review_rule == "precision_controlled"
    if not (accept_c or review_c):
        return base, None
    delta = float(routing.delta) / (2 if accept_c and review_c else 1)
    review = (
        certify_review(
            y, risk, routing.min_review_precision, delta, groups=groups,
            above=-math.inf if accept_c else base.accept_at,
        )
        if review_c
        else None
    )  # fmt: skip
    review_at = review.threshold if review is not None else base.review_at
    accept = (
        certify_accept(
            y, risk, routing.max_accepted_risk, delta, groups=groups,
            below=review_at,
        )
        if accept_c
        else None
    )  # fmt: skip
    accept_at = accept.threshold if accept is not None else base.accept_at
    if accept_at >= review_at:
        raise ValueError(
            f"the accepted rows (risk <= {accept_at:.4g}) and the reviewed rows (risk >= "
            f"{review_at:.4g}) overlap: lower routing.accept_budget or routing.review_budget"
        )
    rule = "+".join(
        r for r, on in (("risk_controlled", accept_c), ("precision_controlled", review_c)) if on
    )
    guarantee = Guarantee(float(routing.delta), accept, review)
    return _with_shares(risk, float(review_at), float(accept_at), rule), guarantee


@dataclass(frozen=True)
class Contract:
    """Everything `fit_gate` registers about the thresholds: the gate's two, the bounds the
    controlled sides certify, and, with a verifier, the cascade calibrated as one system."""

    thresholds: Thresholds
    guarantee: Guarantee | None
    cascade: CascadeCalibration | None


def set_contract(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    groups: np.ndarray | None = None,
    verifier_risk: np.ndarray | None = None,
) -> Contract:
    """The contract `fit_gate` registers, from labelled out-of-fold scores (one place, so
    the operating report recommends exactly what `fit_gate` ships).

    With `verifier_risk` (the verifier's risk on at least every row below the review
    threshold; ``routing.accept_rule=risk_controlled``) the gate's accept threshold and the
    verifier's are chosen together for the final accepted risk (`calibrate_cascade`), at
    the accept side's share of δ; the review threshold stays the review rule's.
    """
    thresholds, guarantee = contract_thresholds(y, risk, routing, groups)
    if verifier_risk is None:
        return Contract(thresholds, guarantee, None)
    if guarantee is None or guarantee.accept is None:
        raise ValueError("a calibrated cascade needs routing.accept_rule=risk_controlled")
    cal = calibrate_cascade(
        y,
        risk,
        verifier_risk,
        thresholds.review_at,
        routing.max_accepted_risk,
        guarantee.accept.delta,
        groups=groups,
    )
    with_cascade = _with_shares(
        risk, thresholds.review_at, cal.accept_at, f"{thresholds.rule}+cascade"
    )
    return Contract(with_cascade, guarantee, cal)
