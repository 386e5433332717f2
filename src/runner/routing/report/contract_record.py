"""A fitted routing contract as a record: its out-of-fold cells, and the metadata the
registered model carries (what `route` and `audit` later read back).

Why apart from the study: `fit_gate` orchestrates (score, set the contract, fit, hand
over); what the contract promised and how it is written down is routing's knowledge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runner.results import StudyResult
from runner.routing.config import RoutingConf
from runner.routing.contract import CascadeCalibration, Thresholds, cascade_shares
from runner.routing.report import operating_tables


def oof_realised(y: np.ndarray, risk: np.ndarray, thresholds: Thresholds) -> dict:
    """Review precision and accepted risk the thresholds give on the out-of-fold scores."""
    review, accept = risk >= thresholds.review_at, risk <= thresholds.accept_at
    return {
        "review_precision": float(y[review].mean()) if review.any() else None,
        "accepted_risk": float(y[accept].mean()) if accept.any() else None,
    }


def add_contract_cells(
    result: StudyResult,
    thresholds: Thresholds,
    realised: dict,
    cascade: CascadeCalibration | None,
) -> None:
    """The ``contract`` table (shares and realised rates out of fold) and, for a cascade,
    the ``cascade`` table: each final share the fit expects, with its interval (what
    `route` compares its realised shares with)."""
    for label, value in (
        ("review share", thresholds.review_share),
        ("accept share", thresholds.accept_share),
        ("verify share", 1.0 - thresholds.review_share - thresholds.accept_share),
        ("review precision", realised["review_precision"]),
        ("accepted risk", realised["accepted_risk"]),
    ):
        result.add("contract", "OOF", label, value)
    if cascade is not None:
        for row, key in cascade_shares.SHARES.items():
            interval = cascade.share_intervals[key]
            result.add("cascade", row, "expected share", getattr(cascade, key), interval)


def contract_metadata(
    routing: RoutingConf,
    thresholds: Thresholds,
    guarantee: Any,
    cascade_meta: dict | None,
    stats: Any,
    realised: dict,
    training: dict[str, Any],
    sources: list[str],
    profile: Any,
    commit: str | None,
) -> dict[str, Any]:
    """``contract.json`` and the registered model's metadata: the thresholds, the rules
    and budgets, what the out-of-fold report promised, and the data it was fitted on
    (``training``: its name, fingerprint, rows and positives).

    The accepted-risk target is ``routing.max_accepted_risk``, else (with an accept
    budget) the upper end of the promised accepted risk's interval.
    """
    promised = operating_tables.promise(
        stats, routing.gate, routing.review_budget, routing.accept_budget
    )
    target = routing.max_accepted_risk
    if target is None and routing.accept_budget > 0:
        target = promised[operating_tables.accept_col(routing.accept_budget)]["ci_high"]
    return {
        "gate": routing.gate,
        "thresholds": thresholds.to_dict(),
        "review_budget": routing.review_budget,
        "accept_budget": routing.accept_budget,
        "accept_rule": routing.accept_rule,
        "accepted_risk_target": target,
        "review_rule": routing.review_rule,
        "risk_control": None if guarantee is None else guarantee.to_dict(),
        "cascade": cascade_meta,
        "oof_report": promised,
        "oof_realised": realised,
        "training_data": training,
        "training_sources": sources,
        "calibration_profile": profile,
        "runner_commit": commit or "unknown",
    }
