"""What shipping a gate (or its cascade) under a contract gives on labelled rows.

Why its own module: the recommendation compares gates, settings and budgets by the same
numbers — thresholds as `fit_gate` sets them (`set_contract`), the accept / verify /
review shares, the bounds, the out-of-fold rates and the cost per 1,000 rows — and the
"next budgets" rows and infeasible-target hints are the same computation at other
settings. `runner.routing.report.recommendation` only ranks and words them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from runner.evaluation import confidence_text
from runner.routing.contract.reach import (
    cascade_infeasible_message,
    closest_fit,
    infeasible_message,
)
from runner.routing.contract.risk_control import cascade_masks
from runner.routing.contract.thresholds import Guarantee, decide, set_contract

ALPHA_GRID = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
"""Accepted-risk targets the "next budgets" rows and the no-guarantee hint step through."""

BETA_GRID = (0.5, 0.6, 0.7, 0.8, 0.9)
"""Review-precision targets, likewise."""


@dataclass(frozen=True)
class Scored:
    """One gate's out-of-fold evidence, as the report computed it.

    ``accept_ci_high`` maps an accept budget to the 95 % bootstrap CI upper end of the
    accepted risk there (the report's ``operating`` table); ``ms_per_row`` is None when the
    gates were not timed.
    """

    name: str
    risk: np.ndarray
    ap: float
    ms_per_row: float | None
    accept_ci_high: Mapping[float, float | None]
    groups: np.ndarray | None = None  # the rows' context groups, as `fit_gate` counts them


@dataclass(frozen=True)
class BandVerifier:
    """The cascade's verifier: its risk on every row, ms per verified row, its threshold
    (used when the accept side is a budget: nothing calibrates it then)."""

    name: str
    risk: np.ndarray
    ms_per_row: float
    threshold: float


def rules(routing) -> tuple[bool, bool]:
    """(accept side controlled, review side controlled)."""
    return routing.accept_rule == "risk_controlled", routing.review_rule == "precision_controlled"


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def contract_point(
    y: np.ndarray, gate: Scored, routing, verifier: BandVerifier | None = None
) -> dict:
    """What shipping `gate` (with `verifier`: the cascade) under `routing` gives on the rows.

    Thresholds as `fit_gate` sets them; the final shares of accept / verify / review as
    `route` realises them and, with a verifier, the share sent to it (``sent_share``): a
    calibrated cascade leaves a band row its verifier does not accept in verify
    (`cascade_masks`), a cascade at an accept budget reviews it; the guaranteed bounds
    where a side is controlled and certified; the OOF accepted risk and review precision;
    cost per 1,000 rows (CPU seconds of the gate and the verifier, human reviews).
    ``feasible`` is False, with ``infeasible`` saying why, when a controlled target cannot
    be certified or the two sides overlap.
    """
    y = np.asarray(y, dtype=np.int64)
    g = np.asarray(gate.risk, dtype=np.float64)
    accept_c, review_c = rules(routing)
    point: dict = {"feasible": True, "infeasible": None, "verifier_threshold": None, "path": None}
    try:
        contract = set_contract(y, g, routing, gate.groups)
        if verifier is not None and accept_c:
            contract = set_contract(y, g, routing, gate.groups, verifier.risk)
    except ValueError as err:
        return {**point, "feasible": False, "infeasible": str(err)}
    thresholds, guarantee = contract.thresholds, contract.guarantee
    review_at, accept_at = thresholds.review_at, thresholds.accept_at
    accept_ok = guarantee is None or guarantee.accept is None or guarantee.accept.feasible
    review_ok = guarantee is None or guarantee.review is None or guarantee.review.feasible
    bands = decide(g, review_at, accept_at)
    accepted, verify, reviewed = bands == "accept", bands == "verify", bands == "review"
    sent = np.zeros(g.shape, dtype=bool)
    if contract.cascade is not None:  # calibrated as fit_gate calibrates it, routed so
        cal = contract.cascade  # fit_gate ships it only when the gate's side fits too
        accept_ok, point["path"] = accept_ok and cal.feasible, cal.path
        masks = cascade_masks(g, verifier.risk, accept_at, review_at, cal.verifier_threshold)
        accepted, verify, reviewed, sent = masks.accept, masks.verify, masks.review, masks.sent
        point["verifier_threshold"] = _finite(cal.verifier_threshold)
    elif verifier is not None:  # an accept budget: the verifier's own threshold decides
        sent = verify
        accepted = accepted | (sent & (verifier.risk < verifier.threshold))
        reviewed, verify = ~accepted, np.zeros(g.shape, dtype=bool)
        point["verifier_threshold"] = _finite(verifier.threshold)
    if not (accept_ok and review_ok):
        point["feasible"] = False
        point["infeasible"] = _why_infeasible(y, gate, routing, guarantee, verifier)
    ms = gate.ms_per_row
    point.update(
        review_at=_finite(review_at),
        accept_at=_finite(accept_at),
        accept_share=float(accepted.mean()),
        verify_share=float(verify.mean()),
        review_share=float(reviewed.mean()),
        sent_share=None if verifier is None else float(sent.mean()),
        accepted_risk_guaranteed=routing.max_accepted_risk if accept_c and accept_ok else None,
        review_precision_guaranteed=routing.min_review_precision
        if review_c and review_ok
        else None,
        accepted_risk_oof=float(y[accepted].mean()) if accepted.any() else None,
        review_precision_oof=float(y[reviewed].mean()) if reviewed.any() else None,
        accepted_risk_ci_high=None
        if accept_c or verifier is not None
        else gate.accept_ci_high.get(routing.accept_budget),
        # s per 1,000 rows = ms per row: 1,000 rows x ms/row / 1,000 ms/s
        gate_s_per_1000=ms,
        verifier_s_per_1000=None if verifier is None else float(sent.mean()) * verifier.ms_per_row,
        reviews_per_1000=1000.0 * float(reviewed.mean()),
    )
    return point


def _why_infeasible(
    y: np.ndarray, gate: Scored, routing, guarantee: Guarantee, verifier: BandVerifier | None
) -> str | None:
    """What `fit_gate` would say: the gate's contract first (it refuses that before it
    calibrates a cascade), then the cascade's."""
    g, groups = np.asarray(gate.risk, dtype=np.float64), gate.groups
    if verifier is None or not guarantee.feasible:
        return infeasible_message(y, g, routing, groups)
    name = f"{gate.name} -> {verifier.name}"
    return cascade_infeasible_message(y, g, verifier.risk, routing, groups, name)


def best_targets(
    y: np.ndarray, gate: Scored, routing, verifier: BandVerifier | None = None
) -> dict:
    """The targets to ship instead of ones these rows cannot certify (`closest_fit`: each
    checked by the contract `fit_gate` runs, the cascade's with the verifier's risk);
    empty when the contract fits."""
    if contract_point(y, gate, routing, verifier)["feasible"]:
        return {}
    accept_c, _ = rules(routing)
    verifier_risk = verifier.risk if verifier is not None and accept_c else None
    return closest_fit(y, gate.risk, routing, gate.groups, verifier_risk)


def _steps(value: float, grid: Sequence[float]) -> list[float]:
    """The grid value just below and just above `value` (those that exist)."""
    below = [v for v in grid if v < value - 1e-12]
    above = [v for v in grid if v > value + 1e-12]
    return ([max(below)] if below else []) + ([min(above)] if above else [])


def neighbours(
    routing, review_budgets: Sequence[float], accept_budgets: Sequence[float]
) -> list[tuple[str, object]]:
    """(label, routing) one step tighter and looser on each side: α / β on their grids, a
    budget among the report's budgets. Settings the contract refuses are left out."""
    accept_c, review_c = rules(routing)
    changes = []
    if accept_c:
        changes += [("max_accepted_risk", a) for a in _steps(routing.max_accepted_risk, ALPHA_GRID)]
    else:
        changes += [("accept_budget", a) for a in _steps(routing.accept_budget, accept_budgets)]
    if review_c:
        changes += [
            ("min_review_precision", b) for b in _steps(routing.min_review_precision, BETA_GRID)
        ]
    else:
        changes += [("review_budget", r) for r in _steps(routing.review_budget, review_budgets)]
    out = []
    for key, value in changes:
        try:
            out.append((f"routing.{key}={value:g}", dataclasses.replace(routing, **{key: value})))
        except ValueError:  # ConfigError: e.g. budgets summing past 1
            continue
    return out


def guarantee_hint(
    y: np.ndarray, gate: Scored, routing, verifier: BandVerifier | None
) -> list[str]:
    """For each budget side: the controlled setting that would carry a guarantee here.

    Accept: the smallest α of `ALPHA_GRID` certified on these rows; review: the largest β
    of `BETA_GRID`; each with what it would accept or review.
    """
    accept_c, review_c = rules(routing)
    level = confidence_text(routing.delta)
    hints = []
    if not accept_c:
        for alpha in ALPHA_GRID:
            changed = dataclasses.replace(
                routing, accept_rule="risk_controlled", max_accepted_risk=alpha
            )
            p = contract_point(y, gate, changed, verifier)
            if p["feasible"]:
                hints.append(
                    f"routing.accept_rule=risk_controlled routing.max_accepted_risk={alpha:g} "
                    f"would guarantee accepted risk <= {alpha:g} w.p. {level} "
                    f"and accept {p['accept_share']:.1%} of rows"
                )
                break
        else:
            hints.append(
                f"no accepted-risk target up to {ALPHA_GRID[-1]:g} can be guaranteed on these "
                f"{len(y):,} rows (label more rows or raise routing.delta)"
            )
    if not review_c:
        for beta in sorted(BETA_GRID, reverse=True):
            changed = dataclasses.replace(
                routing, review_rule="precision_controlled", min_review_precision=beta
            )
            p = contract_point(y, gate, changed, verifier)
            if p["feasible"]:
                hints.append(
                    f"routing.review_rule=precision_controlled "
                    f"routing.min_review_precision={beta:g} would guarantee review precision "
                    f">= {beta:g} w.p. {level} and review "
                    f"{p['review_share']:.1%} of rows"
                )
                break
        else:
            hints.append(
                f"no review-precision target from {BETA_GRID[0]:g} up can be guaranteed on "
                f"these {len(y):,} rows without overlapping the accepted rows (label more "
                "rows or raise routing.delta)"
            )
    return hints
