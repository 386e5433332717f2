"""What a contract these rows cannot certify could certify instead, and which side binds.

Why its own module: "cannot be guaranteed" helps only with a way out that works. A
controlled side certifies nothing either because its own target is too tight for these
rows (the side binds), or because the other side takes the rows it would certify: the
accept side is certified below the review threshold, a certified review side above a
budgeted accept threshold (`contract_thresholds`). In the second case loosening the
target may not help at all, and the tightest target the side certifies on its own does
not fit. So each side is reported on its own and together with the other side as
configured; every target suggested here was found by running the same contract with it
(`first_fit`: a suggestion is one the contract accepted), and is printed so that the
printed number reads back as the value that fitted (`_exact`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.evaluation import confidence_text
from runner.routing.contract.risk_control import (
    TARGET_GRID,
    Certified,
    best_achievable,
    certify_accept,
    certify_review,
    first_fit,
    tightest,
)
from runner.routing.contract.thresholds import Thresholds, contract_thresholds, set_contract


@dataclass(frozen=True)
class Side:
    """One side of the contract: its name, the rule that controls it, the keys of its
    target and budget, and what the target bounds."""

    name: str
    rule: str
    key: str
    budget: str
    bound: str


ACCEPT = Side("accept", "risk_controlled", "max_accepted_risk", "accept_budget", "accepted risk <=")
REVIEW = Side(
    "review", "precision_controlled", "min_review_precision", "review_budget",
    "review precision >=",
)  # fmt: skip


def _exact(x: float) -> str:
    """The shortest text that reads back as exactly `x`: a printed suggestion is the value
    that was tried, never one rounded to the side that does not fit."""
    return repr(float(x))


def _other(side: Side) -> Side:
    return REVIEW if side is ACCEPT else ACCEPT


def _is_controlled(routing: Any, side: Side) -> bool:
    """Whether `side` carries a target under `routing` (else it is a budget)."""
    rule = routing.accept_rule if side is ACCEPT else routing.review_rule
    return rule == side.rule


def _setting(routing: Any, side: Side) -> str:
    """The override that configures `side`: its target, or its budget."""
    if _is_controlled(routing, side):
        return f"routing.{side.key}={_exact(getattr(routing, side.key))}"
    return f"routing.{side.budget}={_exact(getattr(routing, side.budget))}"


def _with(routing: Any, side: Side, target: float) -> Any:
    return dataclasses.replace(routing, **{side.key: target})


def side_fits(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    side: Side,
    groups: np.ndarray | None = None,
    verifier_risk: np.ndarray | None = None,
) -> bool:
    """Whether `side` certifies a set under `routing`, the other side as configured (with
    `verifier_risk`, the accept side as `fit_gate` ships it: the gate's accept side and the
    cascade calibrated on it)."""
    cascade = verifier_risk if side is ACCEPT and _is_controlled(routing, ACCEPT) else None
    contract = set_contract(y, risk, routing, groups, cascade)
    cert = getattr(contract.guarantee, side.name) if contract.guarantee else None
    fits = cert is not None and cert.feasible
    return fits and (contract.cascade is None or contract.cascade.feasible)


def _contract_fits(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    groups: np.ndarray | None = None,
    verifier_risk: np.ndarray | None = None,
) -> bool:
    """Whether every controlled side certifies a set under `routing` (`side_fits`)."""
    return all(
        side_fits(y, risk, routing, side, groups, verifier_risk)
        for side in (ACCEPT, REVIEW)
        if _is_controlled(routing, side)
    )


def _together(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    side: Side,
    groups: np.ndarray | None = None,
    verifier_risk: np.ndarray | None = None,
) -> float | None:
    """The tightest target of `side` that fits with the other side as configured (None:
    none in (0, 1))."""
    return tightest(
        side.name,
        lambda t: side_fits(y, risk, _with(routing, side, t), side, groups, verifier_risk),
    )


def _fits_alone(
    y: np.ndarray, risk: np.ndarray, cert: Certified, target: float, groups: np.ndarray | None
) -> bool:
    """Whether `target` certifies a set when no rows are taken by the other side (at the
    side's share of δ, as `cert` was tested)."""
    if cert.side == "accept":
        return certify_accept(y, risk, target, cert.delta, groups=groups).feasible
    return certify_review(y, risk, target, cert.delta, groups=groups).feasible


def _review_room(
    y: np.ndarray, risk: np.ndarray, routing: Any, groups: np.ndarray | None = None
) -> tuple[float, float] | None:
    """The review targets (loosest, tightest) with which the whole contract fits, the
    accept side at its configured target; None when none does.

    Only a tighter review target leaves the accept side rows (a review side certifies
    fewer rows the higher its precision), so the search runs from the configured one up
    to the tightest the review side certifies at all.
    """
    highest = _together(y, risk, routing, REVIEW, groups)
    if highest is None:
        return None
    asked = routing.min_review_precision
    candidates = [float(b) for b in TARGET_GRID if asked < b <= highest]
    lowest = first_fit(
        candidates, lambda b: _contract_fits(y, risk, _with(routing, REVIEW, b), groups)
    )
    return None if lowest is None else (lowest, highest)


def _taken(thresholds: Thresholds, routing: Any, other: Side) -> str:
    """What the other side does with the rows it takes, in words."""
    if other is REVIEW:
        verb = "certifies" if _is_controlled(routing, REVIEW) else "reviews"
        return (
            f"{verb} the rows with risk >= {thresholds.review_at:.4g} "
            f"({thresholds.review_share:.1%} of rows)"
        )
    return (
        f"accepts the rows with risk <= {thresholds.accept_at:.4g} "
        f"({thresholds.accept_share:.1%} of rows)"
    )


def _together_clause(routing: Any, side: Side, fit: float | None, say_taken: bool) -> str:
    """The tightest target of `side` that fits with the other side as configured; with
    `say_taken`, a note that the other side takes rows from it."""
    configured = f"with {_setting(routing, _other(side))} as configured"
    if fit is None:
        return f"{configured} no routing.{side.key} fits"
    takes = f" (it takes rows the {side.name} side would certify)" if say_taken else ""
    return f"{configured}{takes} the tightest that fits is routing.{side.key}={_exact(fit)}"


def _binding(
    routing: Any, thresholds: Thresholds, side: Side, other_binds: bool, alone: str
) -> str:
    """Which side binds: the other one, taking the rows `side` would certify (its target
    fits on its own), or `side` itself; with what `side` certifies on its own."""
    if not other_binds:
        return f"the {side.name} side binds: on its own it certifies {alone}"
    other = _other(side)
    kind = "side" if _is_controlled(routing, other) else "budget"
    return (
        f"the {other.name} {kind} binds: it {_taken(thresholds, routing, other)}, taking the "
        f"rows the {side.name} side would certify (on its own the {side.name} side "
        f"certifies routing.{side.key}={_exact(getattr(routing, side.key))}, {alone})"
    )


def _side_line(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    groups: np.ndarray | None,
    thresholds: Thresholds,
    side: Side,
    cert: Certified,
) -> str:
    """One infeasible side: which side binds, its tightest target alone and together with
    the other side as configured, and (when the review side takes the accept side's rows)
    the review targets that leave it room."""
    asked = f"routing.{side.key}={_exact(getattr(routing, side.key))}"
    best = best_achievable(side.name, y, risk, cert.delta, groups=groups)
    alone = f"at best {side.bound} {_exact(best)}" if best is not None else "no target in (0, 1)"
    other_binds = _fits_alone(y, risk, cert, getattr(routing, side.key), groups)
    fit = _together(y, risk, routing, side, groups)
    parts = [
        f"{asked} cannot be guaranteed with probability {confidence_text(routing.delta)} on "
        f"these {len(risk):,} labelled rows: "
        + _binding(routing, thresholds, side, other_binds, alone),
        _together_clause(routing, side, fit, say_taken=fit != best and not other_binds),
    ]
    room = (
        _review_room(y, risk, routing, groups)
        if other_binds and side is ACCEPT and _is_controlled(routing, REVIEW)
        else None
    )
    if room is not None:
        parts.append(
            f"routing.min_review_precision from {_exact(room[0])} to {_exact(room[1])} fits "
            f"with {asked}"
        )
    return "; ".join(parts)


def infeasible_message(
    y: np.ndarray, risk: np.ndarray, routing: Any, groups: np.ndarray | None = None
) -> str | None:
    """One line per controlled side that certifies nothing under `routing` (`_side_line`),
    joined; None when the contract fits."""
    thresholds, guarantee = contract_thresholds(y, risk, routing, groups)
    if guarantee is None or guarantee.feasible:
        return None
    lines = [
        _side_line(y, risk, routing, groups, thresholds, side, cert)
        for side, cert in ((ACCEPT, guarantee.accept), (REVIEW, guarantee.review))
        if cert is not None and not cert.feasible
    ]
    return "; ".join(lines) + "; a larger routing.delta or more labelled rows certify tighter ones"


def cascade_infeasible_message(
    y: np.ndarray,
    risk: np.ndarray,
    verifier_risk: np.ndarray,
    routing: Any,
    groups: np.ndarray | None,
    name: str,
) -> str:
    """Why the cascade `name` certifies no accepted set, and the tightest accepted-risk
    target that fits it with the review side as configured (checked as `fit_gate` ships
    it: `side_fits` with the verifier's risk)."""
    thresholds, _ = contract_thresholds(y, risk, routing, groups)
    asked = f"routing.max_accepted_risk={_exact(routing.max_accepted_risk)}"
    fit = _together(y, risk, routing, ACCEPT, groups, verifier_risk)
    configured = (
        f"with {_setting(routing, REVIEW)} as configured ({_taken(thresholds, routing, REVIEW)})"
    )
    tightest_line = (
        f"{configured} the tightest that fits is routing.max_accepted_risk={_exact(fit)}"
        if fit is not None
        else f"{configured} no routing.max_accepted_risk fits"
    )
    return (
        f"{asked} cannot be guaranteed for the cascade {name} with probability "
        f"{confidence_text(routing.delta)} on these {len(risk):,} labelled rows: the "
        f"cascade's accept side binds; {tightest_line}; a larger routing.delta or more labelled "
        "rows certify tighter ones"
    )


def closest_fit(
    y: np.ndarray,
    risk: np.ndarray,
    routing: Any,
    groups: np.ndarray | None = None,
    verifier_risk: np.ndarray | None = None,
) -> dict[str, float | None]:
    """The targets to ship instead of a contract that does not fit, by key (None: none).

    Per controlled side that certifies nothing, the tightest target that fits together
    with the other side: the review side first (the accept side is certified below it),
    then the accept side with the review side as changed. When no accepted-risk target
    fits because the review side takes its rows, the loosest review target that leaves
    the asked one room instead. The result is checked as one contract; if it does not
    fit, every value is None.
    """
    out: dict[str, float | None] = {}
    ship = routing
    for side in (REVIEW, ACCEPT):
        if not _is_controlled(ship, side) or side_fits(y, risk, ship, side, groups, verifier_risk):
            continue
        fit = _together(y, risk, ship, side, groups, verifier_risk)
        room = (
            _review_room(y, risk, ship, groups)
            if fit is None and side is ACCEPT and _is_controlled(ship, REVIEW)
            else None
        )
        if room is not None:
            out[REVIEW.key] = room[0]
            ship = _with(ship, REVIEW, room[0])
        else:
            out[side.key] = fit
            ship = ship if fit is None else _with(ship, side, fit)
    if any(v is None for v in out.values()) or not _contract_fits(
        y, risk, ship, groups, verifier_risk
    ):
        return dict.fromkeys(out)
    return out
